// A numcodecs LZ4 block decoded in segments, written once for the host and the device.
//
// The ring decoder (lz4_ring.hpp) keeps a whole block in one thread block, and its walker, one
// warp parsing and checking every sequence and building batches, set the pace at ~500 cycles a
// sequence (docs/gpu_decoders.md, "Which warp sets the pace"). This path splits the same work
// three ways so that only the least of it stays serial:
//  1. The walk (lz4_segment_walk): one warp per block parses and checks every sequence as the
//     serial decoder does, copying nothing, and marks where segments start: a segment closes
//     after kLz4SegmentOut bytes of output or kLz4SegmentSeqs sequences. This is the only
//     serial pass over a block, and the only place a status is decided: the parse of a block
//     does not depend on the bytes it produces, so a block the walk accepts decodes, and a
//     block it refuses gets exactly the serial decoder's status.
//  2. Segments, thousands per batch, one warp each: parse the segment again (now trusted),
//     copy its literals straight from the input to their place in the output, and keep its
//     matches as records (dst, offset, length).
//  3. The matches of a segment run after those of the segment before it in the same block
//     (a flag per segment; LZ4 matches read up to 64 KiB back, often bytes an earlier match
//     wrote: bench/micro/lz4_match_deps.cpp), but every literal byte of the segment and of the
//     segments before it is already in place, and inside a segment the warp copies a group of
//     matches at once where none reads what another in the group writes (lz4_group_size).
// Output is written straight to its place: no ring, no staging of decoded bytes.
//
// Match bytes: LZ4 copies dst[i] = dst[i - off] for i < len in order, so with off < len the
// match repeats its last `off` source bytes. Every byte it writes equals
// out[d - off + (i mod off)], a byte before d that is final before the match starts; so the
// bytes of a match, and of a group, can be read in any order, all before any is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_ring.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// A segment closes once it has produced this many bytes or walked this many sequences (the
// second bounds the records a segment keeps: kLz4SegmentSeqs x 12 bytes of shared memory per
// warp on the GPU). Each segment is a link of the chain its buffer's matches wait on (segment k
// copies them after segment k - 1 is done), so fewer, longer segments mean fewer hand-overs.
// -DCS_LZ4_SEGMENT_OUT / -DCS_LZ4_SEGMENT_SEQS set them for A/B runs of the device build
// (bench/lz4_variants_ab.sh passes CUDA flags only: host-compiled tests that compare segment
// counts with this logic then disagree, so such a variant runs the bench's byte checks alone).
#ifndef CS_LZ4_SEGMENT_OUT
#define CS_LZ4_SEGMENT_OUT 16384
#endif
#ifndef CS_LZ4_SEGMENT_SEQS
#define CS_LZ4_SEGMENT_SEQS 256
#endif
inline constexpr std::uint32_t kLz4SegmentOut = CS_LZ4_SEGMENT_OUT;
inline constexpr std::uint32_t kLz4SegmentSeqs = CS_LZ4_SEGMENT_SEQS;
static_assert(kLz4SegmentSeqs % 32 == 0 && kLz4SegmentSeqs >= 32, "a warp's lanes take the records 32 at a time");
static_assert(kLz4SegmentOut >= 1024, "segment output");
// The input a segment's parse stages at a time (shared memory per warp on the GPU; the host runs
// use the same size so that they refill where the device does). 1 KiB rather than 2: the fused
// kernel's shared memory sets its L1 carve-out, and 32 KiB a block instead of 40 measured 0.7-2.2 %
// faster (docs/gpu_decoders.md, "One buffer alone, the chain by doubling, and smaller segment
// windows").
inline constexpr std::size_t kLz4SegmentWindow = 1024;
// Matches a warp copies at once (one per lane at most).
inline constexpr std::uint32_t kLz4GroupMax = 32;

// Where a segment's first sequence starts: input offset within the block, output offset.
struct Lz4Segment {
  std::uint32_t in;
  std::uint32_t out;
};

// A match kept by a segment for its match pass.
struct Lz4MatchRecord {
  std::uint32_t dst;  // output position of its first byte
  std::uint32_t off;  // 1..65535
  std::uint32_t len;  // >= kLz4MinMatch
};

// A segment's runs (session 35): its sequences in runs of kLz4RunSeqs, each run's start noted by
// the walk, so that a segment worker parses the runs side by side, a lane each, instead of the
// whole segment one sequence after another. The walk has parsed every sequence already; a
// worker's serial parse of a segment (~450 cycles a sequence on the GPU, the walk's cost) was
// most of what a worker spends, and on the batches the workers, not the walks, set the time
// (docs/gpu_decoders.md, session 35). `seqs`: the segment's sequences (0: not noted, e.g. the
// split walk's segments; the worker then parses serially); at[r - 1]: the input offset of run r
// (sequence kLz4RunSeqs x r) from the segment's first sequence, for r >= 1. 16 bits hold it: a
// sequence before the segment's last starts below kLz4SegmentOut bytes of output from the
// segment's start, and a sequence takes at most its output x 256 / 255 + 5 bytes of input (a
// token, the offset, and a length byte per 255 of each length, one more each at most).
inline constexpr std::uint32_t kLz4RunSeqs = 8;
inline constexpr std::uint32_t kLz4SegmentRuns = kLz4SegmentSeqs / kLz4RunSeqs;
static_assert(kLz4SegmentSeqs % kLz4RunSeqs == 0, "whole runs");
static_assert(std::uint64_t{kLz4SegmentOut} * 256 / 255 + 5 * std::uint64_t{kLz4SegmentSeqs} < 65536,
              "a run's start fits 16 bits");
struct Lz4Runs {
  std::uint16_t seqs;
  std::uint16_t at[kLz4SegmentRuns - 1];
};

// A walk's mark sink may also take the runs (Lz4Runs): sink.run(k, i, off) where sequence i (a
// multiple of kLz4RunSeqs, >= kLz4RunSeqs) of segment k starts, `off` bytes of input after the
// segment's first sequence, and sink.close(k, seqs) once segment k is complete. A sink without
// them (a plain lambda) takes the marks alone. (A detection trait, not a requires-expression:
// the CUDA sources compile as C++17.)
template <class Mark, class = void>
struct Lz4NotesRuns : std::false_type {};
template <class Mark>
struct Lz4NotesRuns<Mark, std::void_t<decltype(std::declval<Mark&>().run(0u, 0u, 0u)),
                                      decltype(std::declval<Mark&>().close(0u, 0u))>> : std::true_type {};
CS_HD_TEMPLATE
template <class Mark>
CS_HD inline void lz4_note_run(Mark& mark, std::uint32_t k, std::uint32_t i, std::uint32_t off) {
  if constexpr (Lz4NotesRuns<Mark>::value) mark.run(k, i, off);
}
CS_HD_TEMPLATE
template <class Mark>
CS_HD inline void lz4_note_close(Mark& mark, std::uint32_t k, std::uint32_t seqs) {
  if constexpr (Lz4NotesRuns<Mark>::value) mark.close(k, seqs);
}
// The runs' starts among tokens [from, stop) of a table walk's list (toks, window offsets from
// `base`), which join segment k as its sequences seqs, seqs + 1, ... (`in`: the segment's first
// sequence). A sink with run_range (the device's: the walking warp's lanes take a note each)
// takes them at once; else run() each.
template <class Mark, class = void>
struct Lz4NotesRunRange : std::false_type {};
template <class Mark>
struct Lz4NotesRunRange<Mark, std::void_t<decltype(std::declval<Mark&>().run_range(
                                  0u, 0u, static_cast<const std::uint16_t*>(nullptr), 0u, 0u, 0u, 0u))>>
    : std::true_type {};
