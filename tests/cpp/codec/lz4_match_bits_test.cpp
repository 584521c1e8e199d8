// The ready pass of the segmented numcodecs-LZ4 decoder (codec/logic/lz4_match_bits.hpp: a
// pending bit per output byte; a segment copies the matches whose bytes are final before it
// waits for the segment before, the rest in the chain as before), run on the host with the
// segments stepped in seeded random orders (lz4_ready_first_matches_host): byte for byte against
// liblz4, status for status against the serial decoder, and with most era5-like matches off the
// chain (its point).
#include <lz4.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/logic/lz4_match_bits.hpp"
#include "codec/logic/lz4_segments_host.hpp"
#include "codec_test_util.hpp"
#include "era5_chunk.hpp"
#include "liblz4_block.hpp"
#include "lz4_craft.hpp"
#include "lz4_serial.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Result {
  DecodeStatus status;
  Buf bytes;
  std::uint64_t groups = 0;  // of the chained pass, after the ready passes
  bool split = false;
};

Result ready_first(const Buf& in, std::size_t size, std::uint64_t seed, std::uint32_t split_region = 0,
                std::size_t window = 8192) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(in);
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size == 0 ? 1 : size]);
  Result r;
  r.status = logic::lz4_segments_decode_host(src.get(), in.size(), dst.get(), size, window, &r.groups,
                                             logic::Lz4Walk::kTable, split_region, &r.split,
                                             logic::Lz4Matches::kReadyFirst, seed);
  r.bytes.assign(dst.get(), dst.get() + size);
  return r;
}

TEST(Lz4MatchBits, BitsInAWordCoverExactlyTheRange) {
  EXPECT_EQ(logic::lz4_bits_in(0, 32, 0), ~0u);
  EXPECT_EQ(logic::lz4_bits_in(0, 1, 0), 1u);
  EXPECT_EQ(logic::lz4_bits_in(31, 33, 0), 1u << 31);
  EXPECT_EQ(logic::lz4_bits_in(31, 33, 1), 1u);
  EXPECT_EQ(logic::lz4_bits_in(5, 9, 0), 0xF0u >> 4 << 5);
  EXPECT_EQ(logic::lz4_bits_in(5, 9, 1), 0u);
  EXPECT_EQ(logic::lz4_bits_in(40, 40, 1), 0u);
  EXPECT_EQ(logic::lz4_bits_in(10, 100, 2), ~0u);
  EXPECT_EQ(logic::lz4_bits_in(10, 100, 3), 0xFu);
  // every range within three words against a bit-by-bit count
  for (std::uint32_t a = 0; a < 96; ++a)
    for (std::uint32_t b = a; b <= 96; ++b)
      for (std::uint32_t w = 0; w < 3; ++w) {
        std::uint32_t want = 0;
        for (std::uint32_t i = 0; i < 32; ++i)
          if (32 * w + i >= a && 32 * w + i < b) want |= 1u << i;
        ASSERT_EQ(logic::lz4_bits_in(a, b, w), want) << a << " " << b << " " << w;
      }
  const std::uint32_t words[3] = {0, 1u << 7, 0};
  const auto load = [&](std::uint32_t w) { return words[w]; };
  EXPECT_TRUE(logic::lz4_bits_clear(0, 39, load));
  EXPECT_FALSE(logic::lz4_bits_clear(0, 40, load));
  EXPECT_FALSE(logic::lz4_bits_clear(39, 40, load));
  EXPECT_TRUE(logic::lz4_bits_clear(40, 96, load));
  EXPECT_TRUE(logic::lz4_bits_clear(39, 39, load));
  const logic::Lz4MatchRecord m{100, 3, 10};  // repeats 3 bytes: reads [97, 100)
  EXPECT_EQ(logic::lz4_match_reads(m).first, 97u);
  EXPECT_EQ(logic::lz4_match_reads(m).end, 100u);
  const logic::Lz4MatchRecord far{70000, 65535, 8};
  EXPECT_EQ(logic::lz4_match_reads(far).end, 70000u - 65535u + 8u);
  EXPECT_EQ(logic::lz4_window_low(70000), 70000u - 65535u);
  EXPECT_EQ(logic::lz4_window_low(65535), 0u);
}

TEST(Lz4MatchBits, ReadyFirstMatchesLiblz4OnEveryDataKindInAnyOrder) {
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 1u, 300u, 70001u, 300000u, 1100000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 9}) {
        const Buf enc = liblz4_block(src, level);
        for (std::uint64_t seed : {1u, 2u, 3u}) {
          if (n > 300000 && seed != 3) continue;  // (the large ones once: many sweeps on the test's fields)
          const Result r = ready_first(enc, src.size(), seed, seed == 3 ? 4096u : 0u);
          ASSERT_EQ(r.status, DecodeStatus::kOk) << kind.name << " " << n << " level " << level << " seed " << seed;
          ASSERT_TRUE(r.bytes == src) << kind.name << " " << n << " level " << level << " seed " << seed;
        }
      }
    }
  }
}

