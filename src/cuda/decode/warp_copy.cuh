// The device copier of the shared decoders (codec/logic/lz4_block.hpp, blosc_decode.hpp): all
// 32 lanes of a warp run the same serial parse and share each copy. How the lanes split a copy
// is codec/logic/lane_copy.hpp (tested on the host lane by lane); here each lane runs its part
// of each phase and the warp meets at a __syncwarp after every phase, which also makes the
// warp's writes visible to all its lanes before the next sequence reads them.
//
// The compressed input is staged through shared memory (WarpFill, Lz4StagedReader): the parse
// then costs shared-memory reads, and the global loads come 2 KiB at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/logic/blosclz.hpp"
#include "codec/logic/lane_copy.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_ring.hpp"

namespace cubestream::cuda::detail {

inline constexpr unsigned kFullMask = 0xFFFFFFFFu;
// Bytes of compressed input a warp stages in shared memory (Lz4StagedReader's window).
inline constexpr std::size_t kWindowBytes = 2048;

// Copies n bytes from src (global memory) to dst, shared by `threads` threads of which this is
// thread t: 16-byte loads when src is 16-byte aligned (the staged reader aligns its refills where
// the input allows), bytes otherwise. Unroll: the 16-byte loads in flight a thread.
template <unsigned Unroll = 4>
__device__ inline void strided_copy(std::uint8_t* dst, const std::uint8_t* src, std::uint32_t n, unsigned t,
                                    unsigned threads) {
  std::uint32_t done = 0;
  if ((reinterpret_cast<std::uintptr_t>(src) & 15u) == 0) {
    const std::uint32_t vecs = n / 16;
    const auto* s16 = reinterpret_cast<const uint4*>(src);
    auto* w16 = reinterpret_cast<uint4*>(dst);
#pragma unroll Unroll
    for (std::uint32_t v = t; v < vecs; v += threads) w16[v] = __ldg(s16 + v);
    done = vecs * 16;
  }
  for (std::uint32_t k = done + t; k < n; k += threads) dst[k] = __ldg(src + k);
}

// The sum of v over lanes 0..lane of the warp (every lane calls it).
template <class T>
__device__ inline T warp_inclusive_sum(T v, unsigned lane) {
#pragma unroll
  for (unsigned d = 1; d < 32; d *= 2) {
    const T up = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// Fills a warp's staging window (strided_copy by its 32 lanes). Every lane takes part; the first
// __syncwarp keeps the window until every lane has read what it needed from the old contents.
struct WarpFill {
  unsigned lane;
  __device__ void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) {
    __syncwarp();
    strided_copy(win, src, static_cast<std::uint32_t>(n), lane, 32);  // (a window: n < 4 GiB)
    __syncwarp();
  }
};

struct WarpCopier {
  unsigned lane;
  std::uint8_t* window;  // this warp's kWindowBytes of shared memory, 16-byte aligned

  // The parse reads the compressed input through the shared-memory window.
  __device__ codec::logic::Lz4StagedReader<WarpFill> reader(const std::uint8_t* in, std::size_t size) {
    return codec::logic::Lz4StagedReader<WarpFill>{in, size, window, kWindowBytes, WarpFill{lane}};
  }

  __device__ void literals(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
    codec::logic::lane_copy_forward(dst, src, n, lane);
    __syncwarp();
  }

  __device__ void match(std::uint8_t* dst, std::size_t offset, std::size_t n) {
    const std::size_t phases = codec::logic::lane_match_phases(offset, n);
    for (std::size_t p = 0; p < phases; ++p) {
      codec::logic::lane_match(dst, offset, n, lane, p);
      __syncwarp();
    }
  }

  __device__ void sync() { __syncwarp(); }
  __device__ codec::logic::BlosclzStatus broadcast_status(codec::logic::BlosclzStatus s) {
    return static_cast<codec::logic::BlosclzStatus>(__shfl_sync(kFullMask, static_cast<int>(s), 0));
  }
  __device__ std::size_t broadcast_size(std::size_t n) {
    return static_cast<std::size_t>(__shfl_sync(kFullMask, static_cast<unsigned long long>(n), 0));
  }
};

// The lanes of codec/logic/lz4_ring.hpp's decoder and of the blosc warp's groups
// (codec/logic/lz4_group.hpp) on the device: every lane runs its part of a phase, then the warp
// meets (which also makes shared- and global-memory writes of the phase
// visible to all its lanes). PerLane<T>: each lane holds its own T (in registers, when the
// copies index it with constants after unrolling), so operator[] ignores the lane.
struct RingLanes {
  unsigned lane;
  template <class T>
  struct PerLane {
    T v;
    __device__ T& operator[](unsigned) { return v; }
  };
  template <class F>
  __device__ void each(F&& f) {
    f(lane);
    __syncwarp();
  }
  template <class F>
  __device__ void each_nosync(F&& f) {
    f(lane);
  }
  __device__ void sync() { __syncwarp(); }
  __device__ bool leader() const { return lane == 0; }
  // The walker's collectives (codec/logic/lz4_ring.hpp, Lz4HostLanes, says what each does);
  // every lane of the warp calls them with the same arguments. get() moves 4-byte values.
  template <class T>
  __device__ void set(PerLane<T>& p, unsigned at, const T& v) {
    if (lane == at) p.v = v;
  }
  __device__ std::uint32_t get(PerLane<std::uint32_t>& p, unsigned from) { return __shfl_sync(kFullMask, p.v, from); }
  __device__ void scan_add(PerLane<std::uint32_t>& p) { p.v = warp_inclusive_sum(p.v, lane); }
  __device__ void scan_min(PerLane<std::uint32_t>& p) {
#pragma unroll
    for (unsigned d = 1; d < 32; d *= 2) {
      const std::uint32_t up = __shfl_up_sync(kFullMask, p.v, d);
      if (lane >= d && up < p.v) p.v = up;
    }
  }
  // gather: lane l gets v of lane from[l]; ballot: bit l set when lane l's flag is
  __device__ PerLane<std::uint32_t> gather(PerLane<std::uint32_t>& v, PerLane<std::uint32_t>& from) {
    return {__shfl_sync(kFullMask, v.v, from.v)};
  }
  __device__ std::uint32_t ballot(PerLane<bool>& p) { return __ballot_sync(kFullMask, p.v); }
  __device__ std::uint32_t first(PerLane<bool>& p, std::uint32_t limit) {
    const unsigned below = limit >= 32 ? kFullMask : (1u << limit) - 1u;
    const unsigned set = __ballot_sync(kFullMask, p.v) & below;
    return set ? static_cast<std::uint32_t>(__ffs(set) - 1) : limit;
  }
};

}  // namespace cubestream::cuda::detail

#include "cuda/decode/warp_ring_lz4.cuh"

namespace cubestream::cuda::detail {

// The blosc unit kernel's copier: whole LZ4 blocks (blosc streams) go through the shared-memory
// ring (lz4_container_block picks lz4_block when a copier has one); raw streams, memcpyed
// buffers and BloscLZ use WarpCopier's copies. The numcodecs LZ4 kernel keeps WarpCopier alone:
// on its literal-heavy blocks (90% literals in runs of tens to hundreds of bytes, which the
// ring's fast path does not take) the ring measured 10-20% slower than the direct copies
// (docs/gpu_decoders.md, version 2).
struct WarpRingCopier : WarpCopier {
  std::uint8_t* ring;  // this warp's kRingBytes of shared memory, 16-byte aligned

