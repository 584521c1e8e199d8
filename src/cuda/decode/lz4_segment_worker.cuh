// A segment worker (one warp): takes pushed segments from the queue, parses each and copies its
// literals, then the matches that read only those literals (the own pass), then the others after
// the segment before (with pending bits, the ready pass first instead of the own pass).
// (A private part of cuda/decode/lz4_segments.cu: lz4_segments_private.cuh says what that means.)
#pragma once

#include "cuda/decode/lz4_segments_private.cuh"

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_literal_words.hpp"
#include "codec/logic/lz4_match_bits.hpp"
#include "codec/logic/lz4_match_words.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "cuda/decode/device_status.cuh"
#include "cuda/decode/lz4_segment_queue.cuh"
#include "cuda/decode/lz4_segments_config.cuh"
#include "cuda/decode/warp_copy.cuh"

namespace cubestream::cuda::detail {
namespace {

// A segment's flag: 0 when pushed; kFlagPublished once its literals and pending bits are in
// place (only buffers with bits: lz4_match_bits.hpp); kFlagDone once all its bytes are.
constexpr std::uint32_t kFlagPublished = 1, kFlagDone = 2;

// The pending bits of the ready pass (codec/logic/lz4_match_bits.hpp). A word wholly
// inside one match's output is that match's alone (a plain, strong store); an edge word may hold
// another match's bits too (an atomic). lane_mark: one lane, a short range; warp_mark: the whole
// warp, any range.
__device__ void mark_word(std::uint32_t* bits, std::uint32_t a, std::uint32_t b, std::uint32_t w, bool pending) {
  const std::uint32_t m = logic::lz4_bits_in(a, b, w);
  if (m == ~0u)
    store_relaxed(bits + w, pending ? ~0u : 0u);
  else if (pending)
    atomicOr(bits + w, m);
  else
    atomicAnd(bits + w, ~m);
}
__device__ void lane_mark(std::uint32_t* bits, std::uint32_t a, std::uint32_t b, bool pending) {
  for (std::uint32_t w = a >> 5; w <= (b - 1) >> 5; ++w) mark_word(bits, a, b, w, pending);
}
__device__ void warp_mark(std::uint32_t* bits, std::uint32_t a, std::uint32_t b, bool pending, unsigned lane) {
  for (std::uint32_t w = (a >> 5) + lane; w <= (b - 1) >> 5; w += 32) mark_word(bits, a, b, w, pending);
}
// The output's aligned words through L2 (other warps wrote them), and the word copy's stores
// (codec/logic/lz4_match_words.hpp).
struct L2Words {
  const unsigned* p;
  __device__ std::uint32_t operator()(std::uint32_t w) const { return __ldcg(p + w); }
};
// The input's aligned words through the read-only path (the literal copy's loads,
// codec/logic/lz4_literal_words.hpp).
struct InWords {
  const unsigned* p;
  __device__ std::uint32_t operator()(std::uint32_t w) const { return __ldg(p + w); }
};
struct OutStores {
  std::uint8_t* out;
  __device__ void u32(std::uint32_t p, std::uint32_t x) const { *reinterpret_cast<std::uint32_t*>(out + p) = x; }
  __device__ void u16(std::uint32_t p, std::uint16_t x) const { *reinterpret_cast<std::uint16_t*>(out + p) = x; }
  __device__ void u8(std::uint32_t p, std::uint8_t x) const { out[p] = x; }
};
// One lane's match of at most kLz4LaneMatchMax bytes: with -DCS_LZ4_MATCH_WORDS=1 or 2 (the
// default) and `words`, loaded in aligned words where the output starts 4-byte aligned
// (lz4_match_words.hpp) and stored as CS_LZ4_MATCH_WORD_STORES says; else every byte loaded
// (from L2: other warps wrote them), then stored, byte i reading source index i mod off (kept
// without a division).
__device__ void lane_copy_match(std::uint8_t* out, const logic::Lz4MatchRecord& m, bool words = true) {
  if constexpr (kMatchWords) {
    if (words && (reinterpret_cast<std::uintptr_t>(out) & 3u) == 0 && logic::lz4_match_words_fit(m)) {
      std::uint32_t w[logic::kLz4MatchWordsMax];
      logic::lz4_match_words_load(m, L2Words{reinterpret_cast<const unsigned*>(out)}, w);
      if constexpr (kMatchWordStores)
        logic::lz4_match_words_store(m, w, OutStores{out});
      else
        logic::lz4_match_words_store_bytes(m, w, OutStores{out});
      return;
    }
  }
  const std::uint32_t a = m.dst - m.off;
  std::uint8_t v[logic::kLz4LaneMatchMax];
  std::uint32_t r = 0;
#pragma unroll
  for (std::uint32_t k = 0; k < logic::kLz4LaneMatchMax; ++k) {
    v[k] = k < m.len ? __ldcg(out + a + r) : std::uint8_t{0};
    r = r + 1 == m.off ? 0 : r + 1;
  }
#pragma unroll
  for (std::uint32_t k = 0; k < logic::kLz4LaneMatchMax; ++k)
    if (k < m.len) out[m.dst + k] = v[k];
}

// The literals of c <= 32 parsed sequences (lane u holds sequence u's literal source in `in`,
// length and output position): one after another by the whole warp, or with kLitLanes < 32,
// 32 / kLitLanes at once, lane r of a group taking bytes r, r + kLitLanes, ... of its literal,
// kLitUnroll loads (4) for each of kLitRounds rounds (1) before their stores. (Loading a group
// of 8 sequences' literals a byte a lane for every member, session 35, measured 3 % slower on
// the era5-like batch with the serial parse and 10 % slower with the runs' parse:
// docs/gpu_decoders.md.) With -DCS_LZ4_LIT_WORDS=1 lane r
// of a group takes destination words r, r + kLitLanes, ... instead (lz4_literal_words.hpp), two
// at once (lz4_literal_words_head: up to 3 bytes at the block's end go by bytes).
struct LaneLiteral {
  std::uint32_t from, at, len;  // source in `in`, output position, length (0 past the c-th)
};
// Sequence u's literal (u < 32; lane u holds it), on every lane: all lanes call this together.
__device__ LaneLiteral literal_of(std::uint32_t my_src, std::uint32_t my_lit, std::uint32_t my_op, std::uint32_t u,
                                  std::uint32_t c) {
  const std::uint32_t from = __shfl_sync(kFullMask, my_src, u), at = __shfl_sync(kFullMask, my_op, u);
  const std::uint32_t len = __shfl_sync(kFullMask, my_lit, u);
  return {from, at, u < c ? len : 0u};
}
__device__ void copy_literals(std::uint8_t* out, const std::uint8_t* in, std::uint32_t in_size, std::uint32_t my_src,
                              std::uint32_t my_lit, std::uint32_t my_op, std::uint32_t c, unsigned lane) {
  if constexpr (kLitLanes == 32) {
    for (std::uint32_t u = 0; u < c; ++u) {
      const auto [from, at, lit] = literal_of(my_src, my_lit, my_op, u, c);
      logic::lane_copy_forward(out + at, in + from, lit, lane);
    }
  } else {
    constexpr std::uint32_t kAtOnce = 32 / kLitLanes;
    const std::uint32_t g = lane / kLitLanes, r = lane % kLitLanes;
    if constexpr (kLitWords) {
      for (std::uint32_t u0 = 0; u0 < c; u0 += kAtOnce) {
        // u0 + g < 32: u0 is a multiple of kAtOnce below 32
        const auto [from, at, lit] = literal_of(my_src, my_lit, my_op, u0 + g, c);
        const std::uint8_t* src = in + from;
        std::uint8_t* dst = out + at;
        // positions relative to the 4-byte aligned addresses at or below `in` and `out`; the
        // first source word starts at most 3 bytes before a literal, inside the numcodecs header
        // before `in` (in_mis <= 3 < 4), and the head's words end inside the block
        const auto in_mis = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(in) & 3u);
        const auto out_mis = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(out) & 3u);
        const std::uint32_t s = in_mis + from, d = out_mis + at;
        const std::uint32_t head = logic::lz4_literal_words_head(s, lit, in_mis + in_size);
        constexpr std::uint32_t kWordsAtOnce = 2;
        const InWords load{reinterpret_cast<const unsigned*>(in - in_mis)};
        const OutStores st{out - out_mis};  // (every store at an offset >= d >= out_mis)
        const std::uint32_t nw = logic::lz4_literal_word_count(d, head);
        for (std::uint32_t j0 = r; j0 < nw; j0 += kWordsAtOnce * kLitLanes) {
          logic::Lz4LiteralWord w[kWordsAtOnce];
#pragma unroll
          for (std::uint32_t q = 0; q < kWordsAtOnce; ++q) {
            const std::uint32_t j = j0 + q * kLitLanes;
            w[q] = j < nw ? logic::lz4_literal_word_load(s, d, head, j, load) : logic::Lz4LiteralWord{0, 0, 0};
          }
#pragma unroll
          for (std::uint32_t q = 0; q < kWordsAtOnce; ++q) {
            const std::uint32_t j = j0 + q * kLitLanes;
            if (j < nw) logic::lz4_literal_word_store(d, j, w[q], st);
          }
        }
        // the block's last literal may leave up to 3 bytes
        for (std::uint32_t k = head + r; k < lit; k += kLitLanes) dst[k] = __ldg(src + k);
      }
    } else {
      // kLitRounds rounds of kAtOnce literals at once, a lane's kLitUnroll bytes of each loaded
      // before any is stored: kLitRounds x kLitUnroll loads in flight a lane, where each trip's
      // stores wait for its loads (a dependent round trip through L2 a trip)
      constexpr std::uint32_t kUnroll = kLitUnroll, kRounds = kLitRounds;
      static_assert(32 % (kAtOnce * kRounds) == 0, "a call's rounds end at a multiple of 32");
      for (std::uint32_t u0 = 0; u0 < c; u0 += kAtOnce * kRounds) {
        const std::uint8_t* src[kRounds];
        std::uint8_t* dst[kRounds];
        std::uint32_t lit[kRounds], most = 0;
#pragma unroll
        for (std::uint32_t p = 0; p < kRounds; ++p) {
          // u0 + p kAtOnce + g < 32: the static_assert
          const LaneLiteral one = literal_of(my_src, my_lit, my_op, u0 + p * kAtOnce + g, c);
          lit[p] = one.len;
          src[p] = in + one.from;
          dst[p] = out + one.at;
          most = lit[p] > most ? lit[p] : most;
        }
        for (std::uint32_t k = r; k < most; k += kUnroll * kLitLanes) {
          std::uint8_t v[kRounds][kUnroll];
#pragma unroll
          for (std::uint32_t p = 0; p < kRounds; ++p)
#pragma unroll
            for (std::uint32_t q = 0; q < kUnroll; ++q) {
              const std::uint32_t i = k + q * kLitLanes;
              v[p][q] = i < lit[p] ? __ldg(src[p] + i) : std::uint8_t{0};
            }
#pragma unroll
          for (std::uint32_t p = 0; p < kRounds; ++p)
#pragma unroll
            for (std::uint32_t q = 0; q < kUnroll; ++q) {
              const std::uint32_t i = k + q * kLitLanes;
              if (i < lit[p]) dst[p][i] = v[p][q];
            }
        }
      }
    }
  }
}

