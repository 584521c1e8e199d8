// The one seam between the batch API and the Zstandard decoder (src/cuda/zstd, written
// separately). Every Zstandard buffer of a batch goes through these two functions and nothing
// else; connecting the Zstandard batch decoder means changing zstd_dispatch.cu only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda::detail {

// Scratch the Zstandard batch needs for `num_buffers` frames decoding to `total_decoded_bytes`.
std::size_t zstd_dispatch_scratch_bytes(std::size_t num_buffers, std::size_t total_decoded_bytes);

// Enqueues the decode of `batch` (one or more Zstandard frames per buffer) on `stream`.
void zstd_dispatch(const DeviceBatch& batch, void* scratch, std::size_t scratch_bytes, cudaStream_t stream);

}  // namespace cubestream::cuda::detail
