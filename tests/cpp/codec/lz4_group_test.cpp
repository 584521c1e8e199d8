// The blosc warp's groups of short LZ4 sequences (codec/logic/lz4_group.hpp) run on the host lane
// by lane, lanes in reverse order (a round that let a match read what a lower lane writes in
// the same round would give wrong bytes here), through an emulation of the device's output ring
// (a slot reused too early gives wrong bytes too), against liblz4 byte for byte and against the
// serial decoder status for status. Inputs and outputs are exact-size heap allocations, and
// each output starts filled with a constant.
#include <lz4.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "codec/logic/byte_shuffle.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_group.hpp"
#include "codec_test_util.hpp"
#include "liblz4_block.hpp"
#include "lz4_craft.hpp"
#include "lz4_serial.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

// Bytes past the staged ones that a wrong walk could reach.
constexpr std::size_t kLz4GroupSpanForTests = logic::kLz4GroupSpan;

// The device's bound: its 4 KiB ring less a group's output.
constexpr std::uint32_t kDeviceMaxOffset = 4096 - logic::kLz4GroupMaxOut;

struct Result {
  DecodeStatus status;
  Buf bytes;
  std::uint64_t grouped = 0;  // sequences decoded in groups
};

// ring_shift stands for the output's address modulo the device's ring (its slots follow it).
Result grouped(const Buf& in, std::size_t size, std::size_t window = 2048, std::uint32_t max_offset = kDeviceMaxOffset,
               std::uint32_t ring_shift = 0) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(in);
  // a fresh output that holds no earlier result (a decode must write every byte itself)
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size == 0 ? 1 : size]);
  std::memset(dst.get(), 0x5A, size == 0 ? 1 : size);
  Result r;
  r.status = logic::lz4_grouped_decode_host(src.get(), in.size(), dst.get(), size, window, max_offset, ring_shift,
                                            &r.grouped);
  r.bytes.assign(dst.get(), dst.get() + size);
  return r;
}

// LZ4 sequences in a block of `src`.
std::uint64_t count_sequences(const Buf& enc, std::size_t size) {
  DecodeStatus st;
  return lz4_token_positions(enc, size, &st).size();
}

// A chunk's bytes as blosc's byte shuffle leaves them (typesize 4): the dense byte planes.
Buf shuffled(const Buf& src) {
  Buf out(src.size());
  logic::shuffle_block(src.data(), out.data(), src.size(), 4);
  return out;
}

TEST(Lz4Group, MatchesLiblz4OnEveryDataKindAndLevel) {
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 1u, 15u, 300u, 4096u, 70001u, 300000u}) {
      const Buf plain = kind.make(n);
      for (const Buf& src : {plain, shuffled(plain)}) {
        for (int level : {0, 3, 12}) {
          const Buf enc = liblz4_block(src, level);
          for (std::size_t window : {2048u, 40u}) {
            for (std::uint32_t max_offset : {kDeviceMaxOffset, 7u}) {
              const Result r = grouped(enc, src.size(), window, max_offset, static_cast<std::uint32_t>(n % 16 + level));
              ASSERT_EQ(r.status, DecodeStatus::kOk) << kind.name << " " << n << " level " << level;
              ASSERT_TRUE(r.bytes == src) << kind.name << " " << n << " level " << level << " window " << window
                                          << " max offset " << max_offset;
            }
          }
        }
      }
    }
  }
}

// Byte planes of float fields are what the groups are for: most of their sequences go through
// groups (three quarters here; the others have length bytes, or far offsets whose source is not
// stored yet). Not a speed test: a check that the path is taken at all. Small windows, restaged
// before nearly every group, still group as many: the restage keeps groups from being cut
// short near a window's end.
TEST(Lz4Group, TakesMostSequencesOfShuffledFloatFields) {
  const Buf src = shuffled(climate_bytes(512 * 1024));
  const Buf enc = liblz4_block(src, 0);
  const Result r = grouped(enc, src.size());
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  ASSERT_TRUE(r.bytes == src);
  const std::uint64_t all = count_sequences(enc, src.size());
  EXPECT_GT(all, 1000u);
  EXPECT_GT(r.grouped, all * 7 / 10) << r.grouped << " of " << all;
  for (std::size_t window : {64u, 600u}) {
    const Result small = grouped(enc, src.size(), window);
    ASSERT_EQ(small.status, DecodeStatus::kOk);
    ASSERT_TRUE(small.bytes == src);
    EXPECT_GE(small.grouped, r.grouped * 9 / 10) << "window " << window;
  }
}

