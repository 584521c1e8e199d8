// Zstandard buffers of a batch. The GPU Zstandard decoder lives in src/cuda/zstd (its own
// branch); until it is merged, this seam answers every Zstandard buffer with kUnsupported,
// which decode_batch_with_fallback turns into a CPU decode (libzstd), buffer by buffer.
//
// To connect it: include "cuda/zstd/zstd_batch.hpp" and forward both functions to its scratch
// query and batch decode (same arguments: device arrays of src pointers and sizes, dst
// pointers and capacities, statuses, scratch, stream).
//
// blosc buffers with Zstandard streams are refused in one place, blosc_inner_supported
// (codec/logic/blosc_decode.hpp). To decode them here too: accept format 4 there; let
// blosc_unit_kernel, for a zstd unit, write the stream's (src, csize, target, stream_bytes) into
// per-unit arrays in the blosc scratch instead of decoding it (src size 0 for units it decoded
// itself, which the Zstandard batch skips); call zstd_dispatch on those arrays (unit_off[N]
// entries; the host knows only the bound blosc_max_units per buffer, so size them by it)
// between blosc_unit_kernel and blosc_unshuffle_kernel; then fold the per-unit statuses into
// the buffers' statuses before unshuffling.
#include <algorithm>

#include "cuda/check.hpp"
#include "cuda/decode/zstd_dispatch.hpp"

namespace cubestream::cuda::detail {

namespace {

__global__ void mark_unsupported_kernel(DecodeStatus* status, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    status[i] = DecodeStatus::kUnsupported;
  }
}

}  // namespace

std::size_t zstd_dispatch_scratch_bytes(std::size_t, std::size_t) { return 0; }

void zstd_dispatch(const DeviceBatch& batch, void*, std::size_t, cudaStream_t stream) {
  if (batch.num_buffers == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((batch.num_buffers + 255) / 256, 1024));
  mark_unsupported_kernel<<<blocks, 256, 0, stream>>>(batch.status, batch.num_buffers);
  CS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cubestream::cuda::detail
