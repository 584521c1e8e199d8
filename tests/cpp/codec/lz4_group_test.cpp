// The blosc warp's groups of short LZ4 sequences (codec/logic/lz4_group.hpp) run on the host lane
// by lane, lanes in reverse order (a round that let a match read what a lower lane writes in
// the same round would give wrong bytes here), through an emulation of the device's output ring
// (a slot reused too early gives wrong bytes too), against liblz4 byte for byte and against the
// serial decoder status for status. Inputs and outputs are exact-size heap allocations, and
// each output starts filled with a constant.
#include <lz4.h>

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

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::DecodeStatus;

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

DecodeStatus serial(const Buf& in, std::size_t size) {
  Buf out(size);
  logic::Lz4SerialCopier copy;
  return logic::lz4_decode_exact_with(in.data(), in.size(), out.data(), size, copy);
}

// LZ4 sequences in a block of `src`.
std::uint64_t count_sequences(const Buf& enc, std::size_t size) {
  std::size_t ip = 0, op = 0;
  std::uint64_t n = 0;
  const std::uint8_t* in = enc.data();
  for (;;) {
    logic::Lz4Sequence s;
    bool last = false;
    if (logic::lz4_read_sequence(in, enc.size(), &ip, op, size, &s, &last) != DecodeStatus::kOk) return n;
    ++n;
    op += s.lit_len + s.match_len;
    if (last) return n;
  }
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
// groups (three quarters here; the others have length bytes, far offsets whose source is not
// stored yet, or offset bytes past the staged window). Not a speed test: a check that the path
// is taken at all.
TEST(Lz4Group, TakesMostSequencesOfShuffledFloatFields) {
  const Buf src = shuffled(climate_bytes(512 * 1024));
  const Buf enc = liblz4_block(src, 0);
  const Result r = grouped(enc, src.size());
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  ASSERT_TRUE(r.bytes == src);
  const std::uint64_t all = count_sequences(enc, src.size());
  EXPECT_GT(all, 1000u);
  EXPECT_GT(r.grouped, all * 7 / 10) << r.grouped << " of " << all;
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
    ASSERT_EQ(r.status, serial(bad, size)) << "trial " << trial;
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
