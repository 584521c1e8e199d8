// One LZ4 block decoded by one warp through a shared-memory ring of its recent output.
//
// Why: the first version (WarpCopier: literals and matches copied global -> global, a
// __syncwarp after each) made every sequence wait on global memory twice: the literal bytes
// came from the input in global memory, and the match source was output this warp had just
// written, which only L2 holds (~600 cycles away on an H100). Blosc-lz4 + byte shuffle of
// float fields has 50-75 sequences per KiB of output (the byte planes compress into many short
// matches: mean ~17 B of literals and ~17 B of match), so those round trips set the pace.
//
// Here the warp keeps the last kRingBytes of its output in shared memory:
//  - literals come from the parse's staging window (shared) when they lie in it, else from
//    global memory;
//  - a match reads its source from the ring while none of the source's slots has been reused
//    (offset + length <= kRingBytes in the fast path, offset <= kRingBytes / 2 in the general
//    one);
//  - output leaves the ring in 16-byte stores ("flush") when the ring's unflushed part would
//    overflow, before a far match of the general path, and at the end of the block;
//  - a match with a larger offset reads its source from the output in global memory: in the
//    fast path when an earlier flush has already stored it, in the general path after a flush
//    (see match() below).
// Ring slot of output position q: (out + q) mod kRingBytes, by address, so a 16-byte aligned
// piece of the output is a 16-byte aligned piece of the ring and never wraps.
//
// Sequences are taken three ways, fastest first: groups of up to 32 short sequences decoded by
// the lanes together (codec/logic/lz4_group.hpp, version 13: the dense byte planes of float
// fields are mostly such sequences); the long path, one sequence with at most one length byte
// each; the general path (lz4_read_sequence, literals(), match()) for everything else.
//
// Work is cut into pieces of at most kRingBytes / 2 bytes. Why that is enough, with W =
// kRingBytes: before a piece of L bytes the warp flushes if unflushed + L > W, so the piece
// never overwrites a byte still to be stored (after a flush fewer than 16 bytes are unflushed
// and L <= W / 2). A near match (offset d <= W / 2) reads [q - d, q - d + L) while writing
// [q, q + L): a write lands on the slot of a source byte only if the two positions are W
// apart, which needs d + L > W; d <= W / 2 and L <= W / 2 exclude it, so within a piece the
// lanes may copy in any order (overlapping matches are still cut into phases as before).
//
// The parse is the shared one (lz4_read_sequence, the same checks and statuses as on the host):
// nothing is read outside [in, in + in_size), written outside [out, out + size), and a block
// that does not decode to exactly `size` bytes is kCorrupt, as in lz4_decode_exact_with.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_group.hpp"

// WarpFill, kWindowBytes and RingLanes come from warp_copy.cuh, which includes this file.

namespace cubestream::cuda::detail {

inline constexpr unsigned kRingBytes = 4096;  // power of two, multiple of 16
inline constexpr unsigned kRingPiece = kRingBytes / 2;
inline constexpr unsigned kGroupMaxOffset = kRingBytes - codec::logic::kLz4GroupMaxOut;
// the host's emulation of this ring (lz4_grouped_decode_host) must have its size
static_assert(kRingBytes == codec::logic::kLz4GroupRingBytes);

// A group's view of the output (codec/logic/lz4_group.hpp): output position q is ring slot
// (out + q) mod kRingBytes; span() gives n slots from q where they do not wrap around the
// ring's end; stored() points into the global output, for positions an earlier flush stored.
struct RingSlots {
  std::uint8_t* ring;
  unsigned om;  // the output's address mod 2^32
  const std::uint8_t* global;
  __device__ std::uint8_t& operator()(std::uint32_t q) const { return ring[(om + q) & (kRingBytes - 1)]; }
  __device__ std::uint8_t* span(std::uint32_t q, std::uint32_t n) const {
    const unsigned s = (om + q) & (kRingBytes - 1);
    return s + n <= kRingBytes ? ring + s : nullptr;
  }
  __device__ const std::uint8_t* stored(std::uint32_t q) const { return global + q; }
};

struct WarpRingLz4 {
  unsigned lane;
  std::uint8_t* window;  // kWindowBytes of shared memory (the parse's staged input), 16-aligned
  std::uint8_t* ring;    // kRingBytes of shared memory, 16-aligned