// Long runs (matches longer than a lane's 16 bytes, offsets below their length: each repeats
// bytes just before it, one chain after another), periods around the lanes' width, matches
// reaching back nearly 64 KiB into earlier segments, every offset.
TEST(Lz4MatchBits, ReadyFirstMatchesLiblz4OnRunsAndFarMatches) {
  std::mt19937 rng(5);
  std::vector<Buf> srcs;
  for (std::size_t period : {1u, 2u, 3u, 7u, 16u, 17u, 31u, 33u, 100u, 4000u, 40000u, 65000u})
    srcs.push_back(lz4_periodic_bytes(600000, period, rng));
  srcs.push_back(Buf(3000000, 0));
  for (const Buf& src : srcs)
    for (int level : {0, 9})
      for (std::uint64_t seed : {7u, 8u}) {
        const Buf enc = liblz4_block(src, level);
        const Result r = ready_first(enc, src.size(), seed);
        ASSERT_EQ(r.status, DecodeStatus::kOk);
        ASSERT_TRUE(r.bytes == src) << "level " << level << " seed " << seed;
      }
  for (const std::size_t off : {65535u, 40000u, 1000u, 33u, 16u, 15u, 1u}) {
    for (const std::size_t mlen : {4u, 17u, 513u, 1u << 20}) {
      const std::size_t tail = mlen < 8 ? 12 : 5;
      const Buf enc = lz4_far_match_block(off, mlen, off + 3, tail, static_cast<std::uint32_t>(off * 31 + mlen));
      const std::size_t size = off + 3 + mlen + tail;
      const Result r = ready_first(enc, size, off + mlen);
      ASSERT_EQ(r.status, DecodeStatus::kOk) << "off " << off << " len " << mlen;
      ASSERT_TRUE(r.bytes == liblz4_decode(enc, size)) << "off " << off << " len " << mlen;
    }
  }
  std::size_t size = 0;
  const Buf enc = lz4_every_offset_block(size);
  const Result r = ready_first(enc, size, 11);
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  ASSERT_TRUE(r.bytes == liblz4_decode(enc, size));
}

TEST(Lz4MatchBits, ReadyFirstGivesTheSerialStatusOnDamagedBlocks) {
  const Buf src = quantised_bytes(120000);
  std::mt19937 rng(13);
  const Buf enc = liblz4_block(src, 0);
  for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 211)) {
    const Buf in(enc.begin(), enc.begin() + cut);
    ASSERT_EQ(ready_first(in, src.size(), cut).status, lz4_serial_status(in, src.size())) << "cut " << cut;
  }
  for (int trial = 0; trial < 1500; ++trial) {
    Buf bad = enc;  // one to four bytes replaced; the expected size short, long or right
    for (int f = 1 + static_cast<int>(rng() % 4); f > 0; --f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
    const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
    const Result r = ready_first(bad, size, static_cast<std::uint64_t>(trial), trial % 4 == 0 ? 4096u : 0u);
    ASSERT_EQ(r.status, lz4_serial_status(bad, size)) << "trial " << trial;
    if (r.status == DecodeStatus::kOk) ASSERT_TRUE(r.bytes == liblz4_decode(bad, size)) << "trial " << trial;
  }
}

// Why the pass exists: on the GPU benchmark's era5-like chunks (bench/era5_chunk.hpp) most
// matches read bytes that are final before the segment before is done (literals, or matches
// already copied), so the chain of segments (each after the one before) keeps about a third of
// its groups: 1 150-1 220 of 3 256 in a 4 MiB chunk, by the schedule (bench/micro/lz4_ready_pass.cpp
// prints these and the synth fields', whose matches read other matches more: 53-86 % kept).
TEST(Lz4MatchBits, ReadyPassTakesMostEra5LikeMatchesOffTheChain) {
  for (const std::size_t values : {std::size_t{1} << 20, std::size_t{1} << 17}) {
    const Buf src = cubestream_bench::era5_chunk(values, 7919 + static_cast<std::uint32_t>(values % 1000));
    const Buf enc = liblz4_block(src, 0);
    std::unique_ptr<std::uint8_t[]> in = exact_copy(enc);
    std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[src.size()]);
    std::uint64_t alone = 0;
    ASSERT_EQ(logic::lz4_segments_decode_host(in.get(), enc.size(), out.get(), src.size(), 8192, &alone,
                                              logic::Lz4Walk::kTable, 0, nullptr, logic::Lz4Matches::kChain),
              DecodeStatus::kOk);
    const Result r = ready_first(enc, src.size(), 5);
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    ASSERT_TRUE(r.bytes == src);
    EXPECT_GT(alone, values / 4096) << "after the ready pass " << r.groups;
    EXPECT_LT(r.groups * 2, alone) << "after the ready pass " << r.groups;
  }
}

}  // namespace
}  // namespace cs_codec_test
