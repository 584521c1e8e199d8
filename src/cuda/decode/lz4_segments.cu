// The segmented numcodecs-LZ4 path (lz4_segments.hpp; the logic, shared with the host tests, is
// codec/logic/lz4_segments.hpp).
//
// lz4_fused_kernel    the default: its first thread blocks (by arrival, so they are resident
//                     before any block that waits on them) walk buffers one after another (the
//                     table walk; where it is on, the split walk first, a thread per region),
//                     then turn to segments; every other block's warps are segment workers from
//                     the start
// lz4_table_walk_kernel  one thread block per buffer: the header, the buffer's slots, the
//                     checking walk (warp 0, the table walk over 8 KiB windows whose tables all
//                     the block's warps fill), its segments pushed onto the queue
// lz4_walk_kernel     the same with the serial walk, one warp per buffer (4 per thread block)
// lz4_segment_kernel  segment workers alone (after one of the two walk kernels)
//
// The queue: a walk pushes segment k of its buffer once it marks segment k + 1 (whose start is
// segment k's end) or ends (the last one); the table walk may hand a mark to a helper thread,
// which pushes it a window later (MarkRing), in mark order still. A worker takes the next ticket
// and waits until that entry is pushed. Per segment: parse and literals, records in shared
// memory, (with pending bits: publish the bits, wait for the segments within 64 KiB before to
// publish theirs, copy the matches whose bytes are final: ready_pass), wait for the segment
// before (flags), matches in groups, publish. No wait can stall for good: a walk waits on nothing, and the segment a
// worker waits on was pushed earlier, so a worker that is already running took it (and a
// segment publishes its bits before it waits on anything).
//
// The parts, each a private header of this one translation unit (CS_LZ4_SEGMENTS_TU):
// lz4_segments_config.cuh (the walks' shape and A/B switches), lz4_segment_queue.cuh (entries,
// memory order, polls, pushes), lz4_walk_buffer.cuh (one buffer's walk, any walk), lz4_table_walk.cuh
// (the block's table walk and its jobs), lz4_segment_worker.cuh (the workers); here the scratch's
// layout, the kernels and the launch.
#define CS_LZ4_SEGMENTS_TU  // (the private headers below check it)
#include "cuda/decode/lz4_segments.hpp"

#include <algorithm>

#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "cuda/check.hpp"
#include "cuda/decode/lz4_segment_queue.cuh"
#include "cuda/decode/lz4_segment_worker.cuh"
#include "cuda/decode/lz4_segments_config.cuh"
#include "cuda/decode/lz4_table_walk.cuh"
#include "cuda/decode/lz4_walk_buffer.cuh"
#include "cuda/decode/warp_copy.cuh"
#include "cuda/device_info.hpp"

namespace cubestream::cuda::detail {

namespace {

constexpr std::size_t kAlign = 256;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The fixed part: one 256-byte header of counters, then the per-buffer arrays; then the slots:
// queue entries, segment starts, flags (capacity each).
// (`slots` is where the bits start: they come before the slots.)
struct Layout {
  std::size_t seg_base, bits_base, ring_list, paced, slots;
};
Layout layout(std::size_t n) {
  Layout l{};
  l.seg_base = kAlign;
  l.bits_base = l.seg_base + align_up(n * sizeof(unsigned long long));
  l.ring_list = l.bits_base + align_up(n * sizeof(unsigned long long));
  l.paced = l.ring_list + align_up(n * sizeof(std::uint32_t));
  l.slots = l.paced + align_up(n * sizeof(std::uint32_t));
  return l;
}
// (the runs' 64 bytes only where the walks note them: kRunsOn)
constexpr std::size_t kRunsBytes = kRunsOn ? sizeof(logic::Lz4Runs) : 0;
constexpr std::size_t kSlotBytes =
    sizeof(unsigned long long) + sizeof(logic::Lz4Segment) + kRunsBytes + sizeof(std::uint32_t);
static_assert(sizeof(logic::Lz4Runs) % 4 == 0, "the flags after the runs stay aligned");
// Header bytes the enqueue zeroes (the counters of Lz4SegmentScratch).
constexpr std::size_t kHeaderCounters = 56;
// Words of pending bits for a batch of n buffers decoding to `total` bytes (lz4_bit_words each).
std::size_t bit_words(std::size_t n, std::size_t total) { return total / 32 + n; }

// The serial walk (lz4_segment_walk), one warp per buffer.
__global__ void __launch_bounds__(32 * kWalkWarps) lz4_walk_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                   Lz4SegmentScratch s) {
  __shared__ alignas(16) std::uint8_t windows[kWalkWarps][kWalkWindow];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const std::size_t w = static_cast<std::size_t>(blockIdx.x) * kWalkWarps + warp;
  if (w >= b.num_buffers) return;
  walk_buffer(b, order[w], s, lane,
              [&](const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, std::size_t bound, auto&& mark,
                  std::uint32_t* count, WalkSlots& slots) {
                logic::Lz4StagedReader<WarpFill> rd{in, in_size, windows[warp], kWalkWindow, WarpFill{lane}};
                auto sink = mark_sink(mark, slots.runs, lane);
                return logic::lz4_segment_walk(rd, in_size, size, bound, sink, count);
              });
}

__global__ void __launch_bounds__(kTableThreads) lz4_table_walk_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                       Lz4SegmentScratch s) {
  __shared__ TableShared sh;
  table_walk_buffer(b, order[blockIdx.x], s, sh);
}

