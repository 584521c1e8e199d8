// numcodecs LZ4 blocks decoded in rounds of readiness: the logic written once for the host and
// the device (cuda/decode/lz4_rounds.cu runs it with a thread block per buffer).
//
// Why. The segmented path (lz4_segments.hpp) walks a block's sequences in one chain and copies
// its matches segment after segment: a segment's chained matches wait for the whole segment
// before. On the synth fields that chain is ~830-1 180 links of ~11 us (docs/gpu_decoders.md,
// session 39), yet the block's true dependency graph is shallow: a match's level (1 + the
// highest level among the output bytes it reads, literals 0) reaches only 45-464 on those
// fields and 9-12 on the era5-like chunks (bench/micro/lz4_global_depth.cpp). So:
//  1. The split walk (lz4_split_walk.hpp) finds the true entry of each of up to 256 input
//     regions, a thread each, and checks the block exactly as the serial decoder does
//     (lz4_split_accepts); B_r, the output position of region r's entry, follows.
//  2. Each region's thread walks its sequences once more from its entry (lz4_region_emit):
//     copies the literals to their place, marks their bytes done in a bitmap of the output (a
//     bit a byte) and keeps each match as a record (output position, offset, length) in the
//     region's slots.
//  3. Rounds: each thread goes through its pending records in output order and copies every
//     match whose source bytes are all done (lz4_match_ready), then marks its own bytes done;
//     the others wait for the next round. A round copies at least every match all of whose
//     writers were copied before it, so the rounds end after at most the depth; on the synth
//     fields 72-86 rounds with 256 regions and 12.7-14.5 ready tests a match, on the era5-like
//     chunks 4 rounds and 1.1 tests (the host count).
// A block the split walk declines (damage, no fixed point, a block larger than its output) is
// left to the caller's other path, whose statuses are the serial decoder's; so statuses never
// change, and an accepted block's output is the serial decoder's by construction (every match
// copies from bytes that are final).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// A match kept for the rounds: dst[op, op + len) = dst[op - off, ...), copied forward.
struct Lz4RoundMatch {
  std::uint32_t op;
  std::uint32_t off;
  std::uint32_t len;
};

// Rounds after which a block still pending is declined (its other path decodes it again from
// the start): a block of that depth would cost more rounds than the serial decoder costs
// sequences' worth of time (the synth fields need at most ~90 with 256 regions, the era5-like
// chunks ~4; bench/micro/lz4_global_depth.cpp), and a crafted chain of dependent matches, one
// region to the next, could otherwise hold a thread block for a round a match.
inline constexpr std::uint32_t kLz4RoundsMax = 1024;

// Where a region's walk of round 0 starts: its first byte (0, the default), or
// CS_LZ4_ROUNDS_GUESS_SPAN bytes before its end. Round 0 only has to hand the next region a
// likely entry, and a parse started at a wrong byte meets the true chain after a while, so a
// walk of the region's tail might do what a walk of all of it does, and the split walk would
// cost one full walk a region and the round that finds nothing moved instead of two; but a guess
// that has not met the true chain by the region's end costs a full walk more on the block's
// critical path. Host count (256 regions of the bench's blocks, guessed exits that are wrong):
// era5-like 4 MiB 120-131 of 255 with a 1 KiB tail, 80 with 2 KiB, 43-50 with 4 KiB; synth
// fields 8-26 / 3-10 / 0-1; 0 walking whole regions. So the default walks whole regions, and
// -DCS_LZ4_ROUNDS_GUESS_SPAN=4096 is kept for an A/B on the GPU.
#ifndef CS_LZ4_ROUNDS_GUESS_SPAN
#define CS_LZ4_ROUNDS_GUESS_SPAN 0
#endif
inline constexpr std::uint32_t kLz4RoundsGuessSpan = CS_LZ4_ROUNDS_GUESS_SPAN;
CS_HD inline std::uint32_t lz4_rounds_guess_start(const Lz4SplitShape& s, std::uint32_t r, std::uint32_t in_size) {
  const std::uint32_t b = lz4_split_begin(s, r, in_size), e = lz4_split_end(s, r, in_size);
  return kLz4RoundsGuessSpan != 0 && e - b > kLz4RoundsGuessSpan ? e - kLz4RoundsGuessSpan : b;
}

// The smallest region the rounds' split walk takes by default (a thread block of 256 threads
// splits blocks of 1 MiB or more into all 256 regions).
inline constexpr std::uint32_t kLz4RoundsRegionMin = 4096;

