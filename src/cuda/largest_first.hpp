// Size classes for ordering a batch's work largest first.
//
// The batch kernels take their work (LZ4 buffers, blosc streams, zstd buffers and blocks) from
// a queue or by thread block index, one item per warp or thread block, until none is left. In
// that order a batch of mixed sizes ends with a tail: the last large items start when most
// workers are idle and finish alone. Taking the largest items first (LPT, longest processing
// time first) shortens that tail; a host simulation of the bench's 1024 chunks of 64 KiB-1 MiB
// (docs/gpu_decoders.md, "Largest first") predicts makespans 1.25x (numcodecs lz4, 396 thread
// blocks) and 1.40x (blosc numcodecs layout, 4224 warps) shorter.
//
// The order need not be exact, so the device sorts by a coarse class (largest_first.cuh): the
// power of two of the size and its next three bits, eight classes per octave (items within
// 12.5 % of each other share a class). In the same simulation eight classes per octave gave the
// gain of an exact sort; one class per octave gave only 1.16x and 1.06x.
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::cuda {

inline constexpr unsigned kSizeClassBits = 3;  // classes per octave: 2^3
inline constexpr unsigned kSizeClasses = 64u << kSizeClassBits;

// Monotone in `bytes` (a larger size never gets a smaller class), < kSizeClasses. Sizes 0-7 are
// their own classes; from 8 on the class is 8 * floor(log2 bytes) + the three bits below the top.
CS_HD inline unsigned work_size_class(std::uint64_t bytes) {
  if (bytes < (1u << kSizeClassBits)) return static_cast<unsigned>(bytes);
#if defined(__CUDA_ARCH__)
  const unsigned top = 63u - static_cast<unsigned>(__clzll(static_cast<long long>(bytes)));
#else
  const unsigned top = 63u - static_cast<unsigned>(__builtin_clzll(bytes));  // GCC, Clang; bytes != 0
#endif
  const auto frac = static_cast<unsigned>(bytes >> (top - kSizeClassBits)) & ((1u << kSizeClassBits) - 1u);
  return (top << kSizeClassBits) + frac;
}

}  // namespace cubestream::cuda
