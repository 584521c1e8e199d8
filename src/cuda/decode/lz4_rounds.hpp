// numcodecs lz4 buffers decoded in rounds of readiness (codec/logic/lz4_rounds.hpp says how and
// why): one thread block of 256 threads per buffer, a thread per input region; the split walk
// checks the block and finds the regions' entries, each thread copies its region's literals and
// keeps its matches, and in rounds each thread copies the matches whose source bytes are done.
// Buffers the path declines (a header that does not match, blocks larger than their output or
// of 4 GiB or more, outputs below min_bytes, no fixed point, damage, too many rounds, no room
// left in the scratch) are listed for the ring kernel (batch_decode.cu), which runs after it and
// gives them the serial decoder's status. Off by default: CUBESTREAM_LZ4_PATH=rounds asks for it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda::detail {

struct Lz4RoundsScratch {
  unsigned long long* counter;  // buffers taken by the thread blocks
  unsigned long long* cursor;   // pool bytes handed out
  std::uint32_t* ring_count;    // buffers left to the ring kernel, listed in ring_list
  std::uint32_t* ring_list;     // N
  std::uint8_t* pool;           // records and bitmaps, handed out per buffer (16-byte aligned)
  unsigned long long pool_bytes;
  std::uint32_t region_min;     // the split walk's smallest region (kLz4RoundsRegionMin; tests
                                // set it lower to cut small blocks into many regions)
  bool records;                 // the walks keep sequence records and the emit reads them instead
                                // of walking again (CUBESTREAM_LZ4_ROUNDS_WALK=records)
  std::uint64_t min_bytes;      // buffers decoding to fewer bytes are left to the ring kernel
                                // (CUBESTREAM_LZ4_ROUNDS_MIN; 0: none)
};

// Scratch bytes for n buffers decoding to total_decoded bytes: 256 bytes of counters, the list,
// and a pool that holds every buffer's records and bitmap (~4.1 bytes a decoded byte; ~5.5 with
// `records`, whose slots hold 16-byte sequence records).
std::size_t lz4_rounds_scratch_bytes(std::size_t n, std::size_t total_decoded, bool records = false);

// Carves `bytes` of device scratch (256-byte aligned) for n buffers; the pool is whatever
// follows the fixed part (buffers that do not fit it go to the ring kernel). `ok` is false where
// the fixed part does not fit.
Lz4RoundsScratch lz4_rounds_scratch(void* base, std::size_t bytes, std::size_t n, bool records, bool* ok);

// Enqueues the rounds kernel on `stream` (zeroing the counters first). Every buffer gets its
// status except those listed in ring_list (*ring_count of them), which the caller must decode.
// `order`: the buffers' order (largest first).
void lz4_rounds_enqueue(const DeviceBatch& b, const std::uint32_t* order, const Lz4RoundsScratch& s,
                        cudaStream_t stream);

}  // namespace cubestream::cuda::detail