// Records a region holds: a match's token and offset take at least 3 input bytes and tokens
// follow one another, so a region of `bytes` input bytes starts at most ceil(bytes / 3) matches.
CS_HD inline std::uint32_t lz4_rounds_region_slots(const Lz4SplitShape& s) { return s.bytes / 3 + 1; }

// A sequence kept by the split walk's region walks where the emit reads records
// (CUBESTREAM_LZ4_ROUNDS_WALK=records): its token at `tok`, lit literals (they start after the
// token and its literal length bytes: lz4_seq_lit_at), then a match of mlen bytes at offset off
// (off = mlen = 0: the block's last sequence). 16 bytes, so that a thread loads one with a
// single vector load.
struct alignas(16) Lz4RoundSeq {
  std::uint32_t tok;
  std::uint32_t lit;
  std::uint32_t off;
  std::uint32_t mlen;
};
static_assert(sizeof(Lz4RoundSeq) == 16 && sizeof(Lz4RoundMatch) == 12);
// Where a sequence's literals start: a literal length of 15 or more takes (lit - 15) / 255 + 1
// bytes after the token (255s, then a byte below 255).
CS_HD inline std::uint32_t lz4_seq_lit_at(const Lz4RoundSeq& q) {
  return q.tok + 1 + (q.lit >= 15 ? (q.lit - 15) / 255 + 1 : 0);
}

// Bytes of a record slot: a match record, or a sequence record where the walks keep sequences
// (the emit then rewrites each slot's sequence as a match in place: a match takes 12 of a
// slot's 16 bytes, and the k-th match lands at or before the k-th sequence's bytes).
CS_HD inline std::uint32_t lz4_rounds_slot_bytes(bool records) {
  return records ? static_cast<std::uint32_t>(sizeof(Lz4RoundSeq)) : static_cast<std::uint32_t>(sizeof(Lz4RoundMatch));
}

// A buffer's part of the rounds' scratch: regions x slots records, then the done bitmap (a bit
// per output byte, in 32-bit words), 16-byte aligned. `records`: slots of sequence records.
struct Lz4RoundsLayout {
  std::uint64_t records;     // records (regions x slots)
  std::uint64_t words;       // bitmap words
  std::uint64_t bits_at;     // the bitmap's byte offset
  std::uint64_t bytes;       // scratch bytes in all
};
CS_HD inline Lz4RoundsLayout lz4_rounds_layout(const Lz4SplitShape& s, std::uint64_t size, bool records = false) {
  Lz4RoundsLayout l;
  l.records = static_cast<std::uint64_t>(s.regions) * lz4_rounds_region_slots(s);
  l.words = (size + 31) / 32;
  l.bits_at = (l.records * lz4_rounds_slot_bytes(records) + 15) / 16 * 16;
  l.bytes = l.bits_at + (l.words * 4 + 15) / 16 * 16;
  return l;
}
// An upper bound of lz4_rounds_layout(...).bytes for any block the rounds take that decodes to
// `size` bytes (its input is at most `size`: lz4_split_worth), for scratch sized from decoded
// sizes alone: records <= (in + regions) / 3 + regions with regions <= kLz4SplitMaxRegions.
CS_HD inline std::uint64_t lz4_rounds_bytes_bound(std::uint64_t size, bool records = false) {
  const std::uint64_t n = (size + kLz4SplitMaxRegions) / 3 + 2 * kLz4SplitMaxRegions;
  return (n * lz4_rounds_slot_bytes(records) + 15) / 16 * 16 + ((size + 31) / 32 * 4 + 15) / 16 * 16;
}
// The same for n buffers whose decoded sizes sum to `total` (the bound is linear in the size
// but for its rounding: at most 32 bytes a buffer).
CS_HD inline std::uint64_t lz4_rounds_pool_bound(std::uint64_t n, std::uint64_t total, bool records = false) {
  return std::uint64_t{lz4_rounds_slot_bytes(records)} *
             ((total + n * kLz4SplitMaxRegions) / 3 + n * (2 * kLz4SplitMaxRegions + 1)) +
         (total / 32 + n) * 4 + n * 32;
}

// A region's sequence records in its slots rec[0, slots): the run [a0, a1), in sequence order;
// over = true where a walk found more sequences than its slots hold (never for a walk from a
// true entry: a sequence that passed its checks takes at least 3 input bytes but for the last,
// so a region of `bytes` starts at most bytes / 3 + 1), which the emit takes as a refusal.
struct Lz4RegionRecords {
  std::uint32_t a0 = 0, a1 = 0;
  bool over = false;
  std::uint32_t parsed = 0;  // sequences the last walk parsed (for the host's counts)
};