  __device__ codec::logic::DecodeStatus lz4_block(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                                  std::size_t size) {
    WarpRingLz4 r{lane, window, ring};
    return r.decode(in, in_size, out, size);
  }
};

}  // namespace cubestream::cuda::detail

namespace cubestream::cuda::detail {

// WarpFill plus a prefetch into L2 of the Lines x 4 KiB after the window (Lines 128-byte lines
// per lane), so that the next refill waits on L2 rather than DRAM.
template <unsigned Lines = 1>
struct PrefetchFill {
  unsigned lane;
  const std::uint8_t* end;  // one past the input
  __device__ void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) {
    WarpFill{lane}(win, src, n);
#pragma unroll
    for (unsigned k = 0; k < Lines; ++k) {
      const std::uint8_t* next = src + n + 128 * (static_cast<std::size_t>(lane) + 32 * k);
      if (next < end) asm volatile("prefetch.global.L2 [%0];" ::"l"(next));
    }
  }
};
// The ring kernel's walker: the 4 KiB after its window.
using RingFill = PrefetchFill<1>;

// Named barriers of the numcodecs lz4 kernel's thread block (barrier 0 is __syncthreads).
// bar.arrive by the producer synchronizes with bar.sync by the consumers (PTX memory model), so
// the batch records written before an arrive are visible after the matching sync.
inline constexpr unsigned kLz4Warps = 1 + codec::logic::kLz4CopyWarps;  // walker + copiers
inline constexpr unsigned kLz4Threads = 32 * kLz4Warps;
inline constexpr unsigned kLz4BarFull = 1;    // + batch buffer index: walker -> copiers
inline constexpr unsigned kLz4BarEmpty = 3;   // + batch buffer index: copiers -> walker
inline constexpr unsigned kLz4BarCopy = 5;    // the copier warps among themselves
static_assert(kLz4BarFull == 1 && kLz4BarEmpty == 3 && kLz4BarCopy == 5, "bar_sync's cases");

// Barrier ids are immediates (a register id makes ptxas reserve all 16 barriers of the block).
// The barriers are the non-aligned forms (barrier.sync, not bar.sync): PTX defines the aligned
// ones only when every thread of the block executes the same barrier instruction, and here the
// walker warp meets the helpers' or copiers' barrier at another instruction (its own call site
// of a job, its side of the ring). (compute-sanitizer synccheck flagged the aligned bar.red of
// __syncthreads_or used that way, "Divergent thread(s) in block", in the fused LZ4 kernel in
// session 31; with these barriers non-aligned and that vote in shared memory it reports none.)
template <unsigned Id>
__device__ inline void bar_sync_id(unsigned threads) {
  asm volatile("barrier.sync %0, %1;" ::"n"(Id), "r"(threads) : "memory");
}
template <unsigned Id>
__device__ inline void bar_arrive_id(unsigned threads) {
  asm volatile("barrier.arrive %0, %1;" ::"n"(Id), "r"(threads) : "memory");
}
// A barrier of one warp's 32 threads, on its own named barrier 8 + warp (warp < 8; ids 8-15 are
// used nowhere else): what __syncwarp does, but barrier.sync is among the operations that
// synchronize with each other in the PTX memory model, where bar.warp.sync is not (its text says
// only that it orders memory among the warp's threads), so a release by one lane after it is
// formally cumulative over the other lanes' writes before it (a second review's reading, session
// 39). Immediate ids through a switch, as bar_sync's.
__device__ inline void warp_barrier(unsigned warp) {
  switch (warp) {
    case 0: bar_sync_id<8>(32); break;
    case 1: bar_sync_id<9>(32); break;
    case 2: bar_sync_id<10>(32); break;
    case 3: bar_sync_id<11>(32); break;
    case 4: bar_sync_id<12>(32); break;
    case 5: bar_sync_id<13>(32); break;
    case 6: bar_sync_id<14>(32); break;
    default: bar_sync_id<15>(32); break;
  }
}
// id is kLz4BarFull + i, kLz4BarEmpty + i (i = 0, 1) or kLz4BarCopy
__device__ inline void bar_sync(unsigned id, unsigned threads) {
  switch (id) {
    case 1: bar_sync_id<1>(threads); break;
    case 2: bar_sync_id<2>(threads); break;
    case 3: bar_sync_id<3>(threads); break;
    case 4: bar_sync_id<4>(threads); break;
    default: bar_sync_id<5>(threads); break;
  }
}
__device__ inline void bar_arrive(unsigned id, unsigned threads) {
  switch (id) {
    case 1: bar_arrive_id<1>(threads); break;
    case 2: bar_arrive_id<2>(threads); break;
    case 3: bar_arrive_id<3>(threads); break;
    default: bar_arrive_id<4>(threads); break;
  }
}

// The walker warp's part of a block (warp 0 of WarpRing64Copier): walks it into the two batch
// buffers in turn, batch b into buffer b mod 2, and returns the walk's status. Out of line, one
// function per Bursts: each gets its own registers and schedule, so the walk without bursts is
// the same code whether or not the kernel also holds the walk with them (a kernel that inlined
// the bursts walked the era5-like batch 20 % slower even where it tried no burst; H100,
// session 13).
template <bool Bursts>
__device__ __noinline__ codec::logic::DecodeStatus lz4_ring_walk(const std::uint8_t* in, std::uint32_t in_size,
                                                                 std::uint32_t size, std::uint8_t* window,
                                                                 std::size_t window_cap, unsigned lane,
                                                                 codec::logic::Lz4BatchSeq* seqs,
                                                                 codec::logic::Lz4BatchHead* heads,
                                                                 std::uint16_t* burst_table,
                                                                 codec::logic::Lz4BurstRule burst_rule) {
  namespace logic = codec::logic;
  logic::Lz4RingWalker<RingFill, RingLanes, Bursts> walker{
      in_size, size, logic::Lz4StagedReader<RingFill>{in, in_size, window, window_cap, RingFill{lane, in + in_size}},
      RingLanes{lane}};
  walker.burst_table = burst_table;
  walker.burst_rule = burst_rule;
  unsigned b = 0;
  for (;; ++b) {
    const unsigned i = b & 1u;
    if (b >= 2) bar_sync(kLz4BarEmpty + i, kLz4Threads);
    const bool done = walker.walk(&heads[i], seqs + i * logic::kLz4BatchMax);
    __syncwarp();
    bar_arrive(kLz4BarFull + i, kLz4Threads);
    if (done) break;
  }
  // the copiers' arrivals for the last (up to) two batches
  for (unsigned k = b >= 1 ? b - 1 : 0; k <= b; ++k) bar_sync(kLz4BarEmpty + (k & 1u), kLz4Threads);
  return walker.status;
}

// The numcodecs lz4 kernel's copier, run by every warp of a thread block of kLz4Warps warps on
// the same buffer: warp 0 walks the block (codec/logic/lz4_ring.hpp, Lz4RingWalker) into two
// batch buffers in turn; the copier warps share each batch's phase 1, copier warp 0 (warp 1)
// runs phase 2 and the flushes. Only warp 0's status counts (it saw every check). A block too
// large for 32-bit positions is decoded by warp 0 alone with WarpCopier's direct copies.
//
// Barrier protocol per batch b in buffer i = b mod 2 (counts balance, so the barriers are idle
// again when the block ends):
//   walker:  [b >= 2: sync EMPTY_i]  walk into i  arrive FULL_i      ... at the end: sync EMPTY
//            for the last min(B, 2) batches
//   copiers: sync FULL_i  [flush; sync COPY]  phase 1; sync COPY  phase 2; sync COPY
//            arrive EMPTY_i
//
// bursts: whether this block's walk takes bursts (Lz4RingWalker::burst), chosen per buffer.
struct WarpRing64Copier : WarpCopier {
  std::uint8_t* ring;                  // kLz4RingBytes of shared memory, 16-byte aligned
  codec::logic::Lz4BatchSeq* seqs;     // 2 x kLz4BatchMax records in shared memory
  codec::logic::Lz4BatchHead* heads;   // 2 batch heads in shared memory
  std::uint16_t* burst_table;          // the walker's kLz4BurstBytes entries in shared memory
  codec::logic::Lz4BurstRule burst_rule;  // when the walker tries a burst
  bool bursts;                         // whether it takes any (lz4_ring_walk<true>)
  std::size_t window_cap;              // bytes of `window` (WarpCopier's fallback uses 2 KiB)
  unsigned warp;                       // warp index in the thread block

