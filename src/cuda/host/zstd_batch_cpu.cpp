// The CPU-only build's batched Zstandard entry points: they exist so that callers link, and
// say that the GPU decoder is not there (the CUDA build compiles src/cuda/zstd/zstd_batch.cu).
#ifndef CUBESTREAM_WITH_CUDA
#include "cubestream/error.hpp"
#include "cuda/zstd/zstd_batch.hpp"

namespace cubestream::cuda {

std::size_t zstd_batch_scratch_bytes(std::size_t) {
  throw Error(ErrorCode::kUnsupported, "zstd_batch_scratch_bytes: built without CUDA");
}

std::size_t zstd_batch_scratch_bytes(std::size_t, std::size_t) {
  throw Error(ErrorCode::kUnsupported, "zstd_batch_scratch_bytes: built without CUDA");
}

std::size_t zstd_batch_min_scratch_bytes() {
  throw Error(ErrorCode::kUnsupported, "zstd_batch_min_scratch_bytes: built without CUDA");
}

void zstd_batch_decode(const void* const*, const std::size_t*, void* const*, const std::size_t*,
                       codec::logic::DecodeStatus*, std::size_t, void*, std::size_t, bool, cudaStream_t) {
  throw Error(ErrorCode::kUnsupported, "zstd_batch_decode: built without CUDA");
}

}  // namespace cubestream::cuda
#endif