// A region walk (lz4_region_walk) that keeps its sequences as records in rec[0, slots), and that,
// where the region walked before (`last`: that walk's summary, its records in `r`), stops where
// it meets the chain recorded then: a token position it reaches that the last walk also parsed
// from a token, with no failed check of the last walk at or after it. From there the two walks
// are the same chain to the same end, so the rest of the records, the exit, the last-sequence
// flag and the output bytes are the last walk's (the output counted off the records passed);
// a split walk's round after the first then parses only the sequences before its entry's chain
// meets the guessed one, not the region.
//
// The new records go to the slots above the old ones; at a stop they move down to just before
// the first old record kept, where old records passed lie, if there are that many; else the
// kept old records are copied up after the new ones (a pass of independent loads, cheaper than
// the parse it saves), where the slots hold them; else the walk does not stop (from a meeting
// point on, both walks pass as many records, so waiting would not help). A walk that fills the
// slots above without stopping gives up stopping and moves its records to the bottom (at most
// as many record copies as records it wrote).
// `need` of a stopped walk covers the walked part only: the emit checks every match against its
// output position, which is the same test (an offset larger than the bytes before a match
// declines the block).
CS_HD inline Lz4RegionWalk lz4_region_walk_records(const std::uint8_t* in, std::uint32_t in_size, std::uint32_t entry,
                                                   std::uint32_t end, Lz4RoundSeq* rec, std::uint32_t slots,
                                                   Lz4RegionRecords* r, const Lz4RegionWalk* last) {
  const Lz4RegionRecords old = *r;
  bool sync = last != nullptr && !old.over && old.a1 <= slots;
  const std::uint32_t old_n = sync ? old.a1 - old.a0 : 0, old_fail_end = sync ? last->fail_end : 0;
  const std::uint32_t old_exit = sync ? last->exit : 0;
  const std::uint64_t old_out = sync ? last->out : 0;
  const bool old_last = sync && last->last;
  std::uint32_t w0 = sync ? old.a1 : 0;  // the first slot of the new records
  std::uint32_t j = 0, p = 0;            // the first old record not passed; new records
  std::uint64_t o_old = 0;               // output bytes of old records before j
  const auto stop = [&](std::uint32_t ip) {
    if (!sync) return false;
    while (j < old_n && rec[old.a0 + j].tok < ip) {
      const Lz4RoundSeq& q = rec[old.a0 + j];
      o_old += std::uint64_t{q.lit} + q.mlen;
      ++j;
    }
    if (j >= old_n) {  // the old chain ends before ip
      sync = false;
      return false;
    }
    if (rec[old.a0 + j].tok != ip || old_fail_end > ip) return false;
    if (p <= old.a0 + j || w0 + p + (old_n - j) <= slots) return true;
    sync = false;  // no room below the first old record kept, nor for the kept ones above
    return false;
  };
  const auto seq = [&](std::uint32_t ip, std::uint32_t lit, std::uint32_t off, std::uint32_t mlen) {
    if (w0 != 0 && w0 + p == slots) {  // no room above: give up stopping, move to the bottom
      for (std::uint32_t i = 0; i < p; ++i) rec[i] = rec[w0 + i];
      w0 = 0;
      sync = false;
    }
    if (w0 + p < slots) rec[w0 + p] = Lz4RoundSeq{ip, lit, off, mlen};
    ++p;
  };
  Lz4RegionWalk w = lz4_region_walk(in, in_size, entry, end, [](std::uint32_t, std::uint32_t, std::uint32_t) {},
                                    seq, stop);
  Lz4RegionRecords now;
  if (w.stopped) {
    w.exit = old_exit;
    w.last = old_last;
    w.out += old_out - o_old;
    const std::uint32_t k = old.a0 + j;  // the first old record kept
    if (p <= k) {
      for (std::uint32_t i = 0; i < p; ++i) rec[k - p + i] = rec[w0 + i];  // down, below the kept ones
      now.a0 = k - p;
      now.a1 = old.a1;
    } else {
      for (std::uint32_t i = k; i < old.a1; ++i) rec[w0 + p + (i - k)] = rec[i];  // the kept ones up, after the new
      now.a0 = w0;
      now.a1 = w0 + p + (old.a1 - k);
    }
  } else {
    now.a0 = w0;
    now.a1 = w0 + p;
    now.over = w0 + p > slots;
  }
  now.parsed = p;
  *r = now;
  return w;
}

