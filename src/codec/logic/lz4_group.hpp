// Groups of short LZ4 sequences decoded by the 32 lanes of one warp at once: the blosc unit
// kernel's streams (src/cuda/decode/warp_ring_lz4.cuh), written once for the device and for a
// host run lane by lane (tests and fuzzing).
//
// Why: one warp decodes each blosc stream, and it took one sequence at a time: token, offset,
// literals, a __syncwarp, the match, ~100 warp-instructions at ~7.5 cycles each (ncu, H100,
// numcodecs' blosc layout of the mixed 64 KiB-1 MiB batch: ~730 cycles a sequence). The byte
// planes of float fields are dense (up to 19 000 sequences in a 128 KiB plane, ~7 bytes each),
// and a few hundred such streams set the length of the whole batch. A group takes up to 32
// consecutive sequences and spends the serial part of the work only on the walk from token to
// token; checks and copies run on all lanes at once.
//
// A group sequence has no length byte (at most 14 literals and 4-18 match bytes), it is one of
// the first (staged bytes from the group's start) / 18 sequences (the walk's bound below: so
// its token, literals and offset lie in the staged window), and its offset is at most `max_offset`
// (the caller's bound: the device's ring holds only its recent output) or its source lies
// wholly in output already stored (the device's flushes to global memory). Four steps:
//  1. walk (every lane the same, serially): token -> next token (literal nibble + 3 bytes on),
//     at most min(32, staged bytes from the group's start / 18) steps: a step moves at most 18
//     bytes (token, offset, a literal nibble of 15), so no step reads past the window whatever
//     the bytes say, and the walk checks no bounds. Lane k keeps step k's token index and
//     output position. Steps go in chunks of kLz4GroupWalkChunk (the steps that do not fill a
//     chunk go one at a time), and the walk stops after the chunk or step that stepped over a
//     token with a length byte, where the group ends anyway. The chain is one shared-memory
//     load and one add a step; version 13's walk checked and branched at every step: 20
//     instructions a step, a third of the unit kernel's instructions on the dense planes
//     (ncu; docs/gpu_decoders.md, version 14).
//  2. check (each lane its own sequence): no length byte (neither nibble 15); the offset,
//     0 < offset <= match position, offset <= max_offset or a stored source, match end <= size.
//     The group ends before its first failing sequence, which the caller's general path parses
//     again (and so reports exactly the serial decoder's status for a damaged block). Lanes
//     after it hold whatever the walk stepped to and are not used.
//  3. literals: each lane copies its own. No step-3 copy reads what another writes.
//  4. matches, in rounds. A pending match is ready when every byte of its source is final:
//     the source ends at or before the first pending match's start, or starts at or after the
//     end of the last pending match before it (what lies between is literals and resolved
//     matches). A match's source is its `offset` bytes back, and, when offset < length, only
//     the offset bytes before the match (byte k repeats source byte k mod offset). Ready
//     matches read only bytes that no ready match of the round writes (ready matches below a
//     lane end before its source; those above start after its own output), so a round copies
//     them all at once, each lane its own, all loads before all stores. The first pending match
//     is always ready, so a group of n sequences takes at most n rounds (2.8 on average for
//     the dense planes above, host walk of the mixed batch; docs/gpu_decoders.md, version 13).
//
// `Lanes` runs the per-lane parts (each_nosync). On the device each lane runs its own part, and
// sync() is a __syncwarp (src/cuda/decode/warp_copy.cuh, RingLanes); the host runs the 32
// lanes one after another, in reverse order (lane 31 first): a rule that let a ready match read
// what a lower ready lane writes in the same round would then read a byte not yet written, and
// the host tests, which decode into outputs filled with a constant, would see wrong bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/lz4_block.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::uint32_t kLz4GroupLanes = 32;
inline constexpr std::uint32_t kLz4GroupMaxLiterals = 14;  // a literal nibble of 15 needs a length byte
inline constexpr std::uint32_t kLz4GroupMaxMatch = 18;     // nibble 14 + the minimum match of 4
// A group's output is at most this many bytes (the device makes room for it in its ring first).
inline constexpr std::uint32_t kLz4GroupMaxOut = kLz4GroupLanes * (kLz4GroupMaxLiterals + kLz4GroupMaxMatch);

