// What the CUDA side of this build can see: compiled in or not, and the visible devices.
#pragma once

#include <cstddef>
#include <string>

namespace cubestream::cuda {

// True when this build contains the CUDA sources.
bool compiled_with_cuda();

// One line: "not compiled in", "compiled for sm_90; no device visible (...)", or the
// devices with name, compute capability, memory and multiprocessor count.
std::string describe_devices();

// The most shared memory one thread block of the current device may opt in to (227 KiB on
// Hopper, ~99 KiB on sm_86/sm_89, 64 KiB on sm_75): kernels that want more than the default
// 48 KiB choose their layout by it. CUBESTREAM_GPU_SMEM_OPTIN=N lowers it to N bytes (never
// raises it), so the fallbacks for smaller GPUs can be tested on a large one. 0 without CUDA.
std::size_t optin_shared_memory_per_block();

// The current device's streaming multiprocessors (132 on an H100): persistent grids and the
// batch decoders' per-SM bounds are sized by it. 0 without CUDA.
int multiprocessor_count();

}  // namespace cubestream::cuda