// A long match m0 (every lane holds it) alone, by the whole warp: every byte's source is final
// (before the match), so the lanes load four bytes each, then store them.
__device__ void warp_copy_long(std::uint8_t* out, const logic::Lz4MatchRecord& m0, unsigned lane) {
  for (std::uint32_t at = 0; at < m0.len; at += 4 * 32) {
    std::uint8_t v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const std::uint32_t k = at + lane + 32u * u;
      v[u] = k < m0.len ? __ldcg(out + logic::lz4_match_source(m0, k)) : std::uint8_t{0};
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const std::uint32_t k = at + lane + 32u * u;
      if (k < m0.len) out[m0.dst + k] = v[u];
    }
  }
}

// One group of matches (codec/logic/lz4_segments.hpp, lz4_group_size): lane j holds match r + j.
// Returns how many matches it copied. Every byte they read is final (the caller has waited for
// the segment before). With kReady and `bits`, each match then clears its pending bits
// (lz4_match_bits.hpp), so that later segments' ready passes can take more.
template <bool kReady>
__device__ std::uint32_t copy_group(std::uint8_t* out, const logic::Lz4MatchRecord* recs, std::uint32_t n,
                                    unsigned lane, std::uint32_t* bits) {
  const bool have = lane < n;
  const logic::Lz4MatchRecord m = have ? recs[lane] : logic::Lz4MatchRecord{0, 1, 0};
  const std::uint32_t len0 = __shfl_sync(kFullMask, m.len, 0);
  if (len0 > logic::kLz4LaneMatchMax) {
    const logic::Lz4MatchRecord m0{__shfl_sync(kFullMask, m.dst, 0), __shfl_sync(kFullMask, m.off, 0), len0};
    warp_copy_long(out, m0, lane);
    if (kReady && bits != nullptr) {
      // every lane's bytes before any lane clears a bit that covers them
      __threadfence();
      __syncwarp();
      warp_mark(bits, m0.dst, m0.dst + len0, false, lane);
    }
    return 1;
  }
  // the group: the last lane i < lane whose match starts below this one's read end is the only
  // one that can meet it (output ranges sorted and disjoint): a binary search over the lanes
  const std::uint32_t a = m.dst - m.off, reads = m.off < m.len ? m.off : m.len;
  unsigned pos = 0;
#pragma unroll
  for (unsigned step = 16; step != 0; step >>= 1) {
    const unsigned probe = pos + step - 1;
    const std::uint32_t d = __shfl_sync(kFullMask, m.dst, probe);
    if (probe < lane && d < a + reads) pos += step;
  }
  const unsigned prev = pos == 0 ? 0 : pos - 1;
  const std::uint32_t prev_dst = __shfl_sync(kFullMask, m.dst, prev), prev_len = __shfl_sync(kFullMask, m.len, prev);
  const bool meets = pos != 0 && logic::lz4_reads_meet(m, prev_dst, prev_len);
  const bool member = lane == 0 || (have && m.len <= logic::kLz4LaneMatchMax && !meets);
  const unsigned refused = ~__ballot_sync(kFullMask, member);
  const unsigned g = refused == 0 ? 32u : static_cast<unsigned>(__ffs(static_cast<int>(refused))) - 1u;
  // -DCS_LZ4_MATCH_WORDS=2: words only for a group without an overlapping match, whose lanes
  // then all take the word copy's funnel shifts (the same choice on every lane)
  const bool words = kMatchWordsPerGroup ? !__any_sync(kFullMask, lane < g && m.off < m.len) : true;
  if (lane < g) {
    lane_copy_match(out, m, words);
    if (kReady && bits != nullptr) {
      __threadfence();  // this lane's bytes before its bits
      lane_mark(bits, m.dst, m.dst + m.len, false);
    }
  }
  return g;
}

