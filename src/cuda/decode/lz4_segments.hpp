// numcodecs lz4 buffers decoded in segments (codec/logic/lz4_segments.hpp says how and why):
// a walk kernel, one thread block per buffer (the table walk), checks each block and marks its
// segments; a segment
// kernel, one warp per segment, copies literals and then, after the segment before it in the
// same block, the matches. Buffers this path cannot take (32-bit positions, no room left for
// their segments) are listed for the ring kernel (batch_decode.cu), which runs after it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_segments.hpp"
#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda::detail {

// The path's scratch, carved out of the caller's by lz4_segment_scratch.
struct Lz4SegmentScratch {
  unsigned long long* seg_queue;     // the segment kernel's work-queue counter
  unsigned long long* cursor;        // slots handed out to buffers by the walk
  std::uint32_t* max_segments;       // the most segments any buffer has
  std::uint32_t* ring_count;         // buffers left to the ring kernel, listed in ring_list
  unsigned long long* seg_base;      // N: the buffer's first slot
  std::uint32_t* seg_count;          // N: its segments (0: nothing for the segment kernel)
  std::uint32_t* ring_list;          // N
  codec::logic::Lz4Segment* segs;    // capacity slots: where each segment starts
  std::uint32_t* flags;              // capacity slots: 1 once the segment's matches are written
  unsigned long long capacity;
};

// Scratch bytes for n buffers decoding to total_decoded bytes: the fixed part (counters and
// per-buffer arrays) and slots for every segment the walk can mark (lz4_segment_bound with the
// largest input a valid block of that size can have).
std::size_t lz4_segment_scratch_bytes(std::size_t n, std::size_t total_decoded);

// Carves `bytes` of device scratch (256-byte aligned) for n buffers; capacity is what remains
// after the fixed part. `ok` is false where the fixed part does not fit.
Lz4SegmentScratch lz4_segment_scratch(void* base, std::size_t bytes, std::size_t n, bool* ok);

// Enqueues the walk and the segment kernel on `stream`. Every buffer gets its status from the
// walk except those listed in ring_list (*ring_count of them), which the caller must decode:
// blocks of 4 GiB or more (32-bit positions) and buffers whose segments do not fit the scratch.
// `order`: the walk's buffer order (largest first). `table_walk`: the table walk
// (lz4_segment_walk_table, a thread block per buffer), else the serial walk (lz4_segment_walk, a
// warp per buffer); both mark the same segments and give the same statuses.
void lz4_segments_enqueue(const DeviceBatch& b, const std::uint32_t* order, const Lz4SegmentScratch& s,
                          bool table_walk, cudaStream_t stream);

}  // namespace cubestream::cuda::detail