// The first of tokens [from, ...) that starts a run, where token `from` is its segment's
// sequence `seqs` (>= 1), and the Lz4Runs::at entry of token i (such a token or one kLz4RunSeqs
// x m after it).
CS_HD inline std::uint32_t lz4_first_run_token(std::uint32_t from, std::uint32_t seqs) {
  return from + (kLz4RunSeqs - seqs % kLz4RunSeqs) % kLz4RunSeqs;
}
CS_HD inline std::uint32_t lz4_run_entry(std::uint32_t from, std::uint32_t seqs, std::uint32_t i) {
  return (seqs + (i - from)) / kLz4RunSeqs - 1;
}
CS_HD_TEMPLATE
template <class Mark>
CS_HD inline void lz4_note_runs(Mark& mark, std::uint32_t k, std::uint32_t seqs, const std::uint16_t* toks,
                                std::uint32_t from, std::uint32_t stop, std::uint32_t base, std::uint32_t in) {
  if constexpr (Lz4NotesRunRange<Mark>::value) {
    mark.run_range(k, seqs, toks, from, stop, base, in);
  } else if constexpr (Lz4NotesRuns<Mark>::value) {
    for (std::uint32_t i = lz4_first_run_token(from, seqs); i < stop; i += kLz4RunSeqs)
      mark.run(k, seqs + (i - from), base + toks[i] - in);
  }
}

// Segments a block of in_size bytes decoding to `size` bytes can have: every segment but the
// last holds kLz4SegmentOut bytes of output or kLz4SegmentSeqs sequences, and a sequence takes
// at least 3 input bytes (token and offset) except the last one (at least 1). Also: every
// sequence but the block's last outputs its match, kLz4MinMatch bytes at least, so every segment
// but the last has at least kLz4SegmentOutMin bytes of output; a walk checks each sequence's
// output against `size` before it marks the next segment, so this holds for damaged blocks too.
// The second bound is the tighter one wherever the input is over ~0.7 of the output (plain LZ4
// of float fields: 4 098 segments for a 4 MiB chunk, against 5 719 by the input), and the
// scratch holds a slot for each (84 bytes with the runs, session 35).
inline constexpr std::size_t kLz4SegmentOutMin =
    kLz4SegmentOut < kLz4MinMatch * kLz4SegmentSeqs ? kLz4SegmentOut : kLz4MinMatch * kLz4SegmentSeqs;
CS_HD inline std::size_t lz4_segment_bound(std::size_t in_size, std::size_t size) {
  const std::size_t by_input = size / kLz4SegmentOut + (in_size / 3 + 1) / kLz4SegmentSeqs + 2;
  const std::size_t by_output = size / kLz4SegmentOutMin + 2;
  return by_input < by_output ? by_input : by_output;
}

// Whether the segmented path takes a block of in_size bytes decoding to `size` (both below
// kLz4RingMaxBytes): not where it decodes to more than 1.4x its size. Such dense blocks, e.g.
// LZ4 over byte-shuffled float32 fields (~30-55 sequences a KiB, mostly short matches a few
// bytes back), keep each segment's match pass waiting on the one before, and the ring decoder
// runs them ~2x faster. H100, session 17, kernel GB/s on the bench's three batches: ratio
// 1.04-1.18 (plain float32) segments 38-125 against ring 20-76; ratio 1.63-1.84 (shuffled
// first) segments 8-23 against ring 17-40 (docs/gpu_decoders.md, version 12). The ratio is
// all that is known before the walk; 1.4 lies between the two groups measured.
CS_HD inline bool lz4_segments_take(std::size_t in_size, std::size_t size) {
  return 5 * static_cast<std::uint64_t>(size) <= 7 * static_cast<std::uint64_t>(in_size);
}

// The next sequence at *ip for an output position op (a block of in_size bytes decoding to
// `size`, both below kLz4RingMaxBytes), read through the staged reader `rd`: exactly
// lz4_read_sequence's result, most sequences through the ring walker's fast step over the
// staged window (lz4_fast_step). Measured on the H100 (session 14): the walk costs ~450-480
// cycles a sequence either way; a form without branches on the bytes (token and length byte
// read together, then offset and match length byte together) was 8 % slower, so the walk's
// cost is its chain of dependent instructions, not the waits between reads.
CS_HD_TEMPLATE
template <class Fill>
CS_HD inline DecodeStatus lz4_staged_next(Lz4StagedReader<Fill>& rd, std::uint32_t in_size, std::uint32_t size,
                                          std::size_t* ip, std::uint32_t op, Lz4Sequence* s, bool* last) {
  if (in_size - *ip >= kLz4FastSpan + 3) {
    if (*ip - rd.base + kLz4FastSpan > rd.len) {  // also when ip < base: wraps around
      rd.len = 0;
      static_cast<void>(rd[*ip]);
    }
    Lz4BatchSeq f;
    std::uint32_t nip = 0;
    const auto ip32 = static_cast<std::uint32_t>(*ip);
    if (*ip - rd.base + kLz4FastSpan <= rd.len &&
        lz4_fast_step(rd.window + (*ip - rd.base), ip32, in_size, op, size, &f, &nip)) {
      s->lit_src = f.lit_src;
      s->lit_len = f.lit_len;
      s->match_offset = f.off;
      s->match_len = f.mlen;
      *ip = nip;
      *last = false;
      return DecodeStatus::kOk;
    }
  }
  return lz4_read_sequence(rd, in_size, ip, op, size, s, last);
}

// The segment state of a walk: segments marked, where the open one starts (output, input), its
// sequences.
struct Lz4SegmentMarks {
  std::uint32_t count = 0, out = 0, seqs = 0, in = 0;
};

// The serial rule before the sequence at (ip, op): a new segment if none is open, or the open one
// holds kLz4SegmentOut bytes or kLz4SegmentSeqs sequences; then the sequence joins it. False
// where a mark would exceed max_segments (the walks' guard, unreachable with lz4_segment_bound).
CS_HD_TEMPLATE
template <class Mark>
CS_HD inline bool lz4_mark_before(Lz4SegmentMarks* m, std::uint32_t ip, std::uint32_t op, std::size_t max_segments,
                                  Mark&& mark) {
  if (m->count == 0 || op - m->out >= kLz4SegmentOut || m->seqs >= kLz4SegmentSeqs) {
    if (m->count == max_segments) return false;
    if (m->count != 0) lz4_note_close(mark, m->count - 1, m->seqs);
    mark(m->count, ip, op);
    ++m->count;
    m->out = op;
    m->in = ip;
    m->seqs = 0;
  } else if (m->seqs % kLz4RunSeqs == 0) {
    lz4_note_run(mark, m->count - 1, m->seqs, ip - m->in);
  }
  ++m->seqs;
  return true;
}

// One sequence through lz4_read_sequence (the serial decoder's checks): moves *ip and *op past
// it; *last at the block's last sequence.
CS_HD_TEMPLATE
template <class Reader>
CS_HD inline DecodeStatus lz4_walk_read(Reader& rd, std::uint32_t in_size, std::uint32_t size, std::uint32_t* ip,
                                        std::uint32_t* op, bool* last) {
  std::size_t ip64 = *ip;
  Lz4Sequence g;
  const DecodeStatus st = lz4_read_sequence(rd, in_size, &ip64, *op, size, &g, last);
  if (st != DecodeStatus::kOk) return st;
  *ip = static_cast<std::uint32_t>(ip64);
  *op += static_cast<std::uint32_t>(g.lit_len + g.match_len);
  return DecodeStatus::kOk;
}

