// The split walk of a numcodecs LZ4 block: its regions walked side by side, one thread each,
// written once for the host and the device.
//
// Why. The table walk (lz4_segments.hpp) is one chain per block: each sequence's start depends
// on every sequence before it. On 256 era5-like 4 MiB chunks it takes ~10 ms (~250 cycles a
// sequence) while the segment workers need ~6 ms, so the walk sets the batch's time
// (docs/gpu_decoders.md, session 16). But an LZ4 parse started at a wrong byte falls onto the
// true parse soon: it lands on one of the true sequence starts (one every ~55 bytes in those
// chunks) within a few dozen steps, and from then on the two are the same chain. Codes that
// resynchronise like this can be parsed in parallel by guessing and correcting (as Weissenberger
// and Schmidt decode Huffman streams on GPUs), so here:
//  1. The block's input is cut into regions of R bytes (lz4_split_shape). Round 0 walks region r
//     from its first byte (a guess) to its exit: the start of the first sequence at or past the
//     region's end. A sequence belongs to the region its token is in.
//  2. Round k: region r's entry becomes region r-1's exit from round k-1 (region 0's is 0); a
//     region whose entry changed walks again. When a round changes no entry, every entry is the
//     true one (by induction from region 0). On climate data and on every test kind round 2
//     changes nothing: two walks. A block still changing after kLz4SplitRounds is declined.
//  3. A region walk runs every check of lz4_read_sequence that does not need the output
//     position, and keeps what the others need: `out`, its output bytes, and `need`, the largest
//     offset - (relative output position after the literals) of its matches. With B_r the sum of
//     `out` over the regions before r, the serial decoder accepts the block iff every region
//     passes its checks, need_r <= B_r, a region holds the block's last sequence, and the
//     total is the block's decoded size (the output then never passes its end, because the
//     output position only grows, so the serial decoder's output bounds hold at every sequence).
//  4. Accepted: segments are marked per region (lz4_mark_before's rule, restarted at each
//     region's entry), counted by the walks above and written at their place by a last walk.
// A block the split walk declines (damaged, or no fixed point) goes to the table walk, which
// gives the serial decoder's exact status; so statuses never change, and only an accepted
// block's marks differ from the serial rule's (a segment also starts at every region's entry).
//
// Status on the GPU (session 26, H200): correct (the GPU suites and memcheck pass with it) but
// slower than the table walk on all three benchmark batches, so it is off unless
// CUBESTREAM_LZ4_SPLIT_REGION asks for it (cuda/decode/batch_decode.cu). A thread walking its
// region alone waits on one dependent load after another (~3 000 cycles a sequence measured,
// ~2 000 with an L2 prefetch ahead), and the segments of a buffer pushed at once tied up the
// worker warps on the chain of match passes until their pushes were paced.
// docs/gpu_decoders.md, "The split walk", has the numbers and what to try next.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "core/host_device.hpp"

