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
// and waits until that entry is pushed. Per segment: parse and literals, records in shared memory, (with pending
// bits: publish the bits, wait for the segments within 64 KiB before to publish theirs, copy the
// matches whose bytes are final: ready_pass), wait for the segment before (flags), matches in
// groups, publish. No wait can stall for good: a walk waits on nothing, and the segment a
// worker waits on was pushed earlier, so a worker that is already running took it (and a
// segment publishes its bits before it waits on anything).
#include "cuda/decode/lz4_segments.hpp"

#include "codec/logic/lz4_match_bits.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "codec/logic/lz4_table_pipeline.hpp"

#include <algorithm>
#include <limits>

#include "cuda/check.hpp"
#include "cuda/decode/device_status.cuh"
#include "cuda/decode/warp_copy.cuh"
#include "cuda/device_info.hpp"

namespace cubestream::cuda::detail {

namespace {

namespace logic = codec::logic;
using logic::DecodeStatus;

constexpr unsigned kWalkWarps = 4;
constexpr std::size_t kWalkWindow = 8192;
// The table walk fills the next window's table ahead (the helper warps, while warp 0 chains the
// current one: lz4_segment_walk_table's Team::Ahead), in a second window and table; its windows
// are then 6 KiB so that both fit the 48 KiB of static shared memory (one window of 8 KiB
// without; -DCS_LZ4_TABLE_WINDOW=n sets it). On the H200 (session 32) one era5-like chunk alone
// takes 18 % less kernel time than with the 8 KiB window and no window ahead
// (-DCS_LZ4_TABLE_AHEAD=0), the era5-like and mixed batches 4-5 % less, the synth fields 1 %.
// CS_LZ4_TABLE_PIPELINE=1 (the window ahead implied) walks with lz4_segment_walk_pipelined: the
// helpers also run each trusted chain's token pass while warp 0 chains the next (two token
// slots). Off: no faster than the window ahead alone on the batches and slower on one chunk
// (session 32, docs/gpu_decoders.md): the helpers' token pass plus the next window's fill
// outlast warp 0's chain.
#ifndef CS_LZ4_TABLE_PIPELINE
#define CS_LZ4_TABLE_PIPELINE 0
#endif
#ifndef CS_LZ4_TABLE_AHEAD
#define CS_LZ4_TABLE_AHEAD 1
#endif
// CS_LZ4_MARK_RING=0: warp 0 pushes every segment mark itself (MarkRing below), for the A/B.
#ifndef CS_LZ4_MARK_RING
#define CS_LZ4_MARK_RING 1
#endif
constexpr bool kTablePipeline = CS_LZ4_TABLE_PIPELINE != 0;
constexpr bool kTableAhead = CS_LZ4_TABLE_AHEAD != 0;
constexpr bool kMarkRingOn = kTableAhead && CS_LZ4_MARK_RING != 0;
static_assert(kTableAhead || !kTablePipeline, "the pipelined walk fills windows ahead");
constexpr unsigned kTableTokenSlots = kTablePipeline ? 2 : 1;
constexpr unsigned kTableBuffers = kTableAhead ? 2 : 1;
#ifdef CS_LZ4_TABLE_WINDOW
constexpr std::size_t kTableWindow = CS_LZ4_TABLE_WINDOW;
#else
constexpr std::size_t kTableWindow = kTableAhead ? 6144 : 8192;
#endif
static_assert(kTableWindow % 16 == 0, "windows are filled with 16-byte stores");
// Tokens the chain lists at a time (a window of the era5-like chunks holds ~150, of the synth
// fields ~500; more take several token passes).
constexpr std::uint32_t kTableTokens = 1024;
// Warps per buffer in the table walk (4: 9 % slower on era5-like chunks; 16: 28 % slower on the
// mixed batch, H100, session 15).
constexpr unsigned kTableWarps = 8;
static_assert(kTableWindow >= logic::kLz4TableWindowMin && kTableWindow <= logic::kLz4TableWindowMax, "table window");
constexpr unsigned kSegWarps = 8;
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
constexpr std::size_t kSlotBytes = sizeof(unsigned long long) + sizeof(logic::Lz4Segment) + sizeof(std::uint32_t);
// Header bytes the enqueue zeroes (the counters of Lz4SegmentScratch).
constexpr std::size_t kHeaderCounters = 56;
// Words of pending bits for a batch of n buffers decoding to `total` bytes (lz4_bit_words each).
std::size_t bit_words(std::size_t n, std::size_t total) { return total / 32 + n; }

// A queue entry: buffer j + 1 (never 0: 0 is an entry not pushed yet), segment k, whether it is
// the buffer's last segment (its end is the block's end, else the next segment's start).
__device__ unsigned long long queue_entry(std::size_t j, std::uint32_t k, bool last) {
  return (static_cast<unsigned long long>(j) + 1) | (static_cast<unsigned long long>(k) << 32) |
         (last ? 1ull << 63 : 0ull);
}

// (polls use it only with CS_LZ4_POLL_ACQUIRE=1; see poll_load)
[[maybe_unused]] __device__ unsigned load_acquire(const std::uint32_t* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release(std::uint32_t* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// The pending bits are read and written by many warps at once: strong (relaxed) accesses, the
// order between bits and bytes given by fences (lz4_match_bits.hpp).
__device__ unsigned load_relaxed(const std::uint32_t* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_relaxed(std::uint32_t* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
[[maybe_unused]] __device__ unsigned long long load_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Waits on what another block releases (a queue entry, a segment's flag): relaxed polls, and one
// acquire fence once a poll sees the value (a relaxed load followed by fence.acq_rel is an
// acquire pattern in the PTX memory model). An acquire load compiles to the load and an
// invalidation of the SM's whole L1 (CCTL.IVALL), so polling with it took every warp on the SM
// its L1 lines at each poll: session 34's ncu of the fused kernel (era5-like x256) had the
// invalidation at 7.9 % of the instructions executed and 8.6 % of the stall samples, the L1 hit
// rate at 22 %. -DCS_LZ4_POLL_ACQUIRE=1 polls with acquire loads again, for the A/B.
#ifndef CS_LZ4_POLL_ACQUIRE
#define CS_LZ4_POLL_ACQUIRE 0
#endif
constexpr bool kPollAcquire = CS_LZ4_POLL_ACQUIRE != 0;
// -DCS_LZ4_POLL_FENCE=1: fence.acquire.gpu (PTX 8.6, sm_90), which need not wait for this
// thread's own stores as acq_rel does (a second review's suggestion, for an A/B).
#ifndef CS_LZ4_POLL_FENCE
#define CS_LZ4_POLL_FENCE 0
#endif
__device__ void fence_acquire() {
#if CS_LZ4_POLL_FENCE
  asm volatile("fence.acquire.gpu;" ::: "memory");
#else
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#endif
}
template <class T>
__device__ T poll_load(const T* p) {
  if constexpr (kPollAcquire) {
    return load_acquire(p);
  } else {
    return load_relaxed(p);
  }
}
// After a poll saw what it waited for.
__device__ void poll_acquired() {
  if constexpr (!kPollAcquire) fence_acquire();
}

// Pushes segment k of buffer j (its start, and its end where it is not the last, already
// written by this thread: the release orders them before the entry).
__device__ void push_segment(const Lz4SegmentScratch& s, std::size_t j, std::uint32_t k, bool last) {
  const unsigned long long t = atomicAdd(s.queue_tail, 1ull);
  store_release(s.queue + t, queue_entry(j, k, last));
}

// Segment k of buffer j starts at input offset ip, output offset op: its slot and flag, then
// segment k - 1 (whose end that start is) pushed. The push's release orders the slot writes
// before the queue entry: this thread's, and those another thread of the block made before a
// barrier this one passed since (the table walk's MarkRing: warp 0 writes some marks' slots, a
// helper thread pushes, or the other way round; release is cumulative).
__device__ void mark_segment(const Lz4SegmentScratch& s, logic::Lz4Segment* segs, std::uint32_t* flags,
                             std::size_t j, std::uint32_t k, std::uint32_t ip, std::uint32_t op) {
  segs[k] = logic::Lz4Segment{ip, op};
  flags[k] = 0;
  if (k != 0) push_segment(s, j, k - 1, false);
}

// A buffer's slots, for a walk that writes its segments itself and pushes them (the split walk:
// then `pushed`).
struct WalkSlots {
  std::size_t buffer;
  logic::Lz4Segment* segs;
  std::uint32_t* flags;
  bool pushed;
};

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
        WalkSlots slots{i, segs, flags, false};
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


// The serial walk (lz4_segment_walk), one warp per buffer.
__global__ void __launch_bounds__(32 * kWalkWarps) lz4_walk_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                   Lz4SegmentScratch s) {
  __shared__ alignas(16) std::uint8_t windows[kWalkWarps][kWalkWindow];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const std::size_t w = static_cast<std::size_t>(blockIdx.x) * kWalkWarps + warp;
  if (w >= b.num_buffers) return;
  walk_buffer(b, order[w], s, lane,
              [&](const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, std::size_t bound, auto&& mark,
                  std::uint32_t* count, WalkSlots&) {
                logic::Lz4StagedReader<WarpFill> rd{in, in_size, windows[warp], kWalkWindow, WarpFill{lane}};
                return logic::lz4_segment_walk(rd, in_size, size, bound, mark, count);
              });
}

// The table walk (lz4_segment_walk_table), one thread block of kTableWarps warps per buffer:
// warp 0 walks (lane 0 stores the chain's tokens); the whole block is the team, which fills the
// window (the block copies it in, kStage), fills its table and runs the token pass. Warp 0
// hands out a job (named barrier 1: the job and its inputs are ready), every warp does it, and
// barrier 2 closes it (barrier 3 orders the token pass's scan). The helpers leave on the job
// kDone.
// kAhead is the one job that warp 0 hands out without doing a part of it: it leaves barrier 1
// without a part in the job, chains the current window while the helpers copy the next
// window and fill its table (named barrier 4 among the helpers between the two), and waits at
// barrier 2 only when it needs the helpers again (join). kPipe (the pipelined walk's post) is
// handed out the same way: the helpers' token pass of a trusted chain (their own scan over
// barrier 4), its answer to warp 0 through barrier 5 (the helpers arrive, warp 0 waits there
// in join_pass), then a window ahead as kAhead's.
enum class TableJobKind : std::uint32_t { kStage, kFill, kTokens, kAhead, kPipe, kSplit, kDone };
struct TableJob {
  TableJobKind kind;
  std::uint32_t r0, end;          // kFill, kAhead (end)
  std::uint32_t n, op0;           // kTokens, kPipe (n == 0: no token pass)
  std::uint32_t len, left0, size; // the window's staged bytes, the block's bytes from its start
  std::uint32_t k;                // kFill, kTokens, kAhead, kPipe: the buffer (window and table)
  std::uint8_t* dst;              // kStage: the window to fill
  const std::uint8_t* src;        // kStage, kAhead, kPipe: bytes from src into the window
  const std::uint8_t* src_end;    // kStage, kAhead, kPipe: one past the block's input (the prefetch's bound)
  std::uint32_t slot;             // kTokens, kPipe: the token slot
  std::uint32_t fk, flen, fend, fleft0;  // kPipe's window ahead (flen == 0: none), as kAhead's k, len, end, left0
  std::uint32_t mark_lo, mark_hi;  // kAhead, kPipe: the marks [lo, hi) of MarkRing the helpers push
};

// Segment marks on their way to the queue, with the window ahead. A mark's push is lane 0's
// atomic on the queue's tail and a release store: ~1.8 k cycles each, 317 an era5-like 4 MiB
// chunk, ~7 % of warp 0's walk (session 34's clocks), with warp 0 waiting on it. So while the
// helpers fill a window ahead, warp 0 only notes mark k at[k % kMarkRing]; the next window ahead
// it hands out (kAhead, kPipe) carries [handed, posted) along, and one helper thread writes and
// pushes those marks (mark_segment, in order) after its part of the job, off warp 0's path.
// Barrier 1 of that handout orders the ring's entries before the helper's reads; the release of
// each push is cumulative over the slots warp 0 wrote before a barrier. Order: marks are
// pushed in mark order, by whichever side holds the ring: warp 0 writes new entries only outside
// [draining, handed) (the drain in flight), and pushes any itself only with no drain in flight
// (after a join), the held ones first (flush). The buffer's last push (walk_buffer) comes after
// the walk's final join and flush.
constexpr std::uint32_t kMarkRing = 32;
struct MarkRing {
  unsigned long long at[kMarkRing];  // mark k at k % kMarkRing: input offset | output offset << 32
  logic::Lz4Segment* segs;          // the buffer's slots (walk_buffer's)
  std::uint32_t* flags;
  std::size_t buffer;
  std::uint32_t posted;    // marks noted (warp 0's lane 0 alone reads and writes these three)
  std::uint32_t handed;    // marks handed out to a drain or pushed by warp 0
  std::uint32_t draining;  // the first mark of the drain in flight (with a window ahead pending)
};

constexpr unsigned kTableThreads = 32 * kTableWarps;
constexpr unsigned kTableHelpers = kTableThreads - 32;  // the warps besides the walker
static_assert(logic::kLz4SplitMaxRegions <= kTableThreads, "the split walk: a thread per region");

// Segments of a split-walked buffer in the queue or in work at a time (see split_job; at most a
// warp's lanes, which push the first ones).
constexpr std::uint32_t kSplitInFlight = 32;

// The split walk's job (lz4_split_walk.hpp): its buffer, written by the walker before the job,
// the regions' exits between rounds, the block's scans, and its answer.
struct SplitShared {
  const std::uint8_t* in;
  std::uint32_t in_size, size, region;
  std::size_t bound, buffer;
  logic::Lz4Segment* segs;
  std::uint32_t* flags;
  unsigned long long* queue;
  unsigned long long* queue_tail;
  std::uint32_t* paced;          // the buffer's entry of Lz4SegmentScratch::paced
  std::uint32_t* paced_pending;
  std::uint32_t exit[logic::kLz4SplitMaxRegions];
  unsigned long long warp_out[kTableWarps];
  std::uint32_t warp_marks[kTableWarps];
  std::uint32_t votes[kTableWarps];
  std::uint32_t accepted, count;
};

struct TableShared {
  SplitShared split;
  alignas(16) std::uint8_t window[kTableBuffers][kTableWindow];
  std::uint16_t table[kTableBuffers][kTableWindow + 2];  // + 1 (lz4_table_fill), + 1 to keep 4-byte alignment
  std::uint16_t toks[kTableTokenSlots * kTableTokens];  // slot s at s x kTableTokens (one array: the walk indexes it so)
  std::uint32_t at[kTableTokens + 1];
  std::uint32_t warp_sum[kTableWarps];
  std::uint32_t first_bad;
  MarkRing marks;
  // Two job slots, consecutive jobs alternating: a helper copies job n from its slot after
  // barrier 1, and job n + 2's write into that slot comes after barrier 1 of job n + 1, which
  // the helper reaches only after that copy. With one slot, racecheck reported warp 0's write of
  // job n + 1 against the helpers' copy of job n once warp 0 left jobs early (the window ahead),
  // though barrier 2 stands between them; none with two (session 32, docs/gpu_decoders.md).
  TableJob job[2];
};

// An exclusive scan of v over the block's kTableThreads threads (every thread calls it);
// *total receives the sum. `warp_sums` holds kTableWarps values.
template <class T>
__device__ T block_exclusive_scan(T v, T* warp_sums, T* total) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const T x = warp_inclusive_sum(v, lane);
  if (lane == 31) warp_sums[warp] = x;
  bar_sync_id<3>(kTableThreads);
  T pre = x - v, sum = 0;
  for (unsigned w = 0; w < kTableWarps; ++w) {
    if (w < warp) pre += warp_sums[w];
    sum += warp_sums[w];
  }
  *total = sum;
  bar_sync_id<3>(kTableThreads);  // every thread has read warp_sums before the next scan writes it
  return pre;
}

// Whether p holds in any (kAny) or in every thread of the block: a vote per warp in shared
// memory between two barriers. (Not __syncthreads_or/_and: those are the aligned bar.red, which
// PTX defines only when all threads run the same instruction, and warp 0 runs the split job from
// another call site than the helpers; synccheck flags it. The non-aligned barrier.red was
// flagged too, session 31.)
template <bool kAny>
__device__ bool block_vote(bool p, std::uint32_t* votes) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const bool v = kAny ? __any_sync(kFullMask, p) : __all_sync(kFullMask, p);
  if (lane == 0) votes[warp] = v ? 1u : 0u;
  bar_sync_id<3>(kTableThreads);
  bool r = !kAny;
  for (unsigned w = 0; w < kTableWarps; ++w) r = kAny ? (r || votes[w] != 0) : (r && votes[w] != 0);
  bar_sync_id<3>(kTableThreads);  // every thread has read the votes before the next vote writes them
  return r;
}

// The split walk of the buffer in sh.split by the whole block, thread r walking region r
// (lz4_split_walk_host is the same on the host, and says why each step holds). Accepted: every
// segment written at its slot and pushed, in order; sh.split.accepted and .count say so.
// Declined: nothing written.
__device__ void split_job(TableShared& sh) {
  SplitShared& sp = sh.split;
  const unsigned t = threadIdx.x;
  const std::uint8_t* in = sp.in;
  const std::uint32_t in_size = sp.in_size;
  const logic::Lz4SplitShape shape = logic::lz4_split_shape(in_size, sp.region);
  const bool active = t < shape.regions;
  const std::uint32_t end = active ? logic::lz4_split_end(shape, t, in_size) : 0u;
  std::uint32_t entry = active ? logic::lz4_split_begin(shape, t, in_size) : 0u;
  const auto none = [](std::uint32_t, std::uint32_t, std::uint32_t) {};
  logic::Lz4RegionWalk w;
  if (active) {
    w = logic::lz4_region_walk(in, in_size, entry, end, none);
    sp.exit[t] = w.exit;
  }
  bool fixed = false;
  for (std::uint32_t round = 1; round <= logic::kLz4SplitRounds; ++round) {
    bar_sync_id<3>(kTableThreads);  // the exits of the round before are written
    const std::uint32_t next = t == 0 || !active ? 0u : sp.exit[t - 1];
    const bool changed = active && next != entry;
    // (also: every thread has read its predecessor's exit before any is written again)
    if (!block_vote<true>(changed, sp.votes)) {
      fixed = true;
      break;
    }
    if (changed) {
      entry = next;
      w = logic::lz4_region_walk(in, in_size, entry, end, none);
      sp.exit[t] = w.exit;
    }
  }
  if (t == 0) sp.accepted = 0;
  if (!fixed) return;  // the same answer in every thread (from the block's votes)
  unsigned long long total_out = 0;
  const unsigned long long base =
      block_exclusive_scan<unsigned long long>(active ? w.out : 0ull, sp.warp_out, &total_out);
  std::uint32_t total_marks = 0;
  const std::uint32_t k0 = block_exclusive_scan<std::uint32_t>(active ? w.marks : 0u, sp.warp_marks, &total_marks);
  const bool good = block_vote<false>(!active || (w.ok && w.need <= base), sp.votes);
  const bool last = block_vote<true>(active && w.last, sp.votes);
  if (!good || !last || total_out != sp.size || total_marks > sp.bound) return;
  // accepted: the segments at their slots, then the first of them pushed, in order
  if (active && w.marks != 0) {
    logic::Lz4Segment* segs = sp.segs;
    std::uint32_t* flags = sp.flags;
    static_cast<void>(logic::lz4_region_walk(in, in_size, entry, end,
                                             [&](std::uint32_t k, std::uint32_t ip, std::uint32_t o) {
                                               segs[k0 + k] = logic::Lz4Segment{ip, static_cast<std::uint32_t>(base + o)};
                                               flags[k0 + k] = 0;
                                             }));
  }
  // The first kSplitInFlight segments are pushed now; each later one when the segment
  // kSplitInFlight before it is done (segment_worker), so that a buffer never holds more than
  // that many worker warps. Pushed all at once, the first few thousand worker warps held the
  // segments of a few buffers and waited on those buffers' chains of match passes (segment k
  // after k - 1) while no other buffer's segments were taken: 50-60 ms instead of ~10 on the
  // era5-like batch, 350 instead of 28 on the synth fields (H200, first two forms of this walk).
  // The table walk had paced its pushes by its own speed.
  const std::uint32_t now = total_marks < kSplitInFlight ? total_marks : kSplitInFlight;
  if (t == 0) {
    *sp.paced = total_marks;
    if (total_marks > now) atomicAdd(sp.paced_pending, total_marks - now);
  }
  // every thread's slots (and the walker's status, slot base and the count above) before any
  // entry that publishes them
  __threadfence();
  bar_sync_id<3>(kTableThreads);
  if (t < 32) {
    unsigned long long ticket = 0;
    if (t == 0) ticket = atomicAdd(sp.queue_tail, static_cast<unsigned long long>(now));
    ticket = __shfl_sync(kFullMask, ticket, 0);
    if (t < now) store_release(sp.queue + ticket + t, queue_entry(sp.buffer, t, t + 1 == total_marks));
    // the pushes before the walker counts the buffer as walked (walks_done)
    __threadfence();
  }
  if (t == 0) {
    sp.accepted = 1;
    sp.count = total_marks;
  }
}

// A window's refill by `threads` threads (thread t of them; strided_copy), then the next
// window's lines prefetched into L2, one 128-byte line a thread.
__device__ void block_copy_window(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t len,
                                  const std::uint8_t* src_end, unsigned t, unsigned threads) {
  strided_copy<2>(dst, src, len, t, threads);  // (two loads a thread fill 8 KiB)
  const std::uint8_t* next = src + len + 128 * static_cast<std::size_t>(t);
  if (t < kTableWindow / 128 && next < src_end) asm volatile("prefetch.global.L2 [%0];" ::"l"(next));
}

// The token pass by warp 0 alone (while the helpers fill the window ahead): the same parts as
// the block's kTokens job over 32 lanes, the scan and the first failing token by shuffles.
__device__ std::uint32_t warp_tokens(TableShared& sh, std::uint32_t k, std::uint32_t len, std::uint32_t left0,
                                     std::uint32_t n, std::uint32_t op0, std::uint32_t size, unsigned lane) {
  __syncwarp();  // lane 0 listed the tokens
  std::uint32_t i0 = 0, i1 = 0;
  logic::lz4_table_share(n, lane, 32, &i0, &i1);
  const std::uint32_t sum =
      logic::lz4_table_token_sum<logic::kLz4TokenSumWidth>(sh.window[k], len, left0, sh.toks, i0, i1, sh.at);
  const std::uint32_t v = warp_inclusive_sum(sum, lane);
  std::uint32_t bad = logic::lz4_table_token_place(size, n, i0, i1, op0 + v - sum, sh.at);
#pragma unroll
  for (unsigned d = 16; d != 0; d /= 2) bad = min(bad, __shfl_xor_sync(kFullMask, bad, d));
  __syncwarp();  // at[] before the marks read it
  return bad;
}

// The token pass of job j by `Threads` threads (this one is thread t of them, in their warp w):
// each thread's tokens, an exclusive scan of their output lengths over barrier Id
// (sh.warp_sum), at[] written and the first failing token into sh.first_bad.
template <unsigned Id, unsigned Threads>
__device__ __forceinline__ void team_token_pass(TableShared& sh, const TableJob& j, unsigned t, unsigned w) {
  const unsigned lane = threadIdx.x & 31u;
  std::uint32_t i0 = 0, i1 = 0;
  logic::lz4_table_share(j.n, t, Threads, &i0, &i1);
  const std::uint32_t sum =
      logic::lz4_table_token_sum<1>(sh.window[j.k], j.len, j.left0, sh.toks + j.slot * kTableTokens, i0, i1, sh.at);
  const std::uint32_t v = warp_inclusive_sum(sum, lane);
  if (lane == 31) sh.warp_sum[w] = v;
  bar_sync_id<Id>(Threads);
  std::uint32_t pre = v - sum;
  for (unsigned u = 0; u < w; ++u) pre += sh.warp_sum[u];
  const std::uint32_t bad = logic::lz4_table_token_place(j.size, j.n, i0, i1, j.op0 + pre, sh.at);
  if (bad < j.n) atomicMin(&sh.first_bad, bad);
}

__device__ void table_job(TableShared& sh, const TableJob& j) {
  const unsigned t = threadIdx.x, warp = t / 32;
  if (j.kind == TableJobKind::kSplit) {
    split_job(sh);
    return;
  }
  if (j.kind == TableJobKind::kStage) {
    // The window, by the whole block: two 16-byte loads a thread for 8 KiB, one round trip to L2
    // instead of the walker warp's 16 loads a lane in 4 dependent rounds (session 30's clocks:
    // staging and table fill ~10 k cycles a window, 42 % of an era5-like buffer's walk).
    block_copy_window(j.dst, j.src, j.len, j.src_end, t, kTableThreads);
    return;
  }
  if (j.kind == TableJobKind::kFill) {
    logic::lz4_table_fill(sh.window[j.k], sh.table[j.k], j.r0, j.end, j.len, j.left0, t, kTableThreads);
    return;
  }
  if (j.kind == TableJobKind::kAhead) {  // the helpers alone (warp 0 is chaining)
    const unsigned h = t - 32;
    block_copy_window(sh.window[j.k], j.src, j.len, j.src_end, h, kTableHelpers);
    bar_sync_id<4>(kTableHelpers);
    logic::lz4_table_fill(sh.window[j.k], sh.table[j.k], 0, j.end, j.len, j.left0, h, kTableHelpers);
    return;
  }
  if constexpr (kTablePipeline) {  // (compiled out otherwise: no registers for it in the other walks)
    if (j.kind == TableJobKind::kPipe) {  // the helpers alone (warp 0 is chaining)
      const unsigned h = t - 32, hw = warp - 1;
      // the token pass over the helpers (part 2 reads only at[]: every read of window k is before
      // the scan's barrier, so the fill below, into window k or the other, needs none of its own)
      // then its answer to warp 0 (barrier 5: the helpers arrive, warp 0 waits there in
      // join_pass; at[] and first_bad are written before the arrival), and the fill on
      if (j.n != 0) {
        team_token_pass<4, kTableHelpers>(sh, j, h, hw);
        bar_arrive_id<5>(kTableThreads);
      }
      if (j.flen != 0) {
        block_copy_window(sh.window[j.fk], j.src, j.flen, j.src_end, h, kTableHelpers);
        bar_sync_id<4>(kTableHelpers);
        logic::lz4_table_fill(sh.window[j.fk], sh.table[j.fk], 0, j.fend, j.flen, j.fleft0, h, kTableHelpers);
      }
      return;
    }
  }
  team_token_pass<3, kTableThreads>(sh, j, t, warp);  // kTokens: the whole block
}

// The table walk of buffer i by the whole thread block (every thread calls it).
__device__ void table_walk_buffer(const DeviceBatch& b, std::size_t i, const Lz4SegmentScratch& s, TableShared& sh) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  unsigned par = 0;  // the job slot the next job goes to (consecutive jobs alternate)
  if (warp != 0) {
    for (;;) {
      bar_sync_id<1>(kTableThreads);
      const TableJob j = sh.job[par];
      par ^= 1u;
      if (j.kind == TableJobKind::kDone) return;
      table_job(sh, j);
      if constexpr (kMarkRingOn) {
        // the marks a window ahead carries (MarkRing), by one helper thread after its part; the
        // job's slot holds them until barrier 1 of the job after next
        if (threadIdx.x == kTableThreads - 32 && (j.kind == TableJobKind::kAhead || j.kind == TableJobKind::kPipe)) {
          const TableJob& posted = sh.job[par ^ 1u];
          for (std::uint32_t k = posted.mark_lo; k < posted.mark_hi; ++k) {
            const unsigned long long e = sh.marks.at[k % kMarkRing];
            mark_segment(s, sh.marks.segs, sh.marks.flags, sh.marks.buffer, k, static_cast<std::uint32_t>(e),
                         static_cast<std::uint32_t>(e >> 32));
          }
        }
      }
      bar_sync_id<2>(kTableThreads);
    }
  }
  // warp 0: hands out job j, does its part, returns once every warp has done its part; the
  // helpers must first have finished the window ahead, if one is being filled (join)
  bool pending = false;  // the helpers are filling a window ahead (the same in every lane)
  // the helpers' kPipe job has a token pass whose answer warp 0 has not waited for (barrier 5)
  bool pass_pending = false;
  const auto join_pass = [&] {
    if constexpr (kTablePipeline) {
      if (pass_pending) {
        bar_sync_id<5>(kTableThreads);
        pass_pending = false;
      }
    }
  };
  const auto join = [&] {
    join_pass();
    if (pending) {
      bar_sync_id<2>(kTableThreads);
      pending = false;
    }
  };
  const auto run = [&](const TableJob& j) {
    join();
    if (lane == 0) {
      sh.job[par] = j;
      sh.first_bad = j.n;
    }
    par ^= 1u;
    bar_sync_id<1>(kTableThreads);
    table_job(sh, j);
    bar_sync_id<2>(kTableThreads);
  };
  // hands out the window ahead and returns as soon as the helpers have it (the helpers' kAhead
  // or kPipe job). A sync at barrier 1 although warp 0 need not wait there: the helpers are
  // parked there already (join came first), so it costs little, and the job's handout stays a
  // sync on both sides (session 31: racecheck questioned barrier.arrive there, as it did the
  // one-slot handshake). The one arrive is kPipe's answer at barrier 5.
  const auto post = [&](const TableJob& j) {
    join();
    if (lane == 0) {
      sh.job[par] = j;
      sh.first_bad = j.n;
      // the marks noted since the last handout go with it (MarkRing)
      sh.job[par].mark_lo = sh.marks.handed;
      sh.job[par].mark_hi = sh.marks.posted;
      sh.marks.draining = sh.marks.handed;
      sh.marks.handed = sh.marks.posted;
    }
    par ^= 1u;
    bar_sync_id<1>(kTableThreads);
    pending = true;
    pass_pending = j.kind == TableJobKind::kPipe && j.n != 0;
  };
  walk_buffer(b, i, s, lane,
              [&](const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, std::size_t bound, auto&& mark,
                  std::uint32_t* count, WalkSlots& slots) {
                if (lane == 0) {  // before any handout: barrier 1 orders these before the helpers' reads
                  sh.marks.segs = slots.segs;
                  sh.marks.flags = slots.flags;
                  sh.marks.buffer = slots.buffer;
                  sh.marks.posted = 0;
                  sh.marks.handed = 0;
                }
                // the split walk first where it is on, by the whole block; the table walk where
                // it declines
                if (s.split_region != 0 && logic::lz4_split_worth(in_size, size)) {
                  if (lane == 0) {
                    SplitShared& sp = sh.split;
                    sp.in = in;
                    sp.in_size = in_size;
                    sp.size = size;
                    sp.region = s.split_region;
                    sp.bound = bound;
                    sp.buffer = slots.buffer;
                    sp.segs = slots.segs;
                    sp.flags = slots.flags;
                    sp.queue = s.queue;
                    sp.queue_tail = s.queue_tail;
                    sp.paced = s.paced + slots.buffer;
                    sp.paced_pending = s.paced_pending;
                  }
                  run(TableJob{TableJobKind::kSplit, 0, 0, 0, 0, 0, 0, size, 0, nullptr, nullptr, nullptr});
                  if (sh.split.accepted != 0) {
                    *count = sh.split.count;
                    slots.pushed = true;
                    return DecodeStatus::kOk;
                  }
                }
                const std::uint8_t* const in_end = in + in_size;
                // the reader's refills are block jobs (kStage): every warp of the block meets run's
                // barriers while warp 0 walks, and the barriers order the window's bytes
                struct BlockFill {
                  decltype(run)& go;
                  const std::uint8_t* end;
                  __device__ void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) {
                    go(TableJob{TableJobKind::kStage, 0, 0, 0, 0, static_cast<std::uint32_t>(n), 0, 0, 0, win, src,
                                end});
                  }
                };
                logic::Lz4StagedReader<BlockFill> rd{in, in_size, sh.window[0], kTableWindow, BlockFill{run, in_end}};
                struct Team {
                  using Ahead = std::bool_constant<kTableAhead>;
                  using Pipeline = std::bool_constant<kTablePipeline>;
                  decltype(run)& go;
                  decltype(post)& go_ahead;
                  decltype(join)& join_ahead;
                  decltype(join_pass)& join_posted_pass;
                  const bool& pending;
                  TableShared& sh;
                  std::uint32_t size;
                  const std::uint8_t* in_end;
                  unsigned lane;
                  // called once before each chain: lane 0 rewrites toks in it, which every lane
                  // read in the marks after the last one
                  __device__ const std::uint16_t* table(std::uint32_t k) const {
                    __syncwarp();
                    return sh.table[k];
                  }
                  __device__ std::uint8_t* window(std::uint32_t k) const { return sh.window[k]; }
                  __device__ void stage(std::uint32_t k, const std::uint8_t*, std::uint32_t r0, std::uint32_t end,
                                        std::uint32_t len, std::uint32_t left0) {
                    go(TableJob{TableJobKind::kFill, r0, end, 0, 0, len, left0, size, k, nullptr, nullptr, nullptr});
                  }
                  __device__ void ahead(std::uint32_t k, const std::uint8_t* src, std::uint32_t len, std::uint32_t end,
                                        std::uint32_t left0) {
                    go_ahead(TableJob{TableJobKind::kAhead, 0, end, 0, 0, len, left0, size, k, nullptr, src, in_end});
                  }
                  __device__ void join() { join_ahead(); }
                  __device__ void join_pass() { join_posted_pass(); }
                  __device__ void post(const logic::Lz4PipelineJob& p) {
                    go_ahead(TableJob{TableJobKind::kPipe, 0, 0, p.n, p.op0, p.tlen, p.tleft0, size, p.tk, nullptr,
                                      p.src, in_end, p.slot, p.fk, p.flen, p.fend, p.fleft0});
                  }
                  // after join_pass, a posted or a whole-block pass's answer: every lane has read
                  // it before lane 0 resets it at the next job (racecheck)
                  __device__ std::uint32_t posted_ok() const {
                    const std::uint32_t bad = sh.first_bad;
                    __syncwarp();
                    return bad;
                  }
                  __device__ std::uint32_t tokens(std::uint32_t k, const std::uint8_t*, std::uint32_t len,
                                                  std::uint32_t left0, std::uint32_t n, std::uint32_t op0,
                                                  std::uint32_t slot) {
                    // while the helpers fill the window ahead, warp 0 runs the pass alone (the
                    // table walk's: slot 0; the pipelined walk joins before a pass)
                    if (!kTablePipeline && pending) return warp_tokens(sh, k, len, left0, n, op0, size, lane);
                    go(TableJob{TableJobKind::kTokens, 0, 0, n, op0, len, left0, size, k, nullptr, nullptr, nullptr,
                                slot});
                    return posted_ok();
                  }
                } team{run, post, join, join_pass, pending, sh, size, in_end, lane};
                // warp 0's lane 0 pushes the marks it holds, in order (MarkRing: no drain in flight)
                const auto flush_marks = [&] {
                  if (lane == 0) {
                    for (std::uint32_t k = sh.marks.handed; k < sh.marks.posted; ++k) {
                      const unsigned long long e = sh.marks.at[k % kMarkRing];
                      mark(k, static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(e >> 32));
                    }
                    sh.marks.handed = sh.marks.posted;
                  }
                };
                // a mark (every lane of warp 0 calls it): noted for the helpers while they fill a
                // window ahead and the ring has room, else pushed now, after those held
                const auto note_mark = [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) {
                  if constexpr (kMarkRingOn) {
                    if (pending) {
                      unsigned room = 0;
                      if (lane == 0) room = k - sh.marks.draining < kMarkRing;
                      if (__shfl_sync(kFullMask, room, 0) != 0) {
                        if (lane == 0) {
                          sh.marks.at[k % kMarkRing] = ip | static_cast<unsigned long long>(op) << 32;
                          sh.marks.posted = k + 1;
                        }
                        return;
                      }
                      join();  // the drain in flight done
                    }
                    flush_marks();
                  }
                  mark(k, ip, op);
                  if (lane == 0) {
                    sh.marks.posted = k + 1;
                    sh.marks.handed = k + 1;
                  }
                };
                DecodeStatus st;
                if constexpr (kTablePipeline) {
                  st = logic::lz4_segment_walk_pipelined(rd, team, sh.toks, kTableTokens, sh.at, lane == 0,
                                                         in_size, size, bound, note_mark, count);
                } else {
                  st = logic::lz4_segment_walk_table(rd, team, sh.toks, kTableTokens, sh.at, lane == 0, in_size,
                                                     size, bound, note_mark, count);
                }
                // every mark pushed before walk_buffer pushes the last segment
                join();
                flush_marks();
                return st;
              });
  __syncwarp();  // lane 0 finished the buffer's tail alone: the whole warp meets the barrier
  join();        // a window ahead the walk did not take (a failed walk, the block's end)
  if (lane == 0) sh.job[par].kind = TableJobKind::kDone;
  bar_sync_id<1>(kTableThreads);
}

__global__ void __launch_bounds__(kTableThreads) lz4_table_walk_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                       Lz4SegmentScratch s) {
  __shared__ TableShared sh;
  table_walk_buffer(b, order[blockIdx.x], s, sh);
}

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
// One lane's match of at most kLz4LaneMatchMax bytes: every byte loaded (from L2: other warps
// wrote them), then stored. Byte i reads source index i mod off, kept without a division.
__device__ void lane_copy_match(std::uint8_t* out, const logic::Lz4MatchRecord& m) {
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
    // alone, by the whole warp: every byte's source is final (before the match), so the lanes
    // load four bytes each, then store them
    const logic::Lz4MatchRecord m0{__shfl_sync(kFullMask, m.dst, 0), __shfl_sync(kFullMask, m.off, 0), len0};
    for (std::uint32_t at = 0; at < len0; at += 4 * 32) {
      std::uint8_t v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::uint32_t k = at + lane + 32u * u;
        v[u] = k < len0 ? __ldcg(out + logic::lz4_match_source(m0, k)) : std::uint8_t{0};
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::uint32_t k = at + lane + 32u * u;
        if (k < len0) out[m0.dst + k] = v[u];
      }
    }
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
  if (lane < g) {
    lane_copy_match(out, m);
    if (kReady && bits != nullptr) {
      __threadfence();  // this lane's bytes before its bits
      lane_mark(bits, m.dst, m.dst + m.len, false);
    }
  }
  return g;
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
  // the rest moves down, in order (record r = 32 i + lane goes to an index <= r, after every
  // lane has read its record)
  std::uint32_t kept = 0;
  for (std::uint32_t i = 0; i * 32 < nrec; ++i) {
    const std::uint32_t r = lane + 32 * i;
    const bool keep = r < nrec && (ready >> i & 1u) == 0;
    const logic::Lz4MatchRecord m = keep ? recs[r] : logic::Lz4MatchRecord{0, 1, 0};
    const unsigned mask = __ballot_sync(kFullMask, keep);
    __syncwarp();
    if (keep) recs[kept + static_cast<std::uint32_t>(__popc(mask & ((1u << lane) - 1u)))] = m;
    kept += static_cast<std::uint32_t>(__popc(mask));
    __syncwarp();
  }
  return kept;
}

