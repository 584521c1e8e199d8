// numcodecs lz4 buffers decoded in segments (codec/logic/lz4_segments.hpp says how and why): a
// walk, one thread block per buffer (the table walk; where CUBESTREAM_LZ4_SPLIT_REGION asks,
// the split walk first: codec/logic/lz4_split_walk.hpp), checks each block and marks its
// segments, pushing them onto a queue as soon as their ends are known; segment workers, one warp per
// segment, take them from the queue, copy the literals and then, after the segment before it in
// the same block, the matches (where CUBESTREAM_LZ4_MATCHES=ready, the matches whose bytes are
// final already before that wait: codec/logic/lz4_match_bits.hpp). By default one kernel runs both, so that the segments of the
// blocks walked first decode while later ones are still walked. Buffers this path cannot take
// (32-bit positions, no room left for their segments) or should not (blocks decoding to more
// than 1.4x their size: lz4_segments_take) are listed for the ring kernel (batch_decode.cu),
// which runs after it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "codec/logic/lz4_segments.hpp"
#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda::detail {

// The path's scratch, carved out of the caller's by lz4_segment_scratch.
struct Lz4SegmentScratch {
  unsigned long long* queue_head;    // segment tickets the workers have taken
  unsigned long long* queue_tail;    // segments the walks have pushed
  unsigned long long* cursor;        // slots handed out to buffers by the walk
  unsigned long long* walk_next;     // buffers the fused kernel's walkers have taken
  std::uint32_t* walks_done;         // buffers whose walk has ended (its pushes all visible)
  std::uint32_t* role_ticket;        // thread blocks of the fused kernel that have started
  std::uint32_t* ring_count;         // buffers left to the ring kernel, listed in ring_list
  std::uint32_t* paced_pending;      // segments of split-walked buffers not pushed yet
  unsigned long long* bits_cursor;   // words of `bits` handed out to buffers by the walk
  unsigned long long* seg_base;      // N: the buffer's first slot
  unsigned long long* bits_base;     // N: the buffer's first word of `bits`, or kLz4NoBits (no
                                     // ready pass: every match takes the chained pass)
  std::uint32_t* ring_list;          // N
  std::uint32_t* paced;              // N: a split-walked buffer's segment count (where its
                                     // matches take the chained pass, its later segments are
                                     // pushed as earlier ones finish), else 0
  std::uint32_t* bits;               // bits_words words: the ready pass's pending bits
                                     // (codec/logic/lz4_match_bits.hpp), zeroed per batch
  unsigned long long bits_words;
  unsigned long long* queue;         // capacity: pushed segments (queue_entry), 0 until pushed
  codec::logic::Lz4Segment* segs;    // capacity slots: where each segment starts
  codec::logic::Lz4Runs* runs;       // capacity slots: the segment's runs as its walk noted them
                                     // (seqs 0 for the split walk's), which workers parse side
                                     // by side (codec/logic/lz4_segments.hpp, Lz4Runs); 64 of a
                                     // slot's 84 bytes (none with -DCS_LZ4_RUNS=0)
  std::uint32_t* flags;              // capacity slots: 0 when pushed, 1 once the segment's
                                     // literals and pending bits are in place (buffers with
                                     // bits), 2 once all its bytes are
  unsigned long long capacity;
  // Set by the caller after carving: true takes dense blocks too (lz4_segments_take ignored;
  // CUBESTREAM_LZ4_PATH=segments, for A/B runs and for tests that keep dense blocks on this path).
  bool take_dense;
  // Set by the caller after carving: the split walk's smallest region in bytes (at least
  // kLz4SplitRegionFloor, which the scratch's slots are sized for), or 0 for the table walk alone
  // (CUBESTREAM_LZ4_SPLIT_REGION; 0 unless set).
  std::uint32_t split_region;
  // Set by the carving (true where it carved bits): a segment of a buffer whose bits fit `bits`
  // copies the matches whose bytes are final already before it waits for the segment before it
  // (the ready pass, lz4_match_bits.hpp); false: every match after the segment before (the
  // chained pass alone). Measured slower in the fused kernel (session 27), so off unless
  // CUBESTREAM_LZ4_MATCHES=ready.
  bool ready_first;
};

// Lz4SegmentScratch::bits_base of a buffer without bits.
inline constexpr unsigned long long kLz4NoBits = ~0ull;

// Scratch bytes for n buffers decoding to total_decoded bytes: the fixed part (counters and
// per-buffer arrays), with ready_pass the ready pass's bits (a bit per decoded byte, a word more
// per buffer), and slots for every segment the walk can mark (lz4_segment_bound with the largest
// input a valid block of that size can have).
std::size_t lz4_segment_scratch_bytes(std::size_t n, std::size_t total_decoded, bool ready_pass);

// Carves `bytes` of device scratch (256-byte aligned) for n buffers: with ready_pass the bits
// for the largest total that lz4_segment_scratch_bytes(n, total, true) <= bytes covers (none
// where not even total 0 fits; ready_first says whether any), then slots from the rest
// (capacity). `ok` is false where the fixed part does not fit.
Lz4SegmentScratch lz4_segment_scratch(void* base, std::size_t bytes, std::size_t n, bool ready_pass, bool* ok);

// How the walk runs. kFused: one kernel whose first thread blocks walk (a block per buffer at a
// time, buffers taken in `order`: the table walk, after the split walk where it is on) while
// the others decode the segments already pushed. kTable and kSerial: a walk kernel (the same
// walks, or the serial walk of lz4_segment_walk with a warp per buffer), then the segment
// kernel. All give the same statuses; the table and serial walks mark the same segments, the
// split walk also one at each region's entry (codec/logic/lz4_split_walk.hpp). kTable and
// kSerial are kept for A/B runs (CUBESTREAM_LZ4_WALK=table|serial).
enum class Lz4WalkMode { kFused, kTable, kSerial };

// Enqueues the walk and the segment workers on `stream`. Every buffer gets its status from the
// walk except those listed in ring_list (*ring_count of them), which the caller must decode:
// blocks of 4 GiB or more (32-bit positions), dense blocks (lz4_segments_take) and buffers
// whose segments do not fit the scratch.
// `order`: the walk's buffer order (largest first).
void lz4_segments_enqueue(const DeviceBatch& b, const std::uint32_t* order, const Lz4SegmentScratch& s,
                          Lz4WalkMode mode, cudaStream_t stream);

}  // namespace cubestream::cuda::detail
