// The host's vectorised byte unshuffle (unshuffle_host) against the scalar reference shared
// with the GPU (logic::unshuffle_block): the same bytes for every typesize and size, at
// misaligned source and destination addresses, nothing written outside the destination; and
// the inverse of logic::shuffle_block. The codecs that use it (blosc, shuffle) are tested
// against libblosc and numcodecs in blosc_test.cpp, shuffle_test.cpp and golden_test.cpp.
#include "codec/bytes_to_bytes/unshuffle_host.hpp"

#include <algorithm>

#include "codec/logic/byte_shuffle.hpp"
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using cubestream::codec::unshuffle_host;

constexpr std::size_t kGuard = 32;
constexpr std::uint8_t kGuardByte = 0x5A;

// Unshuffles `size` bytes taken from `pool` at `pool_at` with the source at address offset
// `src_off` and the destination at `dst_off` (from the start of their allocations), and
// compares with the scalar reference. The source allocation ends exactly at the source's last
// byte, so a read past it is a heap overflow for ASan builds; the destination has guard bytes
// on both sides, checked here.
testing::AssertionResult matches_reference(const Buf& pool, std::size_t pool_at, std::size_t size,
                                           std::size_t typesize, std::size_t src_off, std::size_t dst_off) {
  Buf src(src_off + size);
  std::copy_n(pool.begin() + static_cast<std::ptrdiff_t>(pool_at), size, src.begin() + static_cast<std::ptrdiff_t>(src_off));
  Buf want(size);
  logic::unshuffle_block(src.data() + src_off, want.data(), size, typesize);

  Buf dst(kGuard + dst_off + size + kGuard, kGuardByte);
  std::uint8_t* d = dst.data() + kGuard + dst_off;
  unshuffle_host(src.data() + src_off, d, size, typesize);

  const auto where = [&] {
    return " (size " + std::to_string(size) + ", typesize " + std::to_string(typesize) + ", src offset " +
           std::to_string(src_off) + ", dst offset " + std::to_string(dst_off) + ")";
  };
  for (std::size_t k = 0; k < size; ++k) {
    if (d[k] != want[k]) {
      return testing::AssertionFailure() << "byte " << k << " is " << int(d[k]) << ", the reference has "
                                         << int(want[k]) << where();
    }
  }
  for (std::size_t k = 0; k < kGuard + dst_off; ++k) {
    if (dst[k] != kGuardByte) return testing::AssertionFailure() << "wrote before the destination" << where();
  }
  for (std::size_t k = kGuard + dst_off + size; k < dst.size(); ++k) {
    if (dst[k] != kGuardByte) return testing::AssertionFailure() << "wrote past the destination" << where();
  }
  return testing::AssertionSuccess();
}

bool has_vector_path(std::size_t typesize) { return typesize == 2 || typesize == 4 || typesize == 8; }

// The layout written out by hand: element i's byte j is the byte i * typesize + j of the
// original, so with original bytes 0, 1, 2, ... the result counts up. 37 elements: vector
// steps over the first 32 (two of 16 elements, or one of 32 for typesize 2), 5 left for the
// scalar tail, then typesize - 1 trailing bytes.
TEST(UnshuffleHost, RebuildsElementsFromPlanes) {
  for (std::size_t ts : {2, 4, 8}) {
    SCOPED_TRACE("typesize " + std::to_string(ts));
    const std::size_t n = 37;
    const std::size_t size = n * ts + ts - 1;
    Buf shuffled(size);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < ts; ++j) shuffled[j * n + i] = static_cast<std::uint8_t>(i * ts + j);
    for (std::size_t k = n * ts; k < size; ++k) shuffled[k] = static_cast<std::uint8_t>(k);
    Buf out(size);
    unshuffle_host(shuffled.data(), out.data(), size, ts);
    for (std::size_t k = 0; k < size; ++k) ASSERT_EQ(out[k], static_cast<std::uint8_t>(k)) << "byte " << k;
  }
}

// Every size up to 300 bytes (up to 18 vector steps, with every count of leftover elements
// and trailing bytes) for typesizes 1..17. The vector typesizes get every pair of
// source and destination offsets 0..15; the others (scalar, but through the same entry) 16
// pairs.
TEST(UnshuffleHost, MatchesScalarForEverySmallSize) {
  const Buf pool = random_bytes(4096, 7);
  std::size_t cases = 0;
  for (std::size_t ts = 1; ts <= 17; ++ts) {
    for (std::size_t size = 0; size <= 300; ++size) {
      const std::size_t at = (size * 31 + ts * 7) % (pool.size() - size);
      if (has_vector_path(ts)) {
        for (std::size_t so = 0; so < 16; ++so)
          for (std::size_t dof = 0; dof < 16; ++dof) {
            ASSERT_TRUE(matches_reference(pool, at, size, ts, so, dof));
            ++cases;
          }
      } else {
        for (std::size_t so = 0; so < 16; ++so) {
          ASSERT_TRUE(matches_reference(pool, at, size, ts, so, (so * 5 + 3) % 16));
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 3u * 301 * 256 + 14u * 301 * 16);
}

// Whole blosc blocks (256 KiB, and with 3 bytes over), a 721 x 1440 float32 field as one
// numcodecs Shuffle buffer, and a size whose planes are an odd number of bytes apart.
TEST(UnshuffleHost, MatchesScalarForLargeSizes) {
  const std::size_t sizes[] = {256 * 1024, 256 * 1024 + 3, 4152960, 1000003};
  const Buf pool = random_bytes(4152960 + 64, 11);
  for (std::size_t size : sizes) {
    for (std::size_t ts = 1; ts <= 17; ++ts) {
      ASSERT_TRUE(matches_reference(pool, ts, size, ts, 0, 0));
      if (has_vector_path(ts)) {
        ASSERT_TRUE(matches_reference(pool, 3, size, ts, 1, 15));
        ASSERT_TRUE(matches_reference(pool, 5, size, ts, 13, 6));
      }
    }
  }
}

// shuffle_block then unshuffle_host gives the original back.
TEST(UnshuffleHost, InvertsShuffleBlock) {
  const auto round_trip = [](const Buf& original, std::size_t ts) {
    Buf shuffled(original.size()), out(original.size());
    logic::shuffle_block(original.data(), shuffled.data(), original.size(), ts);
    unshuffle_host(shuffled.data(), out.data(), out.size(), ts);
    return out == original;
  };
  for (std::size_t ts = 1; ts <= 17; ++ts) {
    for (std::size_t size = 0; size <= 300; ++size) {
      ASSERT_TRUE(round_trip(random_bytes(size, static_cast<std::uint32_t>(size * 17 + ts)), ts))
          << "size " << size << ", typesize " << ts;
    }
    for (std::size_t size : {std::size_t{256 * 1024}, std::size_t{256 * 1024 + 5}, std::size_t{65537}}) {
      ASSERT_TRUE(round_trip(random_bytes(size, static_cast<std::uint32_t>(ts)), ts))
          << "size " << size << ", typesize " << ts;
    }
  }
  // a smooth float32 field, as blosc sees one
  EXPECT_TRUE(round_trip(climate_bytes(4152960), 4));
}

}  // namespace
}  // namespace cs_codec_test
