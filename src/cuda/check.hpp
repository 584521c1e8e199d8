// The one macro through which every CUDA runtime call is checked: a failure becomes a
// cubestream::Error(kCuda) naming the call, the CUDA error and the source location.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "cubestream/error.hpp"

#define CS_CUDA_CHECK(call)                                                                     \
  do {                                                                                          \
    cudaError_t cs_cuda_status_ = (call);                                                       \
    if (cs_cuda_status_ != cudaSuccess) {                                                       \
      throw ::cubestream::Error(::cubestream::ErrorCode::kCuda,                                 \
                                std::string(#call) + " failed: " + cudaGetErrorName(cs_cuda_status_) + \
                                    " (" + cudaGetErrorString(cs_cuda_status_) + ") at " + __FILE__ + \
                                    ":" + std::to_string(__LINE__));                            \
    }                                                                                           \
  } while (0)