// --- the done bitmap --------------------------------------------------------------------------
// Bits b.set(word, mask) and b.get(word): on the device an atomicOr and a volatile load (the
// copy before a set is published by a block-scope fence: the reader fences after its loads and
// before it reads the bytes); on the host plain words.

// Marks bytes [a, e) done.
CS_HD_TEMPLATE
template <class Bits>
CS_HD inline void lz4_bits_mark(Bits& bits, std::uint32_t a, std::uint32_t e) {
  if (a >= e) return;
  std::uint32_t w = a / 32;
  const std::uint32_t last = (e - 1) / 32;
  for (; w <= last; ++w) {
    const std::uint32_t lo = w == a / 32 ? a % 32 : 0, hi = w == last ? (e - 1) % 32 : 31;
    const std::uint32_t mask = (hi == 31 ? ~0u : ((1u << (hi + 1)) - 1u)) & ~((1u << lo) - 1u);
    bits.set(w, mask);
  }
}

// Whether bytes [a, e) are all done, given `first`, the value of the word holding byte a (read
// by the caller, so that a batch's first words are loaded one after another without waiting).
CS_HD_TEMPLATE
template <class Bits>
CS_HD inline bool lz4_bits_all_from(Bits& bits, std::uint32_t a, std::uint32_t e, std::uint32_t first) {
  if (a >= e) return true;
  const std::uint32_t last = (e - 1) / 32;
  for (std::uint32_t w = a / 32; w <= last; ++w) {
    const std::uint32_t lo = w == a / 32 ? a % 32 : 0, hi = w == last ? (e - 1) % 32 : 31;
    const std::uint32_t mask = (hi == 31 ? ~0u : ((1u << (hi + 1)) - 1u)) & ~((1u << lo) - 1u);
    if (((w == a / 32 ? first : bits.get(w)) & mask) != mask) return false;
  }
  return true;
}
// Whether bytes [a, e) are all done.
CS_HD_TEMPLATE
template <class Bits>
CS_HD inline bool lz4_bits_all(Bits& bits, std::uint32_t a, std::uint32_t e) {
  return a >= e || lz4_bits_all_from(bits, a, e, bits.get(a / 32));
}

// The bytes a match reads: [op - off, op - off + min(off, len)) (an overlapping match, off <
// len, reads only the off bytes before it and repeats them).
CS_HD inline void lz4_match_source(const Lz4RoundMatch& m, std::uint32_t* a, std::uint32_t* e) {
  *a = m.op - m.off;
  *e = *a + (m.off < m.len ? m.off : m.len);
}

// --- a thread's copies --------------------------------------------------------------------
// One thread copies n bytes forward, dst[i] = src[i] for i = 0.. in order (an overlapping
// match's source lies before dst and repeats). With `words` (the caller's promise that src is
// another buffer or lies 8 or more bytes before dst: a word's source bytes were then stored
// before the load that holds them, which runs one word ahead) and where the destination reaches
// a 4-byte boundary and the source's aligned words lie inside [lo, hi), it moves words: two aligned loads and a funnel shift a word, so a warp's
// lanes, each at its own place, make a quarter of the byte copy's memory transactions. Bytes of
// a loaded word outside the source range are read and discarded, never stored.
CS_HD inline std::uint32_t lz4_load_word(const std::uint8_t* p) {
#if CS_DEVICE_PASS
  return *reinterpret_cast<const std::uint32_t*>(p);
#else
  std::uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
#endif
}
CS_HD inline void lz4_store_word(std::uint8_t* p, std::uint32_t w) {
#if CS_DEVICE_PASS
  *reinterpret_cast<std::uint32_t*>(p) = w;
#else
  std::memcpy(p, &w, 4);
#endif
}
CS_HD inline void lz4_thread_copy(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, bool words,
                                  const std::uint8_t* lo, const std::uint8_t* hi) {
  std::size_t i = 0;
  while (i < n && (reinterpret_cast<std::uintptr_t>(dst + i) & 3u) != 0) {
    dst[i] = src[i];
    ++i;
  }
  if (words && n - i >= 4) {
    const unsigned sh = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(src + i) & 3u);
    const std::uint8_t* a = src + i - sh;  // aligned
    // words k = 0.. while a + 4k + 8 <= hi (the second word of the pair) and 4k + 4 <= n - i
    if (a >= lo) {
      std::uint32_t w0 = a + 4 <= hi ? lz4_load_word(a) : 0;
      while (n - i >= 4 && a + 8 <= hi) {
        const std::uint32_t w1 = lz4_load_word(a + 4);
        const std::uint64_t pair = (static_cast<std::uint64_t>(w1) << 32) | w0;
        lz4_store_word(dst + i, static_cast<std::uint32_t>(pair >> (8 * sh)));
        w0 = w1;
        a += 4;
        i += 4;
      }
    }
  }
  for (; i < n; ++i) dst[i] = src[i];
}