template <bool kReady>
__global__ void __launch_bounds__(32 * kSegWarps) lz4_segment_kernel(DeviceBatch b, Lz4SegmentScratch s) {
  __shared__ SegmentShared sh;
  segment_worker<kReady>(b, s, sh);
}

// The walk and the segment workers in one launch. A block's role is its arrival ticket: the
// first `walkers` blocks to start walk buffers (taken in `order`, one at a time per block), so
// every walker is resident before any worker that waits on it; once no buffer is left to walk,
// a walker block's warps become segment workers too (so even a grid of one block decodes).
static_assert(kTableThreads == 32 * kSegWarps, "the fused kernel's roles share its block size");
// Four blocks an SM (64 registers a thread): ptxas otherwise takes 80 and fits three, and a
// fourth block's warps are worth more than the spills (64 registers with ~60 bytes of spill is
// what call 1 of session 16 measured).
constexpr int kFusedBlocksPerSm = 4;
union FusedShared {
  TableShared walk;
  SegmentShared seg;
};
template <bool kReady>
__global__ void __launch_bounds__(kTableThreads, kFusedBlocksPerSm) lz4_fused_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                  Lz4SegmentScratch s, std::uint32_t walkers) {
  __shared__ FusedShared sh;
  __shared__ std::uint32_t role;
  __shared__ unsigned long long next;
  if (threadIdx.x == 0) role = atomicAdd(s.role_ticket, 1u);
  __syncthreads();
  if (role < walkers) {
    for (;;) {
      if (threadIdx.x == 0) next = atomicAdd(s.walk_next, 1ull);
      __syncthreads();
      const unsigned long long w = next;
      if (w >= b.num_buffers) break;
      table_walk_buffer(b, order[w], s, sh.walk);
      // every thread has read `next` and left the walk's shared memory before thread 0 takes
      // the next buffer (or the block turns to segments, which reuse that memory)
      __syncthreads();
    }
  }
  segment_worker<kReady>(b, s, sh.seg);
}

}  // namespace

std::size_t lz4_segment_scratch_bytes(std::size_t n, std::size_t total_decoded, bool ready_pass) {
  // the walk gives a buffer lz4_segment_bound(in, size) slots, the less of two bounds; a valid
  // block of `size` bytes has in <= size + size / 255 + 16 (liblz4's bound), so the batch needs
  // at most the less of total / kLz4SegmentOut + (total * 256 / 255 + 16 n) / 3 / kLz4SegmentSeqs
  // and total / kLz4SegmentOutMin, + 3 n slots (a sum of minima is at most the minimum of sums)
  const std::size_t in_max = total_decoded + total_decoded / 255 + 16 * n;
  // and the split walk's slot per region (lz4_split_extra_slots at the smallest region it takes)
  const std::size_t split = std::min(in_max / logic::kLz4SplitRegionFloor + n, n * std::size_t{logic::kLz4SplitMaxRegions});
  const std::size_t slots = std::min(total_decoded / logic::kLz4SegmentOut + in_max / 3 / logic::kLz4SegmentSeqs,
                                     total_decoded / logic::kLz4SegmentOutMin) +
                            3 * n + split;
  const std::size_t bits = ready_pass ? align_up(bit_words(n, total_decoded) * sizeof(std::uint32_t)) : 0;
  return layout(n).slots + bits + align_up(slots * kSlotBytes);
}

