// The CPU-only build's answer to device queries (the CUDA build compiles device_info.cu).
#ifndef CUBESTREAM_WITH_CUDA
#include "cuda/device_info.hpp"

namespace cubestream::cuda {

bool compiled_with_cuda() { return false; }
std::string describe_devices() { return "not compiled in (CPU-only build)"; }
std::size_t optin_shared_memory_per_block() { return 0; }
int multiprocessor_count() { return 0; }

}  // namespace cubestream::cuda
#endif