// Walks the block in[0, in_size) (read through `rd`, a staged reader of it) that must decode to
// exactly `size` bytes (both below kLz4RingMaxBytes), checking every sequence exactly as
// lz4_decode_exact_with does, and calls mark(k, in, out) where segment k starts. Returns the
// serial decoder's status; *segments receives the count (valid on kOk). `max_segments` is
// lz4_segment_bound(in_size, size) or more: the walk cannot make more (a guard, unreachable,
// answers kCorrupt rather than write past the caller's array).
CS_HD_TEMPLATE
template <class Fill, class Mark>
CS_HD inline DecodeStatus lz4_segment_walk(Lz4StagedReader<Fill>& rd, std::uint32_t in_size, std::uint32_t size,
                                           std::size_t max_segments, Mark&& mark, std::uint32_t* segments) {
  *segments = 0;
  if (in_size == 0) return DecodeStatus::kCorrupt;  // not a block (the empty block is a 0 token)
  // (the fast step inline with 32-bit positions: through lz4_staged_next's 64-bit ones the walk
  // measured 12 % slower on the H100, 22.6 against 20.1 ms for the era5-like batch)
  std::uint32_t ip = 0, op = 0;
  Lz4SegmentMarks m;
  for (;;) {
    if (!lz4_mark_before(&m, ip, op, max_segments, mark)) return DecodeStatus::kCorrupt;
    if (in_size - ip >= kLz4FastSpan + 3) {
      if (std::size_t{ip} - rd.base + kLz4FastSpan > rd.len) {  // also when ip < base: wraps around
        rd.len = 0;
        static_cast<void>(rd[ip]);
      }
      Lz4BatchSeq f;
      std::uint32_t nip = 0;
      if (std::size_t{ip} - rd.base + kLz4FastSpan <= rd.len &&
          lz4_fast_step(rd.window + (ip - rd.base), ip, in_size, op, size, &f, &nip)) {
        op += f.lit_len + f.mlen;
        ip = nip;
        continue;
      }
    }
    bool last = false;
    const DecodeStatus st = lz4_walk_read(rd, in_size, size, &ip, &op, &last);
    if (st != DecodeStatus::kOk) return st;
    if (last) break;
  }
  if (m.count != 0) lz4_note_close(mark, m.count - 1, m.seqs);
  *segments = m.count;
  // short of the size the container promised: damaged (lz4_decode_exact_with)
  return op == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

// ---- The table walk ----
//
// lz4_segment_walk's chain costs ~450 cycles a sequence on the GPU, for one warp per block
// (docs/gpu_decoders.md, "numcodecs lz4 in segments"). The table walk takes the same decisions
// with a shorter chain, a staged window at a time, with a team of threads (on the GPU the
// buffer's thread block; on the host one thread):
//  1. the table (the team): for every position r of the window, where the next token would be
//     if a token stood at r (lz4_table_shape; r itself where it declines), independently;
//  2. the chain (one warp or thread): from the walk's position, one table load a token lists
//     the window's tokens (lz4_table_chain);
//  3. the tokens (the team, lz4_table_token_sum and _place): each thread reads its tokens' sequences
//     once (their shapes, kept packed in at[i]), a team-wide prefix sum of their output lengths
//     places them (at[i]), each thread runs its sequences' checks (lz4_fast_checks' rule) and the
//     first failing token ends the run;
//  4. the marks (the walker): the serial rule's segment starts among the accepted tokens, found
//     by binary search on the output positions (lz4_table_marks).
// Where the chain stops on a 0 (a run of more than kLz4TableExtMax length bytes, a sequence
// reaching past the staged window, the block's end) or a check fails, that one sequence goes through lz4_read_sequence as in the
// serial walk, so the statuses, marks and counts are exactly lz4_segment_walk's (tested on every
// data kind and damaged blocks, Lz4Segments.TableWalkMarksWhatTheSerialWalkMarks).
//
// A table entry needs the fast path's span staged after it and the walk's fast-path rule (at
// least kLz4FastSpan + 3 bytes of block left), so the table of a window staged at `base` with
// `len` bytes covers positions [0, lz4_table_end): an entry is r plus the sequence's input size,
// below len, so 16 bits hold it for windows up to 65535 - kLz4FastSpan bytes.
inline constexpr std::uint32_t kLz4TableWindowMax = 65535u - kLz4FastSpan;
// The walk restages the window before filling a table over fewer positions than this (unless
// the window already reaches the block's end).
inline constexpr std::uint32_t kLz4TableMinRun = 512;
// The smallest window the table walk takes (a window staged at ip then holds kLz4TableMinRun
// table positions past it).
inline constexpr std::size_t kLz4TableWindowMin = kLz4FastSpan + 16 + kLz4TableMinRun;

CS_HD inline std::uint32_t lz4_table_end(std::size_t base, std::size_t len, std::uint32_t in_size) {
  const std::size_t by_window = len > kLz4FastSpan ? len - kLz4FastSpan : 0;
  const std::size_t left = in_size - base;
  const std::size_t by_block = left >= kLz4FastSpan + 3 ? left - (kLz4FastSpan + 3) + 1 : 0;
  return static_cast<std::uint32_t>(by_window < by_block ? by_window : by_block);
}

// The table's shape of a sequence at w, with `avail` bytes staged from w and `left` bytes of the
// block from w: lz4_fast_shape's rule (not the last sequence, at least one byte of the block
// after the offset, nothing read outside the staged bytes) without its limit of one length byte.
// Literal runs of 270 bytes or more (two or more length bytes) are common in climate chunks
// (~2 000 of the ~73 000 sequences of an era5-like 4 MiB chunk; bench/micro/lz4_literal_runs.cpp)
// and each had stopped the chain for a token pass and a serial step. A run of length bytes longer
// than kLz4TableExtMax is still declined: a stretch of 255s would otherwise cost every position
// in it a walk to its end.
inline constexpr std::uint32_t kLz4TableExtMax = 64;
CS_HD inline bool lz4_table_shape(const std::uint8_t* w, std::uint32_t avail, std::uint32_t left, Lz4FastShape* f) {
  const std::uint32_t lim = avail < left ? avail : left;  // bytes that may be read from w
  if (lim == 0) return false;
  const std::uint32_t t = w[0];
  std::uint32_t lit = t >> 4, h = 1, e = 0;
  if (lit == 15) {
    do {
      if (h >= lim || h > kLz4TableExtMax) return false;
      e = w[h++];
      lit += e;
    } while (e == 255);
  }
  const std::uint32_t q = h + lit;  // offset position; lit <= 15 + 255 * kLz4TableExtMax
  if (q + 3 > lim) return false;
  const std::uint32_t off = static_cast<std::uint32_t>(w[q]) | (static_cast<std::uint32_t>(w[q + 1]) << 8);
  std::uint32_t m = t & 15u, mh = 0;
  if (m == 15) {
    do {
      if (q + 2 + mh >= lim || mh >= kLz4TableExtMax) return false;
      e = w[q + 2 + mh++];
      m += e;
    } while (e == 255);
  }
  *f = Lz4FastShape{h, lit, off, m + static_cast<std::uint32_t>(kLz4MinMatch), q + 2 + mh};
  return true;
}

// Fills tbl[r] for r in [r_begin, r_end) taken first, first + stride, ... (a lane's share):
// r + the input size of the sequence a token at r would start (lz4_table_shape), or r itself
// where the table declines it; and tbl[r] = r for r in [r_end, len] (the table has len + 1
// entries: an entry can equal len). Every position where the chain stops, a decline or past the
// table's end, is thus a fixed point, so lz4_table_chain steps without a test between loads.
// `len` is the window's staged bytes, `left0` the block's bytes from the window's start; r_end is
// at most lz4_table_end(base, len, ...), and `stride`, a team's size, is small (a lane's steps of
// 4 x stride must not wrap 32 bits).
//
// A lane takes four of its positions a step (r, r + stride, r + 2 stride, r + 3 stride): first
// the token and first length byte of all four, then the byte after each offset (e2), then the
// four decisions (lz4_fast_next's rule) and stores. One position a step had been two dependent shared loads and a store in turn, and
// the compiler cannot lift the next position's loads above the store (a byte pointer may alias
// the table). Lanes of a warp still read neighbouring bytes, as before: taking four consecutive
// positions a lane instead (one word holds their tokens) spread a warp's e2 loads over 128+ bytes,
// and under a full GPU's load the fill then took 50 % longer. Session 33 on the H200 (era5-like
// 4 MiB chunks, 6 KiB windows, the helpers' clocks): ~5.5 k cycles a window in a batch of 256
// and ~4.3 k alone, against ~6.6 k and ~5.4 k one position a step (docs/gpu_decoders.md).
// A position whose lengths run into a 255 byte takes lz4_table_shape (rare). Positions past
// r_end in a lane's last step read position r's bytes and store nothing.
CS_HD inline void lz4_table_fill(const std::uint8_t* w, std::uint16_t* tbl, std::uint32_t r_begin,
                                 std::uint32_t r_end, std::uint32_t len, std::uint32_t left0, std::uint32_t first,
                                 std::uint32_t stride) {
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (std::uint32_t r = r_begin + first; r < r_end; r += 4u * stride) {
    std::uint32_t rc[4], t[4], e1[4], q[4], e2[4];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (std::uint32_t i = 0; i < 4; ++i) {
      const std::uint32_t ri = r + i * stride;
      rc[i] = ri < r_end ? ri : r;
      t[i] = w[rc[i]];
      e1[i] = w[rc[i] + 1];
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (std::uint32_t i = 0; i < 4; ++i) {
      q[i] = lz4_fast_offset_pos(t[i], e1[i]);  // from rc[i]
      e2[i] = w[rc[i] + q[i] + 2u];
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (std::uint32_t i = 0; i < 4; ++i) {
      const std::uint32_t ri = r + i * stride;
      if (ri >= r_end) break;
      const bool ok = !lz4_fast_runs_on(t[i], e1[i], e2[i]) && left0 - ri >= q[i] + 3u;  // lz4_fast_next's rule
      std::uint32_t n = ok ? q[i] + 2u + lz4_fast_match_ext(t[i]) : 0u;
      if (n == 0) {
        Lz4FastShape f;
        if (lz4_table_shape(w + ri, len - ri, left0 - ri, &f)) n = f.size;
      }
      tbl[ri] = static_cast<std::uint16_t>(ri + n);
    }
  }
  for (std::uint32_t r = r_end + first; r <= len; r += stride) tbl[r] = static_cast<std::uint16_t>(r);
}

// Tokens a window of `cap` bytes can hold (a sequence takes at least 3 bytes of input).
CS_HD constexpr std::uint32_t lz4_table_token_cap(std::size_t cap) { return static_cast<std::uint32_t>(cap / 3 + 2); }

// The chain: from table position *r (< end), lists tokens in toks[0, n) (written only where
// `writer`: on the GPU every lane of the walker runs the chain alike, lane 0 stores) until the
// table says the fast path declines (tbl[*r] == *r, *r < end), the chain leaves the table
// (*r >= end, where every entry is its own position) or `cap` tokens are listed; *r is then the
// position after the last token. toks[n, min(n + kLz4ChainSteps, cap)) may be overwritten.
// A token's step is one dependent shared load: the table's fixed points (lz4_table_fill) stop
// the chain by themselves, so kLz4ChainSteps loads run back to back and one test after them says
// how far the chain got (positions rise strictly until a fixed point, then stay). Session 29's
// ncu put ~95 cycles on a token with the test and the branch between loads. (A jump table, the
// token after next, measured no faster on the H100 in session 15: docs/gpu_decoders.md, "The
// table walk".)
inline constexpr std::uint32_t kLz4ChainSteps = 8;
CS_HD inline std::uint32_t lz4_table_chain(const std::uint16_t* tbl, std::uint32_t* r, std::uint32_t end,
                                           std::uint16_t* toks, std::uint32_t cap, bool writer) {
  static_cast<void>(end);  // the fixed points at and past end stop the chain
  std::uint32_t at = *r, n = 0;
  while (n + kLz4ChainSteps <= cap) {
    std::uint32_t p[kLz4ChainSteps + 1];
    p[0] = at;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (std::uint32_t k = 0; k < kLz4ChainSteps; ++k) p[k + 1] = tbl[p[k]];
    std::uint32_t moved = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (std::uint32_t k = 0; k < kLz4ChainSteps; ++k) {
      if (writer) toks[n + k] = static_cast<std::uint16_t>(p[k]);
      moved += p[k + 1] != p[k] ? 1u : 0u;
    }
    n += moved;
    at = p[kLz4ChainSteps];  // == p[moved]: a fixed point stays
    if (moved < kLz4ChainSteps) {
      *r = at;
      return n;
    }
  }
  for (; n < cap; ++n) {  // the last few below cap, one at a time
    const std::uint32_t next = tbl[at];
    if (next == at) break;
    if (writer) toks[n] = static_cast<std::uint16_t>(at);
    at = next;
  }
  *r = at;
  return n;
}

// The token pass over toks[0, n) (window w of `len` staged bytes, the block's `left0` bytes from
// its start), for the thread `t` of a team of `threads`; its tokens are [i0, i1)
// (lz4_table_share). Part 1 reads each of its tokens' sequences once (their shapes), keeps
// what part 2 needs of it in at[i] (lz4_token_pack) and returns the sum of their output lengths;
// the team then scans those sums (an exclusive prefix `pre`, from op0), and part 2 turns at[i]
// into each token's output position (the last thread also writes at[n], the end) and returns the
// first of its tokens that fails a check, or n. Only thread t touches at[i0, i1) between the two
// parts, so the team needs no barrier there beyond its scan's. (Part 2 parsed every sequence
// again until session 31: the pass by warp 0 alone took 5.1 k cycles a 6 KiB table, 31 % of an
// era5-like walk.)
CS_HD inline void lz4_table_share(std::uint32_t n, std::uint32_t t, std::uint32_t threads, std::uint32_t* i0,
                                  std::uint32_t* i1) {
  const std::uint32_t per = (n + threads - 1) / threads;
  *i0 = t * per < n ? t * per : n;
  *i1 = *i0 + per < n ? *i0 + per : n;
}

// A token's sequence as part 2 needs it, in one 32-bit word: bits 0-14 its output length
// lit + mlen; bits 15-30 the least output position before its literals from which its offset
// stays inside the output (off - lit where off > lit, else 0); bit 31 an offset of 0. Part 2's
// test on it equals lz4_fast_checks at the first failing token (where pos <= size): lit and the
// match inside the output is pos + lit + mlen <= size, off <= pos + lit is need <= pos.
inline constexpr std::uint32_t kLz4TokenLenBits = 15;
static_assert(2 * (15 + 255 * kLz4TableExtMax) + kLz4MinMatch < (1u << kLz4TokenLenBits),
              "lz4_table_shape's lengths fit the packed token's length bits");
CS_HD inline std::uint32_t lz4_token_pack(const Lz4FastShape& f) {
  const std::uint32_t need = f.off > f.lit ? f.off - f.lit : 0u;  // off < 2^16: 16 bits
  return (f.off == 0 ? 0x80000000u : 0u) | (need << kLz4TokenLenBits) | (f.lit + f.mlen);
}
CS_HD inline std::uint32_t lz4_token_len(std::uint32_t packed) { return packed & ((1u << kLz4TokenLenBits) - 1u); }
CS_HD inline bool lz4_token_fits(std::uint32_t packed, std::uint32_t pos, std::uint32_t size) {
  const std::uint32_t need = (packed >> kLz4TokenLenBits) & 0xFFFFu;
  return (packed & 0x80000000u) == 0 && need <= pos &&
         static_cast<std::uint64_t>(pos) + lz4_token_len(packed) <= size;
}

// Part 1 takes a thread's tokens Width at a time: their positions, then each token and first
// literal length byte (e1), then each offset and the byte after it (e2), then the shapes and
// stores; only a token whose lengths run into a 255 byte takes lz4_table_shape. One token at a
// time it was four dependent shared loads a token, and the next token's loads waited for the
// store before them (a byte pointer may alias at[]). kLz4TokenSumWidth is the width of warp 0's
// pass and of the host's (~4 tokens a lane on the era5-like chunks: two steps of three rounds of
// loads instead of four steps of four); four at a time doubled the fused kernels' spill at 64
// registers, two leaves it as it was. The block's pass (a token or two a thread) takes one, in
// lz4_table_shape's own loop (the steps' form added ~40-80 bytes of spill to the pipelined walk).
// Every token is one lz4_table_shape accepts (the table lists only those: its positions stop at
// lz4_table_end, with kLz4FastSpan bytes staged after each, so that lz4_fast_next's entries are
// the shape's), so the five bytes read (token, e1, offset, e2) lie below the q + 3 bytes it
// checked were there; a literal run with a 255 byte has its offset further on than the q read
// here (tested at the window's exact end, TokenSumReadsNoByteAfterTheSequence).
// (-DCS_LZ4_TOKEN_SUM_WIDTH=1 builds the one-token loop, for A/B runs on the GPU)
#if defined(CS_LZ4_TOKEN_SUM_WIDTH)
inline constexpr std::uint32_t kLz4TokenSumWidth = CS_LZ4_TOKEN_SUM_WIDTH;
#else
inline constexpr std::uint32_t kLz4TokenSumWidth = 2;
#endif
static_assert(kLz4TokenSumWidth >= 1 && kLz4TokenSumWidth <= 8, "a few tokens a step");
template <std::uint32_t Width>
CS_HD inline std::uint32_t lz4_table_token_sum(const std::uint8_t* w, std::uint32_t len, std::uint32_t left0,
                                               const std::uint16_t* toks, std::uint32_t i0, std::uint32_t i1,
                                               std::uint32_t* at) {
  std::uint32_t sum = 0;
  if constexpr (Width == 1) {  // (the shape's own loop: fewer registers than the steps below)
    for (std::uint32_t i = i0; i < i1; ++i) {
      Lz4FastShape f;
      static_cast<void>(lz4_table_shape(w + toks[i], len - toks[i], left0 - toks[i], &f));  // true: the table said so
      at[i] = lz4_token_pack(f);
      sum += f.lit + f.mlen;
    }
  } else {
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
    for (std::uint32_t i = i0; i < i1; i += Width) {
      std::uint32_t r[Width], t[Width], e1[Width], q[Width], off[Width], e2[Width];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t j = 0; j < Width; ++j) r[j] = toks[i + j < i1 ? i + j : i];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t j = 0; j < Width; ++j) {
        t[j] = w[r[j]];
        e1[j] = w[r[j] + 1];
      }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t j = 0; j < Width; ++j) {
        q[j] = lz4_fast_offset_pos(t[j], e1[j]);  // from r[j]
        off[j] = static_cast<std::uint32_t>(w[r[j] + q[j]]) | (static_cast<std::uint32_t>(w[r[j] + q[j] + 1]) << 8);
        e2[j] = w[r[j] + q[j] + 2];
      }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (std::uint32_t j = 0; j < Width; ++j) {
        if (i + j >= i1) break;
        Lz4FastShape f;
        if (lz4_fast_runs_on(t[j], e1[j], e2[j])) {
          static_cast<void>(lz4_table_shape(w + r[j], len - r[j], left0 - r[j], &f));  // true: the table said so
        } else {
          const std::uint32_t head = (t[j] >> 4) == 15u ? 2u : 1u, m_ext = lz4_fast_match_ext(t[j]);
          const std::uint32_t mlen = (t[j] & 15u) + (m_ext != 0 ? e2[j] : 0u) + static_cast<std::uint32_t>(kLz4MinMatch);
          f = Lz4FastShape{head, q[j] - head, off[j], mlen, q[j] + 2u + m_ext};
        }
        at[i + j] = lz4_token_pack(f);
        sum += f.lit + f.mlen;
      }
    }
  }
  return sum;
}
CS_HD inline std::uint32_t lz4_table_token_place(std::uint32_t size, std::uint32_t n, std::uint32_t i0,
                                                 std::uint32_t i1, std::uint32_t pos, std::uint32_t* at) {
  std::uint32_t bad = n;
  for (std::uint32_t i = i0; i < i1; ++i) {
    const std::uint32_t packed = at[i];
    at[i] = pos;
    if (bad == n && !lz4_token_fits(packed, pos, size)) bad = i;
    pos += lz4_token_len(packed);
  }
  if (i1 == n && i0 < i1) at[n] = pos;
  return bad;
}