// The records of recs[0, nrec) that a pass left, moved down in order: bit i of `taken` says
// that lane's record lane + 32 i was copied. Returns how many are left. (Record r goes to an
// index <= r, after every lane has read its record.)
__device__ std::uint32_t keep_records(logic::Lz4MatchRecord* recs, std::uint32_t nrec, std::uint32_t taken,
                                      unsigned lane) {
  std::uint32_t kept = 0;
  for (std::uint32_t i = 0; i * 32 < nrec; ++i) {
    const std::uint32_t r = lane + 32 * i;
    const bool keep = r < nrec && (taken >> i & 1u) == 0;
    const logic::Lz4MatchRecord m = keep ? recs[r] : logic::Lz4MatchRecord{0, 1, 0};
    const unsigned mask = __ballot_sync(kFullMask, keep);
    __syncwarp();
    if (keep) recs[kept + static_cast<std::uint32_t>(__popc(mask & ((1u << lane) - 1u)))] = m;
    kept += static_cast<std::uint32_t>(__popc(mask));
    __syncwarp();
  }
  return kept;
}

// The own pass (on by default; -DCS_LZ4_OWN_FIRST=0 turns it off), after a segment's literals
// and before its wait for the segment before: every short match that reads only this segment's
// literals (logic::lz4_reads_own_literals) is copied now, a lane each, all at once (none reads
// another's output), and leaves the chain. The others stay in recs, in order, for the chained
// pass; returns their count. The literals are this warp's own stores, ordered before these loads
// by the caller's __syncwarp; the chained pass reads these matches' bytes after the __syncwarp
// of keep_records. With the word copy every own match takes it, an overlapping one too (its
// lane's byte picks then run beside the others' shifts, the divergence -DCS_LZ4_MATCH_WORDS=2
// spares the groups; such matches are 0.5-1.5 % of the short ones, and this was not measured
// apart).
__device__ std::uint32_t own_pass(std::uint8_t* out, logic::Lz4MatchRecord* recs, std::uint32_t nrec,
                                  std::uint32_t seg_out, unsigned lane) {
  constexpr std::uint32_t kPer = logic::kLz4SegmentSeqs / 32;
  static_assert(kPer <= 32, "a lane's own mask is one word");
  std::uint32_t own = 0;
  for (std::uint32_t i = 0; i < kPer; ++i) {
    const std::uint32_t r = lane + 32 * i;
    if (r < nrec && logic::lz4_reads_own_literals(recs, r, seg_out)) own |= 1u << i;
  }
  for (std::uint32_t left = own; left != 0; left &= left - 1)
    lane_copy_match(out, recs[lane + 32 * static_cast<std::uint32_t>(__ffs(static_cast<int>(left)) - 1)]);
  return keep_records(recs, nrec, own, lane);
}

