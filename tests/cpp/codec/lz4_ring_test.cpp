// The device's numcodecs-LZ4 decoder (codec/logic/lz4_ring.hpp: a 64 KiB output ring, batches
// of sequences with literals first, a lean fast parse) run on the host lane by lane, against
// liblz4 byte for byte and against the serial decoder status for status. Inputs and outputs are
// exact-size heap allocations (the ASan build reports any stray access).
#include <lz4.h>
#include <lz4hc.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_ring.hpp"
#include "codec_test_util.hpp"
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
};

// Ring decode from an exact-size copy of `in` into an exact-size output at `shift` bytes past a
// 16-byte aligned address (the ring's slots follow the output's alignment).
// *meetings (when given): the copier warp's meetings (lz4_ring_decode_host).
Result ring(const Buf& in, std::size_t size, std::size_t shift = 0, std::size_t window = 4096,
            std::uint64_t* meetings = nullptr) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(in);
  std::unique_ptr<std::uint8_t[]> dst(new std::uint8_t[size + shift + 1]);
  Result r;
  r.status = logic::lz4_ring_decode_host(src.get(), in.size(), dst.get() + shift, size, window, meetings);
  r.bytes.assign(dst.get() + shift, dst.get() + shift + size);
  return r;
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
    srcs.push_back(lz4_periodic_bytes(600000, period, rng));
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
      ASSERT_EQ(ring(in, src.size()).status, lz4_serial_status(in, src.size())) << "cut " << cut;
    }
    for (int trial = 0; trial < 3000; ++trial) {
      Buf bad = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
      const std::size_t size = trial % 3 == 0 ? src.size() / 2 : trial % 3 == 1 ? src.size() + 7 : src.size();
      const Result r = ring(bad, size, trial % 16);
      ASSERT_EQ(r.status, lz4_serial_status(bad, size)) << "trial " << trial;
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

// The walker's batches with and without bursts (Lz4RingWalker::burst): every batch head and
// record and the final status must be equal, batch by batch. Input in an exact-size copy.
void expect_same_batches(const Buf& in, std::size_t size, const char* what, logic::Lz4BurstRule rule = {}) {
  const std::unique_ptr<std::uint8_t[]> src = exact_copy(in);
  const auto n_in = static_cast<std::uint32_t>(in.size());
  const auto n_out = static_cast<std::uint32_t>(size);
  std::vector<std::uint8_t> win_a(4096), win_b(4096);
  std::vector<std::uint16_t> table(logic::kLz4BurstBytes);
  using Walker = logic::Lz4RingWalker<logic::Lz4MemcpyFill, logic::Lz4HostLanes>;
  Walker one{n_in, n_out, logic::Lz4StagedReader<logic::Lz4MemcpyFill>{src.get(), in.size(), win_a.data(), 4096, {}}, {}};
  Walker burst{n_in, n_out, logic::Lz4StagedReader<logic::Lz4MemcpyFill>{src.get(), in.size(), win_b.data(), 4096, {}},
               {}};
  burst.burst_table = table.data();
  burst.burst_rule = rule;
  logic::Lz4BatchSeq sa[logic::kLz4BatchMax], sb[logic::kLz4BatchMax];
  for (int batch = 0;; ++batch) {
    logic::Lz4BatchHead ha{}, hb{};
    const bool da = one.walk(&ha, sa), db = burst.walk(&hb, sb);
    ASSERT_EQ(da, db) << what << " batch " << batch;
    ASSERT_EQ(ha.n, hb.n) << what << " batch " << batch;
    ASSERT_EQ(ha.b0, hb.b0) << what << " batch " << batch;
    ASSERT_EQ(ha.end, hb.end) << what << " batch " << batch;
    ASSERT_EQ(ha.flags, hb.flags) << what << " batch " << batch;
    if (!(ha.flags & logic::kLz4BatchError)) {
      for (std::uint32_t j = 0; j < ha.n; ++j) {
        ASSERT_EQ(sa[j].lit_src, sb[j].lit_src) << what << " batch " << batch << " record " << j;
        ASSERT_EQ(sa[j].lit_len, sb[j].lit_len) << what << " batch " << batch << " record " << j;
        ASSERT_EQ(sa[j].op, sb[j].op) << what << " batch " << batch << " record " << j;
        ASSERT_EQ(sa[j].off, sb[j].off) << what << " batch " << batch << " record " << j;
        ASSERT_EQ(sa[j].mlen, sb[j].mlen) << what << " batch " << batch << " record " << j;
      }
    }
    if (da) break;
  }
  ASSERT_EQ(one.status, burst.status) << what;
}

// The burst table's branch-free next-token (lz4_fast_next) against the fast path's shape, at
// every position of random windows whose tokens and length bytes lean to the edge values (15
// nibbles, 254 and 255 length bytes) and at every remaining-input count around each sequence.
TEST(Lz4Ring, BurstTableAgreesWithTheFastShape) {
  std::mt19937 rng(11);
  const std::uint8_t edges[] = {0x00, 0x0F, 0xF0, 0xFF, 0xEF, 0xFE, 254, 255, 1, 16};
  for (int trial = 0; trial < 200; ++trial) {
    Buf win(logic::kLz4FastSpan + 64);
    for (auto& b : win) b = rng() % 3 == 0 ? edges[rng() % std::size(edges)] : static_cast<std::uint8_t>(rng());
    for (std::uint32_t r = 0; r < 64; ++r) {
      for (std::uint32_t left : {0u, 1u, 3u, 17u, 100u, 270u, 271u, 272u, 273u, 274u, 275u, 276u, 1000u}) {
        logic::Lz4FastShape f;
        const std::uint32_t in_size = 5000;  // ip = in_size - left
        const bool ok = logic::lz4_fast_shape(win.data() + r, in_size - left, in_size, &f);
        ASSERT_EQ(logic::lz4_fast_next(win.data() + r, left), ok ? f.size : 0u)
            << "trial " << trial << " position " << r << " left " << left;
      }
    }
  }
}

TEST(Lz4Ring, BurstsMakeTheSameBatches) {
  std::mt19937 rng(3);
  for (const auto& kind : kDataKinds) {
    for (std::size_t n : {0u, 300u, 5000u, 70001u, 300000u}) {
      const Buf src = kind.make(n);
      for (int level : {0, 3, 12}) {
        const Buf enc = liblz4_block(src, level);
        const std::string what = std::string(kind.name) + " " + std::to_string(n) + " level " + std::to_string(level);
        expect_same_batches(enc, src.size(), what.c_str());
        // when bursts are tried changes the work, never the batches: always (no misses, no
        // waits), seldom (everything short of a full batch is a miss) and a wait of one
        expect_same_batches(enc, src.size(), (what + " always").c_str(), {0, 0});
        expect_same_batches(enc, src.size(), (what + " seldom").c_str(), {logic::kLz4BatchMax, 1024});
        expect_same_batches(enc, src.size(), (what + " wait 1").c_str(), {4, 1});
        // damaged: cut, bytes flipped, and the wrong decoded size
        if (enc.size() > 16) {
          expect_same_batches(Buf(enc.begin(), enc.begin() + enc.size() * 2 / 3), src.size(), (what + " cut").c_str());
          for (int trial = 0; trial < 20; ++trial) {
            Buf bad = enc;
            for (int f = 0; f < 3; ++f) bad[rng() % bad.size()] = static_cast<std::uint8_t>(rng());
            expect_same_batches(bad, src.size(), (what + " flipped").c_str(),
                                trial % 2 ? logic::Lz4BurstRule{} : logic::Lz4BurstRule{0, 0});
          }
          expect_same_batches(enc, src.size() - 1, (what + " short").c_str());
          expect_same_batches(enc, src.size() + 5, (what + " long").c_str());
        }
      }
    }
  }
}

// Long matches reaching back (nearly) the whole ring: lone sequences whose far pieces are
// staged through registers (lz4_ring_match_piece), next to offsets whose direct pieces were
// always wide, short offsets (the period path) and lengths around a staged piece's 512 bytes,
// the ring's size and megabytes, each ending 5 bytes before the output's end, at two output
// alignments (the ring's slots follow it).
TEST(Lz4Ring, CraftedLongMatchesAtFarOffsetsMatchLiblz4) {
  const std::size_t offsets[] = {65535, 65534, 65536 - 17, 65536 - 511, 65536 - 512, 65536 - 513, 40000,
                                 32769, 32768, 32767, 1000, 33, 32, 31, 7, 1};
  const std::size_t lengths[] = {4, 5, 16, 17, 100, 511, 512, 513, 1025, 65535, 65536, 70001, 1 << 20};
  for (const std::size_t off : offsets) {
    for (const std::size_t mlen : lengths) {
      // a match of fewer than 8 bytes must start 12 bytes before the end (liblz4's rule)
      const std::size_t tail = mlen < 8 ? 12 : 5;
      const Buf enc = lz4_far_match_block(off, mlen, off + 3, tail, static_cast<std::uint32_t>(off * 31 + mlen));
      const std::size_t size = off + 3 + mlen + tail;
      const Buf want = liblz4_decode(enc, size);
      for (std::size_t shift : {0u, 5u}) {
        const Result r = ring(enc, size, shift);
        ASSERT_EQ(r.status, DecodeStatus::kOk) << "off " << off << " len " << mlen;
        ASSERT_TRUE(r.bytes == want) << "off " << off << " len " << mlen << " shift " << shift;
      }
    }
  }
  // several megabytes, and a match that starts at output position 0's distance exactly
  for (const std::size_t off : {65535u, 65534u, 65519u, 40000u, 32769u}) {
    const std::size_t mlen = 3 * 1024 * 1024 + 7;
    const Buf enc = lz4_far_match_block(off, mlen, off, 5, static_cast<std::uint32_t>(off));
    const std::size_t size = off + mlen + 5;
    const Result r = ring(enc, size, 3);
    ASSERT_EQ(r.status, DecodeStatus::kOk) << "off " << off;
    ASSERT_TRUE(r.bytes == liblz4_decode(enc, size)) << "off " << off;
  }
}

// Every offset 1..65535 in one block (lz4_every_offset_block).
TEST(Lz4Ring, EveryOffsetMatchesLiblz4) {
  std::size_t size = 0;
  const Buf enc = lz4_every_offset_block(size);
  const Buf want = liblz4_decode(enc, size);
  for (std::size_t shift : {0u, 9u}) {
    const Result r = ring(enc, size, shift, shift == 0 ? 4096 : 296);
    ASSERT_EQ(r.status, DecodeStatus::kOk);
    ASSERT_TRUE(r.bytes == want) << "shift " << shift;
  }
}

// The pieces of a match: a staged piece is at most 32 x 16 bytes and never longer than the
// offset; a direct piece never reaches its own source's ring slots (len <= 64 Ki - off).
TEST(Lz4Ring, MatchPiecesKeepTheOverlapAndAliasingRules) {
  for (std::uint32_t off = 1; off <= 65535; ++off) {
    for (std::uint32_t left : {1u, 4u, 31u, 512u, 513u, 65536u - off, 65537u - off, 40000u, 1u << 20}) {
      const logic::Lz4MatchPiece p = logic::lz4_ring_match_piece(off, left);
      ASSERT_GE(p.len, 1u);
      ASSERT_LE(p.len, left);
      ASSERT_LE(p.len, logic::kLz4BatchBytes);
      if (off < logic::kLz4RingLanes) {
        ASSERT_FALSE(p.staged);
        ASSERT_TRUE(p.len == left || p.len % off == 0) << off;
      } else if (p.staged) {
        ASSERT_LE(p.len, off);
        ASSERT_LE(p.len, logic::kLz4StageBytes);
        ASSERT_GT(left, 65536u - off);  // staged only where a direct piece would be narrower
      } else {
        ASSERT_LE(p.len, off);
        ASSERT_LE(p.len, 65536u - off) << off << " " << left;
      }
    }
  }
}

// The phase count that staging fixes: a 1 MiB match at offset 65535 took one warp phase per
// byte (pieces of 64 Ki - off = 1 byte); staged it takes two phases per 512 bytes. Counted from
// the piece rule and from the host run's warp meetings (which add the lead literals and the
// flushes); no timing.
TEST(Lz4Ring, FarMatchTakesAPhasePerStagedPieceNotPerByte) {
  const std::uint64_t mib = 1 << 20;
  const std::uint64_t pieces = mib / logic::kLz4StageBytes;  // 2048
  EXPECT_EQ(logic::lz4_ring_match_phases(65535, mib), 2 * pieces);
  EXPECT_EQ(logic::lz4_ring_match_phases(65534, mib), 2 * pieces);
  // where 64 Ki - off is at least a staged piece, direct pieces stay: one phase each
  EXPECT_EQ(logic::lz4_ring_match_phases(65024, mib), pieces);
  EXPECT_EQ(logic::lz4_ring_match_phases(40000, mib), (mib + 25535) / 25536);
  EXPECT_EQ(logic::lz4_ring_match_phases(1, mib), mib / logic::kLz4BatchBytes);

  const Buf enc = lz4_far_match_block(65535, mib, 65535);
  const std::size_t size = 65535 + mib + 5;
  std::uint64_t meetings = 0;
  const Result r = ring(enc, size, 0, 4096, &meetings);
  ASSERT_EQ(r.status, DecodeStatus::kOk);
  ASSERT_TRUE(r.bytes == liblz4_decode(enc, size));
  EXPECT_GE(meetings, 2 * pieces);
  // + 2 meetings per 32 KiB of lead literals, one per flush of 64 Ki, the last flush
  EXPECT_LE(meetings, 2 * pieces + 64) << "one phase per byte would be " << mib;
}

}  // namespace
}  // namespace cs_codec_test