// --- the emit walk -----------------------------------------------------------------------
// Region r's sequences from its true entry `entry` to `end` (the region's end), decoding to
// out[base, ...): copies the literals, marks their bytes in `bits`, and appends each match to
// rec[0, *count) (at most `slots`). Only for a block lz4_split_accepts took: the parse is the
// fixed-point walk's (lz4_region_walk), whose checks all passed, so it is not checked again
// beyond what keeps it inside the buffers. Returns false where a bound is broken anyway (never
// for an accepted block; the caller then declines the block).
CS_HD_TEMPLATE
template <class Bits>
CS_HD inline bool lz4_region_emit(const std::uint8_t* in, std::uint32_t in_size, std::uint32_t entry,
                                  std::uint32_t end, std::uint8_t* out, std::uint32_t size, std::uint32_t base,
                                  Bits& bits, Lz4RoundMatch* rec, std::uint32_t slots, std::uint32_t* count,
                                  const std::uint8_t* in_lo, const std::uint8_t* in_hi) {
  std::uint32_t ip = entry, op = base, n = 0;
  while (ip < end) {
    std::size_t p = ip;
    const std::uint8_t token = in[p++];
    std::size_t lit = token >> 4, match = token & 15u;
    if (lit == 15 && !lz4_read_length_ext(in, in_size, &p, &lit)) return false;
    if (lit > in_size - p || lit > size - op) return false;
    lz4_thread_copy(out + op, in + p, lit, true, in_lo, in_hi);
    lz4_bits_mark(bits, op, op + static_cast<std::uint32_t>(lit));
    p += lit;
    op += static_cast<std::uint32_t>(lit);
    if (p == in_size) {  // the last sequence: literals only
      ip = in_size;
      break;
    }
    if (in_size - p < 2) return false;
    const std::uint32_t off = static_cast<std::uint32_t>(in[p]) | (static_cast<std::uint32_t>(in[p + 1]) << 8);
    p += 2;
    if (match == 15 && !lz4_read_length_ext(in, in_size, &p, &match)) return false;
    match += kLz4MinMatch;
    if (off == 0 || off > op || match > size - op || n >= slots) return false;
    rec[n++] = Lz4RoundMatch{op, off, static_cast<std::uint32_t>(match)};
    op += static_cast<std::uint32_t>(match);
    ip = static_cast<std::uint32_t>(p);
  }
  *count = n;
  return true;
}

// The emit from the split walk's records instead of a walk: region r's sequence records (its
// walks from its true entry kept them: lz4_region_walk_records) decode to out[base, ...): copies
// the literals, marks their bytes, and rewrites each match in place as a match record rec[0,
// *count) (aliasing the slots: the m-th match is written over bytes [12m, 12m + 12), at or before
// the bytes of the record it comes from, which is loaded before). The records' loads do not
// depend on one another, where each step of a walk waits for the bytes the last one read:
// `Ahead` records are loaded at once. The bounds are checked as in lz4_region_emit, and each
// match's offset against the bytes before it (a stopped walk's `need` covers only what it
// walked), and that the records decode to out_bytes, the region's output by its walk (the bases
// of the regions after it were placed by that); false: the caller declines the block.
CS_HD_TEMPLATE
template <std::uint32_t Ahead = 4, class Bits>
CS_HD inline bool lz4_region_emit_records(const std::uint8_t* in, std::uint32_t in_size, Lz4RoundSeq* seq,
                                          std::uint32_t slots, const Lz4RegionRecords& r, std::uint64_t out_bytes,
                                          std::uint8_t* out, std::uint32_t size, std::uint32_t base, Bits& bits,
                                          std::uint32_t* count, const std::uint8_t* in_lo, const std::uint8_t* in_hi) {
  static_assert(Ahead >= 1 && Ahead <= 16, "records loaded at once");
  if (r.over || r.a0 > r.a1 || r.a1 > slots) return false;
  auto* rec = reinterpret_cast<Lz4RoundMatch*>(seq);
  std::uint32_t op = base, m = 0;
  for (std::uint32_t k = r.a0; k < r.a1; k += Ahead) {
    Lz4RoundSeq q[Ahead];
#pragma unroll
    for (std::uint32_t j = 0; j < Ahead; ++j)
      if (k + j < r.a1) q[j] = seq[k + j];
#pragma unroll
    for (std::uint32_t j = 0; j < Ahead; ++j) {
      if (k + j >= r.a1) break;
      const Lz4RoundSeq& s = q[j];
      const std::uint32_t at = lz4_seq_lit_at(s);
      if (s.tok >= in_size || at > in_size || s.lit > in_size - at || s.lit > size - op) return false;
      lz4_thread_copy(out + op, in + at, s.lit, true, in_lo, in_hi);
      lz4_bits_mark(bits, op, op + s.lit);
      op += s.lit;
      if (s.mlen == 0) continue;  // the last sequence
      if (s.off == 0 || s.off > op || s.mlen > size - op) return false;
      rec[m++] = Lz4RoundMatch{op, s.off, s.mlen};
      op += s.mlen;
    }
  }
  *count = m;
  return op - base == out_bytes;  // the records' bytes are the walk's, which placed the regions after
}

