// The byte-level filters on the GPU, batched like the decoders: numcodecs shuffle, delta and
// fixedscaleoffset, the bytes codec's byte swap, and transpose. Each buffer's status depends
// only on its sizes, which the first thread block of the buffer checks and records; every
// thread repeats the check and does nothing for a buffer that fails it.
//
// Grid: blockIdx.y walks the buffers (a stride loop, gridDim.y <= 65535), blockIdx.x and the
// threads walk a buffer's elements. Element-wise work is bandwidth-bound: each element is read
// and written once.
#include <cuda_runtime_api.h>

#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <string>

#include "codec/logic/byte_shuffle.hpp"
#include "codec/logic/numcodecs_filters.hpp"
#include "cubestream/error.hpp"
#include "cuda/check.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "cuda/decode/nvtx_range.hpp"

namespace cubestream::cuda {

namespace {

namespace logic = codec::logic;

constexpr int kThreads = 256;
constexpr unsigned kMaxGridY = 65535;
constexpr unsigned kMaxGridX = 2048;

dim3 element_grid(std::size_t num_buffers, std::size_t max_items) {
  const std::size_t x = std::max<std::size_t>(1, std::min<std::size_t>((max_items + kThreads - 1) / kThreads, kMaxGridX));
  const std::size_t y = std::max<std::size_t>(1, std::min<std::size_t>(num_buffers, kMaxGridY));
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

// Records `st` for buffer i (first thread of the buffer's first block) and says whether to work.
__device__ bool record(const DeviceBatch& b, std::size_t i, DecodeStatus st) {
  if (blockIdx.x == 0 && threadIdx.x == 0) b.status[i] = st;
  return st == DecodeStatus::kOk;
}

__device__ std::size_t first_item() { return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; }
__device__ std::size_t item_stride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// ---- shuffle -------------------------------------------------------------------------------

__global__ void unshuffle_kernel(DeviceBatch b, std::size_t es) {
  for (std::size_t i = blockIdx.y; i < b.num_buffers; i += gridDim.y) {
    const std::size_t bytes = b.src_bytes[i];
    DecodeStatus st = DecodeStatus::kOk;
    if (bytes != b.dst_bytes[i]) st = DecodeStatus::kWrongSize;
    else if (es > 1 && bytes % es != 0) st = DecodeStatus::kCorrupt;  // numcodecs refuses partial elements
    if (!record(b, i, st)) continue;
    const std::uint8_t* src = b.src[i];
    std::uint8_t* dst = b.dst[i];
    if (es <= 1) {
      for (std::size_t k = first_item(); k < bytes; k += item_stride()) dst[k] = src[k];
      continue;
    }
    const std::size_t n = bytes / es;
    // one element per thread: plane reads are coalesced across the threads of a warp
    for (std::size_t e = first_item(); e < n; e += item_stride()) {
      switch (es) {
        case 2: logic::unshuffle_elements_fixed<2>(src, dst, n, e, e + 1); break;
        case 4: logic::unshuffle_elements_fixed<4>(src, dst, n, e, e + 1); break;
        case 8: logic::unshuffle_elements_fixed<8>(src, dst, n, e, e + 1); break;
        default: logic::unshuffle_elements(src, dst, n, es, e, e + 1); break;
      }
    }
  }
}

// ---- byte swap -------------------------------------------------------------------------------

__global__ void byteswap_kernel(DeviceBatch b, std::size_t unit) {
  for (std::size_t i = blockIdx.y; i < b.num_buffers; i += gridDim.y) {
    const std::size_t bytes = b.src_bytes[i];
    DecodeStatus st = DecodeStatus::kOk;
    if (bytes != b.dst_bytes[i]) st = DecodeStatus::kWrongSize;
    else if (unit > 1 && bytes % unit != 0) st = DecodeStatus::kCorrupt;
    if (!record(b, i, st)) continue;
    const std::uint8_t* src = b.src[i];
    std::uint8_t* dst = b.dst[i];
    if (unit <= 1) {
      for (std::size_t k = first_item(); k < bytes; k += item_stride()) dst[k] = src[k];
      continue;
    }
    const std::size_t n = bytes / unit;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) % unit == 0;
    for (std::size_t e = first_item(); e < n; e += item_stride()) {
      if (aligned && unit == 4) {
        reinterpret_cast<std::uint32_t*>(dst)[e] = __byte_perm(reinterpret_cast<const std::uint32_t*>(src)[e], 0, 0x0123);
      } else if (aligned && unit == 2) {
        const std::uint16_t v = reinterpret_cast<const std::uint16_t*>(src)[e];
        reinterpret_cast<std::uint16_t*>(dst)[e] = static_cast<std::uint16_t>((v >> 8) | (v << 8));
      } else if (aligned && unit == 8) {
        const std::uint64_t v = reinterpret_cast<const std::uint64_t*>(src)[e];
        const auto lo = static_cast<std::uint32_t>(v), hi = static_cast<std::uint32_t>(v >> 32);
        reinterpret_cast<std::uint64_t*>(dst)[e] =
            (static_cast<std::uint64_t>(__byte_perm(lo, 0, 0x0123)) << 32) | __byte_perm(hi, 0, 0x0123);
      } else {
        for (std::size_t k = 0; k < unit; ++k) dst[e * unit + k] = src[e * unit + unit - 1 - k];
      }
    }
  }
}

// ---- fixedscaleoffset ------------------------------------------------------------------------

__device__ DecodeStatus elementwise_sizes(const DeviceBatch& b, std::size_t i, logic::NumType astype,
                                          logic::NumType dtype, std::size_t* n) {
  const std::size_t in = b.src_bytes[i];
  if (in % astype.size != 0) return DecodeStatus::kCorrupt;
  *n = in / astype.size;
  return *n * dtype.size == b.dst_bytes[i] ? DecodeStatus::kOk : DecodeStatus::kWrongSize;
}

__global__ void fixedscaleoffset_kernel(DeviceBatch b, logic::FixedScaleOffsetParams p) {
  for (std::size_t i = blockIdx.y; i < b.num_buffers; i += gridDim.y) {
    std::size_t n = 0;
    if (!record(b, i, elementwise_sizes(b, i, p.astype, p.dtype, &n))) continue;
    for (std::size_t e = first_item(); e < n; e += item_stride()) logic::fixedscaleoffset_element(p, b.src[i], b.dst[i], e);
  }
}

// ---- delta -----------------------------------------------------------------------------------

struct DeltaCombine {
  logic::DeltaParams p;
  __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return logic::delta_int_combine(p, a, b); }
};

// Integer delta: one thread block per buffer scans tiles of kThreads * kItems elements; the
// running total of the tiles before is combined into each (modular sums: exact in any order).
constexpr int kItems = 8;

__global__ void __launch_bounds__(kThreads) delta_int_kernel(DeviceBatch b, logic::DeltaParams p) {
  using Scan = cub::BlockScan<std::uint64_t, kThreads>;
  __shared__ typename Scan::TempStorage temp;
  const DeltaCombine op{p};
  for (std::size_t i = blockIdx.x; i < b.num_buffers; i += gridDim.x) {
    std::size_t n = 0;
    const DecodeStatus st = elementwise_sizes(b, i, p.astype, p.dtype, &n);
    if (threadIdx.x == 0) b.status[i] = st;
    if (st != DecodeStatus::kOk) continue;
    std::uint64_t carry = 0;
    for (std::size_t tile = 0; tile < n; tile += static_cast<std::size_t>(kThreads) * kItems) {
      std::uint64_t v[kItems];
      const std::size_t base = tile + static_cast<std::size_t>(threadIdx.x) * kItems;
      // elements past the end contribute the identity (0 for sums, false for or)
      for (int k = 0; k < kItems; ++k) v[k] = base + k < n ? logic::delta_int_term(p, b.src[i], base + k) : 0;
      std::uint64_t aggregate = 0;
      Scan(temp).InclusiveScan(v, v, op, aggregate);
      for (int k = 0; k < kItems; ++k) {
        if (base + k < n) logic::delta_int_store(p, b.dst[i], base + k, tile == 0 ? v[k] : op(carry, v[k]));
      }
      carry = tile == 0 ? aggregate : op(carry, aggregate);
      __syncthreads();  // temp is reused by the next tile
    }
  }
}

// Float delta: numpy's order of additions, one thread per buffer.
__global__ void delta_float_kernel(DeviceBatch b, logic::DeltaParams p) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < b.num_buffers;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t n = 0;
    const DecodeStatus st = elementwise_sizes(b, i, p.astype, p.dtype, &n);
    b.status[i] = st;
    if (st == DecodeStatus::kOk) logic::delta_float_decode(p, b.src[i], b.dst[i], n);
  }
}