  __device__ codec::logic::DecodeStatus lz4_block(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                                  std::size_t size) {
    namespace logic = codec::logic;
    if (in_size >= logic::kLz4RingMaxBytes || size >= logic::kLz4RingMaxBytes) {
      if (warp != 0) return logic::DecodeStatus::kOk;
      WarpCopier& direct = *this;
      return logic::lz4_decode_exact_with(in, in_size, out, size, direct);
    }
    if (in_size == 0) return logic::DecodeStatus::kCorrupt;
    if (warp == 0) {
      const auto n_in = static_cast<std::uint32_t>(in_size), n_out = static_cast<std::uint32_t>(size);
      return bursts ? lz4_ring_walk<true>(in, n_in, n_out, window, window_cap, lane, seqs, heads, burst_table, burst_rule)
                    : lz4_ring_walk<false>(in, n_in, n_out, window, window_cap, lane, seqs, heads, nullptr, burst_rule);
    }
    const unsigned cw = warp - 1;  // copier warp index
    logic::Lz4RingCopier<RingLanes> copier{in, out, ring, RingLanes{lane}};
    copier.init();
    for (unsigned b = 0;; ++b) {
      const unsigned i = b & 1u;
      bar_sync(kLz4BarFull + i, kLz4Threads);
      const logic::Lz4BatchHead h = heads[i];
      const logic::Lz4BatchSeq* bs = seqs + i * logic::kLz4BatchMax;
      if (!(h.flags & logic::kLz4BatchError)) {
        if (h.flags & logic::kLz4BatchLone) {
          if (cw == 0) copier.lone(bs[0]);
        } else if (h.n != 0) {
          if (cw == 0) copier.room(h.b0, h.end);
          bar_sync(kLz4BarCopy, kLz4Threads - 32);
          copier.phase1(h, bs, cw, logic::kLz4CopyWarps);
          __syncwarp();
          bar_sync(kLz4BarCopy, kLz4Threads - 32);
          if (cw == 0) copier.phase2(h, bs);
        }
        if ((h.flags & logic::kLz4BatchDone) && cw == 0) copier.flush(h.end);
      }
      // phase 2 (and any flush) done before the next batch's phase 1 writes the ring
      bar_sync(kLz4BarCopy, kLz4Threads - 32);
      bar_arrive(kLz4BarEmpty + i, kLz4Threads);
      if (h.flags & logic::kLz4BatchDone) break;
    }
    return logic::DecodeStatus::kOk;
  }
};

}  // namespace cubestream::cuda::detail