// The serial rule's marks among accepted tokens [0, ok) at output positions at[0, ok): before
// token j, a new segment if none is open, or the open one holds kLz4SegmentOut bytes or
// kLz4SegmentSeqs sequences. at[] rises strictly (a fast sequence has a match of 4 bytes or more),
// so the first token past the output bound is a binary search. Returns false where a mark would
// exceed max_segments (the walk's guard).
CS_HD_TEMPLATE
template <class Mark>
CS_HD inline bool lz4_table_marks(const std::uint32_t* at, const std::uint16_t* toks, std::uint32_t base,
                                  std::uint32_t ok, std::size_t max_segments, Lz4SegmentMarks* m, Mark&& mark) {
  for (std::uint32_t from = 0;;) {
    std::uint32_t j = from;
    if (m->count != 0) {
      const std::uint32_t by_seqs = from + (kLz4SegmentSeqs - m->seqs);  // seqs <= kLz4SegmentSeqs
      std::uint32_t lo = from, hi = ok;  // the first at[] >= out + kLz4SegmentOut in [from, ok)
      const std::uint32_t bound = m->out + kLz4SegmentOut;
      while (lo < hi) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        if (at[mid] >= bound) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      j = lo < by_seqs ? lo : by_seqs;
      // tokens [from, j) join the open segment as its sequences seqs, seqs + 1, ...: the runs'
      // starts among them
      lz4_note_runs(mark, m->count - 1, m->seqs, toks, from, j < ok ? j : ok, base, m->in);
    }
    if (j >= ok) {
      m->seqs += ok - from;
      return true;
    }
    if (m->count == max_segments) return false;
    if (m->count != 0) lz4_note_close(mark, m->count - 1, m->seqs + (j - from));
    mark(m->count, base + toks[j], at[j]);
    ++m->count;
    m->out = at[j];
    m->in = base + toks[j];
    m->seqs = 1;
    from = j + 1;
  }
}

