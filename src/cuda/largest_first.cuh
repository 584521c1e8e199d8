// One thread block orders a batch's items largest first (see largest_first.hpp): a counting
// sort by work_size_class. Items of one class come out in no fixed order (atomic placement);
// the decoders' results do not depend on the order, only the schedule does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/largest_first.hpp"

namespace cubestream::cuda::detail {

// Shared memory the ordering needs; the caller declares it so that kernels can share it.
struct LargestFirstShared {
  unsigned count[kSizeClasses];
  unsigned warp_sum[kSizeClasses / 32];
};

// Writes a permutation of 0..n-1 to order[], items of larger classes first. `bytes(i)` gives item
// i's size (evaluated twice per item). Every thread of the block must call it; needs
// blockDim.x >= kSizeClasses. Ends with __syncthreads(): order[] is then visible to the block.
template <class Bytes>
__device__ void order_largest_first(std::size_t n, Bytes bytes, std::uint32_t* order, LargestFirstShared& sh) {
  const unsigned t = threadIdx.x;
  for (unsigned c = t; c < kSizeClasses; c += blockDim.x) sh.count[c] = 0;
  __syncthreads();
  for (std::size_t i = t; i < n; i += blockDim.x) atomicAdd(&sh.count[work_size_class(bytes(i))], 1u);
  __syncthreads();
  // Thread t holds class kSizeClasses-1-t: an inclusive scan over t is the count of every class
  // at or above it. Warp scans, then the warp totals.
  unsigned v = 0, incl = 0;
  const unsigned lane = t & 31u, warp = t / 32;
  if (t < kSizeClasses) {
    v = sh.count[kSizeClasses - 1 - t];
    incl = v;
    for (unsigned d = 1; d < 32; d *= 2) {
      const unsigned up = __shfl_up_sync(0xFFFFFFFFu, incl, d);
      if (lane >= d) incl += up;
    }
    if (lane == 31) sh.warp_sum[warp] = incl;
  }
  __syncthreads();
  if (t == 0) {
    unsigned run = 0;
    for (unsigned w = 0; w < kSizeClasses / 32; ++w) {
      const unsigned s = sh.warp_sum[w];
      sh.warp_sum[w] = run;
      run += s;
    }
  }
  __syncthreads();
  // count[c] becomes the first position of class c
  if (t < kSizeClasses) sh.count[kSizeClasses - 1 - t] = sh.warp_sum[warp] + incl - v;
  __syncthreads();
  for (std::size_t i = t; i < n; i += blockDim.x)
    order[atomicAdd(&sh.count[work_size_class(bytes(i))], 1u)] = static_cast<std::uint32_t>(i);
  __syncthreads();
}

}  // namespace cubestream::cuda::detail
