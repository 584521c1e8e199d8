// The device's numcodecs-LZ4 decoder (codec/logic/lz4_ring.hpp: a 64 KiB output ring, batches
// of sequences with literals first, a lean fast parse) run on the host lane by lane, against
// liblz4 byte for byte and against the serial decoder status for status. Inputs and outputs are
// exact-size heap allocations (the ASan build reports any stray access).
#include <lz4.h>
#include <lz4hc.h>

#include <memory>
#include <random>

#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_ring.hpp"
#include "codec_test_util.hpp"
#include "liblz4_block.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Result {
  DecodeStatus status;
  Buf bytes;
};

// Ring decode from an exact-size copy of `in` into an exact-size output at `shift` bytes past a
// 16-byte aligned address (the ring's slots follow the output's alignment).
Result ring(const Buf& in, std::size_t size, std::size_t shift = 0, std::size_t window = 4096) {
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[in.empty() ? 1 : in.size()]);
  if (!in.empty()) std::memcpy(src.get(), in.data(), in.size());
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size + shift + 1]);
  Result r;
  r.status = logic::lz4_ring_decode_host(src.get(), in.size(), dst.get() + shift, size, window);
  r.bytes.assign(dst.get() + shift, dst.get() + shift + size);
  return r;
}

DecodeStatus serial(const Buf& in, std::size_t size) {
  Buf out(size);
  logic::Lz4SerialCopier copy;
  return logic::lz4_decode_exact_with(in.data(), in.size(), out.data(), size, copy);
}

TEST(Lz4Ring, MatchesLiblz4OnEveryDataKindAndLevel) {
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 1u, 15u, 300u, 4096u, 70001u, 300000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 3, 12}) {
        const Buf enc = liblz4_block(src, level);
        for (std::size_t shift : {0u, 5u}) {
          const Result r = ring(enc, src.size(), shift);
          ASSERT_EQ(r.status, DecodeStatus::kOk) << kind.name << " " << n << " level " << level;
          ASSERT_TRUE(r.bytes == src) << kind.name << " " << n << " level " << level << " shift " << shift;
        }
      }
    }
  }
}

// Long runs (lone sequences in pieces, every short offset's modulo path, flushes mid-match),
// far matches near 64 KiB (batch admission), and a window just over the fast path's span.
TEST(Lz4Ring, LongRunsFarMatchesAndSmallWindows) {
  std::mt19937 rng(5);
  std::vector<Buf> srcs;
  for (std::size_t period : {1u, 2u, 3u, 7u, 31u, 32u, 33u, 100u, 4000u, 40000u, 65000u}) {
    Buf b(600000);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    for (std::size_t i = period; i < b.size(); ++i)
      if (rng() % 1000 != 0) b[i] = b[i - period];
    srcs.push_back(b);
  }
  {  // a random block of 65 KB repeated: matches at offsets near the ring's size
    Buf b(400000);
    for (std::size_t i = 0; i < 65530; ++i) b[i] = static_cast<std::uint8_t>(rng());
    for (std::size_t i = 65530; i < b.size(); ++i) b[i] = (i % 5000 < 100) ? static_cast<std::uint8_t>(rng()) : b[i - 65530];
    srcs.push_back(b);
  }
  srcs.push_back(Buf(3000000, 0));
  for (const Buf& src : srcs) {
    for (int level : {0, 9}) {
      const Buf enc = liblz4_block(src, level);
      for (std::size_t window : {296u, 4096u}) {
        const Result r = ring(enc, src.size(), 3, window);
        ASSERT_EQ(r.status, DecodeStatus::kOk);
        ASSERT_TRUE(r.bytes == src) << "level " << level << " window " << window;
      }
    }
  }
}

// Damaged blocks: the same status as the serial decoder (and liblz4's bytes when accepted).
TEST(Lz4Ring, DamagedBlocksGetTheSerialStatus) {
  const Buf src = quantised_bytes(50000);
  std::mt19937 rng(11);
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 89)) {
      const Buf in(enc.begin(), enc.begin() + cut);
      ASSERT_EQ(ring(in, src.size()).status, serial(in, src.size())) << "cut " << cut;
    }
    for (int trial = 0; trial < 3000; ++trial) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      const Result r = ring(bad, size, trial % 16);
      ASSERT_EQ(r.status, serial(bad, size)) << "trial " << trial;
      if (r.status == DecodeStatus::kOk) {
        Buf ref(size);
        ASSERT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(bad.data()), reinterpret_cast<char*>(ref.data()),
                                      static_cast<int>(bad.size()), static_cast<int>(size)),
                  static_cast<int>(size));
        ASSERT_TRUE(r.bytes == ref) << "trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace cs_codec_test
