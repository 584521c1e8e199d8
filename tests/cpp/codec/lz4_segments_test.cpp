// The device's segmented numcodecs-LZ4 decoder (codec/logic/lz4_segments.hpp: a checking walk
// that marks segments, literals per segment in any order, matches per segment in order and in
// groups) run on the host, against liblz4 byte for byte and against the serial decoder status
// for status. Inputs and outputs are exact-size heap allocations (the ASan build reports any
// stray access).
#include <lz4.h>

#include <memory>
#include <random>
#include <vector>

#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "codec_test_util.hpp"
#include "liblz4_block.hpp"
#include "lz4_craft.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Result {
  DecodeStatus status;
  Buf bytes;
  std::uint64_t groups = 0;
};

Result segmented(const Buf& in, std::size_t size, std::size_t window = 8192) {
  std::unique_ptr<std::uint8_t[]> src(new std::uint8_t[in.empty() ? 1 : in.size()]);
  if (!in.empty()) std::memcpy(src.get(), in.data(), in.size());
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size == 0 ? 1 : size]);
  Result r;
  r.status = logic::lz4_segments_decode_host(src.get(), in.size(), dst.get(), size, window, &r.groups);
  r.bytes.assign(dst.get(), dst.get() + size);
  return r;
}

DecodeStatus serial(const Buf& in, std::size_t size) {
  Buf out(size);
  logic::Lz4SerialCopier copy;
  return logic::lz4_decode_exact_with(in.data(), in.size(), out.data(), size, copy);
}

TEST(Lz4Segments, MatchLiblz4OnEveryDataKindAndLevel) {
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 1u, 15u, 300u, 4096u, 70001u, 300000u, 1100000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 3, 12}) {
        const Buf enc = liblz4_block(src, level);
        for (std::size_t window : {8192u, 296u}) {
          const Result r = segmented(enc, src.size(), window);
          ASSERT_EQ(r.status, DecodeStatus::kOk) << kind.name << " " << n << " level " << level;
          ASSERT_TRUE(r.bytes == src) << kind.name << " " << n << " level " << level << " window " << window;
        }
      }
    }
  }
}

// Long runs (matches longer than a group's lanes, offsets below their length), periods around
// the group's width, matches reaching back nearly 64 KiB into earlier segments.
TEST(Lz4Segments, LongRunsAndFarMatchesMatchLiblz4) {
  std::mt19937 rng(5);
  std::vector<Buf> srcs;
  for (std::size_t period : {1u, 2u, 3u, 7u, 31u, 32u, 33u, 100u, 4000u, 40000u, 65000u}) {
    Buf b(600000);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    for (std::size_t i = period; i < b.size(); ++i)
      if (rng() % 1000 != 0) b[i] = b[i - period];
    srcs.push_back(b);
  }
  srcs.push_back(Buf(3000000, 0));
  for (const Buf& src : srcs) {
    for (int level : {0, 9}) {
      const Buf enc = liblz4_block(src, level);
      const Result r = segmented(enc, src.size());
      ASSERT_EQ(r.status, DecodeStatus::kOk);
      ASSERT_TRUE(r.bytes == src) << "level " << level;
    }
  }
}

TEST(Lz4Segments, CraftedFarMatchesAndEveryOffsetMatchLiblz4) {
  for (const std::size_t off : {65535u, 65534u, 40000u, 32768u, 1000u, 33u, 32u, 31u, 7u, 1u}) {
    for (const std::size_t mlen : {4u, 17u, 513u, 65536u, 1u << 20}) {
      const std::size_t tail = mlen < 8 ? 12 : 5;
      const Buf enc = lz4_far_match_block(off, mlen, off + 3, tail, static_cast<std::uint32_t>(off * 31 + mlen));
      const std::size_t size = off + 3 + mlen + tail;
      const Result r = segmented(enc, size);
      ASSERT_EQ(r.status, DecodeStatus::kOk) << "off " << off << " len " << mlen;
      ASSERT_TRUE(r.bytes == liblz4_decode(enc, size)) << "off " << off << " len " << mlen;
    }
  }
  std::size_t size = 0;
  const Buf enc = lz4_every_offset_block(size);
  const Result r = segmented(enc, size);
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  ASSERT_TRUE(r.bytes == liblz4_decode(enc, size));
}

// Damaged blocks: the same status as the serial decoder (and liblz4's bytes when accepted).
TEST(Lz4Segments, DamagedBlocksGetTheSerialStatus) {
  const Buf src = quantised_bytes(120000);
  std::mt19937 rng(11);
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 89)) {
      const Buf in(enc.begin(), enc.begin() + cut);
      ASSERT_EQ(segmented(in, src.size()).status, serial(in, src.size())) << "cut " << cut;
    }
    for (int trial = 0; trial < 3000; ++trial) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      const Result r = segmented(bad, size, trial % 2 == 0 ? 8192 : 296);
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