// The table for the window at ip (buffer k of the team): the staged window's if it holds enough
// positions past ip, else a window staged at ip (the serial steps move the window too: a new
// base, a new table); the team fills it from ip (team.stage). Returns the table's end.
CS_HD_TEMPLATE
template <class Fill, class Team>
CS_HD inline std::uint32_t lz4_table_stage(Lz4StagedReader<Fill>& rd, Team& team, std::uint32_t k, std::uint32_t ip,
                                           std::uint32_t in_size) {
  std::uint32_t end = lz4_table_end(rd.base, rd.len, in_size);
  const std::size_t r = std::size_t{ip} - rd.base;  // wraps around when ip < base
  if (r >= end || (end - r < kLz4TableMinRun && rd.base + rd.len < in_size)) {
    rd.len = 0;
    static_cast<void>(rd[ip]);
    end = lz4_table_end(rd.base, rd.len, in_size);
  }
  team.stage(k, static_cast<const std::uint8_t*>(rd.window), static_cast<std::uint32_t>(ip - rd.base), end,
             static_cast<std::uint32_t>(rd.len), static_cast<std::uint32_t>(in_size - rd.base));
  return end;
}

// The window filled ahead after the table of rd's window, which ends at tbl_end: fixed in the
// input where that table ends (aligned like the reader's refills), rd.cap bytes or the block's
// rest, and its table's end. False where there is none: rd's window reaches the block's end, it
// would not start past rd's, or its table would be empty.
struct Lz4AheadWindow {
  std::size_t base, len;
  std::uint32_t end;
};
CS_HD_TEMPLATE
template <class Fill>
CS_HD inline bool lz4_ahead_window(const Lz4StagedReader<Fill>& rd, std::uint32_t tbl_end, std::uint32_t in_size,
                                   Lz4AheadWindow* a) {
  const std::size_t next = rd.aligned_start(rd.base + tbl_end);
  if (rd.base + rd.len >= in_size || next <= rd.base) return false;
  a->base = next;
  a->len = in_size - next < rd.cap ? in_size - next : rd.cap;
  a->end = lz4_table_end(next, a->len, in_size);
  return a->end != 0;
}