  std::uint8_t* out = nullptr;
  std::size_t op = 0;       // output position: bytes decoded so far
  std::size_t flushed = 0;  // output [0, flushed) is in global memory

  __device__ unsigned slot(std::size_t q) const {
    return static_cast<unsigned>((reinterpret_cast<std::uintptr_t>(out) + q) & (kRingBytes - 1));
  }

  // Stores ring bytes [flushed, end) to the output, where end = op (final) or the last 16-byte
  // boundary of the output's address at or before op: a byte head, 16-byte stores, and (final
  // only) a byte tail. Warp-uniform; the syncs order the lanes' ring writes before the reads
  // here, and these reads (and global stores) before later ring writes (and global reads).
  __device__ void flush(bool final) {
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(out);
    const std::uintptr_t a = base + flushed;
    const std::uintptr_t e = final ? base + op : ((base + op) & ~std::uintptr_t{15});
    if (e <= a) return;
    __syncwarp();
    std::uintptr_t a16 = (a + 15) & ~std::uintptr_t{15};
    if (a16 > e) a16 = e;
    if (lane < a16 - a) *reinterpret_cast<std::uint8_t*>(a + lane) = ring[(a + lane) & (kRingBytes - 1)];
    std::uintptr_t e16 = e & ~std::uintptr_t{15};
    if (e16 < a16) e16 = a16;
    for (std::uintptr_t c = a16 + 16 * lane; c < e16; c += 16 * 32)
      *reinterpret_cast<uint4*>(c) = *reinterpret_cast<const uint4*>(ring + (c & (kRingBytes - 1)));
    for (std::uintptr_t c = e16 + lane; c < e; c += 32)
      *reinterpret_cast<std::uint8_t*>(c) = ring[c & (kRingBytes - 1)];
    flushed = e - base;
    __syncwarp();
  }

  __device__ void make_room(std::size_t len) {
    if (op - flushed + len > kRingBytes) flush(false);
  }

  // Literals [src, src + n) of the input `in`; `rd` is the parse's staged reader.
  template <class Reader>
  __device__ void literals(const std::uint8_t* in, std::size_t src, std::size_t n, const Reader& rd) {
    while (n > 0) {
      const unsigned len = n < kRingPiece ? static_cast<unsigned>(n) : kRingPiece;
      make_room(len);
      if (src >= rd.base && src - rd.base + len <= rd.len) {
        const std::uint8_t* w = window + (src - rd.base);
        for (unsigned k = lane; k < len; k += 32) ring[slot(op + k)] = w[k];
      } else {
        for (unsigned k = lane; k < len; k += 32) ring[slot(op + k)] = __ldg(in + src + k);
      }
      op += len;
      src += len;
      n -= len;
    }
    __syncwarp();  // the match may read these bytes
  }

  // dst[k] = dst[k - d] for k in [0, n) at the output position: d <= op (checked by the parse).
  __device__ void match(std::size_t d, std::size_t n) {
    if (d <= kRingPiece) {
      const unsigned off = static_cast<unsigned>(d);
      while (n > 0) {
        const unsigned len = n < kRingPiece ? static_cast<unsigned>(n) : kRingPiece;
        make_room(len);
        if (off >= len) {  // source ends before the piece starts: one phase
          for (unsigned k = lane; k < len; k += 32) ring[slot(op + k)] = ring[slot(op - off + k)];
        } else if (off < 32) {  // byte k repeats source byte k mod off (all written before)
          const unsigned step = 32u % off;
          unsigned r = lane % off;
          for (unsigned k = lane; k < len; k += 32) {
            ring[slot(op + k)] = ring[slot(op - off + r)];
            r += step;
            if (r >= off) r -= off;
          }
        } else {  // phases of off bytes, each reading only bytes written before it
          for (unsigned done = 0; done < len; done += off) {
            const unsigned m = len - done < off ? len - done : off;
            for (unsigned k = lane; k < m; k += 32) ring[slot(op + done + k)] = ring[slot(op + done - off + k)];
            __syncwarp();
          }
        }
        __syncwarp();
        op += len;
        n -= len;
      }
      return;
    }
    // Far match (d > kRingPiece >= 32): flush, so that fewer than 16 bytes before op are
    // missing from global memory, then copy pieces of at most d - 16 bytes: their sources end
    // at op - d + len <= op - 16, which is flushed. The flush also orders the global stores
    // before these loads (same warp, __syncwarp).
    while (n > 0) {
      std::size_t len = n < kRingPiece ? n : kRingPiece;
      if (len > d - 16) len = d - 16;
      flush(false);
      const std::uint8_t* s = out + op - d;
      for (unsigned k = lane; k < len; k += 32) ring[slot(op + k)] = s[k];
      __syncwarp();
      op += len;
      n -= len;
    }
  }