// The walk's bound: a group reads nothing at or past the end of the staged bytes it is given,
// whatever lies there. Each group start (a token of a real stream) is run with the staged bytes
// followed by two different fillers; both runs must decode the same sequences to the same
// bytes, which are the stream's own. Staged lengths from 1 to 700 bytes past the start cover
// walks of 0 to 32 steps, whole chunks and single steps.
TEST(Lz4Group, TheWalkReadsNothingPastTheStagedBytes) {
  // sequences of 10-14 literals (walk steps of 13-17 bytes, near the bound of 18), now and then
  // one with a length byte
  std::mt19937 rng(5);
  Lz4Crafter c;
  c.rng.seed(5);
  c.sequence(70, 3, 10);
  for (int i = 0; i < 4000; ++i) {
    const std::size_t lit = rng() % 50 == 0 ? 15 + rng() % 20 : 10 + rng() % 5;
    c.sequence(lit, 1 + rng() % 64, 4 + rng() % 15);
  }
  const Buf enc = c.finish(16);
  const Buf src = liblz4_decode(enc, c.out);
  // every token's input and output position
  DecodeStatus parsed;
  const auto tokens = lz4_token_positions(enc, src.size(), &parsed);
  ASSERT_EQ(parsed, DecodeStatus::kOk);
  // a flat output: every position below the group's start holds its decoded byte and is stored
  struct FlatOut {
    std::uint8_t* o;
    std::uint8_t* span(std::uint32_t q, std::uint32_t) const { return o + q; }
    std::uint8_t& operator()(std::uint32_t q) const { return o[q]; }
    const std::uint8_t* stored(std::uint32_t q) const { return o + q; }
  };
  std::uint64_t decoded = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const auto [ip, op] = tokens[rng() % (tokens.size() - 1)];
    const std::uint32_t r = rng() % 16;  // the token's index in the window
    if (ip < r) continue;
    const std::uint32_t staged = 1 + rng() % 700;
    const std::uint32_t wlen = static_cast<std::uint32_t>(std::min<std::size_t>(r + staged, enc.size() - (ip - r)));
    std::uint32_t n[2], next_r[2], next_op[2];
    Buf out[2];
    for (int filler = 0; filler < 2; ++filler) {
      // filler 0: zeros (a token of offset 0, never a group sequence); filler 1: sequences of
      // no literals and 4 match bytes at offset 1, which a walk past the staged bytes would take
      Buf window(wlen + kLz4GroupSpanForTests, 0x00);
      if (filler == 1)
        for (std::size_t k = wlen; k < window.size(); ++k) window[k] = (k - wlen) % 3 == 1 ? 0x01 : 0x00;
      std::memcpy(window.data(), enc.data() + ip - r, wlen);
      out[filler].assign(src.size() + 64, 0x5A);
      std::memcpy(out[filler].data(), src.data(), op);
      logic::Lz4GroupHostLanes lanes;
      FlatOut fo{out[filler].data()};
      n[filler] = logic::lz4_group_decode(lanes, window.data(), r, wlen, static_cast<std::uint32_t>(op),
                                          static_cast<std::uint32_t>(src.size()), 65535u,
                                          static_cast<std::uint32_t>(op), fo, &next_r[filler], &next_op[filler]);
    }
    ASSERT_EQ(n[0], n[1]) << "trial " << trial;
    if (n[0] == 0) continue;
    ASSERT_EQ(next_r[0], next_r[1]);
    ASSERT_EQ(next_op[0], next_op[1]);
    ASSERT_TRUE(out[0] == out[1]) << "trial " << trial;
    ASSERT_TRUE(std::equal(src.begin() + static_cast<std::ptrdiff_t>(op), src.begin() + next_op[0],
                           out[0].begin() + static_cast<std::ptrdiff_t>(op)))
        << "trial " << trial;
    ASSERT_LE(next_r[0], wlen);
    decoded += n[0];
  }
  EXPECT_GT(decoded, 10000u);
}

// A match that overlaps itself repeats its `offset` source bytes: every offset below every
// length a group sequence can have, at both ends of a buffer exactly as long as the bytes read
// and written (the ASan build checks the bounds).
TEST(Lz4Group, PeriodicCopyRepeatsTheSourceBytes) {
  for (std::uint32_t n = 4; n <= logic::kLz4GroupMaxMatch; ++n) {
    for (std::uint32_t o = 1; o < n; ++o) {
      const std::unique_ptr<std::uint8_t[]> buf(new std::uint8_t[o + n]);
      for (std::uint32_t k = 0; k < o; ++k) buf[k] = static_cast<std::uint8_t>(0x30 + k * 7);
      std::memset(buf.get() + o, 0xEE, n);
      logic::lz4_group_copy_periodic<logic::kLz4GroupMaxMatch>(n, o, buf.get(), buf.get() + o);
      for (std::uint32_t j = 0; j < n; ++j) ASSERT_EQ(buf[o + j], buf[j % o]) << "n " << n << " o " << o << " j " << j;
    }
  }
}

