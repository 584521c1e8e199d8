// The split walk of a numcodecs LZ4 block (codec/logic/lz4_split_walk.hpp: regions walked side by
// side from guessed entries, corrected in rounds until no entry moves), run on the host: it
// accepts exactly the blocks the serial decoder accepts (or declines them, and the table walk
// answers), its segments are the serial rule restarted at each region, and the decode through
// them matches liblz4 byte for byte.
#include <lz4.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments_host.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "codec_test_util.hpp"
#include "liblz4_block.hpp"
#include "lz4_serial.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Split {
  bool accepted = false;
  std::uint32_t rounds = 0;
  std::vector<logic::Lz4Segment> marks;
};

Split split_walk(const Buf& enc, std::size_t size, std::uint32_t region) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(enc);
  const auto in_n = static_cast<std::uint32_t>(enc.size()), out_n = static_cast<std::uint32_t>(size);
  const std::size_t bound = logic::lz4_segment_bound(in_n, out_n) + logic::lz4_split_extra_slots(in_n, region);
  Split s;
  std::uint32_t count = 0;
  s.accepted = logic::lz4_split_walk_host(
      src.get(), in_n, out_n, region, bound,
      [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) {
        EXPECT_EQ(k, s.marks.size());
        s.marks.push_back({ip, op});
      },
      &count, &s.rounds);
  if (s.accepted) {
    EXPECT_EQ(count, s.marks.size());
    EXPECT_LE(count, bound);
  }
  return s;
}

// The marks the split walk must give a valid block: lz4_mark_before's rule over the true chain,
// restarted at the first sequence of each region (the region its token lies in).
std::vector<logic::Lz4Segment> expected_marks(const Buf& enc, std::size_t size, std::uint32_t region) {
  DecodeStatus st = DecodeStatus::kOk;
  const auto tokens = lz4_token_positions(enc, size, &st);
  EXPECT_EQ(st, DecodeStatus::kOk);
  const logic::Lz4SplitShape shape = logic::lz4_split_shape(static_cast<std::uint32_t>(enc.size()), region);
  std::vector<logic::Lz4Segment> marks;
  logic::Lz4SegmentMarks m;
  std::size_t open_region = ~std::size_t{0};
  std::uint32_t k0 = 0;
  for (const auto& [ip, op] : tokens) {
    const std::size_t r = ip / shape.bytes;
    if (r != open_region) {  // a new region: the rule starts again, its segments numbered on
      k0 += m.count;
      m = logic::Lz4SegmentMarks{};
      open_region = r;
    }
    static_cast<void>(logic::lz4_mark_before(&m, static_cast<std::uint32_t>(ip), static_cast<std::uint32_t>(op),
                                             ~std::size_t{0}, [&](std::uint32_t k, std::uint32_t i, std::uint32_t o) {
                                               EXPECT_EQ(k0 + k, marks.size());
                                               marks.push_back({i, o});
                                             }));
  }
  return marks;
}

void expect_marks(const Split& s, const std::vector<logic::Lz4Segment>& want, const std::string& what) {
  ASSERT_EQ(s.marks.size(), want.size()) << what;
  for (std::size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(s.marks[k].in, want[k].in) << what << " mark " << k;
    ASSERT_EQ(s.marks[k].out, want[k].out) << what << " mark " << k;
  }
}

struct Decoded {
  DecodeStatus status;
  bool split;
  Buf bytes;
};

Decoded decode(const Buf& in, std::size_t size, std::uint32_t region) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(in);
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size == 0 ? 1 : size]);
  Decoded d{};
  d.status = logic::lz4_segments_decode_host(src.get(), in.size(), dst.get(), size, 8192, nullptr,
                                             logic::Lz4Walk::kTable, region, &d.split);
  d.bytes.assign(dst.get(), dst.get() + size);
  return d;
}

