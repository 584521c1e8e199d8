// The table walk by a whole thread block: warp 0 chains, the helper warps stage windows, fill
// their tables and run token passes as jobs it hands out (and the split walk, as one such job).
// (A private part of cuda/decode/lz4_segments.cu: lz4_segments_private.cuh says what that means.)
#pragma once

#include "cuda/decode/lz4_segments_private.cuh"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "codec/logic/lz4_segments.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "codec/logic/lz4_table_pipeline.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "cuda/decode/lz4_segment_queue.cuh"
#include "cuda/decode/lz4_segments_config.cuh"
#include "cuda/decode/lz4_walk_buffer.cuh"
#include "cuda/decode/warp_copy.cuh"

namespace cubestream::cuda::detail {
namespace {

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
      if constexpr (kMarkRingOn) {  // the marks noted since the last handout go with it (MarkRing)
        sh.job[par].mark_lo = sh.marks.handed;
        sh.job[par].mark_hi = sh.marks.posted;
        sh.marks.draining = sh.marks.handed;
        sh.marks.handed = sh.marks.posted;
      }
    }
    par ^= 1u;
    bar_sync_id<1>(kTableThreads);
    pending = true;
    pass_pending = j.kind == TableJobKind::kPipe && j.n != 0;
  };
  walk_buffer(b, i, s, lane,
              [&](const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, std::size_t bound, auto&& mark,
                  std::uint32_t* count, WalkSlots& slots) {
                if (kMarkRingOn && lane == 0) {  // before any handout: barrier 1 orders these before the helpers' reads
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
                  if (kMarkRingOn && lane == 0) {
                    sh.marks.posted = k + 1;
                    sh.marks.handed = k + 1;
                  }
                };
                auto sink = mark_sink(note_mark, slots.runs, lane);
                DecodeStatus st;
                if constexpr (kTablePipeline) {
                  st = logic::lz4_segment_walk_pipelined(rd, team, sh.toks, kTableTokens, sh.at, lane == 0,
                                                         in_size, size, bound, sink, count);
                } else {
                  st = logic::lz4_segment_walk_table(rd, team, sh.toks, kTableTokens, sh.at, lane == 0, in_size,
                                                     size, bound, sink, count);
                }
                if constexpr (kMarkRingOn) {  // every mark pushed before walk_buffer pushes the last segment
                  join();
                  flush_marks();
                }
                return st;
              });
  __syncwarp();  // lane 0 finished the buffer's tail alone: the whole warp meets the barrier
  join();        // a window ahead the walk did not take (a failed walk, the block's end)
  if (lane == 0) sh.job[par].kind = TableJobKind::kDone;
  bar_sync_id<1>(kTableThreads);
}

}  // namespace
}  // namespace cubestream::cuda::detail