// The chained matches' dependency levels (-DCS_LZ4_LEVELS=1; logic::lz4_dep_level), before the
// wait: level[i] for recs[0, nrec), then order[] the records' indices sorted by level (stable).
// Levels go 32 records at a time: those of earlier chunks are final, and a chunk's own settle by
// relaxation (every lane raises its level to one more than the levels it reads as they stand,
// until no lane changes; a record reads only lower indices, so the chunk's longest dependency
// chain plus two rounds, 33 at most). On crafted segments (chains of dependent matches) this and
// the sort's (highest level + 1) x chunks ballots cost a few times the groups' copies; off the
// chain only while the warp would wait.
__device__ void dep_levels(const logic::Lz4MatchRecord* recs, std::uint32_t nrec, std::uint8_t* level,
                           std::uint8_t* order, unsigned lane) {
  static_assert(logic::kLz4SegmentSeqs <= 256, "a level and an index in a byte");
  std::uint32_t top = 0;
  __syncwarp();  // the staging area's last readers (the literals) before these writes
  for (std::uint32_t c0 = 0; c0 < nrec; c0 += 32) {
    const std::uint32_t i = c0 + lane;
    const bool have = i < nrec;
    if (have) level[i] = 0;
    __syncwarp();
    for (;;) {
      const std::uint32_t l =
          have ? logic::lz4_dep_level(recs, i, [&](std::uint32_t j) { return std::uint32_t{level[j]}; }) : 0u;
      const bool changed = have && l != level[i];
      __syncwarp();  // every lane's reads before any lane's write
      if (changed) level[i] = static_cast<std::uint8_t>(l);
      __syncwarp();
      if (!__any_sync(kFullMask, changed)) break;
    }
    if (have) top = level[i] > top ? level[i] : top;
  }
  top = __reduce_max_sync(kFullMask, top);
  // the order: level by level, each level's records in index order
  std::uint32_t at = 0;
  for (std::uint32_t l = 0; l <= top; ++l)
    for (std::uint32_t c0 = 0; c0 < nrec; c0 += 32) {
      const std::uint32_t i = c0 + lane;
      const bool take = i < nrec && level[i] == l;
      const unsigned mask = __ballot_sync(kFullMask, take);
      if (take) order[at + static_cast<std::uint32_t>(__popc(mask & ((1u << lane) - 1u)))] = static_cast<std::uint8_t>(i);
      at += static_cast<std::uint32_t>(__popc(mask));
    }
  __syncwarp();
}