// Every data kind, level and size: the decode through the split walk gives liblz4's bytes, and
// where the split walk takes the block its marks are the rule restarted per region. It leaves
// blocks larger than their output (incompressible: lz4_split_worth) to the table walk; with the
// device's regions it takes every other block; regions down to 64 bytes cut even short blocks
// into many and may run out of rounds (then the table walk decodes).
TEST(Lz4SplitWalk, DecodesEveryKindAndTakesCompressibleBlocksWithTheRuleRestartedPerRegion) {
  std::size_t taken = 0, runs = 0;
  std::uint32_t rounds_max = 0;
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {1u, 15u, 300u, 4096u, 70001u, 1100000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 9}) {
        const Buf enc = liblz4_block(src, level);
        for (std::uint32_t region : {64u, 1000u, logic::kLz4SplitRegionFloor, logic::kLz4SplitRegionDefault}) {
          const std::string what = std::string(kind.name) + " " + std::to_string(n) + " level " +
                                   std::to_string(level) + " region " + std::to_string(region);
          const Split s = split_walk(enc, src.size(), region);
          if (s.accepted) expect_marks(s, expected_marks(enc, src.size(), region), what);
          const bool single = logic::lz4_split_shape(static_cast<std::uint32_t>(enc.size()), region).regions == 1;
          const bool worth = logic::lz4_split_worth(static_cast<std::uint32_t>(enc.size()),
                                                    static_cast<std::uint32_t>(src.size()));
          if (!worth) EXPECT_FALSE(s.accepted) << what;  // a block larger than its output is left alone
          if (single && worth) EXPECT_TRUE(s.accepted) << what;  // one region: its entry is the block's start
          if (region == logic::kLz4SplitRegionDefault && worth) {
            EXPECT_TRUE(s.accepted) << what;
            rounds_max = std::max(rounds_max, s.rounds);
          }
          const Decoded d = decode(enc, src.size(), region);
          ASSERT_EQ(d.status, DecodeStatus::kOk) << what;
          ASSERT_EQ(d.split, s.accepted) << what;
          ASSERT_TRUE(d.bytes == src) << what;
          taken += s.accepted;
          ++runs;
        }
      }
    }
  }
  EXPECT_GT(3 * taken, runs);  // (small blocks and random data are larger than their output)
  EXPECT_LE(rounds_max, logic::kLz4SplitRounds);
  std::printf("split walk: took %zu of %zu blocks, at most %u rounds with the device's regions\n", taken, runs,
              rounds_max);
}

// A 4 MiB float32 field, as the benchmark's era5-like chunks, in the device's regions: round 2
// finds every entry in place.
TEST(Lz4SplitWalk, ClimateChunkOfFourMebibytesTakesTwoRounds) {
  const Buf src = climate_bytes(std::size_t{4} << 20);
  const Buf enc = liblz4_block(src, 1);
  const logic::Lz4SplitShape shape =
      logic::lz4_split_shape(static_cast<std::uint32_t>(enc.size()), logic::kLz4SplitRegionDefault);
  EXPECT_EQ(shape.regions, (enc.size() + logic::kLz4SplitRegionDefault - 1) / logic::kLz4SplitRegionDefault);
  const Split s = split_walk(enc, src.size(), logic::kLz4SplitRegionDefault);
  ASSERT_TRUE(s.accepted);
  EXPECT_EQ(s.rounds, 1u);  // round 1 moved the entries, round 2 (not counted) changed nothing
  expect_marks(s, expected_marks(enc, src.size(), logic::kLz4SplitRegionDefault), "4 MiB");
  // every segment within the workers' bounds
  for (std::size_t k = 0; k + 1 < s.marks.size(); ++k) EXPECT_LE(s.marks[k + 1].out - s.marks[k].out, 2u * 16384u);
}

// Damaged and cut blocks and wrong sizes: the split walk accepts none that the serial decoder
// refuses, and the decode (split walk, table walk where it declines) gives the serial status and
// liblz4's bytes.
TEST(Lz4SplitWalk, DamagedBlocksGetTheSerialStatus) {
  const Buf src = quantised_bytes(120000);
  std::mt19937 rng(53);
  std::size_t declined = 0, trials = 0;
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 83)) {
      const Buf in(enc.begin(), enc.begin() + cut);
      const DecodeStatus want = lz4_serial_status(in, src.size());
      const Decoded d = decode(in, src.size(), 512);
      ASSERT_EQ(d.status, want) << "cut " << cut;
      ASSERT_FALSE(d.split) << "cut " << cut;  // a cut block never decodes to the full size
    }
    for (int trial = 0; trial < 3000; ++trial, ++trials) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      const std::uint32_t region = trial % 2 == 0 ? 512u : 97u;
      const DecodeStatus want = lz4_serial_status(bad, size);
      const Decoded d = decode(bad, size, region);
      ASSERT_EQ(d.status, want) << "trial " << trial;
      if (d.split) ASSERT_EQ(want, DecodeStatus::kOk) << "trial " << trial;
      declined += want == DecodeStatus::kOk && !d.split;
      if (want == DecodeStatus::kOk) {
        Buf ref(size);
        ASSERT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(bad.data()), reinterpret_cast<char*>(ref.data()),
                                      static_cast<int>(bad.size()), static_cast<int>(size)),
                  static_cast<int>(size));
        ASSERT_TRUE(d.bytes == ref) << "trial " << trial;
      }
    }
  }
  // the valid damaged blocks (a flipped literal byte) are taken by the split walk too
  EXPECT_EQ(declined, 0u) << "of " << trials;
}

