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
#include <vector>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_ring.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// A segment closes once it has produced this many bytes or walked this many sequences (the
// second bounds the records a segment keeps: kLz4SegmentSeqs x 12 bytes of shared memory per
// warp on the GPU).
inline constexpr std::uint32_t kLz4SegmentOut = 16384;
inline constexpr std::uint32_t kLz4SegmentSeqs = 256;
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

// Segments a block of in_size bytes decoding to `size` bytes can have: every segment but the
// last holds kLz4SegmentOut bytes of output or kLz4SegmentSeqs sequences, and a sequence takes
// at least 3 input bytes (token and offset) except the last one (at least 1).
CS_HD inline std::size_t lz4_segment_bound(std::size_t in_size, std::size_t size) {
  return size / kLz4SegmentOut + (in_size / 3 + 1) / kLz4SegmentSeqs + 2;
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
  std::uint32_t ip = 0, op = 0, seg_out = 0, seg_seqs = 0, count = 0;
  for (;;) {
    if (count == 0 || op - seg_out >= kLz4SegmentOut || seg_seqs >= kLz4SegmentSeqs) {
      if (count == max_segments) return DecodeStatus::kCorrupt;
      mark(count, ip, op);
      ++count;
      seg_out = op;
      seg_seqs = 0;
    }
    ++seg_seqs;
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
    std::size_t ip64 = ip;
    Lz4Sequence g;
    bool last = false;
    const DecodeStatus st = lz4_read_sequence(rd, in_size, &ip64, op, size, &g, &last);
    if (st != DecodeStatus::kOk) return st;
    ip = static_cast<std::uint32_t>(ip64);
    op += static_cast<std::uint32_t>(g.lit_len + g.match_len);
    if (last) break;
  }
  *segments = count;
  // short of the size the container promised: damaged (lz4_decode_exact_with)
  return op == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

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

// Host run of the segmented decode (tests and fuzzing): the walk with a staged window of
// `walk_window` bytes (>= kLz4FastSpan + 16), then every segment's literals with the segments in
// reverse order (the device runs them in any order), then the matches segment after segment in
// groups; a group's bytes are all read before any is written, which is the worst order the
// device's lanes can take, so a group rule that let one match read another's bytes shows here
// as wrong output. *groups (when given) receives the number of groups. Blocks at or over
// kLz4RingMaxBytes take lz4_decode_exact_with, as on the device.
inline DecodeStatus lz4_segments_decode_host(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                             std::size_t size, std::size_t walk_window = 8192,
                                             std::uint64_t* groups = nullptr) {
  if (in_size >= kLz4RingMaxBytes || size >= kLz4RingMaxBytes) {
    Lz4SerialCopier copy;
    return lz4_decode_exact_with(in, in_size, out, size, copy);
  }
  const auto n_in = static_cast<std::uint32_t>(in_size), n_out = static_cast<std::uint32_t>(size);
  std::vector<Lz4Segment> segs(lz4_segment_bound(in_size, size));
  std::uint32_t count = 0;
  {
    std::vector<std::uint8_t> window(walk_window);
    Lz4StagedReader<Lz4MemcpyFill> rd{in, in_size, window.data(), walk_window, {}};
    const DecodeStatus st = lz4_segment_walk(
        rd, n_in, n_out, segs.size(), [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { segs[k] = {ip, op}; },
        &count);
    if (st != DecodeStatus::kOk) return st;
  }
  std::vector<std::vector<Lz4MatchRecord>> recs(count);
  std::vector<std::uint8_t> window(2048);
  for (std::uint32_t k = count; k-- > 0;) {
    const std::uint32_t end = k + 1 < count ? segs[k + 1].in : n_in;
    Lz4StagedReader<Lz4MemcpyFill> rd{in, in_size, window.data(), window.size(), {}};
    const DecodeStatus st = lz4_segment_parse(rd, n_in, n_out, segs[k].in, end, segs[k].out,
                                              [&](const Lz4Sequence& s, std::uint32_t op) {
                                                for (std::size_t i = 0; i < s.lit_len; ++i) out[op + i] = in[s.lit_src + i];
                                                if (s.match_len != 0)
                                                  recs[k].push_back({op + static_cast<std::uint32_t>(s.lit_len),
                                                                     static_cast<std::uint32_t>(s.match_offset),
                                                                     static_cast<std::uint32_t>(s.match_len)});
                                              });
    if (st != DecodeStatus::kOk || recs[k].size() > kLz4SegmentSeqs) return DecodeStatus::kCorrupt;
  }
  std::vector<std::uint8_t> bytes;
  std::uint64_t n_groups = 0;
  for (std::uint32_t k = 0; k < count; ++k) {
    const auto& r = recs[k];
    for (std::uint32_t at = 0; at < r.size();) {
      const std::uint32_t g = lz4_group_size(r.data() + at, static_cast<std::uint32_t>(r.size()) - at);
      bytes.clear();
      for (std::uint32_t j = at; j < at + g; ++j)
        for (std::uint32_t i = 0; i < r[j].len; ++i) bytes.push_back(out[lz4_match_source(r[j], i)]);
      std::size_t b = 0;
      for (std::uint32_t j = at; j < at + g; ++j)
        for (std::uint32_t i = 0; i < r[j].len; ++i) out[r[j].dst + i] = bytes[b++];
      at += g;
      ++n_groups;
    }
  }
  if (groups != nullptr) *groups = n_groups;
  return DecodeStatus::kOk;
}

}  // namespace cubestream::codec::logic