// ---- transpose -------------------------------------------------------------------------------

constexpr int kMaxRank = 8;

struct TransposeParams {
  int rank = 0;
  std::int64_t dec_shape[kMaxRank] = {};       // decoded (output) shape
  std::int64_t enc_stride_of[kMaxRank] = {};   // encoded element stride of each decoded axis
  std::size_t elems = 0;
  std::size_t elem_size = 0;
};

__global__ void transpose_kernel(DeviceBatch b, TransposeParams t) {
  const std::size_t bytes = t.elems * t.elem_size;
  for (std::size_t i = blockIdx.y; i < b.num_buffers; i += gridDim.y) {
    const DecodeStatus st =
        b.src_bytes[i] == bytes && b.dst_bytes[i] == bytes ? DecodeStatus::kOk : DecodeStatus::kWrongSize;
    if (!record(b, i, st)) continue;
    const std::uint8_t* src = b.src[i];
    std::uint8_t* dst = b.dst[i];
    const bool aligned =
        (reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) % t.elem_size == 0;
    for (std::size_t e = first_item(); e < t.elems; e += item_stride()) {
      // the decoded index of output element e, innermost axis last, mapped to its encoded offset
      std::size_t rest = e, from = 0;
      for (int a = t.rank - 1; a >= 0; --a) {
        const auto extent = static_cast<std::size_t>(t.dec_shape[a]);
        from += (rest % extent) * static_cast<std::size_t>(t.enc_stride_of[a]);
        rest /= extent;
      }
      switch (aligned ? t.elem_size : 0) {
        case 1: dst[e] = src[from]; break;
        case 2: reinterpret_cast<std::uint16_t*>(dst)[e] = reinterpret_cast<const std::uint16_t*>(src)[from]; break;
        case 4: reinterpret_cast<std::uint32_t*>(dst)[e] = reinterpret_cast<const std::uint32_t*>(src)[from]; break;
        case 8: reinterpret_cast<std::uint64_t*>(dst)[e] = reinterpret_cast<const std::uint64_t*>(src)[from]; break;
        default:
          for (std::size_t k = 0; k < t.elem_size; ++k) dst[e * t.elem_size + k] = src[from * t.elem_size + k];
      }
    }
  }
}

