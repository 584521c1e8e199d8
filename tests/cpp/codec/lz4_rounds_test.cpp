// numcodecs LZ4 in rounds of readiness (codec/logic/lz4_rounds.hpp), run on the host: a block
// the rounds take decodes to liblz4's bytes, they take no block the serial decoder refuses, and
// their pieces (a thread's word copy, the done bitmap) match plain byte loops.
#include <lz4.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/logic/lz4_rounds.hpp"
#include "codec/logic/lz4_rounds_host.hpp"
#include "codec_test_util.hpp"
#include "liblz4_block.hpp"
#include "lz4_serial.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

struct Rounds {
  logic::Lz4RoundsRun run;
  Buf bytes;
};

template <std::uint32_t Batch = logic::kLz4RoundBatch>
Rounds rounds_decode(const Buf& enc, std::size_t size, std::uint32_t region, bool last_first = false,
                     bool records = false) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(enc);
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size == 0 ? 1 : size]);
  std::fill(dst.get(), dst.get() + size, std::uint8_t{0xA5});
  Rounds r;
  r.run = logic::lz4_rounds_decode_host<Batch>(src.get(), static_cast<std::uint32_t>(enc.size()), dst.get(),
                                        static_cast<std::uint32_t>(size), region, last_first, records);
  r.bytes.assign(dst.get(), dst.get() + size);
  return r;
}

// Every data kind, level and size, regions from 64 bytes to the device's default: where the
// rounds take a block, its bytes are liblz4's; with the default regions they take every block
// no larger than its output whose split walk finds a fixed point (a nearly incompressible
// field's long literal runs can keep guessed chains off the true one for more than
// kLz4SplitRounds rounds; those larger than their output are left alone, as by the split walk).
// The emit from the walks' sequence records takes the same blocks, to the same bytes, in the
// same rounds.
TEST(Lz4Rounds, DecodesEveryKindAsLiblz4) {
  std::size_t taken = 0, runs = 0;
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {1u, 15u, 300u, 4096u, 70001u, 1100000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 9}) {
        const Buf enc = liblz4_block(src, level);
        const bool worth =
            logic::lz4_split_worth(static_cast<std::uint32_t>(enc.size()), static_cast<std::uint32_t>(src.size()));
        for (std::uint32_t region : {64u, 1000u, logic::kLz4RoundsRegionMin}) {
          const std::string what = std::string(kind.name) + " " + std::to_string(n) + " level " +
                                   std::to_string(level) + " region " + std::to_string(region);
          const Rounds r = rounds_decode(enc, src.size(), region, (n + level) % 2 == 1);
          if (!worth) EXPECT_FALSE(r.run.accepted) << what;
          if (region == logic::kLz4RoundsRegionMin && worth)
            EXPECT_TRUE(r.run.accepted || r.run.walk_rounds == logic::kLz4SplitRounds) << what;
          if (r.run.accepted) ASSERT_TRUE(r.bytes == src) << what;
          const Rounds q = rounds_decode(enc, src.size(), region, (n + level) % 2 == 1, true);
          ASSERT_EQ(q.run.accepted, r.run.accepted) << what << ", sequence records";
          if (q.run.accepted) {
            ASSERT_TRUE(q.bytes == src) << what << ", sequence records";
            EXPECT_EQ(q.run.rounds, r.run.rounds) << what << ", sequence records";
          }
          taken += r.run.accepted;
          ++runs;
        }
      }
    }
  }
  EXPECT_GT(3 * taken, runs);
}

// A 4 MiB quantised field in 256 regions: taken, liblz4's bytes, and far fewer rounds than
// matches (the dependency depth, not the chain of sequences, sets them).
TEST(Lz4Rounds, QuantisedFieldOfFourMebibytesTakesFewRounds) {
  const Buf src = quantised_bytes(std::size_t{4} << 20);
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (int form = 0; form < 4; ++form) {
      const bool last_first = form % 2 == 1;  // batches of 8 records a test (the default) or 1
      const bool records = level == 9;  // the emit from the walks' sequence records
      const Rounds r = form < 2 ? rounds_decode(enc, src.size(), logic::kLz4RoundsRegionMin, last_first, records)
                                : rounds_decode<1>(enc, src.size(), logic::kLz4RoundsRegionMin, last_first, records);
      ASSERT_TRUE(r.run.accepted) << level;
      EXPECT_EQ(r.run.regions, logic::kLz4SplitMaxRegions);
      ASSERT_TRUE(r.bytes == src) << level;
      if (!last_first && form >= 2) EXPECT_EQ(r.run.rounds, 1u);  // each region sees the ones before
      if (last_first) EXPECT_GT(r.run.rounds, 1u);   // matches that read a predecessor's wait
      EXPECT_LT(r.run.rounds, 2000u) << level;
      std::printf("rounds: level %d, %s, batch %u, %u regions, %u walk rounds, %u rounds, %llu ready tests\n", level,
                  last_first ? "last first" : "in order", form < 2 ? logic::kLz4RoundBatch : 1u, r.run.regions, r.run.walk_rounds, r.run.rounds,
                  static_cast<unsigned long long>(r.run.tests));
    }
  }
}

