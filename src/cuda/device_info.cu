// Device queries for `cubestream info` in the CUDA build.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cuda/check.hpp"
#include "cuda/device_info.hpp"

namespace cubestream::cuda {

bool compiled_with_cuda() { return true; }

std::string describe_devices() {
  int count = 0;
  cudaError_t st = cudaGetDeviceCount(&count);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  std::string rt = "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10);
  if (st != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" state
    return "compiled in (" + rt + "); no device visible (" + std::string(st == cudaSuccess ? "none found" : cudaGetErrorString(st)) + ")";
  }
  std::string out = "compiled in (" + rt + "); " + std::to_string(count) + " device(s):";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    CS_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    out += " [" + std::to_string(i) + "] " + p.name + " sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
           std::to_string(p.totalGlobalMem >> 20) + " MiB, " + std::to_string(p.multiProcessorCount) + " SMs;";
  }
  return out;
}

std::size_t optin_shared_memory_per_block() {
  int dev = 0, bytes = 0;
  CS_CUDA_CHECK(cudaGetDevice(&dev));
  CS_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  auto out = static_cast<std::size_t>(std::max(bytes, 0));
  if (const char* env = std::getenv("CUBESTREAM_GPU_SMEM_OPTIN")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0') out = std::min<std::size_t>(out, v);
  }
  return out;
}

int multiprocessor_count() {
  int dev = 0, sms = 0;
  CS_CUDA_CHECK(cudaGetDevice(&dev));
  CS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

}  // namespace cubestream::cuda
