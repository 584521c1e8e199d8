// Batched Zstandard decoding on the GPU (issue 4), CUB-style: ask for the scratch size once,
// then decode N device buffers with one stream-ordered call.
//
//   std::size_t bytes = zstd_batch_scratch_bytes(n, sum_of_decoded_sizes);
//   void* d_scratch;  cudaMallocAsync(&d_scratch, bytes, stream);
//   zstd_batch_decode(d_src, d_src_sizes, d_dst, d_dst_sizes, d_status, n, d_scratch, bytes,
//                     /*verify_checksum=*/false, stream);
//
// Every pointer argument except the scratch size is device memory: the arrays of buffer
// pointers and sizes too. Buffer i holds one or more Zstandard frames (skippable frames
// allowed) that must decode to exactly d_dst_sizes[i] bytes; d_status[i] receives its
// DecodeStatus (kOk, kCorrupt, kWrongSize, kDictionary, kChecksumMismatch). Entries with
// d_src_sizes[i] == 0 are skipped and their status is left untouched. The call neither
// synchronises with the host nor allocates. The decoder is the shared logic in
// src/codec/logic/zstd (split.hpp: plan, entropy and execution passes over all blocks of the
// batch; decoder.hpp: the one-pass decoder of version 1); docs/gpu_zstd.md describes it.
//
// This header needs no CUDA headers. A build without CUDA links the same functions, which
// throw cubestream::Error(kUnsupported, "built without CUDA").
#pragma once

#include <cstddef>

#include "codec/logic/decode_status.hpp"

// The CUDA runtime's own definition of the stream handle type, repeated (a typedef may be
// repeated with the same type) so that callers need not include CUDA headers.
typedef struct CUstream_st* cudaStream_t;

namespace cubestream::cuda {

// Scratch for the fast path (version 2: every block of the batch in flight), given the sum of
// d_dst_sizes (known from the Zarr metadata): about twice the decoded bytes, for the decoded
// literals and sequence records of every block. Any scratch from zstd_batch_min_scratch_bytes()
// up works and gives the same results: buffers whose blocks do not fit the scratch, and every
// buffer when it is too small for version 2's bookkeeping, are decoded by version 1 (one warp
// per buffer, one ~145 KiB workspace per warp), which is several times slower.
std::size_t zstd_batch_scratch_bytes(std::size_t num_buffers, std::size_t total_decoded_bytes);
// Version 1's size: one workspace per buffer, at most kZstdBatchMaxWarps; not enough for
// version 2 with chunks of more than ~64 KiB (see above).
std::size_t zstd_batch_scratch_bytes(std::size_t num_buffers);
std::size_t zstd_batch_min_scratch_bytes();

// The number of warps (and workspaces) at most in flight in one call.
inline constexpr std::size_t kZstdBatchMaxWarps = 2048;

// Decodes the batch on `stream`. Throws cubestream::Error(kInvalidArgument) when the scratch
// is smaller than zstd_batch_min_scratch_bytes() or a pointer is null while num_buffers > 0,
// Error(kCuda) when a launch fails, Error(kUnsupported) in a build without CUDA.
void zstd_batch_decode(const void* const* d_src, const std::size_t* d_src_sizes, void* const* d_dst,
                       const std::size_t* d_dst_sizes, codec::logic::DecodeStatus* d_status, std::size_t num_buffers,
                       void* d_scratch, std::size_t scratch_bytes, bool verify_checksum, cudaStream_t stream);

}  // namespace cubestream::cuda