// The table walk: the contract of lz4_segment_walk (same status, marks and count). The caller's
// `team` runs the team's parts, and returns with their results visible to the walker (k names
// one of the team's buffers, a window of rd.cap bytes and its table: always 0 without Ahead):
//   Team::Ahead: std::true_type where the team fills the next window ahead (below), else false;
//   team.table(k): buffer k's table, rd.cap + 1 entries (kLz4TableWindowMin <= rd.cap <=
//     kLz4TableWindowMax);
//   team.stage(k, window, r_begin, r_end, len, left0): fill table(k) over [r_begin, len] of the
//     window just staged into buffer k, `len` bytes from base (lz4_table_fill; left0 = in_size -
//     base);
//   team.tokens(k, window, len, left0, n, op0, slot) -> ok: the token pass over toks[0, n), at[]
//     written (slot is always 0 here; the pipelined walk, lz4_table_pipeline.hpp, has two);
// and where Team::Ahead is true:
//   team.window(k): buffer k's window, rd.cap bytes (rd.window is window(0) at the start);
//   team.ahead(k, src, len, end, left0): copy len bytes from src into window(k) and fill table(k)
//     over [0, len] as stage(k, window(k), 0, end, len, left0) would; it may still be running
//     when ahead returns (on the GPU the helper warps do it while the walker chains), and the
//     walk touches neither window(k) nor table(k) until
//   team.join(): returns once the last ahead is complete (at once if none is running).
// With Ahead, each time the walk takes a table it has the team fill, into the other buffer, the
// window that starts where this table ends (windows fixed in the input rather than at the walk's
// position: the chain leaves a table past its end, within the fast path's span, so it lands in
// the next window's table). When the walk next needs a table, it takes that one if it holds ip,
// else it stages a window at ip as without Ahead. The marks, statuses and counts do not change.
// toks holds `cap` >= 1 entries (the chain lists at most that many tokens at a time;
// lz4_table_token_cap(rd.cap) holds a whole window), at one more. `writer`: whether this thread
// of the walker stores the chain's tokens.
CS_HD_TEMPLATE
template <class Fill, class Team, class Mark>
CS_HD inline DecodeStatus lz4_segment_walk_table(Lz4StagedReader<Fill>& rd, Team& team, std::uint16_t* toks,
                                                 std::uint32_t cap, const std::uint32_t* at, bool writer,
                                                 std::uint32_t in_size, std::uint32_t size,
                                                 std::size_t max_segments, Mark&& mark, std::uint32_t* segments) {
  *segments = 0;
  if (in_size == 0) return DecodeStatus::kCorrupt;  // not a block (the empty block is a 0 token)
  std::uint32_t ip = 0, op = 0;
  Lz4SegmentMarks m;
  std::size_t tbl_base = ~std::size_t{0};  // the window the table belongs to
  std::uint32_t tbl_end = 0;
  std::uint32_t k = 0;  // the buffer rd reads and the chain walks
  // the window filled ahead (Team::Ahead), into buffer k ^ 1
  bool ahead = false;
  std::size_t ahead_base = 0, ahead_len = 0;
  std::uint32_t ahead_end = 0;
  for (;;) {
    if (in_size - ip >= kLz4FastSpan + 3) {
      if (rd.base != tbl_base || std::size_t{ip} - rd.base >= tbl_end) {
        bool taken = false;
        if constexpr (Team::Ahead::value) {
          if (ahead) {
            team.join();
            ahead = false;
            if (std::size_t{ip} - ahead_base < ahead_end) {  // wraps around when ip < ahead_base
              k ^= 1u;
              rd.window = team.window(k);
              rd.base = ahead_base;
              rd.len = ahead_len;
              tbl_base = ahead_base;
              tbl_end = ahead_end;
              taken = true;
            }
          }
        }
        if (!taken) {
          tbl_end = lz4_table_stage(rd, team, k, ip, in_size);
          tbl_base = rd.base;
        }
        if constexpr (Team::Ahead::value) {
          Lz4AheadWindow a;
          if (lz4_ahead_window(rd, tbl_end, in_size, &a)) {
            team.ahead(k ^ 1u, rd.src + a.base, static_cast<std::uint32_t>(a.len), a.end,
                       static_cast<std::uint32_t>(in_size - a.base));
            ahead = true;
            ahead_base = a.base;
            ahead_len = a.len;
            ahead_end = a.end;
          }
        }
      }
      const auto base = static_cast<std::uint32_t>(rd.base);
      std::uint32_t r = ip - base;
      const std::uint32_t n = lz4_table_chain(team.table(k), &r, tbl_end, toks, cap, writer);
      if (n != 0) {
        const std::uint32_t ok = team.tokens(k, static_cast<const std::uint8_t*>(rd.window),
                                             static_cast<std::uint32_t>(rd.len), in_size - base, n, op, 0u);
        if (!lz4_table_marks(at, toks, base, ok, max_segments, &m, mark)) return DecodeStatus::kCorrupt;
        if (ok != 0) {
          ip = base + (ok < n ? toks[ok] : r);
          op = at[ok];
        }
        if (ok == n) continue;  // on along the table (or the next window)
      }
      // the fast path declines the sequence at ip, or a check fails there: the serial step
    }
    // one sequence the serial way
    if (!lz4_mark_before(&m, ip, op, max_segments, mark)) return DecodeStatus::kCorrupt;
    bool last = false;
    const DecodeStatus st = lz4_walk_read(rd, in_size, size, &ip, &op, &last);
    if (st != DecodeStatus::kOk) return st;
    if (last) break;
  }
  if (m.count != 0) lz4_note_close(mark, m.count - 1, m.seqs);
  *segments = m.count;
  return op == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

// The host's team: one thread does every part; WithAhead, two buffers, and the window ahead
// filled at once. Token slot s is toks + s x cap.
template <bool WithAhead = false>
struct Lz4HostTableTeamOf {
  using Ahead = std::bool_constant<WithAhead>;
  using Pipeline = std::false_type;
  std::uint16_t* tbl[2];
  std::uint8_t* win[2];  // (the windows: only WithAhead)
  const std::uint16_t* toks;
  std::uint32_t* at;
  std::uint32_t size;
  std::uint32_t cap = 0;
  const std::uint16_t* table(std::uint32_t k) const { return tbl[k]; }
  std::uint8_t* window(std::uint32_t k) const { return win[k]; }
  void stage(std::uint32_t k, const std::uint8_t* w, std::uint32_t r0, std::uint32_t end, std::uint32_t len,
             std::uint32_t left0) {
    lz4_table_fill(w, tbl[k], r0, end, len, left0, 0, 1);
  }
  void ahead(std::uint32_t k, const std::uint8_t* src, std::uint32_t len, std::uint32_t end, std::uint32_t left0) {
    std::memcpy(win[k], src, len);
    stage(k, win[k], 0, end, len, left0);
  }
  void join() {}
  std::uint32_t tokens(std::uint32_t, const std::uint8_t* w, std::uint32_t len, std::uint32_t left0,
                       std::uint32_t n, std::uint32_t op0, std::uint32_t slot) {
    static_cast<void>(lz4_table_token_sum<kLz4TokenSumWidth>(w, len, left0, toks + slot * cap, 0, n, at));
    return lz4_table_token_place(size, n, 0, n, op0, at);
  }
};
using Lz4HostTableTeam = Lz4HostTableTeamOf<false>;

// Matches longer than this are copied by the whole warp, each alone; shorter ones by one lane
// each, all of a group at once (a lane holds a match's bytes in registers between its loads and
// its stores).
inline constexpr std::uint32_t kLz4LaneMatchMax = 16;

// Whether match m reads a byte of [dst, dst + len): it reads
// [m.dst - m.off, m.dst - m.off + min(m.off, m.len)).
CS_HD inline bool lz4_reads_meet(const Lz4MatchRecord& m, std::uint32_t dst, std::uint32_t len) {
  const std::uint32_t a = m.dst - m.off, reads = m.off < m.len ? m.off : m.len;
  return a + reads > dst && a < dst + len;
}

// The output position that byte i of match m copies (see the comment at the top).
CS_HD inline std::uint32_t lz4_match_source(const Lz4MatchRecord& m, std::uint32_t i) {
  return m.dst - m.off + (i < m.off ? i : i % m.off);
}

// How many of recs[0, n) (n >= 1, in output order) form the next group: the first always; then
// each next one while it is at most kLz4LaneMatchMax long (as the first must be too) and reads no
// byte that an earlier match of the group writes; at most kLz4GroupMax. The device finds the
// same count with a binary search over the lanes: the matches' output ranges are sorted and
// disjoint, so only the last one starting below a read range's end can meet it.
CS_HD inline std::uint32_t lz4_group_size(const Lz4MatchRecord* recs, std::uint32_t n) {
  const std::uint32_t max = n < kLz4GroupMax ? n : kLz4GroupMax;
  if (recs[0].len > kLz4LaneMatchMax) return 1;
  std::uint32_t g = 1;
  for (; g < max && recs[g].len <= kLz4LaneMatchMax; ++g) {
    bool meets = false;
    for (std::uint32_t i = 0; i < g && !meets; ++i) meets = lz4_reads_meet(recs[g], recs[i].dst, recs[i].len);
    if (meets) break;
  }
  return g;
}

// The first step of a binary search for a count in [0, n): the smallest power of two t with
// 2 t >= n, whose steps t, t / 2, ..., 1 sum to 2 t - 1 >= n - 1 (128 for n = 256).
CS_HD constexpr std::uint32_t lz4_search_top(std::uint32_t n) {
  std::uint32_t t = 1;
  while (2 * t < n) t *= 2;
  return t;
}
inline constexpr std::uint32_t kLz4SegmentSearchTop = lz4_search_top(kLz4SegmentSeqs);

// How many of recs[0, i) (outputs sorted by dst) start below position `end`.
CS_HD inline std::uint32_t lz4_records_below(const Lz4MatchRecord* recs, std::uint32_t i, std::uint32_t end) {
  std::uint32_t pos = 0;
  for (std::uint32_t step = kLz4SegmentSearchTop; step != 0; step >>= 1) {
    const std::uint32_t probe = pos + step - 1;
    if (probe < i && recs[probe].dst < end) pos += step;
  }
  return pos;
}

// Whether match recs[i] of a segment (recs[0, i]: its matches in output order, the segment's
// output starting at seg_out) is short (at most kLz4LaneMatchMax bytes) and reads only that
// segment's literals: its read range [dst - off, dst - off + min(off, len)) starts at or after
// seg_out and meets no earlier match's output. Such a match's bytes are final as soon as the
// segment's literals are written, so a worker can copy it before it waits for the segment before
// (the own pass), all such matches of a segment at once: none reads another's output. (In the
// benchmark's era5-like chunks 47 % of the matches qualify, which cuts a segment's chained
// groups from 10.5 to 6.8; in the synth fields 7-19 %: bench/micro/lz4_chain_matches.cpp.)
// The range ends at or before recs[i].dst, so only earlier records can meet it, and since their
// outputs are sorted and disjoint, only the last one starting below the range's end: found by a
// binary search in fixed steps (the same number of steps on every lane of a warp).
CS_HD inline bool lz4_reads_own_literals(const Lz4MatchRecord* recs, std::uint32_t i, std::uint32_t seg_out) {
  const Lz4MatchRecord m = recs[i];
  // dst - seg_out >= off, not dst - off >= seg_out: no wrap where off > dst (a corrupt record
  // never gets here, but the test costs nothing)
  if (m.len > kLz4LaneMatchMax || m.dst - seg_out < m.off) return false;
  const std::uint32_t a = m.dst - m.off, end = a + (m.off < m.len ? m.off : m.len);
  const std::uint32_t pos = lz4_records_below(recs, i, end);
  return pos == 0 || recs[pos - 1].dst + recs[pos - 1].len <= a;
}

// The dependency level of record i of a segment's chained matches (recs[0, i]: in output order;
// -DCS_LZ4_LEVELS=1): 0 where its read range meets no earlier record's output (it reads earlier
// segments, literals or own-pass matches: final once the segment before is done), else one more
// than the highest level among the records it meets; level(j) gives record j's (j < i). All
// matches of a level read only bytes of lower levels, so a level is copied all at once, one
// level after another: on the benchmark's era5-like chunks 5.7 passes of at most 32 matches a
// segment where the groups (lz4_group_size) were 6.8, on the synth fields 8.9-10.2 where they
// were 11.8-15.0 (bench/micro/lz4_chain_matches.cpp). The records it meets: the last one
// starting below its read range's end and those before it that still end past the range's
// start (outputs sorted and disjoint, so their ends are sorted too).
CS_HD_TEMPLATE
template <class Level>
CS_HD inline std::uint32_t lz4_dep_level(const Lz4MatchRecord* recs, std::uint32_t i, Level&& level) {
  const Lz4MatchRecord m = recs[i];
  const std::uint32_t a = m.dst - m.off, end = a + (m.off < m.len ? m.off : m.len);
  std::uint32_t lvl = 0;
  for (std::uint32_t j = lz4_records_below(recs, i, end); j-- > 0 && recs[j].dst + recs[j].len > a;) {
    const std::uint32_t up = level(j) + 1;
    lvl = up > lvl ? up : lvl;
  }
  return lvl;
}

// The next sequence: lz4_staged_next through a staged reader, lz4_read_sequence through anything
// else (a pointer).
CS_HD_TEMPLATE
template <class Fill>
CS_HD inline DecodeStatus lz4_segment_next(Lz4StagedReader<Fill>& rd, std::uint32_t in_size, std::uint32_t size,
                                           std::size_t* ip, std::uint32_t op, Lz4Sequence* s, bool* last) {
  return lz4_staged_next(rd, in_size, size, ip, op, s, last);
}
CS_HD_TEMPLATE
template <class Reader>
CS_HD inline DecodeStatus lz4_segment_next(Reader& rd, std::uint32_t in_size, std::uint32_t size, std::size_t* ip,
                                           std::uint32_t op, Lz4Sequence* s, bool* last) {
  return lz4_read_sequence(rd, in_size, ip, op, size, s, last);
}

// Parses segment [in_begin, in_end) of a block the walk accepted, starting at output position
// `op`: calls each(seq, op_of_its_literals) per sequence in order. The parse is the checked one
// (lz4_read_sequence), so even bytes that changed since the walk cannot make it read or write
// out of bounds: it answers kCorrupt then. `rd` reads the block (a pointer or a staged reader).
CS_HD_TEMPLATE
template <class Reader, class Each>
CS_HD inline DecodeStatus lz4_segment_parse(Reader& rd, std::uint32_t in_size, std::uint32_t size,
                                            std::uint32_t in_begin, std::uint32_t in_end, std::uint32_t op,
                                            Each&& each) {
  std::size_t ip = in_begin;
  while (ip < in_end) {
    Lz4Sequence s;
    bool last = false;
    const DecodeStatus st = lz4_segment_next(rd, in_size, size, &ip, op, &s, &last);
    if (st != DecodeStatus::kOk) return st;
    each(s, op);
    op += static_cast<std::uint32_t>(s.lit_len + s.match_len);
    if (last) return ip == in_end ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
  }
  return ip == in_end ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

// ---- A segment's runs, parsed side by side (Lz4Runs) ----
//
// A worker lane takes a run: pass 1 (lz4_run_parse) parses its sequences from the run's start,
// without output positions; the lanes' output lengths, summed in order, place the runs; pass 2
// (lz4_run_place) checks each sequence against its output position. Together they check what
// lz4_read_sequence checks for a sequence at its position (the statuses aside: a worker answers
// kCorrupt for any failure, the walk having decided the block's status), so bytes that changed
// since the walk still cannot make a worker read or write outside its buffers.

// A sequence's literals: input offset and length.
struct Lz4Literal {
  std::uint32_t src;
  std::uint32_t len;
};

// Pass 1 of a run: `count` sequences from input offset `start` of the block in[0, in_size),
// which must end exactly at `stop`, the block's last sequence (literals only) only as the last
// of them. lits[i] receives sequence i's literals, recs[i] its match's offset and length (0 for
// the last sequence; dst is pass 2's), *out_len the run's output bytes. False where the parse
// fails. lz4_read_sequence's output checks are given an output position and capacity far
// beyond any block (2^40, 2^41), where they cannot fail: pass 2 makes them.
CS_HD_TEMPLATE
template <class Reader>
CS_HD inline bool lz4_run_parse(Reader& in, std::uint32_t in_size, std::uint32_t start, std::uint32_t stop,
                                std::uint32_t count, Lz4Literal* lits, Lz4MatchRecord* recs, std::uint32_t* out_len) {
  constexpr std::size_t kFar = std::size_t{1} << 40;
  std::size_t ip = start;
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    Lz4Sequence sq;
    bool last = false;
    if (lz4_read_sequence(in, in_size, &ip, kFar, 2 * kFar, &sq, &last) != DecodeStatus::kOk) return false;
    if (last && i + 1 != count) return false;
    lits[i] = Lz4Literal{static_cast<std::uint32_t>(sq.lit_src), static_cast<std::uint32_t>(sq.lit_len)};
    recs[i] = Lz4MatchRecord{0, static_cast<std::uint32_t>(sq.match_offset), static_cast<std::uint32_t>(sq.match_len)};
    sum += sq.lit_len + sq.match_len;
  }
  if (ip != stop || sum > 0xFFFFFFFFull) return false;
  *out_len = static_cast<std::uint32_t>(sum);
  return true;
}

// Pass 2 of a run placed at output position op of a block decoding to `size` bytes: every
// literal and match inside the output, every offset within the output before its match (the
// offset is not 0: pass 1 checked); recs[i].dst receives the match's output position (for the
// last sequence, its literals' end). False where a check fails.
CS_HD inline bool lz4_run_place(std::uint32_t size, std::uint64_t op, std::uint32_t count, const Lz4Literal* lits,
                                Lz4MatchRecord* recs) {
  for (std::uint32_t i = 0; i < count; ++i) {
    op += lits[i].len;
    if (op > size || recs[i].off > op) return false;
    recs[i].dst = static_cast<std::uint32_t>(op);
    op += recs[i].len;
    if (op > size) return false;
  }
  return true;
}

// The runs of a segment of `seqs` sequences (1..kLz4SegmentSeqs): run r's sequences and start,
// stop (`first`, the segment's first sequence; `end`, where the segment ends; n, its runs).
CS_HD inline std::uint32_t lz4_run_count(std::uint32_t seqs) { return (seqs + kLz4RunSeqs - 1) / kLz4RunSeqs; }
CS_HD inline std::uint32_t lz4_run_seqs(std::uint32_t seqs, std::uint32_t r) {
  const std::uint32_t left = seqs - r * kLz4RunSeqs;
  return left < kLz4RunSeqs ? left : kLz4RunSeqs;
}
CS_HD inline std::uint32_t lz4_run_start(const Lz4Runs& runs, std::uint32_t first, std::uint32_t r) {
  return r == 0 ? first : first + runs.at[r - 1];
}
CS_HD inline std::uint32_t lz4_run_stop(const Lz4Runs& runs, std::uint32_t first, std::uint32_t end, std::uint32_t n,
                                        std::uint32_t r) {
  return r + 1 < n ? first + runs.at[r] : end;
}

}  // namespace cubestream::codec::logic
