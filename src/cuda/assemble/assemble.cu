// The assemble kernel: one thread block per work item, threads striding over its elements.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/float16_bits.hpp"
#include "cuda/assemble/assemble.hpp"
#include "cuda/check.hpp"

namespace cubestream::cuda {

namespace {

__device__ double load_value(const std::uint8_t* p, const ConvertParams& c) {
  switch (c.kind) {
    case ElemKind::kBool: return *p ? 1.0 : 0.0;
    case ElemKind::kInt:
      switch (c.size) {
        case 1: return static_cast<double>(*reinterpret_cast<const std::int8_t*>(p));
        case 2: return static_cast<double>(*reinterpret_cast<const std::int16_t*>(p));
        case 4: return static_cast<double>(*reinterpret_cast<const std::int32_t*>(p));
        default: return static_cast<double>(*reinterpret_cast<const std::int64_t*>(p));
      }
    case ElemKind::kUInt:
      switch (c.size) {
        case 1: return static_cast<double>(*p);
        case 2: return static_cast<double>(*reinterpret_cast<const std::uint16_t*>(p));
        case 4: return static_cast<double>(*reinterpret_cast<const std::uint32_t*>(p));
        default: return static_cast<double>(*reinterpret_cast<const std::uint64_t*>(p));
      }
    case ElemKind::kFloat:
      if (c.size == 4) return static_cast<double>(*reinterpret_cast<const float*>(p));
      if (c.size == 8) return *reinterpret_cast<const double*>(p);
      return static_cast<double>(__half2float(*reinterpret_cast<const __half*>(p)));
    case ElemKind::kTime: {
      const std::int64_t v = *reinterpret_cast<const std::int64_t*>(p);
      return v == INT64_MIN ? __longlong_as_double(0x7FF8000000000000LL) : static_cast<double>(v);  // NaT
    }
  }
  return 0.0;
}

// The CPU path's arithmetic, each operation rounded separately (nvcc would otherwise fuse
// v * scale + offset into one FMA and change the last bit).
__device__ float convert(double v, const ConvertParams& c) {
  bool masked = false;
  for (int k = 0; k < c.num_missing; ++k) masked |= v == c.missing[k];
  if (masked) v = __longlong_as_double(0x7FF8000000000000LL);
  else if (c.affine) v = __dadd_rn(__dmul_rn(v, c.scale), c.offset);
  float f = __double2float_rn(__ddiv_rn(__dsub_rn(v, c.mean), c.std));
  if (c.has_fill && isnan(f)) f = c.fill;
  return f;
}

// Element e of a piece (row-major over its counts) -> its source and destination offsets, in
// elements. Index type I: 32-bit where the piece's elements fit (a 64-bit division is a
// long software sequence on the GPU, several times a 32-bit one, and runs once per dim per
// element).
template <class I>
__device__ void piece_offsets(const AssemblePiece& pc, I e, std::int64_t* so, std::int64_t* dofs) {
  I rest = e;
  std::int64_t s = pc.src_offset, d = pc.dst_offset;
  for (int l = pc.ndims - 1; l >= 0; --l) {
    const I n = static_cast<I>(pc.count[l]);
    const I q = rest / n;
    const I i = rest - q * n;
    rest = q;
    s += static_cast<std::int64_t>(i) * pc.src_stride[l];
    d += static_cast<std::int64_t>(i) * pc.dst_stride[l];
  }
  *so = s;
  *dofs = d;
}

// One block per item. (A grid bounded to fewer blocks, each looping over items, removes the
// ~1-2 ms a step that the training stream's kernels wait behind this grid's blocks, but costs
// more in slower training kernels beside the longer-running assembly: docs/benchmarks.md,
// session 10.)
__global__ void assemble_kernel(const AssemblePiece* pieces, const AssembleItem* items, const ConvertParams* params,
                                void* const* tensors, OutKind out) {
  const AssembleItem item = items[blockIdx.x];
  const AssemblePiece& pc = pieces[item.piece];
  const ConvertParams c = params[pc.params];
  void* tensor = tensors[pc.tensor];
  std::int64_t total = 1;
  for (int l = 0; l < pc.ndims; ++l) total *= pc.count[l];
  const bool narrow = total <= 0xFFFFFFFFll;
  for (std::int64_t e = item.begin + threadIdx.x; e < item.end; e += blockDim.x) {
    std::int64_t so = 0, dofs = 0;
    if (narrow) {
      piece_offsets<std::uint32_t>(pc, static_cast<std::uint32_t>(e), &so, &dofs);
    } else {
      piece_offsets<std::int64_t>(pc, e, &so, &dofs);
    }
    const float f = convert(load_value(pc.src + so * c.size, c), c);
    switch (out) {
      case OutKind::kFloat32: static_cast<float*>(tensor)[dofs] = f; break;
      case OutKind::kBFloat16: static_cast<std::uint16_t*>(tensor)[dofs] = core::bfloat16_bits(f); break;
      case OutKind::kFloat16: static_cast<std::uint16_t*>(tensor)[dofs] = core::float16_bits(f); break;
    }
  }
}

}  // namespace

void assemble_batch(const AssemblePiece* pieces, const AssembleItem* items, std::size_t num_items,
                    const ConvertParams* params, void* const* tensors, OutKind out, CUstream_st* stream) {
  if (num_items == 0) return;
  // Items are at most 2^31 - 1 per launch (grid x); launch in slices.
  constexpr std::size_t kMaxGrid = 0x7FFFFFFF;
  for (std::size_t first = 0; first < num_items; first += kMaxGrid) {
    const auto n = static_cast<unsigned>(num_items - first < kMaxGrid ? num_items - first : kMaxGrid);
    assemble_kernel<<<n, 256, 0, stream>>>(pieces, items + first, params, tensors, out);
    CS_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace cubestream::cuda