// One pass of the levels after the wait: the records order[pos, ...) of the level of order[pos],
// at most 32, lane k taking order[pos + k]; short ones a lane each, long ones by the whole warp.
// Returns how many it copied. Every byte they read is final (lower levels, earlier segments,
// literals, own-pass matches).
__device__ std::uint32_t copy_level_pass(std::uint8_t* out, const logic::Lz4MatchRecord* recs, std::uint32_t nrec,
                                         const std::uint8_t* level, const std::uint8_t* order, std::uint32_t pos,
                                         unsigned lane) {
  const std::uint32_t l = level[order[pos]];
  const bool take = pos + lane < nrec && level[order[pos + lane]] == l;
  const logic::Lz4MatchRecord m = take ? recs[order[pos + lane]] : logic::Lz4MatchRecord{0, 1, 0};
  const bool lone = take && m.len > logic::kLz4LaneMatchMax, mine = take && !lone;
  const bool words = kMatchWordsPerGroup ? !__any_sync(kFullMask, mine && m.off < m.len) : true;
  if (mine) lane_copy_match(out, m, words);
  for (unsigned longs = __ballot_sync(kFullMask, lone); longs != 0; longs &= longs - 1) {
    const int from = __ffs(static_cast<int>(longs)) - 1;
    const logic::Lz4MatchRecord m0{__shfl_sync(kFullMask, m.dst, from), __shfl_sync(kFullMask, m.off, from),
                                   __shfl_sync(kFullMask, m.len, from)};
    warp_copy_long(out, m0, lane);
  }
  return static_cast<std::uint32_t>(__popc(__ballot_sync(kFullMask, take)));
}

// The ready pass of one segment with pending bits (codec/logic/lz4_match_bits.hpp, steps 1-3),
// after its parse and literals: recs[0, nrec) its matches in output order, `bits` its buffer's
// pending bits, `segs` and `flags` its buffer's slots, k the segment, `out0` its first output
// position. Copies every match of at most kLz4LaneMatchMax bytes whose bytes are final already;
// the others are kept at the front of recs, in order, for the chained pass. Returns their count.
__device__ std::uint32_t ready_pass(std::uint8_t* out, std::uint32_t* bits, logic::Lz4MatchRecord* recs,
                                    std::uint32_t nrec, const logic::Lz4Segment* segs, std::uint32_t* flags,
                                    std::uint32_t k, std::uint32_t out0, unsigned lane) {
  // 1. the bits of every match's output, then the flag (1) that publishes them with the literals
  constexpr std::uint32_t kLaneMarkMax = 64;  // a lane marks at most three words
  for (std::uint32_t r = 0; r < nrec; r += 32) {
    const bool have = r + lane < nrec;
    const logic::Lz4MatchRecord m = have ? recs[r + lane] : logic::Lz4MatchRecord{0, 1, 0};
    const bool lone = have && m.len > kLaneMarkMax;
    if (have && !lone) lane_mark(bits, m.dst, m.dst + m.len, true);
    for (unsigned longs = __ballot_sync(kFullMask, lone); longs != 0; longs &= longs - 1) {
      const int from = __ffs(static_cast<int>(longs)) - 1;
      const std::uint32_t a = __shfl_sync(kFullMask, m.dst, from);
      warp_mark(bits, a, a + __shfl_sync(kFullMask, m.len, from), true, lane);
    }
  }
  __threadfence();
  __syncwarp();
  if (lane == 0) store_release(flags + k, kFlagPublished);
  // 2. the flags of the earlier segments it can read from (those ending past out0 - 65 535);
  // they hold lower queue tickets and wait on nothing before they publish
  const std::uint32_t lo = logic::lz4_window_low(out0);
  for (std::uint32_t back = 0; back < k; back += 32) {
    bool need = false;
    if (back + lane < k) {
      const std::uint32_t j = k - 1 - back - lane;
      need = segs[j + 1].out > lo;
      if (need) {
        for (unsigned sleep = 32; poll_load(flags + j) == 0; sleep = sleep < 256 ? 2 * sleep : sleep) __nanosleep(sleep);
        poll_acquired();
      }
    }
    if (!__all_sync(kFullMask, need)) break;  // the segments go back in order
  }
  __syncwarp();  // every lane's acquire before any lane reads what it publishes
  // 3. lane l checks records l, l + 32, ... (kLz4SegmentSeqs / 32 at most): a short match reads
  // at most 16 bytes, so two words of bits
  constexpr std::uint32_t kPer = logic::kLz4SegmentSeqs / 32;
  static_assert(kPer <= 32 && logic::kLz4LaneMatchMax <= 32, "the ready mask, two words a read range");
  std::uint32_t ready = 0;
#pragma unroll
  for (std::uint32_t i = 0; i < kPer; ++i) {
    const std::uint32_t r = lane + 32 * i;
    if (r < nrec && recs[r].len <= logic::kLz4LaneMatchMax) {
      const logic::Lz4Reads rd = logic::lz4_match_reads(recs[r]);
      const std::uint32_t w0 = rd.first >> 5, w1 = (rd.end - 1) >> 5;
      const std::uint32_t set = (load_relaxed(bits + w0) & logic::lz4_bits_in(rd.first, rd.end, w0)) |
                                (load_relaxed(bits + w1) & logic::lz4_bits_in(rd.first, rd.end, w1));
      if (set == 0) ready |= 1u << i;
    }
  }
  if (ready != 0) {
    __threadfence();  // the bits seen clear before the bytes they guard are read
    for (std::uint32_t i = 0; i < kPer; ++i)
      if ((ready >> i & 1u) != 0) lane_copy_match(out, recs[lane + 32 * i]);
    __threadfence();  // this lane's bytes before its bits
    for (std::uint32_t i = 0; i < kPer; ++i)
      if ((ready >> i & 1u) != 0) {
        const logic::Lz4MatchRecord& m = recs[lane + 32 * i];
        lane_mark(bits, m.dst, m.dst + m.len, false);
      }
  }
  return keep_records(recs, nrec, ready, lane);
}

