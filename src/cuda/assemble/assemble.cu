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
// long software sequence on the GPU, ~3-4x a 32-bit one, and runs once per dim per element).
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

// Items blockIdx.x, blockIdx.x + gridDim.x, ...: a grid of one block per item, or a smaller
// one whose blocks each take several (see assemble_batch). Each thread loads kIlp elements
// before it converts and stores any: with one load in flight per thread, a block waited a
// memory latency per element, and a grid bounded to a quarter of the GPU ran the assembly 13x
// slower than a block per item (H100, U-Net batch: 20.7 against 1.6 ms a step).
constexpr int kIlp = 8;

__global__ void assemble_kernel(const AssemblePiece* pieces, const AssembleItem* items, std::size_t num_items,
                                const ConvertParams* params, void* const* tensors, OutKind out) {
  for (std::size_t it = blockIdx.x; it < num_items; it += gridDim.x) {
    const AssembleItem item = items[it];
    const AssemblePiece& pc = pieces[item.piece];
    const ConvertParams c = params[pc.params];
    void* tensor = tensors[pc.tensor];
    std::int64_t total = 1;
    for (int l = 0; l < pc.ndims; ++l) total *= pc.count[l];
    const bool narrow = total <= 0xFFFFFFFFll;
    const std::int64_t tile = std::int64_t{kIlp} * blockDim.x;
    for (std::int64_t base = item.begin + threadIdx.x; base < item.end; base += tile) {
      double v[kIlp];
      std::int64_t dofs[kIlp];  // -1: past the item's end
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        const std::int64_t e = base + std::int64_t{k} * blockDim.x;
        dofs[k] = -1;
        v[k] = 0;
        if (e < item.end) {
          std::int64_t so = 0;
          if (narrow) {
            piece_offsets<std::uint32_t>(pc, static_cast<std::uint32_t>(e), &so, &dofs[k]);
          } else {
            piece_offsets<std::int64_t>(pc, e, &so, &dofs[k]);
          }
          v[k] = load_value(pc.src + so * c.size, c);
        }
      }
#pragma unroll
      for (int k = 0; k < kIlp; ++k) {
        if (dofs[k] < 0) continue;
        const float f = convert(v[k], c);
        switch (out) {
          case OutKind::kFloat32: static_cast<float*>(tensor)[dofs[k]] = f; break;
          case OutKind::kBFloat16: static_cast<std::uint16_t*>(tensor)[dofs[k]] = core::bfloat16_bits(f); break;
          case OutKind::kFloat16: static_cast<std::uint16_t*>(tensor)[dofs[k]] = core::float16_bits(f); break;
        }
      }
    }
  }
}

}  // namespace

void assemble_batch(const AssemblePiece* pieces, const AssembleItem* items, std::size_t num_items,
                    const ConvertParams* params, void* const* tensors, OutKind out, CUstream_st* stream,
                    unsigned max_blocks) {
  if (num_items == 0) return;
  // The grid's x dimension holds at most 2^31 - 1 blocks; the blocks loop over the items.
  constexpr std::size_t kMaxGrid = 0x7FFFFFFF;
  std::size_t grid = num_items < kMaxGrid ? num_items : kMaxGrid;
  if (max_blocks == kAssembleBlockPerSm) {
    int dev = 0, sms = 0;
    CS_CUDA_CHECK(cudaGetDevice(&dev));
    CS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    max_blocks = static_cast<unsigned>(sms > 0 ? sms : 1);
  }
  if (max_blocks != 0 && grid > max_blocks) grid = max_blocks;
  assemble_kernel<<<static_cast<unsigned>(grid), 256, 0, stream>>>(pieces, items, num_items, params, tensors, out);
  CS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cubestream::cuda