// Offsets that reach back before a region's entry. A crafted block: L literals, then sequences
// of no literals and a 4-byte match at offset D, then 5 literals. The serial decoder accepts it
// iff D <= L (the first match starts at output L). A region walk from any of the matches reports
// need = D (its first match reaches D bytes before the region's output), and the regions' test
// accepts need_r <= B_r only.
TEST(Lz4SplitWalk, OffsetsAreCheckedAgainstTheOutputBeforeTheRegion) {
  const auto block = [](std::size_t lit, std::uint16_t off, std::size_t matches) {
    Buf b;
    b.push_back(0xF0);
    std::size_t l = lit - 15;
    for (; l >= 255; l -= 255) b.push_back(255);
    b.push_back(static_cast<std::uint8_t>(l));
    for (std::size_t i = 0; i < lit; ++i) b.push_back(static_cast<std::uint8_t>(i * 7 + 1));
    b.push_back(static_cast<std::uint8_t>(off & 255));
    b.push_back(static_cast<std::uint8_t>(off >> 8));
    for (std::size_t m = 0; m < matches; ++m) {
      b.push_back(0x00);
      b.push_back(static_cast<std::uint8_t>(off & 255));
      b.push_back(static_cast<std::uint8_t>(off >> 8));
    }
    b.push_back(0x50);  // the last sequence: 5 literals
    for (int i = 0; i < 5; ++i) b.push_back(static_cast<std::uint8_t>(i));
    return b;
  };
  const auto none = [](std::uint32_t, std::uint32_t, std::uint32_t) {};
  for (std::size_t lit : {20u, 300u, 5000u}) {
    for (std::uint16_t off : {std::uint16_t(1), std::uint16_t(lit), std::uint16_t(lit + 1)}) {
      const std::size_t matches = 2000;
      const Buf b = block(lit, off, matches);
      const std::size_t size = lit + 4 * (matches + 1) + 5;
      const DecodeStatus want = lz4_serial_status(b, size);
      ASSERT_EQ(want, off <= lit ? DecodeStatus::kOk : DecodeStatus::kCorrupt);
      // a region starting at the k-th short match: need = off
      const std::size_t head = 1 + (lit - 15) / 255 + 1 + lit + 2;
      for (std::size_t k : {0u, 1u, 777u}) {
        const auto entry = static_cast<std::uint32_t>(head + 3 * k);
        const logic::Lz4RegionWalk w =
            logic::lz4_region_walk(b.data(), static_cast<std::uint32_t>(b.size()), entry, entry + 30, none);
        EXPECT_TRUE(w.ok);
        EXPECT_EQ(w.need, off) << "lit " << lit << " k " << k;
        EXPECT_EQ(w.out, 40u);
        EXPECT_EQ(w.exit, entry + 30);
      }
      for (std::uint32_t region : {64u, 333u, 4096u}) {
        const Decoded d = decode(b, size, region);
        EXPECT_EQ(d.status, want) << "region " << region << " lit " << lit << " off " << off;
        if (d.split) EXPECT_EQ(want, DecodeStatus::kOk);
        if (want == DecodeStatus::kOk && region == 4096) EXPECT_TRUE(d.split) << "lit " << lit;
      }
    }
  }
  // the offset that reaches too far in the last of 400 short matches, by exactly one byte (and
  // the same block with it one byte nearer), at region sizes that put that match at many places
  for (const std::uint32_t too_far : {0u, 1u}) {
    const std::size_t lit = 40, matches = 400;
    Buf b = block(lit, 1, matches);
    const std::size_t op_last = lit + 4 * matches;  // output position of the last match
    const auto off = static_cast<std::uint16_t>(op_last + too_far);
    const std::size_t at = b.size() - 6 - 2;  // the last match's offset bytes
    b[at] = static_cast<std::uint8_t>(off & 255);
    b[at + 1] = static_cast<std::uint8_t>(off >> 8);
    const std::size_t size = lit + 4 * (matches + 1) + 5;
    const DecodeStatus want = lz4_serial_status(b, size);
    ASSERT_EQ(want, too_far ? DecodeStatus::kCorrupt : DecodeStatus::kOk);
    for (std::uint32_t region : {16u, 64u, 100u, 333u, 1000u}) {
      const Split sp = split_walk(b, size, region);
      EXPECT_EQ(sp.accepted && want != DecodeStatus::kOk, false) << "region " << region;
      // (below ~100 bytes the guessed chains through the 3-byte matches meet the true one too
      // late and the rounds run out; from 100 the valid block is taken, so the invalid one is
      // refused by its need alone)
      if (!too_far && region >= 100) EXPECT_TRUE(sp.accepted) << "region " << region;
      EXPECT_EQ(decode(b, size, region).status, want) << "region " << region;
    }
  }
  // the regions' test itself: need against the output before the region, the last sequence, the
  // total
  logic::Lz4RegionWalk w[3];
  w[0].out = 10;
  w[1].out = 20;
  w[1].need = 10;
  w[2].out = 5;
  w[2].need = 30;
  w[2].last = true;
  std::uint64_t base[3];
  EXPECT_TRUE(logic::lz4_split_accepts(w, 3, 35, base));
  EXPECT_EQ(base[1], 10u);
  EXPECT_EQ(base[2], 30u);
  EXPECT_FALSE(logic::lz4_split_accepts(w, 3, 36, base));  // the total
  w[2].need = 31;
  EXPECT_FALSE(logic::lz4_split_accepts(w, 3, 35, base));  // reaches before the output's start
  w[2].need = 30;
  w[2].last = false;
  EXPECT_FALSE(logic::lz4_split_accepts(w, 3, 35, base));  // no last sequence
  w[2].last = true;
  w[1].ok = false;
  EXPECT_FALSE(logic::lz4_split_accepts(w, 3, 35, base));  // a check failed
}

