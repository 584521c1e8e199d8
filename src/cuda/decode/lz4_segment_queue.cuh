// The queue between the walks and the segment workers: its entries, the memory-order loads and
// stores both sides use (and the workers' polls), a segment's push and its mark.
// (A private part of cuda/decode/lz4_segments.cu: lz4_segments_private.cuh says what that means.)
#pragma once

#include "cuda/decode/lz4_segments_private.cuh"

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_segments.hpp"
#include "cuda/decode/lz4_segments.hpp"
#include "cuda/decode/lz4_segments_config.cuh"

namespace cubestream::cuda::detail {
namespace {

// A queue entry: buffer j + 1 (never 0: 0 is an entry not pushed yet), segment k, whether it is
// the buffer's last segment (its end is the block's end, else the next segment's start).
__device__ unsigned long long queue_entry(std::size_t j, std::uint32_t k, bool last) {
  return (static_cast<unsigned long long>(j) + 1) | (static_cast<unsigned long long>(k) << 32) |
         (last ? 1ull << 63 : 0ull);
}

// (polls use it with CS_LZ4_POLL_ACQUIRE=1, see poll_load, and chain_acquired with CS_LZ4_POLL_FENCE=2)
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
// CS_LZ4_POLL_FENCE=1 (the default since session 39): fence.acquire.gpu (PTX 8.6, sm_90) after
// a poll, which need not wait for this thread's own stores as fence.acq_rel.gpu (0) does: a
// worker reaches the chain's wait with its literals' and own pass's stores in flight, and the
// acq_rel fence (MEMBAR.ALL.GPU) held ~2.4 k cycles of a synth field's link of ~23.6 k (session
// 39's ncu). A strong read followed by fence.acquire is an acquire pattern in the PTX memory
// model. 2: where the chain's wait sees its flag (chain_acquired), one ld.acquire.gpu of the
// flag again instead of a fence: it reads the released value (coherence: the flag is not
// written again in the launch), so it synchronizes with the release; an acquire load compiles
// to the load and the L1 invalidation without a MEMBAR. Measured with CS_LZ4_FLAG_FENCE=0
// (lz4_segments_config.cuh gives the figures): 1 and 2 equal on the synth fields (0.952 /
// 0.951), 1 better on the era5-like batch (0.995 / 1.028, a noisy batch).
#ifndef CS_LZ4_POLL_FENCE
#define CS_LZ4_POLL_FENCE 1
#endif
static_assert(CS_LZ4_POLL_FENCE >= 0 && CS_LZ4_POLL_FENCE <= 2, "CS_LZ4_POLL_FENCE: 0, 1 or 2");
__device__ void fence_acquire() {
#if CS_LZ4_POLL_FENCE == 1
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
// After the chain's wait saw the flag `seen` done (segment_worker): as poll_acquired, or with
// CS_LZ4_POLL_FENCE=2 an acquire load of that flag.
__device__ void chain_acquired(const std::uint32_t* seen) {
  if constexpr (!kPollAcquire && CS_LZ4_POLL_FENCE == 2)
    static_cast<void>(load_acquire(seen));
  else
    poll_acquired();
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

}  // namespace
}  // namespace cubestream::cuda::detail