// Hand-made groups: short literals and matches with offsets 1..64, so that matches read bytes
// that earlier matches of the same group write (chains over several rounds, overlapping
// matches, sources between two pending matches), among occasional far and long sequences that
// end groups.
TEST(Lz4Group, DependentMatchesInsideAGroupMatchLiblz4) {
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    Lz4Crafter c;
    c.rng.seed(seed);
    c.sequence(70, 3, 10);
    for (int i = 0; i < 3000; ++i) {
      // literal runs of 15 and more have a length byte: the walk steps over them and stops
      const std::size_t lit = rng() % 40 == 0 ? 15 + rng() % 30 : rng() % 4 == 0 ? rng() % 15 : rng() % 3;
      const std::size_t r = rng() % 100;
      std::size_t off = r < 60 ? 1 + rng() % 24 : r < 95 ? 1 + rng() % 64 : 1 + rng() % 4000;
      const std::size_t mlen = r % 23 == 0 ? 19 + rng() % 300 : 4 + rng() % 15;
      if (off > c.out + lit) off = c.out + lit;
      c.sequence(lit, off, mlen);
    }
    const Buf enc = c.finish(16);  // LZ4's end rules: the last match starts >= 12 bytes before the end
    const std::size_t size = c.out;
    const Buf ref = liblz4_decode(enc, size);
    for (std::size_t window : {2048u, 64u}) {
      const Result r = grouped(enc, size, window, kDeviceMaxOffset, seed * 7);
      ASSERT_EQ(r.status, DecodeStatus::kOk) << "seed " << seed;
      ASSERT_TRUE(r.bytes == ref) << "seed " << seed << " window " << window;
      EXPECT_GT(r.grouped, 1000u);
    }
  }
}

// The ring's bound: offsets just past the device's (3072 < offset <= 4000) whose sources may
// share a ring slot with what the same group has just written. The device's bound decodes
// them right; allowing them in groups (max_offset 4000) reads reused slots, and the host's
// ring shows it as wrong bytes (a check that the host run can see a ring violation at all).
TEST(Lz4Group, TheRingBoundIsNeededAndEnough) {
  bool wrong_past_the_bound = false;
  for (std::uint32_t seed = 1; seed <= 8; ++seed) {
    std::mt19937 rng(seed);
    Lz4Crafter c;
    c.rng.seed(seed);
    c.sequence(4100, 3, 10);
    for (int i = 0; i < 4000; ++i) {
      const std::size_t lit = rng() % 15;
      const std::size_t off = rng() % 3 == 0 ? 1 + rng() % 64 : 3073 + rng() % 928;
      c.sequence(lit, off, 4 + rng() % 15);
    }
    const Buf enc = c.finish(16);
    const Buf ref = liblz4_decode(enc, c.out);
    const Result ok = grouped(enc, c.out, 2048, kDeviceMaxOffset, seed);
    ASSERT_EQ(ok.status, DecodeStatus::kOk);
    ASSERT_TRUE(ok.bytes == ref) << "seed " << seed;
    const Result past = grouped(enc, c.out, 2048, 4000, seed);
    if (past.status != DecodeStatus::kOk || !(past.bytes == ref)) wrong_past_the_bound = true;
  }
  EXPECT_TRUE(wrong_past_the_bound);
}

// Damaged blocks: the serial decoder's status (the group leaves a failing sequence to the
// general parse), and its bytes whenever that succeeds. Never a read or write outside the
// exact-size buffers (the ASan build checks).
TEST(Lz4Group, DamagedBlocksGiveTheSerialStatus) {
  std::mt19937 rng(11);
  const Buf src = shuffled(climate_bytes(40000));
  const Buf enc = liblz4_block(src, 0);
  for (int trial = 0; trial < 400; ++trial) {
    Buf bad = enc;
    const int kind = trial % 4;
    if (kind == 0) {
      bad.resize(rng() % bad.size());
    } else {
      for (int k = 0; k < 1 + trial % 5; ++k) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
    }
    const std::size_t size = kind == 3 ? src.size() - 1 - rng() % 100 : src.size();
    const Result r = grouped(bad, size, trial % 2 ? 2048 : 40, kDeviceMaxOffset, static_cast<std::uint32_t>(trial));
    ASSERT_EQ(r.status, lz4_serial_status(bad, size)) << "trial " << trial;
    if (r.status == DecodeStatus::kOk) {
      Buf ref(size);
      logic::Lz4SerialCopier copy;
      ASSERT_EQ(logic::lz4_decode_exact_with(bad.data(), bad.size(), ref.data(), size, copy), DecodeStatus::kOk);
      ASSERT_TRUE(r.bytes == ref) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace cs_codec_test