// Lowest and highest set bit of a non-zero mask.
CS_HD inline std::uint32_t lz4_group_lowest(std::uint32_t m) {
#if CS_DEVICE_PASS
  return static_cast<std::uint32_t>(__ffs(static_cast<int>(m)) - 1);
#else
  return static_cast<std::uint32_t>(__builtin_ctz(m));
#endif
}
CS_HD inline std::uint32_t lz4_group_highest(std::uint32_t m) {
#if CS_DEVICE_PASS
  return static_cast<std::uint32_t>(31 - __clz(static_cast<int>(m)));
#else
  return static_cast<std::uint32_t>(31 - __builtin_clz(m));
#endif
}

// Copies n <= Max bytes from s to d (which do not overlap) in pieces of kLz4GroupCopyPiece: the
// loads of a piece, then its stores, so that a piece waits on load latency once (a compiler
// may not move a load above a store that might alias it). Constant offsets from s and d.
inline constexpr std::uint32_t kLz4GroupCopyPiece = 8;
template <std::uint32_t Max>
CS_HD void lz4_group_copy(std::uint32_t n, const std::uint8_t* s, std::uint8_t* d) {
#pragma unroll
  for (std::uint32_t c = 0; c < Max; c += kLz4GroupCopyPiece) {
    if (c >= n) return;
    std::uint8_t b[kLz4GroupCopyPiece];
#pragma unroll
    for (std::uint32_t j = 0; j < kLz4GroupCopyPiece; ++j)
      if (c + j < n) b[j] = s[c + j];
#pragma unroll
    for (std::uint32_t j = 0; j < kLz4GroupCopyPiece; ++j)
      if (c + j < n) d[c + j] = b[j];
  }
}

// The same for a match whose offset o is below its length n: byte j repeats source byte j mod o,
// and the source [s, s + o) lies before the match, so every load reads a final byte. Version
// 13 took these byte by byte through the ring's slots (15 instructions a byte, a tenth of the
// unit kernel's instructions on the dense planes, where one match in eight overlaps itself).
// 98 % of them have offset 2 (host count, numcodecs' blosc layout of the bench's mixed batch),
// so offsets 1 and 2 are stores of two loaded bytes; the others go byte by byte. (An unrolled
// form with loads before stores for every offset took the unit kernel to 120 registers.)
template <std::uint32_t Max>
CS_HD void lz4_group_copy_periodic(std::uint32_t n, std::uint32_t o, const std::uint8_t* s, std::uint8_t* d) {
  if (o <= 2) {
    const std::uint8_t even = s[0], odd = s[o - 1];
#pragma unroll
    for (std::uint32_t c = 0; c < Max; c += kLz4GroupCopyPiece) {
      if (c >= n) return;
#pragma unroll
      for (std::uint32_t j = 0; j < kLz4GroupCopyPiece; ++j)
        if (c + j < n) d[c + j] = j % 2 == 0 ? even : odd;
    }
    return;
  }
  std::uint32_t q = 0;  // j mod o
#pragma unroll 1
  for (std::uint32_t j = 0; j < n; ++j) {
    d[j] = s[q];
    q = q + 1 == o ? 0 : q + 1;
  }
}

// The most input bytes one walk step moves (token, a literal nibble of 15, offset) and the
// staged bytes a walk of 32 steps needs from its start.
inline constexpr std::uint32_t kLz4GroupMaxStep = 1 + 15 + 2;
inline constexpr std::uint32_t kLz4GroupSpan = kLz4GroupLanes * kLz4GroupMaxStep;
inline constexpr std::uint32_t kLz4GroupWalkChunk = 4;

// Whether a group may start at this token: it has no length byte (neither nibble is 15).
CS_HD inline bool lz4_group_may_start(std::uint32_t token) { return token < 0xF0u && (token & 15u) != 15u; }