namespace cubestream::codec::logic {

// Regions: at most kLz4SplitMaxRegions (a thread each on the GPU), of at least the caller's
// region_min bytes: on the GPU what CUBESTREAM_LZ4_SPLIT_REGION says (kLz4SplitRegionDefault is
// the size measured), never below kLz4SplitRegionFloor (the setting is clamped, so the slots the
// scratch holds bound every setting); the host tests go lower, to cut small blocks into many.
inline constexpr std::uint32_t kLz4SplitRegionFloor = 4096;
inline constexpr std::uint32_t kLz4SplitRegionDefault = 32768;
inline constexpr std::uint32_t kLz4SplitMaxRegions = 256;
// Rounds after round 0 before the walk gives up: round 1 moves every entry onto the true chain
// and round 2 finds nothing changed; more walk only where a guessed chain did not meet the true
// one inside its region, and then the true entries travel one region a round through such a
// stretch. That happens where true tokens are sparse: a 1.1 MB float32 field that LZ4 barely
// compresses (1.001x, literal runs of ~500 bytes) needed 11 rounds with 32 KiB regions, the
// benchmark's era5-like chunks (1.03x) one; a round costs the GPU one region walk, and the
// table walk of a 4 MiB block ~100 of them. A block whose round kLz4SplitRounds still changed
// an entry is declined.
inline constexpr std::uint32_t kLz4SplitRounds = 16;

// How a block of in_size bytes (>= 1) is cut for regions of at least region_min bytes.
struct Lz4SplitShape {
  std::uint32_t regions;  // 1..kLz4SplitMaxRegions
  std::uint32_t bytes;    // region r covers [r * bytes, min((r + 1) * bytes, in_size))
};
CS_HD inline Lz4SplitShape lz4_split_shape(std::uint32_t in_size, std::uint32_t region_min) {
  const std::uint64_t floor = region_min == 0 ? 1 : region_min;
  std::uint64_t n = (static_cast<std::uint64_t>(in_size) + floor - 1) / floor;
  if (n == 0) n = 1;
  if (n > kLz4SplitMaxRegions) n = kLz4SplitMaxRegions;
  const auto bytes = static_cast<std::uint32_t>((static_cast<std::uint64_t>(in_size) + n - 1) / n);
  return Lz4SplitShape{static_cast<std::uint32_t>(n), bytes == 0 ? 1u : bytes};
}
CS_HD inline std::uint32_t lz4_split_begin(const Lz4SplitShape& s, std::uint32_t r, std::uint32_t in_size) {
  const std::uint64_t b = static_cast<std::uint64_t>(r) * s.bytes;
  return b < in_size ? static_cast<std::uint32_t>(b) : in_size;
}
CS_HD inline std::uint32_t lz4_split_end(const Lz4SplitShape& s, std::uint32_t r, std::uint32_t in_size) {
  return lz4_split_begin(s, r + 1, in_size);
}

// Slots a block needs beyond lz4_segment_bound when the split walk may mark it with regions of
// at least region_min bytes: one more segment start per region at most (a region's walk
// restarts the serial rule).
CS_HD inline std::size_t lz4_split_extra_slots(std::size_t in_size, std::uint32_t region_min) {
  const std::size_t floor = region_min == 0 ? 1 : region_min;
  const std::size_t n = in_size / floor + 1;
  return n < kLz4SplitMaxRegions ? n : kLz4SplitMaxRegions;
}

// Whether the split walk tries a block at all: not an empty one, and not one larger than its
// decoded size. Such a block is mostly one literal run (incompressible data): no true token lies
// inside most regions, so no guessed chain can meet the true one, the entries travel one region
// a round and every round would be spent for nothing; the table walk takes a long run in one
// serial step.
CS_HD inline bool lz4_split_worth(std::uint32_t in_size, std::uint32_t size) { return in_size != 0 && in_size <= size; }

// How far ahead of its position a GPU thread's region walk prefetches (lz4_region_walk): ~10
// sequences of the era5-like chunks, more than a DRAM latency at the walk's pace.
inline constexpr std::uint32_t kLz4SplitPrefetch = 512;

// What a region walk found, from its entry.
struct Lz4RegionWalk {
  std::uint32_t exit = 0;   // the first sequence start at or past the region's end (the block's
                            // end after its last sequence)
  std::uint32_t need = 0;   // the smallest output position the region may start at
  std::uint64_t out = 0;    // output bytes of its sequences
  std::uint32_t marks = 0;  // segments it starts
  bool last = false;        // it holds the block's last sequence
  bool ok = true;           // every sequence passed the checks that need no output position
                            // (where one fails, the walk goes on from the next byte: see below)
  bool stopped = false;     // the walk's stop callback ended it at `exit` (before the region's end)
  std::uint32_t fail_end = 0;  // 1 + the token position of its last failed check (0: none)
};

// Walks the sequences of block in[0, in_size) whose tokens lie in [entry, end) (end <= in_size),
// starting at `entry`, checking each as lz4_read_sequence does except where that needs the
// output position. mark(k, ip, o) is called where segment k of the region starts (o: output
// bytes of the region before it), the rule of lz4_mark_before restarted at the entry.
// Where a check fails the region is not ok, and the walk goes on as a guess from the byte after
// that token (after the bytes the failed parse read, where it read more): on the true chain the block is then refused whatever follows, and on a guessed
// chain (an entry inside literals, say) an exit that is a guess like any other lets the next
// region walk from it; a walk that stopped instead would hand its successor no entry, and that
// would travel one region a round (measured on a 4 MiB climate chunk: seven rounds, not two).
// Each step takes at least one input byte, so the walk ends after at most end - entry steps.
// seq(ip, lit, off, mlen) is called for each sequence that passed its checks, in order: its
// token at ip, lit literals, then a match of mlen bytes (kLz4MinMatch counted) at offset off;
// the block's last sequence has off = mlen = 0. stop(ip), asked before each token is read, ends
// the walk there where it returns true (`stopped`, exit = ip). (The rounds path keeps the
// sequences as records, so that its emit reads them instead of parsing the region a third time,
// and stops a walk where it meets the chain its last walk recorded.)
CS_HD_TEMPLATE
template <class Mark, class Seq, class Stop>
CS_HD inline Lz4RegionWalk lz4_region_walk(const std::uint8_t* in, std::uint32_t in_size, std::uint32_t entry,
                                           std::uint32_t end, Mark&& mark, Seq&& seq, Stop&& stop) {
  Lz4RegionWalk w;
  std::uint32_t ip = entry;
  std::uint64_t o = 0;
  Lz4SegmentMarks m;
  const auto need = [&](std::uint64_t off, std::uint64_t at) {  // off > at: the match reaches back past the entry
    if (off > at && off - at > w.need) w.need = static_cast<std::uint32_t>(off - at);
  };
  while (ip < end) {
    if (stop(ip)) {
      w.stopped = true;
      break;
    }
#if defined(__CUDA_ARCH__)
    // A GPU thread walks its region alone, one dependent load after another, each a DRAM miss
    // the first time its line is touched: the line kLz4SplitPrefetch bytes ahead goes to L2 now
    // (measured on the H200 without it: ~3 000 cycles a sequence, walks of 3 ms a 4 MiB block).
    if (in_size - ip > kLz4SplitPrefetch) asm volatile("prefetch.global.L2 [%0];" ::"l"(in + ip + kLz4SplitPrefetch));
#endif
    // (a region's relative positions fit 32 bits wherever the block is accepted: its total is
    // the decoded size; elsewhere the marks are only counted, and the count is not used)
    static_cast<void>(lz4_mark_before(&m, ip, static_cast<std::uint32_t>(o), ~std::size_t{0}, mark));
    Lz4FastShape f;
    if (lz4_table_shape(in + ip, in_size - ip, in_size - ip, &f)) {
      // not the block's last sequence: offset and one more byte lie inside the block
      if (f.off == 0) {
        w.ok = false;
        w.fail_end = ip + 1;
        ++ip;
        continue;
      }
      need(f.off, o + f.lit);
      seq(ip, f.lit, f.off, f.mlen);
      o += f.lit + f.mlen;
      ip += f.size;
      continue;
    }
    // lz4_read_sequence's parse without the output checks (long runs of length bytes, the end)
    std::size_t p = ip;
    const std::uint8_t token = in[p++];
    std::size_t lit = token >> 4, off = 0, match = token & 15u;
    bool good = !(lit == 15 && !lz4_read_length_ext(in, in_size, &p, &lit)) && lit <= in_size - p;
    if (good) {
      p += lit;
      if (p == in_size) {  // the last sequence: literals only
        seq(ip, static_cast<std::uint32_t>(lit), 0u, 0u);
        o += lit;
        w.last = true;
        ip = in_size;
        break;
      }
      good = in_size - p >= 2;
    }
    if (good) {
      off = static_cast<std::size_t>(in[p]) | (static_cast<std::size_t>(in[p + 1]) << 8);
      p += 2;
      good = off != 0 && !(match == 15 && !lz4_read_length_ext(in, in_size, &p, &match));
    }
    if (!good) {
      // on from past the bytes this parse read (at least the next byte): a run of length bytes
      // that fails at the block's end is read once, not again from each of its bytes (a block
      // of 255s would otherwise cost a region's thread region x block bytes)
      w.ok = false;
      w.fail_end = ip + 1;
      ip = p > ip + 1 ? static_cast<std::uint32_t>(p) : ip + 1;
      continue;
    }
    need(off, o + lit);
    seq(ip, static_cast<std::uint32_t>(lit), static_cast<std::uint32_t>(off),
        static_cast<std::uint32_t>(match + kLz4MinMatch));
    o += lit + match + kLz4MinMatch;
    ip = static_cast<std::uint32_t>(p);
  }
  w.exit = ip;
  w.out = o;
  w.marks = m.count;
  return w;
}
// The walk without sequence or stop callbacks.
CS_HD_TEMPLATE
template <class Mark>
CS_HD inline Lz4RegionWalk lz4_region_walk(const std::uint8_t* in, std::uint32_t in_size, std::uint32_t entry,
                                           std::uint32_t end, Mark&& mark) {
  return lz4_region_walk(
      in, in_size, entry, end, mark, [](std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t) {},
      [](std::uint32_t) { return false; });
}

// Step 3's test over the regions' walks at the fixed point, in order: returns false where the
// serial decoder refuses the block. base[r] receives B_r (the output position of region r's
// entry) for every region.
CS_HD inline bool lz4_split_accepts(const Lz4RegionWalk* w, std::uint32_t regions, std::uint64_t size,
                                    std::uint64_t* base) {
  std::uint64_t b = 0;
  bool last = false;
  for (std::uint32_t r = 0; r < regions; ++r) {
    base[r] = b;
    if (!w[r].ok || w[r].need > b) return false;
    b += w[r].out;
    last = last || w[r].last;
  }
  return last && b == size;
}

// The split walk on the host (tests, fuzzing and the host run of the segmented decode; the
// device runs the same rounds, a thread per region, in split_job of
// cuda/decode/lz4_table_walk.cuh). Returns true where the block is accepted: then mark(k, ip,
// op) has been called for every segment in order, *segments holds their count and *rounds the
// rounds after the first that walked. False: declined (the caller takes the table walk); nothing
// marked.
// The rounds of steps 1-2 on the host, as the device's threads run them: entry[r] starts at
// entry[r] as given (round 0's guesses), each round takes every entry from the previous round's
// exits at once and walks the regions whose entry moved. Returns true at a fixed point (entry
// and w then hold the true entries and their walks); *rounds: the rounds after the first that
// walked.
// walk(r, entry, last) walks region r from `entry` (last: its walk before, nullptr in round 0);
// without it, lz4_region_walk.
template <class Walk>
inline bool lz4_split_fixed_point_host(const Lz4SplitShape& shape, std::vector<std::uint32_t>& entry,
                                       std::vector<Lz4RegionWalk>& w, std::uint32_t* rounds, Walk&& walk) {
  const std::uint32_t n = shape.regions;
  std::vector<std::uint32_t> next(n);
  w.resize(n);
  for (std::uint32_t r = 0; r < n; ++r) w[r] = walk(r, entry[r], static_cast<const Lz4RegionWalk*>(nullptr));
  bool fixed = false;
  *rounds = 0;
  for (std::uint32_t round = 1; round <= kLz4SplitRounds && !fixed; ++round) {
    for (std::uint32_t r = 0; r < n; ++r) next[r] = r == 0 ? 0u : w[r - 1].exit;
    fixed = true;
    for (std::uint32_t r = 0; r < n; ++r) {
      if (next[r] == entry[r]) continue;
      fixed = false;
      entry[r] = next[r];
      const Lz4RegionWalk before = w[r];
      w[r] = walk(r, entry[r], &before);
    }
    if (!fixed) *rounds = round;
  }
  return fixed;
}
inline bool lz4_split_fixed_point_host(const std::uint8_t* in, std::uint32_t in_size, const Lz4SplitShape& shape,
                                       std::vector<std::uint32_t>& entry, std::vector<Lz4RegionWalk>& w,
                                       std::uint32_t* rounds) {
  const auto none = [](std::uint32_t, std::uint32_t, std::uint32_t) {};
  return lz4_split_fixed_point_host(shape, entry, w, rounds,
                                    [&](std::uint32_t r, std::uint32_t from, const Lz4RegionWalk*) {
                                      return lz4_region_walk(in, in_size, from, lz4_split_end(shape, r, in_size), none);
                                    });
}

template <class Mark>
inline bool lz4_split_walk_host(const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size,
                                std::uint32_t region_min, std::size_t max_segments, Mark&& mark,
                                std::uint32_t* segments, std::uint32_t* rounds) {
  *segments = 0;
  *rounds = 0;
  if (!lz4_split_worth(in_size, size)) return false;
  const Lz4SplitShape shape = lz4_split_shape(in_size, region_min);
  const std::uint32_t n = shape.regions;
  std::vector<std::uint32_t> entry(n);
  std::vector<Lz4RegionWalk> w;
  for (std::uint32_t r = 0; r < n; ++r) entry[r] = lz4_split_begin(shape, r, in_size);
  if (!lz4_split_fixed_point_host(in, in_size, shape, entry, w, rounds)) return false;
  std::vector<std::uint64_t> base(n);
  if (!lz4_split_accepts(w.data(), n, size, base.data())) return false;
  std::uint64_t count = 0;
  for (std::uint32_t r = 0; r < n; ++r) count += w[r].marks;
  if (count > max_segments) return false;
  std::uint32_t k0 = 0;
  for (std::uint32_t r = 0; r < n; ++r) {
    static_cast<void>(lz4_region_walk(in, in_size, entry[r], lz4_split_end(shape, r, in_size),
                                      [&](std::uint32_t k, std::uint32_t ip, std::uint32_t o) {
                                        mark(k0 + k, ip, static_cast<std::uint32_t>(base[r] + o));
                                      }));
    k0 += w[r].marks;
  }
  *segments = k0;
  return true;
}

}  // namespace cubestream::codec::logic
