// Zstandard buffers of a batch: forwarded to the GPU Zstandard decoder (src/cuda/zstd), whose
// API takes the same device arrays (src pointers and sizes, dst pointers and sizes, statuses),
// scratch and stream. Content checksums are verified where a frame has one, as libzstd does on
// the host, so that a damaged checksummed frame is an error on both paths (numcodecs and
// TensorStore write frames without them by default: those cost nothing more).
//
// blosc buffers with Zstandard streams are still refused in one place, blosc_inner_supported
// (codec/logic/blosc_decode.hpp), and go to the CPU. To decode them here too: accept format 4
// there; let blosc_unit_kernel, for a zstd unit, write the stream's (src, csize, target,
// stream_bytes) into per-unit arrays in the blosc scratch instead of decoding it (src size 0
// for units it decoded itself, which the Zstandard batch skips); call zstd_dispatch on those
// arrays between blosc_unit_kernel and blosc_unshuffle_kernel; then fold the per-unit statuses
// into the buffers' statuses before unshuffling.
#include "cuda/decode/zstd_dispatch.hpp"
#include "cuda/zstd/zstd_batch.hpp"

namespace cubestream::cuda::detail {

std::size_t zstd_dispatch_scratch_bytes(std::size_t num_buffers, std::size_t total_decoded_bytes) {
  // With the decoded total, the scratch holds the block-parallel decoder's (version 2)
  // intermediate sequences and literals; buffers that do not fit fall back to version 1.
  return num_buffers == 0 ? 0 : zstd_batch_scratch_bytes(num_buffers, total_decoded_bytes);
}

void zstd_dispatch(const DeviceBatch& batch, void* scratch, std::size_t scratch_bytes, cudaStream_t stream) {
  if (batch.num_buffers == 0) return;
  zstd_batch_decode(reinterpret_cast<const void* const*>(batch.src), batch.src_bytes,
                    reinterpret_cast<void* const*>(batch.dst), batch.dst_bytes, batch.status, batch.num_buffers, scratch,
                    scratch_bytes, /*verify_checksum=*/true, stream);
}

}  // namespace cubestream::cuda::detail