// Damaged and cut blocks and wrong sizes: the rounds take none the serial decoder refuses, and
// what they take decodes to liblz4's bytes.
TEST(Lz4Rounds, TakeNoBlockTheSerialDecoderRefuses) {
  const Buf src = quantised_bytes(120000);
  std::mt19937 rng(71);
  for (int level : {0, 9}) {
    const Buf enc = liblz4_block(src, level);
    for (std::size_t cut = 0; cut < enc.size(); cut += (cut < 64 ? 1 : 97)) {
      const Buf in(enc.begin(), enc.begin() + cut);
      ASSERT_FALSE(rounds_decode(in, src.size(), 512, false, cut % 2 == 1).run.accepted) << "cut " << cut;
    }
    for (int trial = 0; trial < 3000; ++trial) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      const std::uint32_t region = trial % 2 == 0 ? 512u : 97u;
      const DecodeStatus want = lz4_serial_status(bad, size);
      const bool records = trial % 16 < 8;  // the emit from sequence records, or walking again
      const Rounds r = trial % 8 < 4 ? rounds_decode(bad, size, region, trial % 4 < 2, records)
                                     : rounds_decode<1>(bad, size, region, trial % 4 < 2, records);
      // the other emit takes the same blocks (an offset past a stopped walk's part is refused by
      // the records' emit where the emit walk's split walk refuses it)
      ASSERT_EQ(rounds_decode(bad, size, region, trial % 4 < 2, !records).run.accepted, r.run.accepted)
          << "trial " << trial;
      if (!r.run.accepted) continue;
      ASSERT_EQ(want, DecodeStatus::kOk) << "trial " << trial;
      Buf ref(size);
      ASSERT_EQ(LZ4_decompress_safe(reinterpret_cast<const char*>(bad.data()), reinterpret_cast<char*>(ref.data()),
                                    static_cast<int>(bad.size()), static_cast<int>(size)),
                static_cast<int>(size));
      ASSERT_TRUE(r.bytes == ref) << "trial " << trial;
    }
  }
}

// A thread's copy: every destination alignment, source distance 1-40 before it (overlapping
// ones repeat their bytes) and length 0-100, with words where the caller may ask for them
// (distance >= 8) and without, against a byte loop; and a literal copy from another buffer with
// the source's bounds tight around the bytes it copies.
TEST(Lz4Rounds, ThreadCopyMatchesAByteLoop) {
  std::mt19937 rng(5);
  for (std::size_t dist = 1; dist <= 40; ++dist) {
    for (std::size_t n = 0; n <= 100; ++n) {
      for (std::size_t at = 40; at < 44; ++at) {
        Buf want(200), got;
        for (auto& b : want) b = static_cast<std::uint8_t>(rng());
        got = want;
        for (std::size_t i = 0; i < n; ++i) want[at + i] = want[at - dist + i];
        logic::lz4_thread_copy(got.data() + at, got.data() + at - dist, n, dist >= 8, got.data(),
                               got.data() + got.size());
        ASSERT_TRUE(got == want) << "dist " << dist << " n " << n << " at " << at;
      }
    }
  }
  for (std::size_t n = 0; n <= 64; ++n) {
    for (std::size_t s = 0; s < 4; ++s) {
      for (std::size_t d = 0; d < 4; ++d) {
        Buf in(n + 8), out(n + 8, 0), want(n + 8, 0);
        for (auto& b : in) b = static_cast<std::uint8_t>(rng());
        std::copy(in.begin() + s, in.begin() + s + n, want.begin() + d);
        logic::lz4_thread_copy(out.data() + d, in.data() + s, n, true, in.data() + s, in.data() + s + n);
        ASSERT_TRUE(out == want) << n << " " << s << " " << d;
      }
    }
  }
}