void launched() { CS_CUDA_CHECK(cudaGetLastError()); }

// The filters see sizes only on the device; a grid wide enough for 16 MiB of elements per
// buffer keeps every SM busy for batches of a few buffers, and stride loops cover larger ones.
constexpr std::size_t kGridItems = std::size_t{16} << 20;

}  // namespace

void batch_unshuffle(const DeviceBatch& batch, std::size_t elementsize, StreamHandle stream) {
  const detail::NvtxRange range("cubestream::batch_unshuffle");
  if (batch.num_buffers == 0) return;
  unshuffle_kernel<<<element_grid(batch.num_buffers, kGridItems / std::max<std::size_t>(1, elementsize)), kThreads, 0,
                     stream>>>(batch, elementsize);
  launched();
}

void batch_byteswap(const DeviceBatch& batch, std::size_t unit, StreamHandle stream) {
  const detail::NvtxRange range("cubestream::batch_byteswap");
  if (batch.num_buffers == 0) return;
  byteswap_kernel<<<element_grid(batch.num_buffers, kGridItems / std::max<std::size_t>(1, unit)), kThreads, 0,
                    stream>>>(batch, unit);
  launched();
}

void batch_fixedscaleoffset(const DeviceBatch& batch, const logic::FixedScaleOffsetParams& params,
                            StreamHandle stream) {
  const detail::NvtxRange range("cubestream::batch_fixedscaleoffset");
  if (batch.num_buffers == 0) return;
  fixedscaleoffset_kernel<<<element_grid(batch.num_buffers, kGridItems / params.dtype.size), kThreads, 0, stream>>>(
      batch, params);
  launched();
}

void batch_delta(const DeviceBatch& batch, logic::NumType dtype, logic::NumType astype, StreamHandle stream) {
  const detail::NvtxRange range("cubestream::batch_delta");
  if (batch.num_buffers == 0) return;
  const logic::DeltaParams p = logic::delta_params(dtype, astype);
  if (logic::delta_is_float(p)) {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((batch.num_buffers + 127) / 128, 4096));
    delta_float_kernel<<<blocks, 128, 0, stream>>>(batch, p);
  } else {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(batch.num_buffers, 65535));
    delta_int_kernel<<<blocks, kThreads, 0, stream>>>(batch, p);
  }
  launched();
}

void batch_transpose(const DeviceBatch& batch, const std::vector<std::int64_t>& encoded_shape,
                     const std::vector<int>& order, std::size_t elem_size, StreamHandle stream) {
  const detail::NvtxRange range("cubestream::batch_transpose");
  const std::size_t rank = encoded_shape.size();
  if (rank > static_cast<std::size_t>(kMaxRank) || order.size() != rank || elem_size == 0) {
    throw Error(ErrorCode::kInvalidArgument, "batch_transpose: rank " + std::to_string(rank) + " (at most " +
                                                 std::to_string(kMaxRank) + "), order of " +
                                                 std::to_string(order.size()) + " axes, element size " +
                                                 std::to_string(elem_size));
  }
  TransposeParams t;
  t.rank = static_cast<int>(rank);
  t.elem_size = elem_size;
  t.elems = 1;
  std::vector<bool> seen(rank, false);
  std::int64_t stride = 1;
  for (std::size_t k = rank; k-- > 0;) {
    const int a = order[k];
    if (a < 0 || static_cast<std::size_t>(a) >= rank || seen[a] || encoded_shape[k] < 0)
      throw Error(ErrorCode::kInvalidArgument, "batch_transpose: order is not a permutation of the axes");
    seen[a] = true;
    // encoded axis k is decoded axis order[k]: encoded_shape[k] = decoded_shape[order[k]]
    t.dec_shape[a] = encoded_shape[k];
    t.enc_stride_of[a] = stride;
    stride *= encoded_shape[k];
    t.elems *= static_cast<std::size_t>(encoded_shape[k]);
  }
  if (batch.num_buffers == 0) return;
  transpose_kernel<<<element_grid(batch.num_buffers, std::max<std::size_t>(1, t.elems)), kThreads, 0, stream>>>(batch,
                                                                                                              t);
  launched();
}

}  // namespace cubestream::cuda