// Whether a group starting at window index r (< len) of a staged reader (window [base, base +
// len) of an input of `size` bytes) should first restage the window at its start: fewer than
// kLz4GroupSpan bytes are staged from there, more input follows the window, and a restage
// moves the window on (after one, r <= 15). Without it the groups near a window's end would be
// short, and a window is refilled only by a read outside it.
CS_HD inline bool lz4_group_restage(std::size_t r, std::size_t len, std::size_t base, std::size_t size) {
  return len - r < kLz4GroupSpan && base + len < size && r >= 16;
}

// Decodes the group of sequences that starts at window index r (< wlen) and output position op
// of a block decoding to `size` bytes, positions below op being final. Returns the sequences
// decoded (0: the sequence at r is not a group sequence, or fewer than 18 bytes are staged from
// r; nothing written); after n > 0, *next_r is the window index of the next token and *next_op
// the output position after the group.
// Every lane calls it with the same arguments.
//
// `out` gives the output: out.span(q, n) points to the bytes of positions [q, q + n) where
// they lie one after another in memory, else is null (the device's ring wraps around);
// out(q) is the byte of position q; out.stored(q) points to position q in memory that holds
// every position below `stored` (the device's global output, where its ring's flushes put
// them). A match whose offset exceeds max_offset takes its source from there, when the source
// ends below `stored`; otherwise it ends the group.
CS_HD_TEMPLATE
template <class Lanes, class Out>
CS_HD std::uint32_t lz4_group_decode(Lanes& lanes, const std::uint8_t* window, std::uint32_t r, std::uint32_t wlen,
                                     std::uint32_t op, std::uint32_t size, std::uint32_t max_offset,
                                     std::uint32_t stored, Out& out, std::uint32_t* next_r, std::uint32_t* next_op) {
  using U = std::uint32_t;
  // 1. the walk: lane k keeps step k's token index and output position (relative to op)
  const U fit = (wlen - r) / kLz4GroupMaxStep;
  const U steps = fit < kLz4GroupLanes ? fit : kLz4GroupLanes;
  // (callers test lz4_group_may_start(window[r]) first: a first token with a length byte would
  // only walk one chunk and end the group at lane 0)
  if (steps == 0) return 0;
  typename Lanes::template PerLane<U> at{}, pos{};
  U q = 0;
  // The stop test is off the chain (it reads the token the step loads anyway). Stopping after
  // a chunk matters where groups are short (11 sequences on average on the synth fields, 7 with
  // lz4hc): 32 steps every time measured 8-17 % slower there. Keeping the output positions in
  // the walk (three instructions a step) measured 3 % faster with lz4hc than a prefix sum over
  // the lanes afterwards (five dependent shuffles), and the same elsewhere.
  U walked = 0;
  bool stop = false;
  for (; walked + kLz4GroupWalkChunk <= steps && !stop; walked += kLz4GroupWalkChunk) {
#pragma unroll
    for (U j = 0; j < kLz4GroupWalkChunk; ++j) {
      lanes.set(at, walked + j, r);
      lanes.set(pos, walked + j, q);
      const U t = window[r];
      stop |= !lz4_group_may_start(t);
      r += (t >> 4) + 3;
      q += (t >> 4) + (t & 15u) + 4;
    }
  }
  for (; walked < steps && !stop; ++walked) {
    lanes.set(at, walked, r);
    lanes.set(pos, walked, q);
    const U t = window[r];
    stop = !lz4_group_may_start(t);
    r += (t >> 4) + 3;
    q += (t >> 4) + (t & 15u) + 4;
  }
  // 2. each lane its own sequence: the shape, the offset, the checks of lz4_read_sequence that
  // the walk left out, and where the source is
  typename Lanes::template PerLane<U> lit{}, off{}, mp{}, mlen{}, src{}, src_end{};
  typename Lanes::template PerLane<bool> bad{}, far{};
  lanes.each_nosync([&](unsigned k) {
    const U t = k < walked ? static_cast<U>(window[at[k]]) : 0xFFu;
    const U l = t >> 4, ml = (t & 15u) + 4;
    lit[k] = l;
    mlen[k] = ml;
    bad[k] = true;
    if (l == 15 || ml == 19) return;  // a length byte (or a lane past the walk)
    // at[k] + 17 < wlen: the walk's bound
    const U o_at = at[k] + 1 + l;
    const U o = static_cast<U>(window[o_at]) | (static_cast<U>(window[o_at + 1]) << 8);
    const U p = op + pos[k] + l;  // the match's output position
    pos[k] = p - l;
    off[k] = o;
    mp[k] = p;
    src[k] = p - o;
    // a source of off < mlen bytes repeats: only the off bytes before the match are read
    src_end[k] = p - o + (o < ml ? o : ml);
    far[k] = o > max_offset;
    bad[k] = o == 0 || o > p || p + ml > size || (o > max_offset && src_end[k] > stored);
  });
  const U fail = lanes.ballot(bad);
  const U n = fail != 0 ? lz4_group_lowest(fail) : kLz4GroupLanes;
  if (n == 0) return 0;
  // 3. literals (the sync before orders them, and the matches, after what earlier paths wrote
  // and read). Most groups of the dense planes have none (0.04 bytes a sequence): then
  // neither the copy nor the sync after it.
  lanes.sync();
  typename Lanes::template PerLane<bool> has_lit{};
  lanes.each_nosync([&](unsigned k) { has_lit[k] = k < n && lit[k] != 0; });
  if (lanes.ballot(has_lit) != 0) {
    lanes.each_nosync([&](unsigned k) {
      if (!has_lit[k]) return;
      const std::uint8_t* s = window + at[k] + 1;
      if (std::uint8_t* d = out.span(pos[k], kLz4GroupMaxLiterals)) {
        lz4_group_copy<kLz4GroupMaxLiterals>(lit[k], s, d);
      } else {
        for (U j = 0; j < lit[k]; ++j) out(pos[k] + j) = s[j];
      }
    });
    lanes.sync();
  }
  // 4. matches in rounds
  typename Lanes::template PerLane<U> from{};
  typename Lanes::template PerLane<bool> ready{};
  U pending = n == kLz4GroupLanes ? ~U{0} : (U{1} << n) - 1;
  while (pending != 0) {
    const U first = lanes.get(mp, lz4_group_lowest(pending));
    // from[k]: the last pending lane below lane k (k itself when there is none)
    lanes.each_nosync([&](unsigned k) {
      const U below = pending & ((U{1} << k) - 1);
      from[k] = below != 0 ? lz4_group_highest(below) : k;
    });
    // the end of that lane's match
    auto before_end = lanes.gather(mp, from);
    auto before_len = lanes.gather(mlen, from);
    lanes.each_nosync([&](unsigned k) {
      ready[k] = ((pending >> k) & 1u) != 0 &&
                 (src_end[k] <= first || (from[k] != k && src[k] >= before_end[k] + before_len[k]));
      if (!ready[k]) return;
      const U o = off[k], ml = mlen[k];
      std::uint8_t* d = out.span(mp[k], kLz4GroupMaxMatch);
      const std::uint8_t* s = far[k] ? out.stored(src[k]) : out.span(src[k], kLz4GroupMaxMatch);
      if (d != nullptr && s != nullptr) {
        if (o >= ml) {
          lz4_group_copy<kLz4GroupMaxMatch>(ml, s, d);
        } else {
          lz4_group_copy_periodic<kLz4GroupMaxMatch>(ml, o, s, d);
        }
      } else {
        // wrapping around the ring: byte by byte (byte j repeats source byte j mod o, which
        // this match never writes)
        U q = 0;
        for (U j = 0; j < ml; ++j) {
          out(mp[k] + j) = far[k] ? out.stored(src[k])[q] : out(src[k] + q);
          q = q + 1 == o ? 0 : q + 1;
        }
      }
    });
    lanes.sync();
    pending &= ~lanes.ballot(ready);
  }
  const U last = n - 1;
  *next_r = lanes.get(at, last) + lanes.get(lit, last) + 3;
  *next_op = lanes.get(mp, last) + lanes.get(mlen, last);
  return n;
}