Lz4SegmentScratch lz4_segment_scratch(void* base, std::size_t bytes, std::size_t n, bool ready_pass, bool* ok) {
  const Layout l = layout(n);
  Lz4SegmentScratch s{};
  *ok = bytes >= l.slots;
  if (!*ok) return s;
  // the largest total this scratch was sized for (lz4_segment_scratch_bytes grows with it), and
  // its bits; the rest holds slots
  std::size_t bits_bytes = 0;
  if (ready_pass && lz4_segment_scratch_bytes(n, 0, true) <= bytes) {
    std::size_t lo = 0, hi = bytes * 8;  // (the bits alone take t / 8 bytes: t < 8 x bytes)
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo + 1) / 2;
      if (lz4_segment_scratch_bytes(n, mid, true) <= bytes)
        lo = mid;
      else
        hi = mid - 1;
    }
    s.bits_words = bit_words(n, lo);
    bits_bytes = align_up(s.bits_words * sizeof(std::uint32_t));
  }
  auto* p = static_cast<std::uint8_t*>(base);
  s.queue_head = reinterpret_cast<unsigned long long*>(p);
  s.queue_tail = reinterpret_cast<unsigned long long*>(p + 8);
  s.cursor = reinterpret_cast<unsigned long long*>(p + 16);
  s.walk_next = reinterpret_cast<unsigned long long*>(p + 24);
  s.walks_done = reinterpret_cast<std::uint32_t*>(p + 32);
  s.role_ticket = reinterpret_cast<std::uint32_t*>(p + 36);
  s.ring_count = reinterpret_cast<std::uint32_t*>(p + 40);
  s.paced_pending = reinterpret_cast<std::uint32_t*>(p + 44);
  s.bits_cursor = reinterpret_cast<unsigned long long*>(p + 48);
  static_assert(kHeaderCounters == 56 && kHeaderCounters <= kAlign, "the header's counters");
  s.seg_base = reinterpret_cast<unsigned long long*>(p + l.seg_base);
  s.bits_base = reinterpret_cast<unsigned long long*>(p + l.bits_base);
  s.ring_list = reinterpret_cast<std::uint32_t*>(p + l.ring_list);
  s.paced = reinterpret_cast<std::uint32_t*>(p + l.paced);
  s.bits = bits_bytes != 0 ? reinterpret_cast<std::uint32_t*>(p + l.slots) : nullptr;
  const std::size_t slots = l.slots + bits_bytes;
  s.capacity = (bytes - slots) / kSlotBytes;
  s.queue = reinterpret_cast<unsigned long long*>(p + slots);
  // queue entries, segments, runs, flags: each array's elements aligned (8, 8, 2, 4 bytes)
  std::size_t at = slots + s.capacity * sizeof(unsigned long long);
  s.segs = reinterpret_cast<logic::Lz4Segment*>(p + at);
  at += s.capacity * sizeof(logic::Lz4Segment);
  s.runs = reinterpret_cast<logic::Lz4Runs*>(p + at);
  at += s.capacity * kRunsBytes;
  s.flags = reinterpret_cast<std::uint32_t*>(p + at);
  s.ready_first = s.bits_words != 0;
  return s;
}

void lz4_segments_enqueue(const DeviceBatch& b, const std::uint32_t* order, const Lz4SegmentScratch& s,
                          Lz4WalkMode mode, cudaStream_t stream) {
  CS_CUDA_CHECK(cudaMemsetAsync(s.queue_head, 0, kHeaderCounters, stream));
  // a worker waits for its entry to turn nonzero
  if (s.capacity != 0) CS_CUDA_CHECK(cudaMemsetAsync(s.queue, 0, s.capacity * sizeof *s.queue, stream));
  // no byte pending before the walks (a segment sets its matches' bits)
  if (s.ready_first)
    CS_CUDA_CHECK(cudaMemsetAsync(s.bits, 0, s.bits_words * sizeof *s.bits, stream));
  const auto persistent = [](const void* kernel, unsigned threads) {
    int per_sm = 0;
    CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(threads), 0));
    return static_cast<unsigned>(std::max(1, multiprocessor_count()) * std::max(1, per_sm));
  };
  if (mode == Lz4WalkMode::kFused) {
    // half the blocks walk (all buffers at once where there are that few): a block walks at the
    // pace of its chain, so buffers walked side by side finish sooner
    const auto fused = s.ready_first ? lz4_fused_kernel<true> : lz4_fused_kernel<false>;
    const unsigned blocks = persistent(reinterpret_cast<const void*>(fused), kTableThreads);
    const auto walkers = static_cast<std::uint32_t>(std::min<std::size_t>(b.num_buffers, std::max(1u, blocks / 2)));
    fused<<<blocks, kTableThreads, 0, stream>>>(b, order, s, walkers);
    CS_CUDA_CHECK(cudaGetLastError());
    return;
  }
  if (mode == Lz4WalkMode::kTable) {
    lz4_table_walk_kernel<<<static_cast<unsigned>(b.num_buffers), kTableThreads, 0, stream>>>(b, order, s);
  } else {
    const unsigned walk_blocks = static_cast<unsigned>((b.num_buffers + kWalkWarps - 1) / kWalkWarps);
    lz4_walk_kernel<<<walk_blocks, 32 * kWalkWarps, 0, stream>>>(b, order, s);
  }
  CS_CUDA_CHECK(cudaGetLastError());
  const auto segments = s.ready_first ? lz4_segment_kernel<true> : lz4_segment_kernel<false>;
  segments<<<persistent(reinterpret_cast<const void*>(segments), 32 * kSegWarps), 32 * kSegWarps,
                       0, stream>>>(b, s);
  CS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cubestream::cuda::detail