// --- a round ---------------------------------------------------------------------------------
// One thread's pass over its pending records rec[0, *count): copies each match whose source
// bytes are done and marks its own bytes (publish() between the copy and the marks: the
// device's block-scope fence; acquire() after a ready test and before the copy reads), keeps
// the others in order. Returns the matches copied.
//
// Batch records at a time (kLz4RoundBatch by default): their records and the first words of
// their ready tests are loaded before any is decided, so that a thread waits on one memory trip
// for the batch instead of one a record (a thread's pass is a chain of dependent loads; the
// GPU's other threads are in the same state, so nothing else hides it). A match found not ready
// is tested again, with the bits as they are then, where an earlier match of its batch was
// copied (it may read that one: chains of matches inside a region, common on the synth fields,
// would otherwise move one link a round).
inline constexpr std::uint32_t kLz4RoundBatch = 8;

CS_HD_TEMPLATE
template <std::uint32_t Batch = kLz4RoundBatch, class Bits, class Publish, class Acquire>
CS_HD inline std::uint32_t lz4_round_pass(Lz4RoundMatch* rec, std::uint32_t* count, std::uint8_t* out,
                                          std::uint32_t size, Bits& bits, Publish&& publish, Acquire&& acquire) {
  static_assert(Batch >= 1 && Batch <= 32, "records a batch");
  std::uint32_t keep = 0, copied = 0;
  const std::uint32_t n = *count;
  for (std::uint32_t k = 0; k < n; k += Batch) {
    const std::uint32_t b = n - k < Batch ? n - k : Batch;
    Lz4RoundMatch m[Batch];
    bool ready[Batch];
#pragma unroll
    for (std::uint32_t j = 0; j < Batch; ++j)
      if (j < b) m[j] = rec[k + j];
    std::uint32_t first[Batch];
#pragma unroll
    for (std::uint32_t j = 0; j < Batch; ++j)
      if (j < b) first[j] = bits.get((m[j].op - m[j].off) / 32);
#pragma unroll
    for (std::uint32_t j = 0; j < Batch; ++j) {
      if (j >= b) continue;
      std::uint32_t a, e;
      lz4_match_source(m[j], &a, &e);
      ready[j] = lz4_bits_all_from(bits, a, e, first[j]);
    }
    acquire();
    bool copied_here = false;
#pragma unroll
    for (std::uint32_t j = 0; j < Batch; ++j) {
      if (j >= b) continue;
      if (!ready[j] && copied_here) {
        // it may read an earlier match of this batch: test again with the bits as they are now
        std::uint32_t a, e;
        lz4_match_source(m[j], &a, &e);
        ready[j] = lz4_bits_all(bits, a, e);
        if (ready[j]) acquire();
      }
      if (!ready[j]) {
        rec[keep++] = m[j];  // keep <= k + j: records at and after k are held in m already
        continue;
      }
      lz4_thread_copy(out + m[j].op, out + (m[j].op - m[j].off), m[j].len, m[j].off >= 8, out, out + size);
      publish();
      lz4_bits_mark(bits, m[j].op, m[j].op + m[j].len);
      ++copied;
      copied_here = true;
    }
  }
  *count = keep;
  return copied;
}

}  // namespace cubestream::codec::logic