// The host's lanes: one after another, from lane 31 down (see above). meetings counts sync().
struct Lz4GroupHostLanes {
  std::uint64_t meetings = 0;
  template <class T>
  struct PerLane {
    T v[kLz4GroupLanes];
    CS_HD T& operator[](unsigned lane) { return v[lane]; }
  };
  CS_HD_TEMPLATE template <class F>
  CS_HD void each_nosync(F&& f) {
    for (unsigned l = kLz4GroupLanes; l-- > 0;) f(l);
  }
  CS_HD void sync() { ++meetings; }
  // set: lane `at` takes v; get: lane `from`'s value; gather: lane l gets v[from[l]]; ballot:
  // bit l set when lane l's flag is.
  template <class T>
  CS_HD void set(PerLane<T>& p, unsigned at, const T& v) {
    p[at] = v;
  }
  CS_HD std::uint32_t get(PerLane<std::uint32_t>& p, unsigned from) { return p[from]; }
  CS_HD PerLane<std::uint32_t> gather(PerLane<std::uint32_t>& v, PerLane<std::uint32_t>& from) {
    PerLane<std::uint32_t> r{};
    for (unsigned l = 0; l < kLz4GroupLanes; ++l) r[l] = v[from[l] % kLz4GroupLanes];
    return r;
  }
  CS_HD std::uint32_t ballot(PerLane<bool>& p) {
    std::uint32_t m = 0;
    for (unsigned l = 0; l < kLz4GroupLanes; ++l)
      if (p[l]) m |= std::uint32_t{1} << l;
    return m;
  }
};

