// The GPU assemble stage: decoded units (device memory, native byte order) into the batch
// tensors (device memory), fused with the per-element steps of the CPU path — CF decoding
// (_Unsigned, masking of missing values to NaN, scale_factor and add_offset, in float64),
// normalisation (x - mean) / std in float64, one rounding to float32, the NaN fill, and the
// output dtype (float32, bfloat16, float16). Every float64 operation is rounded on its own
// (no fused multiply-add), as the host computes it, so the bits equal the CPU loader's.
//
// Work is a list of items, each a range of elements of one piece (a box of a unit copied to
// a box of a tensor, strides per layout dim; see pipeline/batch_plan.hpp), so that large
// pieces spread over many thread blocks. This header needs no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace cubestream::cuda {

inline constexpr int kAssembleMaxDims = 8;
inline constexpr int kAssembleMaxMissing = 4;

// Element type of a unit, after _Unsigned (the "effective" type CF decoding reads).
enum class ElemKind : std::uint8_t { kBool, kInt, kUInt, kFloat, kTime };

// Per (source, channel): how its values become output values.
struct ConvertParams {
  ElemKind kind = ElemKind::kFloat;
  std::uint8_t size = 4;                // bytes per element: 1, 2, 4, 8
  std::uint8_t num_missing = 0;
  bool affine = false;
  bool has_fill = false;
  double missing[kAssembleMaxMissing] = {};
  double scale = 1, offset = 0;
  double mean = 0, std = 1;
  float fill = 0;
};

struct AssemblePiece {
  const std::uint8_t* src = nullptr;    // the decoded unit (device)
  std::int64_t src_offset = 0;          // elements
  std::int64_t dst_offset = 0;          // elements into its tensor
  std::int64_t count[kAssembleMaxDims] = {};
  std::int64_t src_stride[kAssembleMaxDims] = {};
  std::int64_t dst_stride[kAssembleMaxDims] = {};
  std::int32_t ndims = 0;
  std::uint32_t tensor = 0;             // index into the tensors array
  std::uint32_t params = 0;             // index into the params array
};

struct AssembleItem {
  std::uint32_t piece = 0;
  std::int64_t begin = 0, end = 0;      // elements of the piece, row-major over its counts
};

enum class OutKind : std::uint8_t { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2 };

// Enqueues the assembly on `stream`. All arrays are in device memory.
void assemble_batch(const AssemblePiece* pieces, const AssembleItem* items, std::size_t num_items,
                    const ConvertParams* params, void* const* tensors, OutKind out, CUstream_st* stream);

}  // namespace cubestream::cuda