// The records walk (lz4_region_walk_records) against a plain walk from the same entry: chains
// of up to six walks of a region, each from a random byte, from a token the last walk parsed or
// from a few bytes before one (so that many stop where they meet the last chain, with the new
// records moved down, the kept ones moved up, or no room), with slots from a handful to the
// bound, of valid, damaged and 0xFF-run blocks: the same exit, output bytes, last flag, checks
// and failure end, a need no larger (the same where the walk did not stop), and exactly the
// plain walk's records in order in the run (or `over` where they do not fit); the literal start
// of each record is where a parse of its token puts it.
TEST(Lz4Rounds, RecordWalksKeepThePlainWalksSequences) {
  struct Plain {
    logic::Lz4RegionWalk w;
    std::vector<logic::Lz4RoundSeq> seqs;
  };
  const auto no_mark = [](std::uint32_t, std::uint32_t, std::uint32_t) {};
  std::mt19937 rng(17);
  std::size_t stops = 0, walks = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::size_t n_src = 16 + rng() % 3000;
    const int kind = static_cast<int>(rng() % 3);
    Buf src = kind == 0 ? quantised_bytes(n_src) : kind == 1 ? climate_bytes(n_src) : random_bytes(n_src, rng());
    if (trial % 7 == 0)
      for (auto& b : src) b = static_cast<std::uint8_t>(rng() % 4);
    Buf enc = liblz4_block(src, trial % 2 == 0 ? 0 : 9);
    const int flips = static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) enc[rng() % enc.size()] = trial % 3 == 0 ? 0xFF : static_cast<std::uint8_t>(rng());
    const auto n = static_cast<std::uint32_t>(enc.size());
    const std::uint32_t begin = rng() % n, end = trial % 4 == 0 ? n : begin + 1 + rng() % (n - begin);
    const std::uint32_t bytes = end - begin;
    const std::uint32_t slots = trial % 3 == 0 ? 1 + rng() % (bytes / 3 + 1) : bytes / 3 + 1 + rng() % 3;
    std::vector<logic::Lz4RoundSeq> rec(slots, logic::Lz4RoundSeq{~0u, ~0u, ~0u, ~0u});
    logic::Lz4RegionRecords kept;
    logic::Lz4RegionWalk last{};
    std::vector<logic::Lz4RoundSeq> prev;
    const int chain = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < chain; ++k) {
      std::uint32_t e = begin + rng() % (bytes + 2);
      if (!prev.empty() && rng() % 3 != 0) {
        const std::uint32_t t = prev[rng() % prev.size()].tok, back = rng() % 8;
        e = rng() % 2 == 0 ? t : t >= begin + back ? t - back : begin;
      }
      e = std::min(e, n);
      Plain plain;
      plain.w = logic::lz4_region_walk(
          enc.data(), n, e, end, no_mark,
          [&](std::uint32_t ip, std::uint32_t lit, std::uint32_t off, std::uint32_t mlen) {
            plain.seqs.push_back(logic::Lz4RoundSeq{ip, lit, off, mlen});
          },
          [](std::uint32_t) { return false; });
      const logic::Lz4RegionWalk w =
          logic::lz4_region_walk_records(enc.data(), n, e, end, rec.data(), slots, &kept, k == 0 ? nullptr : &last);
      const std::string what = "trial " + std::to_string(trial) + " walk " + std::to_string(k);
      ++walks;
      stops += w.stopped;
      ASSERT_EQ(w.exit, plain.w.exit) << what;
      ASSERT_EQ(w.out, plain.w.out) << what;
      ASSERT_EQ(w.last, plain.w.last) << what;
      ASSERT_EQ(w.ok, plain.w.ok) << what;
      ASSERT_EQ(w.fail_end, plain.w.fail_end) << what;
      ASSERT_LE(w.need, plain.w.need) << what;
      if (!w.stopped) ASSERT_EQ(w.need, plain.w.need) << what;
      ASSERT_EQ(kept.over, plain.seqs.size() > slots) << what;
      if (!kept.over) {
        ASSERT_LE(kept.a0, kept.a1) << what;
        ASSERT_LE(kept.a1, slots) << what;
        ASSERT_EQ(kept.a1 - kept.a0, plain.seqs.size()) << what;
        for (std::size_t i = 0; i < plain.seqs.size(); ++i) {
          const logic::Lz4RoundSeq a = rec[kept.a0 + i], b = plain.seqs[i];
          ASSERT_TRUE(a.tok == b.tok && a.lit == b.lit && a.off == b.off && a.mlen == b.mlen) << what << " record " << i;
          std::size_t at = b.tok + 1, lit = enc[b.tok] >> 4;
          if (lit == 15) {
            std::uint8_t more;
            do {
              more = enc[at++];
              lit += more;
            } while (more == 255);
          }
          ASSERT_EQ(logic::lz4_seq_lit_at(b), at) << what << " record " << i;
          ASSERT_EQ(b.lit, lit) << what << " record " << i;
        }
      }
      last = w;
      prev = plain.seqs;
    }
  }
  EXPECT_GT(stops * 5, walks);  // the stops are exercised, not only full walks
}

// The done bitmap: marks over every range of a 200-byte span set exactly those bits, and the
// range test agrees with a byte map.
TEST(Lz4Rounds, BitmapMarksAndTestsExactRanges) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<std::uint32_t> words(8, 0);
    std::vector<bool> bytes(256, false);
    logic::Lz4HostBits bits{words.data()};
    for (int m = 0; m < 6; ++m) {
      const std::uint32_t a = rng() % 256, e = a + rng() % (257 - a);
      logic::lz4_bits_mark(bits, a, e);
      for (std::uint32_t i = a; i < e; ++i) bytes[i] = true;
    }
    for (std::uint32_t i = 0; i < 256; ++i) ASSERT_EQ(((words[i / 32] >> (i % 32)) & 1u) != 0, bytes[i]) << i;
    for (int q = 0; q < 50; ++q) {
      const std::uint32_t a = rng() % 256, e = a + rng() % (257 - a);
      const bool want = std::all_of(bytes.begin() + a, bytes.begin() + e, [](bool b) { return b; });
      ASSERT_EQ(logic::lz4_bits_all(bits, a, e), want) << a << " " << e;
    }
  }
}

}  // namespace
}  // namespace cs_codec_test
