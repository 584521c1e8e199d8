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

// Fills a warp's staging window: 16-byte loads when the source is 16-byte aligned (the reader
// aligns refills where it can), bytes otherwise. Every lane takes part; the first __syncwarp
// keeps the window until every lane has read what it needed from the old contents.
struct WarpFill {
  unsigned lane;
  __device__ void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) {
    __syncwarp();
    std::size_t done = 0;
    if ((reinterpret_cast<std::uintptr_t>(src) & 15u) == 0) {
      const std::size_t vecs = n / 16;
      const auto* s16 = reinterpret_cast<const uint4*>(src);
      auto* w16 = reinterpret_cast<uint4*>(win);
#pragma unroll 4
      for (std::size_t v = lane; v < vecs; v += 32) w16[v] = __ldg(s16 + v);
      done = vecs * 16;
    }
    for (std::size_t k = done + lane; k < n; k += 32) win[k] = __ldg(src + k);
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

// The lanes of codec/logic/lz4_ring.hpp's decoder on the device: every lane runs its part of a
// phase, then the warp meets (which also makes shared- and global-memory writes of the phase
// visible to all its lanes).
struct RingLanes {
  unsigned lane;
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
};

// WarpFill plus a prefetch into L2 of the 4 KiB after the window (one 128-byte line per lane),
// so that the next refill waits on L2 rather than DRAM.
struct RingFill {
  unsigned lane;
  const std::uint8_t* end;  // one past the input
  __device__ void operator()(std::uint8_t* win, const std::uint8_t* src, std::size_t n) {
    WarpFill{lane}(win, src, n);
    const std::uint8_t* next = src + n + 128 * static_cast<std::size_t>(lane);
    if (next < end) asm volatile("prefetch.global.L2 [%0];" ::"l"(next));
  }
};

// The numcodecs lz4 kernel's copier: whole blocks through the 64 KiB ring decoder; a block too
// large for its 32-bit positions takes WarpCopier's direct copies.
struct WarpRing64Copier : WarpCopier {
  std::uint8_t* ring;                  // kLz4RingBytes of shared memory, 16-byte aligned
  codec::logic::Lz4BatchSeq* seqs;     // kLz4BatchMax records in shared memory
  std::size_t window_cap;              // bytes of `window` (WarpCopier's fallback uses 2 KiB)

  __device__ codec::logic::DecodeStatus lz4_block(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                                  std::size_t size) {
    namespace logic = codec::logic;
    if (in_size >= logic::kLz4RingMaxBytes || size >= logic::kLz4RingMaxBytes) {
      WarpCopier& direct = *this;
      return logic::lz4_decode_exact_with(in, in_size, out, size, direct);
    }
    logic::Lz4RingDecoder<RingFill, RingLanes> d{in,
                                                 static_cast<std::uint32_t>(in_size),
                                                 out,
                                                 static_cast<std::uint32_t>(size),
                                                 ring,
                                                 seqs,
                                                 logic::Lz4StagedReader<RingFill>{in, in_size, window, window_cap,
                                                                                  RingFill{lane, in + in_size}},
                                                 RingLanes{lane}};
    return d.run();
  }
};

}  // namespace cubestream::cuda::detail