// Host run of the blosc warp's LZ4 decode with groups (tests and fuzzing), with the device's
// output ring: groups wherever one starts 18 or more bytes before the staged window's end
// (window_cap >= 32 bytes), every other sequence through lz4_read_sequence and the serial
// copies; `size` bytes exactly. The
// same statuses as lz4_decode_exact_with, and its bytes when it succeeds. *groups (when given)
// receives the sequences decoded in groups.
//
// As on the device (src/cuda/decode/warp_ring_lz4.cuh), groups read and write a ring of
// kLz4GroupRingBytes whose slot of position q is (ring_shift + q) mod the ring's size
// (ring_shift stands for the output's address), and take far sources from the stored output,
// which only a flush fills, from the ring. Before a group the window is restaged where
// lz4_group_restage says so, and the ring is flushed up to a 16-byte boundary when a group's
// output would not fit; the serial path's sequences flush what their
// bytes would overwrite, write `out` and copy their bytes into the ring. The result is the
// stored output after a last flush, copied to `out`: so a group that read a slot already
// reused, wrote over one not yet stored, or read a stored byte not yet flushed gives wrong
// bytes here (the device's bound, 4096 - kLz4GroupMaxOut, is the largest max_offset for which
// this cannot happen).
inline constexpr std::uint32_t kLz4GroupRingBytes = 4096;  // the device's kRingBytes
// (CS_HD: the group's lambdas call them, and nvcc compiles those for the device too.)
struct Lz4GroupHostOut {
  std::uint8_t* ring;
  std::uint32_t shift;
  const std::uint8_t* stored_out;  // the output as flushed so far
  CS_HD std::uint32_t slot(std::uint32_t q) const { return (shift + q) & (kLz4GroupRingBytes - 1); }
  CS_HD std::uint8_t* span(std::uint32_t q, std::uint32_t n) const {
    return slot(q) + n <= kLz4GroupRingBytes ? ring + slot(q) : nullptr;
  }
  CS_HD std::uint8_t& operator()(std::uint32_t q) const { return ring[slot(q)]; }
  CS_HD const std::uint8_t* stored(std::uint32_t q) const { return stored_out + q; }
};
inline DecodeStatus lz4_grouped_decode_host(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                            std::size_t size, std::size_t window_cap, std::uint32_t max_offset,
                                            std::uint32_t ring_shift = 0, std::uint64_t* groups = nullptr) {
  if (in_size == 0) return DecodeStatus::kCorrupt;  // the empty block is the token 0x00
  std::uint8_t* window = new std::uint8_t[window_cap];
  std::uint8_t* ring = new std::uint8_t[kLz4GroupRingBytes];
  // the stored output: 0xA5 until a flush brings a position
  std::uint8_t* stored = new std::uint8_t[size == 0 ? 1 : size];
  for (std::size_t k = 0; k < size; ++k) stored[k] = 0xA5;
  std::size_t flushed = 0;
  Lz4GroupHostOut o{ring, ring_shift, stored};
  const auto flush_to = [&](std::size_t end) {
    for (; flushed < end; ++flushed) stored[flushed] = ring[o.slot(static_cast<std::uint32_t>(flushed))];
  };
  Lz4StagedReader<Lz4MemcpyFill> rd{in, in_size, window, window_cap, {}};
  Lz4GroupHostLanes lanes;
  Lz4SerialCopier copy;
  const bool small = in_size < (std::size_t{1} << 31) && size < (std::size_t{1} << 31);
  std::size_t ip = 0, op = 0;
  DecodeStatus st = DecodeStatus::kOk;
  for (;;) {
    std::size_t rel = ip - rd.base;  // wraps around when ip < base: not in the window
    if (small && rel < rd.len && lz4_group_may_start(window[rel])) {
      if (lz4_group_restage(rel, rd.len, rd.base, in_size)) {
        rd.stage(ip);
        rel = ip - rd.base;
      }
      // the device's flush before a group: up to the last 16-byte boundary of the address
      if (op - flushed + kLz4GroupMaxOut > kLz4GroupRingBytes) flush_to(((ring_shift + op) & ~std::size_t{15}) - ring_shift);
      std::uint32_t nr = 0, nop = 0;
      const std::uint32_t n =
          lz4_group_decode(lanes, window, static_cast<std::uint32_t>(rel), static_cast<std::uint32_t>(rd.len),
                           static_cast<std::uint32_t>(op), static_cast<std::uint32_t>(size), max_offset,
                           static_cast<std::uint32_t>(flushed), o, &nr, &nop);
      if (n != 0) {
        if (groups != nullptr) *groups += n;
        // the serial path reads earlier output from `out`
        for (std::size_t q = op; q < nop; ++q) out[q] = o(static_cast<std::uint32_t>(q));
        ip = rd.base + nr;
        op = nop;
        continue;
      }
    }
    Lz4Sequence s;
    bool last = false;
    st = lz4_read_sequence(rd, in_size, &ip, op, size, &s, &last);
    if (st != DecodeStatus::kOk) break;
    const std::size_t end = op + s.lit_len + s.match_len;
    // bytes that would overwrite ring slots not yet stored are stored first (the device's
    // make_room), and this sequence's bytes go into the ring as well
    if (end - flushed > kLz4GroupRingBytes) flush_to(op);
    copy.literals(out + op, in + s.lit_src, s.lit_len);
    op += s.lit_len;
    if (!last) {
      copy.match(out + op, s.match_offset, s.match_len);
      op += s.match_len;
    }
    for (std::size_t q = end - s.lit_len - s.match_len; q < end; ++q) {
      // a sequence longer than the ring stores each ring's worth before the next overwrites it
      if (q - flushed >= kLz4GroupRingBytes) flush_to(q);
      ring[o.slot(static_cast<std::uint32_t>(q))] = out[q];
    }
    if (last) break;
  }
  if (st == DecodeStatus::kOk && op == size) {
    flush_to(size);
    for (std::size_t q = 0; q < size; ++q) out[q] = stored[q];
  }
  delete[] window;
  delete[] ring;
  delete[] stored;
  if (st != DecodeStatus::kOk) return st;
  return op == size ? DecodeStatus::kOk : DecodeStatus::kCorrupt;
}

}  // namespace cubestream::codec::logic