// The walk's segments: within lz4_segment_bound, each but the last closed by its output or its
// sequence count, none holding more than kLz4SegmentSeqs sequences; and groups that take many
// matches at once on climate data (the point of the match pass).
TEST(Lz4Segments, SegmentsKeepTheirBoundsAndGroupsTakeManyMatches) {
  for (const auto& kind : kDataKinds) {
    const Buf src = kind.make(1 << 20);
    const Buf enc = liblz4_block(src, 0);
    std::vector<logic::Lz4Segment> segs(logic::lz4_segment_bound(enc.size(), src.size()));
    std::vector<std::uint8_t> window(8192);
    logic::Lz4StagedReader<logic::Lz4MemcpyFill> rd{enc.data(), enc.size(), window.data(), window.size(), {}};
    std::uint32_t count = 0;
    ASSERT_EQ(logic::lz4_segment_walk(
                  rd, static_cast<std::uint32_t>(enc.size()), static_cast<std::uint32_t>(src.size()), segs.size(),
                  [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { segs[k] = {ip, op}; }, &count),
              DecodeStatus::kOk)
        << kind.name;
    ASSERT_GE(count, 1u);
    ASSERT_EQ(segs[0].in, 0u);
    ASSERT_EQ(segs[0].out, 0u);
    std::uint64_t sequences = 0;
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t end = k + 1 < count ? segs[k + 1].in : static_cast<std::uint32_t>(enc.size());
      std::uint32_t n = 0, out = 0;
      const std::uint8_t* in = enc.data();
      ASSERT_EQ(logic::lz4_segment_parse(in, static_cast<std::uint32_t>(enc.size()),
                                         static_cast<std::uint32_t>(src.size()), segs[k].in, end, segs[k].out,
                                         [&](const logic::Lz4Sequence& s, std::uint32_t) {
                                           ++n;
                                           out += static_cast<std::uint32_t>(s.lit_len + s.match_len);
                                         }),
                DecodeStatus::kOk);
      ASSERT_LE(n, logic::kLz4SegmentSeqs) << kind.name << " segment " << k;
      if (k + 1 < count) {
        ASSERT_TRUE(out >= logic::kLz4SegmentOut || n == logic::kLz4SegmentSeqs) << kind.name << " segment " << k;
        ASSERT_EQ(segs[k + 1].out, segs[k].out + out);
      }
      sequences += n;
    }
    const Result r = segmented(enc, src.size());
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    if (std::string(kind.name) == "climate_f32") {
      ASSERT_GT(sequences, 0u);
      // a group per match would be no better than the serial order
      EXPECT_LT(r.groups * 2, sequences) << r.groups << " groups for " << sequences << " sequences";
    }
  }
}

TEST(Lz4Segments, GroupRuleRefusesEveryMatchThatReadsTheGroupsOutput) {
  // a match reads min(off, len) bytes: [dst - off, ...)
  EXPECT_FALSE(logic::lz4_reads_meet({1100, 104, 4}, 1000, 96));
  EXPECT_TRUE(logic::lz4_reads_meet({1100, 99, 4}, 1000, 2));
  EXPECT_FALSE(logic::lz4_reads_meet({1100, 99, 4}, 1000, 1));
  EXPECT_TRUE(logic::lz4_reads_meet({1100, 50, 500}, 1090, 5));  // off < len: reads up to its start
  EXPECT_FALSE(logic::lz4_reads_meet({1100, 50, 500}, 1000, 50));
  // byte i of a match with off < len repeats the last off bytes before it
  const logic::Lz4MatchRecord m{100, 3, 10};
  for (std::uint32_t i = 0; i < 10; ++i) EXPECT_EQ(logic::lz4_match_source(m, i), 97 + i % 3);
  // the third reads 1010..1013, which the second writes; the fourth reads literals between the
  // first two (1004..1007), which no match writes
  const logic::Lz4MatchRecord recs[] = {{1000, 50, 4}, {1010, 20, 4}, {1020, 10, 4}, {1030, 26, 4}};
  EXPECT_EQ(logic::lz4_group_size(recs, 4), 2u);
  EXPECT_EQ(logic::lz4_group_size(recs + 2, 2), 2u);
  EXPECT_EQ(logic::lz4_group_size(recs + 3, 1), 1u);
  // long matches go alone, and end a group of short ones
  const logic::Lz4MatchRecord longs[] = {{1000, 900, 17}, {1100, 900, 4}, {1200, 900, 17}};
  EXPECT_EQ(logic::lz4_group_size(longs, 3), 1u);
  EXPECT_EQ(logic::lz4_group_size(longs + 1, 2), 1u);
}

}  // namespace
}  // namespace cs_codec_test
