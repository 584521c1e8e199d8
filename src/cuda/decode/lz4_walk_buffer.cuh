// One buffer's walk, whichever walk it is: the numcodecs header, the buffer's slots, the walk
// itself (a callable), its segments pushed, the buffer's status.
// (A private part of cuda/decode/lz4_segments.cu: lz4_segments_private.cuh says what that means.)
#pragma once

#include "cuda/decode/lz4_segments_private.cuh"

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_match_bits.hpp"
#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "cuda/decode/device_status.cuh"
#include "cuda/decode/lz4_segment_queue.cuh"
#include "cuda/decode/lz4_segments.hpp"
#include "cuda/decode/lz4_segments_config.cuh"
#include "cuda/decode/warp_copy.cuh"

namespace cubestream::cuda::detail {
namespace {

// A buffer's slots, for a walk that writes its segments itself and pushes them (the split walk:
// then `pushed`).
struct WalkSlots {
  std::size_t buffer;
  logic::Lz4Segment* segs;
  logic::Lz4Runs* runs;
  std::uint32_t* flags;
  bool pushed;
};

// A walk's mark sink that also notes the runs (lz4_note_run, lz4_note_runs, lz4_note_close)
// into the buffer's slots. Every lane of the walking warp calls it alike: a table walk's notes
// among a token list go a lane each (run_range; lane 0 alone had ~19 notes a window in turn on
// warp 0's path, and one era5-like chunk alone took 12 % longer, session 35), a serial step's
// (run) and the segment's count (close) by lane 0. close() meets the warp first, so every lane's
// notes of the segment come before lane 0's count and before the segment's push, which lane 0
// makes after them, or a helper after a barrier warp 0 passed since (the push's release covers
// them, as it covers the segment's slot). With kRunsOn false, the marks alone.
template <class Mark>
struct MarkRuns {
  Mark& mark;
  logic::Lz4Runs* runs;
  unsigned lane;
  // (segment k's count zeroed first: should a walk ever leave a segment unclosed, its workers
  // parse it serially rather than by a count a previous launch left in the slot)
  __device__ void operator()(std::uint32_t k, std::uint32_t ip, std::uint32_t op) const {
    if (lane == 0) runs[k].seqs = 0;
    mark(k, ip, op);
  }
  __device__ void run(std::uint32_t k, std::uint32_t i, std::uint32_t off) const {
    if (lane == 0) runs[k].at[i / logic::kLz4RunSeqs - 1] = static_cast<std::uint16_t>(off);
  }
  __device__ void run_range(std::uint32_t k, std::uint32_t seqs, const std::uint16_t* toks, std::uint32_t from,
                            std::uint32_t stop, std::uint32_t base, std::uint32_t in) const {
    for (std::uint32_t i = logic::lz4_first_run_token(from, seqs) + logic::kLz4RunSeqs * lane; i < stop;
         i += 32 * logic::kLz4RunSeqs)
      runs[k].at[logic::lz4_run_entry(from, seqs, i)] = static_cast<std::uint16_t>(base + toks[i] - in);
  }
  __device__ void close(std::uint32_t k, std::uint32_t seqs) const {
    __syncwarp();
    if (lane == 0) runs[k].seqs = static_cast<std::uint16_t>(seqs);
  }
};
// The sink a walk gets: `mark` with the runs where they are on, else `mark` itself.
template <class Mark>
__device__ auto mark_sink(Mark& mark, logic::Lz4Runs* runs, unsigned lane) {
  if constexpr (kRunsOn)
    return MarkRuns<Mark>{mark, runs, lane};
  else
    return [&mark](std::uint32_t k, std::uint32_t ip, std::uint32_t op) { mark(k, ip, op); };
}

// The walk of buffer i by one warp: the numcodecs header, the buffer's slots, then
// walk(in, in_size, size, bound, mark, &count, slots) (a status; mark(k, ip, op) records segment
// k's start), pushing each segment as its end becomes known (unless the walk pushed them all
// itself: slots.pushed), then the buffer's status (lane 0). Every lane of the warp calls it.
template <class Walk>
__device__ void walk_buffer(const DeviceBatch& b, std::size_t i, const Lz4SegmentScratch& s, unsigned lane,
                            Walk&& walk) {
  const std::uint8_t* src = b.src[i];
  const std::size_t src_bytes = b.src_bytes[i], size = b.dst_bytes[i];
  std::uint32_t count = 0;
  DecodeStatus st = DecodeStatus::kOk;
  bool ring = false, walked = false;
  // numcodecs framing first (lz4_numcodecs_decode_with's checks, in its order)
  if (src_bytes < logic::kLz4NumcodecsHeader) {
    st = DecodeStatus::kCorrupt;
  } else if ((static_cast<std::size_t>(src[0]) | (static_cast<std::size_t>(src[1]) << 8) |
              (static_cast<std::size_t>(src[2]) << 16) | (static_cast<std::size_t>(src[3]) << 24)) != size) {
    st = DecodeStatus::kWrongSize;
  } else {
    const std::size_t in_size = src_bytes - logic::kLz4NumcodecsHeader;
    ring = in_size >= logic::kLz4RingMaxBytes || size >= logic::kLz4RingMaxBytes ||
           (!s.take_dense && !logic::lz4_segments_take(in_size, size));
    if (!ring) {
      // the split walk may restart the serial rule at each region: a slot more per region
      const std::size_t bound =
          logic::lz4_segment_bound(in_size, size) +
          (s.split_region != 0 && logic::lz4_split_worth(static_cast<std::uint32_t>(in_size),
                                                          static_cast<std::uint32_t>(size))
               ? logic::lz4_split_extra_slots(in_size, s.split_region)
               : 0);
      unsigned long long base = 0;
      if (lane == 0) base = atomicAdd(s.cursor, static_cast<unsigned long long>(bound));
      base = __shfl_sync(kFullMask, base, 0);
      ring = base + bound > s.capacity;
      if (!ring) {
        // the status and the slots before the first push (its release publishes them); segment
        // workers only ever fail the status (fail_status), and so does the walk from here on
        if (lane == 0) {
          s.seg_base[i] = base;
          s.paced[i] = 0;  // the split walk sets its count where it takes the buffer
          b.status[i] = DecodeStatus::kOk;
          if (s.ready_first) {
            // the buffer's pending bits, or the chained pass where they do not fit
            const std::size_t words = logic::lz4_bit_words(size);
            const unsigned long long wb = atomicAdd(s.bits_cursor, static_cast<unsigned long long>(words));
            s.bits_base[i] = wb + words <= s.bits_words ? wb : kLz4NoBits;
          }
        }
        walked = true;
        logic::Lz4Segment* segs = s.segs + base;
        std::uint32_t* flags = s.flags + base;
        WalkSlots slots{i, segs, s.runs + base, flags, false};
        st = walk(src + logic::kLz4NumcodecsHeader, static_cast<std::uint32_t>(in_size),
                  static_cast<std::uint32_t>(size), bound,
                  [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) {
                    if (lane == 0) mark_segment(s, segs, flags, i, k, ip, op);
                  },
                  &count, slots);
        // a walk that fails pushed only segments it had checked whole; their workers write
        // output bytes of a buffer whose status is not ok (unspecified, batch_decode.hpp)
        if (st == DecodeStatus::kOk && count != 0 && lane == 0 && !slots.pushed) push_segment(s, i, count - 1, true);
      }
    }
  }
  if (lane != 0) return;
  if (ring) {
    s.ring_list[atomicAdd(s.ring_count, 1u)] = static_cast<std::uint32_t>(i);
  } else if (walked) {
    if (st != DecodeStatus::kOk) fail_status(b.status + i, st);
  } else {
    b.status[i] = st;
  }
  // this buffer's pushes before the count the workers end on
  __threadfence();
  atomicAdd(s.walks_done, 1u);
}

}  // namespace
}  // namespace cubestream::cuda::detail
