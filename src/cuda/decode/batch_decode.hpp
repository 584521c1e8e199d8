// Batched, stream-ordered GPU decoding of compressed chunks, layered like CUB's
// cub::DeviceMemcpy::Batched: a scratch-size query, then one call that enqueues the whole
// batch on a CUDA stream.
//
//   DeviceBatch b{d_src, d_src_bytes, d_dst, d_dst_bytes, d_status, n};   // all device memory
//   std::size_t scratch = batch_decode_scratch_bytes(BatchCodec::kBlosc, n, total_decoded);
//   ... allocate `scratch` bytes of device memory once, reuse it ...
//   batch_decode(BatchCodec::kBlosc, b, d_scratch, scratch, stream);
//
// The call neither allocates nor synchronises: it enqueues kernels on `stream` and returns.
// Each buffer gets a DecodeStatus in device memory: kOk, kCorrupt, kWrongSize (the data
// decodes to another size than dst_bytes), kUnsupported (a valid feature the GPU path leaves
// to the CPU: decode_batch_with_fallback does that). Output bytes of a buffer whose status is
// not kOk are unspecified.
//
// This header needs no CUDA headers, so it compiles in a CPU-only build, where every entry
// point throws Error(kUnsupported) "built without CUDA". The CUDA build defines them in
// src/cuda/decode/*.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/logic/decode_status.hpp"
#include "codec/logic/numcodecs_filters.hpp"

// cudaStream_t is `struct CUstream_st*`; naming the struct keeps CUDA headers out of here.
struct CUstream_st;

namespace cubestream::cuda {

using StreamHandle = CUstream_st*;
using codec::logic::DecodeStatus;

// The compressed formats the batch decodes.
enum class BatchCodec : std::uint8_t {
  kLz4 = 0,    // numcodecs lz4: u32 LE decoded size + one LZ4 block
  kBlosc = 1,  // c-blosc 1.x container (inner lz4/lz4hc/blosclz on the GPU)
  kZstd = 2,   // Zstandard frames (the Zstandard engineer's batch decoder, zstd_dispatch.cu)
};

const char* batch_codec_name(BatchCodec c);

// N buffers, every pointer a device pointer and every array in device memory.
struct DeviceBatch {
  const std::uint8_t* const* src = nullptr;  // N compressed buffers
  const std::size_t* src_bytes = nullptr;    // their sizes
  std::uint8_t* const* dst = nullptr;        // N output buffers
  const std::size_t* dst_bytes = nullptr;    // the decoded size each buffer must have
  DecodeStatus* status = nullptr;            // N statuses, written by the call
  std::size_t num_buffers = 0;
};

// Scratch bytes that batch_decode needs for `num_buffers` buffers whose dst_bytes sum to
// `total_decoded_bytes`: lz4 a work-queue counter, the buffer order, and the segmented path's
// counters and segment slots (~9 % of total_decoded_bytes: 84 bytes a slot, 64 of them the
// walk's runs notes, and a slot for every KiB of output, lz4_segment_bound's least-output bound;
// ~2 % with -DCS_LZ4_RUNS=0; and 12.5 % more for the pending
// bits where CUBESTREAM_LZ4_MATCHES=ready; a smaller scratch of at least the
// counter and order sends the buffers that do not fit to the ring kernel); blosc the counter, per-buffer plans and
// prefix sums, and a staging area of total_decoded_bytes for shuffled blocks before they are
// unshuffled; zstd what the Zstandard batch asks for. Host-only arithmetic: no CUDA call.
std::size_t batch_decode_scratch_bytes(BatchCodec codec, std::size_t num_buffers, std::size_t total_decoded_bytes);

// Enqueues the decode of the batch on `stream`. `scratch` (device memory, 256-byte aligned)
// must hold batch_decode_scratch_bytes(...) bytes for a total_decoded_bytes >= the sum of
// dst_bytes; a blosc buffer whose staging would not fit gets kUnsupported. Throws
// Error(kInvalidArgument) for a short scratch, Error(kCuda) when a launch fails.
void batch_decode(BatchCodec codec, const DeviceBatch& batch, void* scratch, std::size_t scratch_bytes,
                  StreamHandle stream);

// ---- byte filters (numcodecs filters and array->array codecs), batched the same way --------
// Every buffer of a batch has the same filter configuration (one array's codec chain). They
// need no scratch. Sizes: src_bytes is what the filter reads, dst_bytes what it must write;
// a mismatch gives the buffer kWrongSize.

// numcodecs shuffle with `elementsize` bytes per element (<= 1: plain copy).
void batch_unshuffle(const DeviceBatch& batch, std::size_t elementsize, StreamHandle stream);

// Byte order reversal of every `unit`-byte element (the `bytes` codec's endian; 1: copy).
void batch_byteswap(const DeviceBatch& batch, std::size_t unit, StreamHandle stream);

// numcodecs delta: dtype/astype as numpy dtypes (see codec/logic/numpy_cast.hpp). Integer
// sums run as a parallel scan (modular sums are associative); float sums are rounded once per
// addition in numpy's order, so a float delta runs serially, one thread per buffer.
void batch_delta(const DeviceBatch& batch, codec::logic::NumType dtype, codec::logic::NumType astype,
                 StreamHandle stream);

// numcodecs fixedscaleoffset (parameters from codec::fixedscaleoffset_params(config)).
void batch_fixedscaleoffset(const DeviceBatch& batch, const codec::logic::FixedScaleOffsetParams& params,
                            StreamHandle stream);

// The transpose codec's decode: each src buffer holds an array of `encoded_shape` (C order,
// elements of elem_size bytes) that is the decoded array with axes permuted by `order`
// (encoded_shape[i] = decoded_shape[order[i]]); dst receives the decoded array. Rank <= 8.
void batch_transpose(const DeviceBatch& batch, const std::vector<std::int64_t>& encoded_shape,
                     const std::vector<int>& order, std::size_t elem_size, StreamHandle stream);

// ---- host convenience with CPU fallback ------------------------------------------------------

// One buffer of a host-described batch for decode_batch_with_fallback: device pointers and
// the host's copy of the sizes.
struct DeviceBuffer {
  const std::uint8_t* src = nullptr;
  std::size_t src_bytes = 0;
  std::uint8_t* dst = nullptr;
  std::size_t dst_bytes = 0;
};

// Decodes `buffers` with the GPU batch, then decodes every buffer the GPU left as
// kUnsupported on the CPU through the codec of `codec_config` (the registry's bytes->bytes
// codec, e.g. {"id": "blosc"}), so that the result equals the CPU path. Any other status
// becomes Error(kCorruptData / kSizeMismatch) naming the buffer index and the status.
// Allocates its device arrays and scratch, and synchronises `stream` (a convenience, not the
// pipeline's path). `codec_config` is a JSON object text.
void decode_batch_with_fallback(BatchCodec codec, const std::vector<DeviceBuffer>& buffers,
                                const std::string& codec_config, StreamHandle stream);

// The bytes->bytes codec ids this API decodes ("lz4", "blosc", "zstd") -> BatchCodec; throws
// Error(kUnsupported) for other ids.
BatchCodec batch_codec_for_id(const std::string& codec_id);

}  // namespace cubestream::cuda