// A segment worker's staged input is logic::kLz4SegmentWindow (1 KiB, not warp_copy.cuh's 2 KiB;
// why in lz4_segments.hpp). In the fused kernel this shares a union with TableShared (~44 KiB
// with the window ahead), which sets the block's shared memory; SegmentShared is 32 KiB.
static_assert(logic::kLz4SegmentWindow >= logic::kLz4FastSpan + 16 && logic::kLz4SegmentWindow % 16 == 0,
              "segment window");
struct SegmentShared {
  alignas(16) std::uint8_t windows[kSegWarps][logic::kLz4SegmentWindow];
  logic::Lz4MatchRecord records[kSegWarps][logic::kLz4SegmentSeqs];
};
static_assert(sizeof(SegmentShared) <= 48 * 1024, "static shared memory (CS_LZ4_SEGMENT_SEQS too large)");

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

    // parse and literals, 32 sequences at a time (lane c keeps sequence c), matches to records
    logic::Lz4StagedReader<WarpFill> rd{in, in_size, sh.windows[warp], logic::kLz4SegmentWindow, WarpFill{lane}};
    std::size_t ip = seg.in;
    std::uint32_t op = seg.out, nrec = 0;
    bool bad = false, last = false;
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
      for (std::uint32_t u = 0; u < c; ++u) {
        const std::uint32_t from = __shfl_sync(kFullMask, my_src, u), lit = __shfl_sync(kFullMask, my_lit, u);
        const std::uint32_t at = __shfl_sync(kFullMask, my_op, u);
        logic::lane_copy_forward(out + at, in + from, lit, lane);
      }
      const bool has = lane < c && my_len != 0;
      const unsigned mask = __ballot_sync(kFullMask, has);
      const std::uint32_t idx = nrec + static_cast<std::uint32_t>(__popc(mask & ((1u << lane) - 1u)));
      if (has && idx < logic::kLz4SegmentSeqs) recs[idx] = logic::Lz4MatchRecord{my_op + my_lit, my_off, my_len};
      nrec += static_cast<std::uint32_t>(__popc(mask));
    }
    // the walk accepted the segment, so the parse meets the next segment's start exactly
    if (bad || ip != end || nrec > logic::kLz4SegmentSeqs) {
      if (lane == 0) fail_status(b.status + j, DecodeStatus::kCorrupt);
      nrec = 0;
    }
    __syncwarp();
    // with pending bits, the matches whose bytes are final already go first, off the chain
    std::uint32_t* bits = kReady && bits_base != kLz4NoBits ? s.bits + bits_base : nullptr;
    if (kReady && bits != nullptr)
      nrec = ready_pass(out, bits, recs, nrec, s.segs + base, s.flags + base, k, seg.out, lane);
    // the chained pass: the other matches read the output of earlier segments' matches, so wait
    // for the segment before (pushed before this one, so a running warp has it)
    if (k != 0) {
      while (poll_load(s.flags + base + k - 1) != kFlagDone) __nanosleep(64);
      poll_acquired();
    }
    for (std::uint32_t r = 0; r < nrec;) {
      r += copy_group<kReady>(out, recs + r, nrec - r, lane, bits);
      __syncwarp();
    }
    // every lane's writes, then the flag
    __threadfence();
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
  // the walk gives a buffer lz4_segment_bound(in, size) slots; a valid block of `size` bytes
  // has in <= size + size / 255 + 16 (liblz4's bound), so the batch needs at most
  // total / kLz4SegmentOut + (total * 256 / 255 + 16 n) / 3 / kLz4SegmentSeqs + 3 n slots
  const std::size_t in_max = total_decoded + total_decoded / 255 + 16 * n;
  // and the split walk's slot per region (lz4_split_extra_slots at the smallest region it takes)
  const std::size_t split = std::min(in_max / logic::kLz4SplitRegionFloor + n, n * std::size_t{logic::kLz4SplitMaxRegions});
  const std::size_t slots =
      total_decoded / logic::kLz4SegmentOut + in_max / 3 / logic::kLz4SegmentSeqs + 3 * n + split;
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
  s.segs = reinterpret_cast<logic::Lz4Segment*>(p + slots + s.capacity * sizeof(unsigned long long));
  s.flags = reinterpret_cast<std::uint32_t*>(p + slots + s.capacity * (sizeof(unsigned long long) + sizeof(logic::Lz4Segment)));
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