// A literal run spanning most regions: no true token lies inside them, so no guessed chain can
// meet the true one there, and the true entries travel one region a round. A block of 5 000
// literals, one long match and the last literals, in 256 regions of ~20 bytes: the rounds run out
// and the table walk decodes it; in two regions the split walk takes it.
TEST(Lz4SplitWalk, EntriesThatTravelARegionARoundRunOutOfRoundsAndTheTableWalkDecodes) {
  std::mt19937 rng(5);
  Buf b, src;
  const std::size_t lit = 5000, match = 3000;
  b.push_back(0xFF);  // 15 + length bytes literals, 15 + length bytes match
  std::size_t l = lit - 15;
  for (; l >= 255; l -= 255) b.push_back(255);
  b.push_back(static_cast<std::uint8_t>(l));
  for (std::size_t i = 0; i < lit; ++i) {
    src.push_back(static_cast<std::uint8_t>(rng()));
    b.push_back(src.back());
  }
  b.push_back(1);  // offset 1: the last literal repeated
  b.push_back(0);
  std::size_t m = match - 4 - 15;
  for (; m >= 255; m -= 255) b.push_back(255);
  b.push_back(static_cast<std::uint8_t>(m));
  src.insert(src.end(), match, src.back());
  b.push_back(0x50);
  for (int i = 0; i < 5; ++i) {
    src.push_back(static_cast<std::uint8_t>(i));
    b.push_back(static_cast<std::uint8_t>(i));
  }
  ASSERT_EQ(lz4_serial_status(b, src.size()), DecodeStatus::kOk);
  ASSERT_TRUE(logic::lz4_split_worth(static_cast<std::uint32_t>(b.size()), static_cast<std::uint32_t>(src.size())));
  const Split tiny = split_walk(b, src.size(), 1);
  EXPECT_FALSE(tiny.accepted);
  EXPECT_EQ(tiny.rounds, logic::kLz4SplitRounds);
  const Decoded d = decode(b, src.size(), 1);
  ASSERT_EQ(d.status, DecodeStatus::kOk);
  EXPECT_FALSE(d.split);
  ASSERT_TRUE(d.bytes == src);
  const Split two = split_walk(b, src.size(), 4096);
  ASSERT_TRUE(two.accepted);
  expect_marks(two, expected_marks(b, src.size(), 4096), "two regions");
  const Decoded d2 = decode(b, src.size(), 4096);
  EXPECT_TRUE(d2.split);
  ASSERT_TRUE(d2.bytes == src);
}

// A block of 255s where a numcodecs header promises as many bytes: every parse fails at the
// block's end after reading all the length bytes. Each region's walk reads them once (it goes on
// from where the failed parse stopped), so this takes milliseconds, not region x block steps.
TEST(Lz4SplitWalk, RunsOfLengthBytesAreReadOnceByAFailingWalk) {
  const Buf b(std::size_t{4} << 20, 255);
  const auto start = std::chrono::steady_clock::now();
  const Split s = split_walk(b, b.size(), logic::kLz4SplitRegionDefault);
  const double s_taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(s.accepted);
  EXPECT_LT(s_taken, 5.0);  // region x block steps would be ~1e11
  EXPECT_EQ(lz4_serial_status(b, b.size()), DecodeStatus::kCorrupt);
}

}  // namespace
}  // namespace cs_codec_test
