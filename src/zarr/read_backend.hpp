// Where an array read decodes its chunks (ReadOptions::decode, CUBESTREAM_READ_DECODE): the
// rules of cubestream/array.hpp as one function of what it depends on, so that they are
// tested without a GPU.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "cubestream/array.hpp"
#include "zarr/gpu_route.hpp"

namespace cubestream::zarr {

// kAuto reads at least this many decoded bytes before it considers the GPU: a smaller read
// would not amortise a wave's device round trip, and interactive indexing should not touch the
// GPU at all. A process's first GPU read also pays the CUDA runtime's start and the pinning of
// its staging (0.7-0.9 s on the H200 machine, where libzstd on 16 cores decodes ~6 GB/s), so
// kAuto takes it only for a read of kAutoGpuReadColdBytes or more; once a staging set exists,
// reads of kAutoGpuReadMinBytes or more go to the GPU.
inline constexpr std::size_t kAutoGpuReadMinBytes = std::size_t{64} << 20;
inline constexpr std::size_t kAutoGpuReadColdBytes = std::size_t{1} << 30;
// Decode units larger than this are decoded on the host (a staging slot holds whole units).
inline constexpr std::size_t kGpuReadMaxUnitBytes = std::size_t{1} << 30;

struct ReadBackendChoice {
  bool gpu = false;
  // The caller asked for the GPU (kGpu): its failures are the caller's errors, and a read
  // waits for a staging set rather than decoding on the host.
  bool required = false;
};

// `env`: CUBESTREAM_READ_DECODE (null when unset). `device`: the GPU asked for, -1 for the
// calling thread's current one. `warm`: whether a GPU read's staging exists in this process
// already; `devices`: how many CUDA devices are visible; both asked only where the answer
// matters (the device count starts the CUDA runtime). Throws
// Error(kUnsupported) for kGpu with a chain the GPU does not decode or a unit that is too
// large, Error(kInvalidArgument) for an unknown `env` value.
ReadBackendChoice choose_read_backend(DecodeBackend asked, const char* env, const ChainRoute& route,
                                      std::size_t decoded_bytes, std::size_t unit_bytes, int device,
                                      const std::function<bool()>& warm, const std::function<int()>& devices);

}  // namespace cubestream::zarr