// A segment worker's staged input is logic::kLz4SegmentWindow (1 KiB, not warp_copy.cuh's 2 KiB;
// why in codec/logic/lz4_segments.hpp), for a segment parsed serially; a segment parsed in runs
// reads the input directly and keeps its literals (source, length) where the window was. In the
// fused kernel this shares a union with TableShared (~44 KiB with the window ahead), which sets
// the block's shared memory; SegmentShared is 40 KiB (32 KiB with -DCS_LZ4_RUNS=0).
static_assert(logic::kLz4SegmentWindow >= logic::kLz4FastSpan + 16 && logic::kLz4SegmentWindow % 16 == 0,
              "segment window");
struct SegmentShared {
  union Staging {
    alignas(16) std::uint8_t window[logic::kLz4SegmentWindow];
    logic::Lz4Literal lits[kRunsOn ? logic::kLz4SegmentSeqs : 1];
    // after the literals: the chained matches' levels and their order (-DCS_LZ4_LEVELS=1)
    struct {
      std::uint8_t level[kLevelsOn ? logic::kLz4SegmentSeqs : 1];
      std::uint8_t order[kLevelsOn ? logic::kLz4SegmentSeqs : 1];
    } levels;
  };
  Staging staging[kSegWarps];
  logic::Lz4MatchRecord records[kSegWarps][logic::kLz4SegmentSeqs];
};
static_assert(sizeof(SegmentShared) <= 48 * 1024, "static shared memory (CS_LZ4_SEGMENT_SEQS too large)");

// The input through the read-only path: it does not change during the launch.
struct LdgReader {
  const std::uint8_t* p;
  __device__ std::uint8_t operator[](std::size_t i) const { return __ldg(p + i); }
};

// A segment of `seqs` sequences (its walk's runs notes `runs`) parsed in runs, lane r of the
// warp taking run r (then r + 32, ...): pass 1 (lz4_run_parse) straight from the input, the
// runs' output lengths scanned across the lanes in order, pass 2 (lz4_run_place) at each run's
// output position. lits[i] and recs[i] receive sequence i (recs[i].dst its match's output
// position). False (every lane) where any run fails: the segment is then corrupt. A lane's
// run is ~8 sequences of dependent loads (token, lengths, offset) from L2, where the serial
// parse was the segment's ~256 sequences at ~450 cycles each (the walk's cost, a dependent
// chain of shared loads and branches).
__device__ bool parse_runs(const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, const logic::Lz4Runs* runs,
                           const logic::Lz4Segment& seg, std::uint32_t end, std::uint32_t seqs,
                           logic::Lz4Literal* lits, logic::Lz4MatchRecord* recs, unsigned lane) {
  if (seqs > logic::kLz4SegmentSeqs) return false;
  const std::uint32_t n = logic::lz4_run_count(seqs);
  unsigned long long op = seg.out;
  for (std::uint32_t r0 = 0; r0 < n; r0 += 32) {
    const std::uint32_t r = r0 + lane;
    const std::uint32_t count = r < n ? logic::lz4_run_seqs(seqs, r) : 0u;
    std::uint32_t len = 0;
    bool ok = true;
    if (r < n) {
      LdgReader rd{in};
      ok = logic::lz4_run_parse(rd, in_size, logic::lz4_run_start(*runs, seg.in, r),
                                logic::lz4_run_stop(*runs, seg.in, end, n, r), count,
                                lits + r * logic::kLz4RunSeqs, recs + r * logic::kLz4RunSeqs, &len);
    }
    // each run's output position: the lengths before it (an inclusive scan, less its own)
    unsigned long long x = ok ? len : 0u;
#pragma unroll
    for (unsigned d = 1; d < 32; d <<= 1) {
      const unsigned long long y = __shfl_up_sync(kFullMask, x, d);
      if (lane >= d) x += y;
    }
    if (r < n && ok)
      ok = logic::lz4_run_place(size, op + x - len, count, lits + r * logic::kLz4RunSeqs,
                                recs + r * logic::kLz4RunSeqs);
    if (!__all_sync(kFullMask, ok)) return false;
    op += __shfl_sync(kFullMask, x, 31);
  }
  return true;
}

