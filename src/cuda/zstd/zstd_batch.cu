// Batched Zstandard decoding: version 1, one warp per buffer.
//
// Each warp takes buffers from a queue (an atomic counter in the scratch) and runs the
// shared decoder (src/codec/logic/zstd/decoder.hpp) as a WarpTeam: all 32 lanes follow the
// same control flow over the same bytes (parsing, FSE/Huffman table descriptions, sequence
// decoding; their loads of the same address are one broadcast), and split the data-parallel
// parts: the four Huffman streams of a literals section (lanes 0-3), Huffman table fills,
// raw/RLE blocks, literal copies and match copies (32 bytes per step), and the four XXH64
// accumulators of the checksum. Each warp has its own ZstdWorkspace in the scratch.
// docs/gpu_zstd.md has the byte and operation counts and the plan for version 2.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <string>

#include "codec/logic/zstd/decoder.hpp"
#include "cubestream/error.hpp"
#include "cuda/check.hpp"
#include "cuda/zstd/zstd_batch.hpp"

namespace cubestream::cuda {

namespace zl = codec::logic::zstd;
using codec::logic::DecodeStatus;

namespace {

constexpr std::size_t kScratchAlign = 256;
constexpr int kWarpsPerBlock = 4;
// The scratch begins with the queue counter, then the workspaces, each 256-byte aligned.
constexpr std::size_t kHeaderBytes = kScratchAlign;
constexpr std::size_t kWorkspaceStride = (sizeof(zl::ZstdWorkspace) + kScratchAlign - 1) / kScratchAlign * kScratchAlign;

// A team of the 32 lanes of a warp (see SerialTeam in codec/logic/zstd/common.hpp).
struct WarpTeam {
  unsigned lane;
  CS_HD unsigned rank() const { return lane; }
  CS_HD unsigned size() const { return 32; }
  CS_HD void sync() const {
#if CS_DEVICE_PASS
    __syncwarp();
#endif
  }
  CS_HD bool any(bool b) const {
#if CS_DEVICE_PASS
    __syncwarp();
    return __any_sync(0xFFFFFFFFu, b) != 0;
#else
    return b;
#endif
  }
};

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    zstd_decode_warp_kernel(const void* const* src, const std::size_t* src_sizes, void* const* dst,
                            const std::size_t* dst_sizes, DecodeStatus* status, std::size_t num_buffers,
                            unsigned long long* queue, unsigned char* workspaces, std::size_t num_warps,
                            bool verify) {
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x & 31u;
  if (warp >= num_warps) return;
  auto* ws = reinterpret_cast<zl::ZstdWorkspace*>(workspaces + warp * kWorkspaceStride);
  const WarpTeam team{lane};
  for (;;) {
    unsigned long long b = 0;
    if (lane == 0) b = atomicAdd(queue, 1ull);
    b = __shfl_sync(0xFFFFFFFFu, b, 0);
    if (b >= num_buffers) break;
    const std::size_t n = src_sizes[b];
    if (n == 0) continue;  // skipped: status untouched
    const DecodeStatus s = zl::zstd_decompress(team, static_cast<const zl::u8*>(src[b]), n,
                                               static_cast<zl::u8*>(dst[b]), dst_sizes[b], ws, verify);
    if (lane == 0) status[b] = s;
    __syncwarp();
  }
}

std::size_t warps_for(std::size_t num_buffers) {
  return num_buffers < kZstdBatchMaxWarps ? (num_buffers ? num_buffers : 1) : kZstdBatchMaxWarps;
}

}  // namespace

std::size_t zstd_batch_scratch_bytes(std::size_t num_buffers) {
  return kHeaderBytes + warps_for(num_buffers) * kWorkspaceStride + kScratchAlign;
}

std::size_t zstd_batch_min_scratch_bytes() { return kHeaderBytes + kWorkspaceStride + kScratchAlign; }

void zstd_batch_decode(const void* const* d_src, const std::size_t* d_src_sizes, void* const* d_dst,
                       const std::size_t* d_dst_sizes, DecodeStatus* d_status, std::size_t num_buffers,
                       void* d_scratch, std::size_t scratch_bytes, bool verify_checksum, cudaStream_t stream) {
  if (num_buffers == 0) return;
  if (!d_src || !d_src_sizes || !d_dst || !d_dst_sizes || !d_status || !d_scratch) {
    throw Error(ErrorCode::kInvalidArgument, "zstd_batch_decode: null device pointer");
  }
  if (scratch_bytes < zstd_batch_min_scratch_bytes()) {
    throw Error(ErrorCode::kInvalidArgument, "zstd_batch_decode: scratch of " + std::to_string(scratch_bytes) +
                                                 " bytes, at least " +
                                                 std::to_string(zstd_batch_min_scratch_bytes()) + " needed");
  }
  nvtxRangePushA("cubestream::cuda::zstd_batch_decode");
  // Align the scratch start; the first 256 bytes hold the queue counter.
  const auto addr = reinterpret_cast<std::uintptr_t>(d_scratch);
  const std::size_t pad = (kScratchAlign - addr % kScratchAlign) % kScratchAlign;
  auto* base = static_cast<unsigned char*>(d_scratch) + pad;
  const std::size_t usable = scratch_bytes - pad - kHeaderBytes;
  std::size_t warps = usable / kWorkspaceStride;
  if (warps > warps_for(num_buffers)) warps = warps_for(num_buffers);
  auto* queue = reinterpret_cast<unsigned long long*>(base);
  CS_CUDA_CHECK(cudaMemsetAsync(queue, 0, sizeof(unsigned long long), stream));
  const unsigned threads = kWarpsPerBlock * 32;
  const unsigned blocks = static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
  zstd_decode_warp_kernel<<<blocks, threads, 0, stream>>>(d_src, d_src_sizes, d_dst, d_dst_sizes, d_status,
                                                          num_buffers, queue, base + kHeaderBytes, warps,
                                                          verify_checksum);
  const cudaError_t launch = cudaGetLastError();
  nvtxRangePop();
  CS_CUDA_CHECK(launch);
}

}  // namespace cubestream::cuda