  // Decodes the LZ4 block [in, in + in_size) to exactly `size` bytes at `dst`.
  __device__ codec::logic::DecodeStatus decode(const std::uint8_t* in, std::size_t in_size, std::uint8_t* dst,
                                               std::size_t size) {
    using codec::logic::DecodeStatus;
    out = dst;
    op = 0;
    flushed = 0;
    if (in_size == 0) return DecodeStatus::kCorrupt;  // the empty block is the token 0x00
    codec::logic::Lz4StagedReader<WarpFill> rd{in, in_size, window, kWindowBytes, WarpFill{lane}};
    std::size_t ip = 0;
    // 32-bit positions for the fast path below (blosc streams and numcodecs blocks are < 2 GiB;
    // anything larger takes the general path only)
    const bool small = in_size < (std::size_t{1} << 31) && size < (std::size_t{1} << 31);
    const unsigned om = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(dst));
    for (;;) {
      // Fast paths (ncu, H100: the first version issued ~270 warp-instructions per sequence,
      // with 64-bit positions, a bounds-checked staged read per byte and copy loops for every
      // length; the unit kernel was issue-bound at ~2.7 IPC). Each decodes a sequence that
      // passes every check of lz4_read_sequence with 32-bit arithmetic, the lanes sharing the
      // copies (a group: one lane per sequence; the long path: 32 lanes per copy);
      // any other sequence (also any that would fail a check) goes to the general path, which
      // parses it again from the same position and so returns exactly the host's status.
      if (small) {
        std::size_t rel = ip - rd.base;  // wraps around when ip < base: not in the window
        if (rel < rd.len) {
          // Groups (version 13; codec/logic/lz4_group.hpp): up to 32 short sequences at once, in
          // place of version 2's short path, one sequence at a time. Only where the token has
          // no length byte (version 15: the other half of the attempts on the synth fields, two
          // thirds with lz4hc, now skip the restage and flush tests and the group's set-up).
          if (codec::logic::lz4_group_may_start(window[rel])) {
            // a group walks up to kLz4GroupSpan staged bytes: near the window's end, restage it
            if (codec::logic::lz4_group_restage(rel, rd.len, rd.base, in_size)) {
              rd.stage(ip);
              rel = ip - rd.base;
            }
            // Room for a whole group's output first, so that its writes [op, op +
            // kLz4GroupMaxOut) reuse no slot still to be stored; and its sources lie at most
            // kGroupMaxOffset back, so none of their slots is reused either (a write and a
            // source share a slot only 4096 bytes apart).
            if (static_cast<unsigned>(op) - static_cast<unsigned>(flushed) + codec::logic::kLz4GroupMaxOut > kRingBytes)
              flush(false);
            RingLanes lanes{lane};
            RingSlots slots{ring, om, out};
            unsigned next_r = 0, next_op = 0;
            // far sources come from global memory where the flushes stored them (each flush
            // ends with a __syncwarp, which orders its stores before these loads)
            if (codec::logic::lz4_group_decode(lanes, window, static_cast<unsigned>(rel), static_cast<unsigned>(rd.len),
                                               static_cast<unsigned>(op), static_cast<unsigned>(size), kGroupMaxOffset,
                                               static_cast<unsigned>(flushed), slots, &next_r, &next_op) != 0) {
              op = next_op;
              ip = rd.base + next_r;
              continue;
            }
          }
          const unsigned r0 = static_cast<unsigned>(rel);
          const unsigned wlen = static_cast<unsigned>(rd.len);
          const unsigned token = window[r0];
          const unsigned lit0 = token >> 4, m = token & 15u;
          const unsigned op32 = static_cast<unsigned>(op);
          // Long path (version 4): also one length-extension byte each, below 255 (<= 269
          // literals, <= 273 match bytes: 99 % of the extended ones on blosc's float fields),
          // sources still in the ring (offset + length <= kRingBytes: none of their slots has
          // been reused) and far sources that an earlier flush already stored. With the short
          // path it took 91 % of the synth fields' sequences (was 70 %), 84 % of the same
          // fields written with lz4hc (was 21 %: lz4hc finds far matches) and 95 % of the
          // era5-like ones (was 85 %) (host walk, docs/gpu_decoders.md, version 4). Since
          // version 13 it takes the sequences that groups do not.
          unsigned lit = lit0;
          unsigned li = r0 + 1;  // window index of the literals
          bool one_byte = true;  // each extension is a single byte below 255
          if (lit == 15) {
            const unsigned e = li < wlen ? window[li] : 255u;
            one_byte = e < 255;
            lit += e;
            ++li;
          }
          const unsigned oi = li + lit;  // window index of the offset's two bytes
          unsigned next = oi + 2;        // window index after the sequence
          if (one_byte && next + (m == 15 ? 1u : 0u) <= wlen) {
            const unsigned off = static_cast<unsigned>(window[oi]) | (static_cast<unsigned>(window[oi + 1]) << 8);
            unsigned mlen = m + 4;
            if (m == 15) {
              const unsigned e = window[next];
              one_byte = e < 255;
              mlen += e;
              ++next;
            }
            const unsigned mp = op32 + lit;  // the match's output position
            const unsigned fl32 = static_cast<unsigned>(flushed);
            const bool in_ring = off + mlen <= kRingBytes;
            if (one_byte && off != 0 && off <= mp && lit + mlen <= static_cast<unsigned>(size) - op32 &&
                (in_ring || mp - off + mlen <= fl32)) {
              if (op32 - fl32 + lit + mlen > kRingBytes) flush(false);
              for (unsigned k = lane; k < lit; k += 32) ring[(om + op32 + k) & (kRingBytes - 1)] = window[li + k];
              __syncwarp();  // the match may read these literals
              if (in_ring) {
                // byte k of the match repeats source byte k mod off (when off < mlen the
                // source is the off bytes before mp, all written before): r tracks k mod off
                unsigned r = lane, step = 32;
                if (off < mlen && off < 32) {
                  r = lane % off;
                  step = 32 % off;
                }
                for (unsigned k = lane; k < mlen; k += 32) {
                  ring[(om + mp + k) & (kRingBytes - 1)] = ring[(om + mp - off + r) & (kRingBytes - 1)];
                  r += step;
                  if (r >= off) r -= off;
                }
                // The writes that may follow without a __syncwarp (the next sequence's
                // literals, in the long path or in a general-path piece of at most kRingPiece;
                // groups and flushes sync first) land below mp + mlen + kRingPiece, so they
                // reuse the slot of a byte read here only if off + mlen > kRingPiece.
                if (off + mlen > kRingPiece) __syncwarp();
              } else {
                // off > kRingBytes - mlen > mlen: no overlap; the source was stored by an
                // earlier flush of this warp, whose closing __syncwarp orders it before these loads
                const std::uint8_t* src = out + (mp - off);
                for (unsigned k = lane; k < mlen; k += 32) ring[(om + mp + k) & (kRingBytes - 1)] = src[k];
              }
              op = mp + mlen;
              ip += next - r0;
              continue;
            }
          }
        }
      }
      codec::logic::Lz4Sequence s;
      bool last = false;
      const DecodeStatus st = codec::logic::lz4_read_sequence(rd, in_size, &ip, op, size, &s, &last);
      if (st != DecodeStatus::kOk) return st;  // the buffer fails; its output is not used
      literals(in, s.lit_src, s.lit_len, rd);
      if (last) break;
      match(s.match_offset, s.match_len);
    }
    flush(true);
    return op == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
  }
};

}  // namespace cubestream::cuda::detail