// The next pushed segment for this warp (lane 0 waits; every lane gets it), or 0 once every walk
// has ended and the queue holds no more.
__device__ unsigned long long next_segment(const DeviceBatch& b, const Lz4SegmentScratch& s, unsigned lane) {
  unsigned long long e = 0;
  if (lane == 0) {
    const unsigned long long t = atomicAdd(s.queue_head, 1ull);
    // every pushed segment has a slot, so tickets past the capacity never get an entry
    for (unsigned sleep = 32; t < s.capacity;) {
      e = poll_load(s.queue + t);
      if (e != 0) break;
      // every walk's pushes come before its count (fence, then the add), and every paced push's
      // ticket before its pending count drops: with all walks counted and none pending, the
      // tail is final
      // (each count acquired before the next read: the walks' count orders their paced
      // pending counts, which order the tail)
      if (poll_load(s.walks_done) == b.num_buffers) {
        poll_acquired();
        if (poll_load(s.paced_pending) == 0) {
          poll_acquired();
          if (t >= *reinterpret_cast<const volatile unsigned long long*>(s.queue_tail)) {
            e = load_acquire(s.queue + t);  // 0 unless t is below the tail after all
            if (e == 0) break;
          }
        }
      }
      __nanosleep(sleep);
      sleep = sleep < 512 ? 2 * sleep : sleep;
    }
    if (e != 0) poll_acquired();  // the entry's slot and flag
  }
  // orders lane 0's acquire before the other lanes' reads of what the entry publishes
  __syncwarp();
  return __shfl_sync(kFullMask, e, 0);
}

// Segment workers: every warp takes pushed segments until the queue is done.
// kReady: the kernel was launched for a scratch with bits (Lz4SegmentScratch::ready_first); the
// default instantiation holds no code of the ready pass (its registers and spills are main's).
template <bool kReady>
__device__ void segment_worker(const DeviceBatch& b, const Lz4SegmentScratch& s, SegmentShared& sh) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  logic::Lz4MatchRecord* recs = sh.records[warp];
  for (;;) {
    const unsigned long long e = next_segment(b, s, lane);
    if (e == 0) return;
    const std::size_t j = static_cast<std::size_t>((e & 0xFFFFFFFFull) - 1);
    const auto k = static_cast<std::uint32_t>((e >> 32) & 0x7FFFFFFFull);
    const bool last_segment = (e >> 63) != 0;
    const std::uint8_t* in = b.src[j] + logic::kLz4NumcodecsHeader;
    const auto in_size = static_cast<std::uint32_t>(b.src_bytes[j] - logic::kLz4NumcodecsHeader);
    const auto size = static_cast<std::uint32_t>(b.dst_bytes[j]);
    std::uint8_t* out = b.dst[j];
    const unsigned long long base = s.seg_base[j];
    const unsigned long long bits_base = kReady ? s.bits_base[j] : kLz4NoBits;
    const logic::Lz4Segment seg = s.segs[base + k];
    const std::uint32_t end = last_segment ? in_size : s.segs[base + k + 1].in;

    // the segment's sequences: in runs where its walk noted them (not the split walk's, which
    // a buffer has where paced[j] holds its count), else one after another
    const std::uint32_t seqs =
        kRunsOn && (s.split_region == 0 || s.paced[j] == 0) ? s.runs[base + k].seqs : 0u;
    std::uint32_t nrec = 0;
    bool bad = false;
    if (kRunsOn && seqs != 0) {
      logic::Lz4Literal* lits = sh.staging[warp].lits;
      bad = !parse_runs(in, in_size, size, s.runs + base + k, seg, end, seqs, lits, recs, lane);
      __syncwarp();  // every lane's records before the lanes read each other's
      if (!bad) {
        // literals, 32 sequences at a time (lane c keeps sequence c); every sequence but the
        // block's last (literals only, and then the segment's last) has a match, in order
        for (std::uint32_t u0 = 0; u0 < seqs; u0 += 32) {
          const std::uint32_t u = u0 + lane, c = seqs - u0 < 32 ? seqs - u0 : 32u;
          const logic::Lz4Literal lit = u < seqs ? lits[u] : logic::Lz4Literal{0, 0};
          const std::uint32_t dst = u < seqs ? recs[u].dst - lit.len : 0u;
          copy_literals(out, in, in_size, lit.src, lit.len, dst, c, lane);
        }
        nrec = recs[seqs - 1].len == 0 ? seqs - 1 : seqs;
      }
    } else {
      // parse and literals, 32 sequences at a time (lane c keeps sequence c), matches to records
      logic::Lz4StagedReader<WarpFill> rd{in, in_size, sh.staging[warp].window, logic::kLz4SegmentWindow,
                                          WarpFill{lane}};
      std::size_t ip = seg.in;
      std::uint32_t op = seg.out;
      bool last = false;
      while (ip < end && !bad && !last) {
        std::uint32_t my_src = 0, my_lit = 0, my_op = 0, my_off = 0, my_len = 0, c = 0;
        for (; c < 32 && ip < end; ++c) {
          logic::Lz4Sequence sq;
          if (logic::lz4_staged_next(rd, in_size, size, &ip, op, &sq, &last) != DecodeStatus::kOk) {
            bad = true;
            break;
          }
          if (lane == c) {
            my_src = static_cast<std::uint32_t>(sq.lit_src);
            my_lit = static_cast<std::uint32_t>(sq.lit_len);
            my_op = op;
            my_off = static_cast<std::uint32_t>(sq.match_offset);
            my_len = static_cast<std::uint32_t>(sq.match_len);
          }
          op += static_cast<std::uint32_t>(sq.lit_len + sq.match_len);
          if (last) {
            ++c;
            break;
          }
        }
        copy_literals(out, in, in_size, my_src, my_lit, my_op, c, lane);
        const bool has = lane < c && my_len != 0;
        const unsigned mask = __ballot_sync(kFullMask, has);
        const std::uint32_t idx = nrec + static_cast<std::uint32_t>(__popc(mask & ((1u << lane) - 1u)));
        if (has && idx < logic::kLz4SegmentSeqs) recs[idx] = logic::Lz4MatchRecord{my_op + my_lit, my_off, my_len};
        nrec += static_cast<std::uint32_t>(__popc(mask));
      }
      // the walk accepted the segment, so the parse meets the next segment's start exactly
      bad = bad || ip != end || nrec > logic::kLz4SegmentSeqs;
    }
    if (bad) {
      if (lane == 0) fail_status(b.status + j, DecodeStatus::kCorrupt);
      nrec = 0;
    }
    __syncwarp();
    // off the chain first: with pending bits, the matches whose bytes are final already (the
    // ready pass); else those reading only this segment's literals (the own pass)
    std::uint32_t* bits = kReady && bits_base != kLz4NoBits ? s.bits + bits_base : nullptr;
    if (kReady && bits != nullptr)
      nrec = ready_pass(out, bits, recs, nrec, s.segs + base, s.flags + base, k, seg.out, lane);
    else if (kOwnFirst)
      nrec = own_pass(out, recs, nrec, seg.out, lane);
    // the chained matches' levels (-DCS_LZ4_LEVELS=1, the default), off the chain too
    const bool by_levels = kLevelsOn && bits == nullptr;
    std::uint8_t* const level = sh.staging[warp].levels.level;
    std::uint8_t* const order = sh.staging[warp].levels.order;
    if (by_levels) dep_levels(recs, nrec, level, order, lane);
    // the chained pass: the other matches read the output of earlier segments' matches, so wait
    // for the segment before (pushed before this one, so a running warp has it)
    if (k != 0) {
      for (unsigned sleep = 64; poll_load(s.flags + base + k - 1) != kFlagDone;) {
        __nanosleep(sleep);
        if (kChainSleepMax > 64) sleep = sleep < kChainSleepMax ? 2 * sleep : sleep;
      }
      chain_acquired(s.flags + base + k - 1);
    }
    if (by_levels) {
      for (std::uint32_t r = 0; r < nrec;) {
        r += copy_level_pass(out, recs, nrec, level, order, r, lane);
        __syncwarp();  // a pass's bytes before the next pass reads them
      }
    } else {
      for (std::uint32_t r = 0; r < nrec;) {
        r += copy_group<kReady>(out, recs + r, nrec - r, lane, bits);
        __syncwarp();
      }
    }
    // every lane's writes, then the flag: with kFlagFence each lane's fence, then lane 0's
    // release; without it the release alone, which is cumulative over the lanes' writes that
    // __syncwarp orders before it (bar.warp.sync orders memory among the warp's threads, as
    // its PTX text says; kFlagBarrier takes the warp's own named barrier instead, which the
    // memory model lists among the operations that synchronize)
    if constexpr (kFlagFence) __threadfence();
    if constexpr (kFlagBarrier)
      warp_barrier(warp);
    else
      __syncwarp();
    if (lane == 0) {
      // a split-walked buffer's next segment (split_job): its ticket, then the count the
      // workers' exit test reads (next_segment), and only then this segment's flag. The
      // worker of segment k + 1 pushes k + 1 + kSplitInFlight after it has seen this flag, so a
      // buffer's tickets stay in segment order, and the segment a worker waits on (the one
      // before it) always holds a lower ticket, taken by a worker that is running.
      const std::uint32_t count = s.split_region != 0 ? s.paced[j] : 0u;  // (no load with the split off)
      if (count != 0 && k + kSplitInFlight < count) {
        push_segment(s, j, k + kSplitInFlight, k + kSplitInFlight + 1 == count);
        __threadfence();
        atomicSub(s.paced_pending, 1u);
      }
      store_release(s.flags + base + k, kFlagDone);
    }
  }
}

}  // namespace
}  // namespace cubestream::cuda::detail
