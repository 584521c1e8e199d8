// Batched Zstandard decoding on the GPU: versions 2-3, thousands of blocks in flight, with
// version 1 (one warp per buffer) as the path for whatever does not fit the scratch.
//
// Launches, all stream-ordered (docs/gpu_zstd.md has the design, counts and timings):
//   plan      one thread per buffer: plan_buffer_bound (codec/logic/zstd/split.hpp) bounds its
//             steps and scratch, reserves both from counters in the scratch (or marks the
//             buffer for version 1 when they do not fit), then plan_buffer writes the steps.
//   order     two one-CTA sorts (largest_first.cuh): the buffers by decoded size for the execute
//             pass's CTAs, the steps by compressed block size for the entropy queue
//             (CUBESTREAM_ZSTD_EXEC_ORDER=index, CUBESTREAM_ZSTD_ENTROPY_ORDER=index keep the
//             index and plan orders).
//   entropy   one warp per compressed block of the whole batch, from a queue: rebuilds the
//             block's Huffman and FSE tables in shared memory, decodes its literals (four
//             Huffman streams on lanes 0-3) and copies its sequence-code tables to the scratch.
//   sequences one lane per block (32 or 16 per one-warp CTA, by the batch's step count): by
//             default each lane only traces its block's sequence stream, the dependent chain of
//             FSE states (sequence_trace.hpp), with the block's ChainTables (2.5 KiB) copied
//             into its slot of shared memory, so that every lookup of the chain is a
//             shared-memory load (docs/gpu_zstd.md, v3.7 and v3.11); with
//             CUBESTREAM_ZSTD_SEQ_READER=window|bits|general the lanes decode the records
//             themselves from the SeqTables, as up to v3.10.
//   records   (traced pass 2b) one warp per block with sequences, from a queue: 32 sequences
//             at a time, their values from the trace and the stream, the repeat offsets from a
//             warp scan (or, in chunks without a repeat offset, from the two lanes below), the
//             records written over the trace entries, the group table from running sums.
//   execute   by default one CTA of W warps per buffer (CUBESTREAM_ZSTD_EXEC_WARPS, 8): the
//             warps take the buffer's groups of 32 sequences (and its raw, RLE and trailing
//             literal copies, checksums) in order from a counter in shared memory and copy a
//             match once the bytes it reads are final (execute_groups.hpp; docs/gpu_zstd.md,
//             v3.6). CUBESTREAM_ZSTD_EXEC=warp selects the earlier kernel instead: one warp
//             per buffer running its steps in order, 32 sequences at a time (prefix sums give
//             every lane its output position; lanes copy their own literals and matches, long
//             ones go to the whole warp; matches wait in rounds only when they read bytes of a
//             match of the same group); software-pipelined: records two groups ahead, the
//             next group's short literals and matches preloaded into registers while the
//             current group is copied.
//   version 1 one warp per buffer marked in the plan (or every buffer when the scratch is too
//             small for the plan's bookkeeping): the shared one-pass decoder as a WarpTeam.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "codec/logic/zstd/decoder.hpp"
#include "codec/logic/zstd/execute_groups.hpp"
#include "codec/logic/zstd/sequence_trace.hpp"
#include "codec/logic/zstd/split.hpp"
#include "cubestream/error.hpp"
#include "cuda/check.hpp"
#include "cuda/device_info.hpp"
#include "cuda/largest_first.cuh"
#include "cuda/zstd/zstd_batch.hpp"

namespace cubestream::cuda {

namespace zl = codec::logic::zstd;
using codec::logic::DecodeStatus;

namespace {

constexpr std::size_t kScratchAlign = 256;
// Where the plan sends a buffer (BufferPlan::route).
constexpr unsigned kRouteSkip = 0, kRouteV2 = 1, kRouteV1 = 2;
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
#if CS_DEVICE_PASS
  __device__ zl::u64 scan_add(zl::u64 v) const {
    for (unsigned d = 1; d < 32; d <<= 1) {
      const zl::u64 t = __shfl_up_sync(0xFFFFFFFFu, v, d);
      if (lane >= d) v += t;
    }
    return v;
  }
  __device__ zl::u32 ballot(bool b) const { return __ballot_sync(0xFFFFFFFFu, b); }
  __device__ zl::u32 lowest(zl::u32 m) const { return static_cast<zl::u32>(__ffs(static_cast<int>(m)) - 1); }
  __device__ zl::u32 shfl(zl::u32 v, zl::u32 from) const { return __shfl_sync(0xFFFFFFFFu, v, static_cast<int>(from)); }
  __device__ zl::u64 shfl(zl::u64 v, zl::u32 from) const { return __shfl_sync(0xFFFFFFFFu, v, static_cast<int>(from)); }
#endif
};

// The scratch of version 2: counters, one BufferPlan per buffer, the version-1 workspaces,
// the steps, the block scratch ("arena"); each part 256-byte aligned.
struct Counters {
  unsigned long long v1_queue;
  unsigned long long steps_used;
  unsigned long long arena_used;
  unsigned long long entropy_queue;
  unsigned long long seq_queue;
  unsigned long long records_queue;
};
static_assert(sizeof(Counters) <= kHeaderBytes, "the counters live in the scratch's first 256 bytes");
struct BufferPlan {
  unsigned long long first_step;
  unsigned long long num_steps;
  unsigned route;
  unsigned pad;
};
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    zstd_decode_warp_kernel(const void* const* src, const std::size_t* src_sizes, void* const* dst,
                            const std::size_t* dst_sizes, DecodeStatus* status, std::size_t num_buffers,
                            unsigned long long* queue, unsigned char* workspaces, std::size_t num_warps,
                            const BufferPlan* plans, bool verify) {
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
    if (plans && plans[b].route != kRouteV1) continue;  // decoded by version 2
    const DecodeStatus s = zl::zstd_decompress(team, static_cast<const zl::u8*>(src[b]), n,
                                               static_cast<zl::u8*>(dst[b]), dst_sizes[b], ws, verify);
    if (lane == 0) status[b] = s;
    __syncwarp();
  }
}

// ---- version 2 --------------------------------------------------------------------------

constexpr int kEntropyWarps = 4;   // warps per block of the entropy kernel (tables in shared memory)
// The sequences kernel: one warp per CTA, each of its first steps_per_warp lanes decodes
// whole blocks' sequence streams with that block's packed SeqTables (2.5 KiB) in its slot of
// shared memory: 16 lanes need 41 KiB, so 5 CTAs fit an SM of an H100, 80 blocks at once
// (256 x 4 MiB puts ~66 steps on each of 132 SMs). Where a CTA cannot have the slots (a device
// with less shared memory than steps_per_warp slots, or CUBESTREAM_ZSTD_SEQ_SMEM=0), the same
// kernel reads the tables where pass 2a left them, in the scratch (L1/L2 instead of shared).
constexpr int kSeqLanes = 32;
constexpr std::size_t kSeqSlot = sizeof(zl::SeqTables);
// Words of a lane's stream ring: the trace's, or the window reader's when that is larger.
constexpr unsigned kSeqRingWords = zl::TraceWindow::kRingWords > zl::BackwardWordQueue::kRingWords
                                       ? zl::TraceWindow::kRingWords
                                       : zl::BackwardWordQueue::kRingWords;
// The single-warp execute kernel (CUBESTREAM_ZSTD_EXEC=warp): one warp per CTA and buffer (256
// buffers spread over all SMs rather than 4 per CTA on 64 of them).
constexpr int kExecWarps = 1;
// One thread per buffer walking its block headers and FSE descriptions, each thread in a CTA
// (and so a warp) of its own: the walks of different buffers branch apart at once, so the
// threads of one warp ran one after another (ncu: 1.04 active threads per instruction with 8
// threads per CTA, 3.7 ms at level 3 for 256 x 4 MiB; 128-thread CTAs had put 256 buffers on 2
// SMs: 15 ms).
constexpr int kPlanThreads = 1;
// Version-1 workspaces kept for the buffers that do not fit (and the v1-only path's minimum).
constexpr std::size_t kFallbackWarps = 16;
// A fraction of what remains after the workspaces holds the steps, the rest the arena.
constexpr std::size_t kStepShare = 128;

constexpr std::size_t align_up(std::size_t v) { return (v + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

// Takes `bytes` from `*used` unless that would pass `cap`; returns the old value or ~0.
__device__ unsigned long long reserve(unsigned long long* used, unsigned long long bytes, unsigned long long cap) {
  unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(used);
  for (;;) {
    if (bytes > cap || old > cap - bytes) return ~0ull;
    const unsigned long long seen = atomicCAS(used, old, old + bytes);
    if (seen == old) return old;
    old = seen;
  }
}

__global__ void __launch_bounds__(kPlanThreads)
    zstd_plan_kernel(const void* const* src, const std::size_t* src_sizes, std::size_t num_buffers, Counters* counters,
                     BufferPlan* plans, zl::BlockStep* steps, unsigned long long step_cap,
                     unsigned long long arena_cap) {
  const std::size_t b = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= num_buffers) return;
  const std::size_t n = src_sizes[b];
  BufferPlan plan{0, 0, kRouteSkip, 0};
  if (n != 0) {
    const auto* p = static_cast<const zl::u8*>(src[b]);
    short norm[zl::kFseMaxSymbols];
    zl::PlanTotals need{};
    zl::plan_buffer_bound(p, n, norm, &need);  // the descriptions are parsed once, below
    // Arena first: arena reserved for a buffer that then gets no steps just stays unused,
    // whereas every reserved step must be written (the entropy kernel reads them all).
    const unsigned long long a0 = reserve(&counters->arena_used, need.scratch, arena_cap);
    const unsigned long long s0 = a0 == ~0ull ? ~0ull : reserve(&counters->steps_used, need.steps, step_cap);
    if (s0 == ~0ull) {
      plan.route = kRouteV1;
    } else {
      zl::PlanTotals wrote{};
      zl::plan_buffer(p, n, steps + s0, a0, norm, &wrote);
      for (unsigned long long k = 0; k < wrote.steps; ++k) steps[s0 + k].owner = b;
      // Reserved past a damaged description's error step: error steps, which the entropy and
      // sequences kernels skip and the execute kernel never reaches (it runs wrote.steps).
      for (unsigned long long k = wrote.steps; k < need.steps; ++k) {
        zl::BlockStep e{};
        e.kind = zl::kStepError;
        e.status = static_cast<zl::u32>(DecodeStatus::kCorrupt);
        e.owner = b;
        steps[s0 + k] = e;
      }
      plan = BufferPlan{s0, wrote.steps, kRouteV2, 0};
    }
  }
  plans[b] = plan;
}

__global__ void __launch_bounds__(kEntropyWarps * 32)
    zstd_entropy_kernel(const void* const* src, Counters* counters, zl::BlockStep* steps, unsigned char* arena,
                        const std::uint32_t* order) {
  __shared__ zl::ZstdTables tables[kEntropyWarps];
  const unsigned lane = threadIdx.x & 31u, w = threadIdx.x / 32;
  const WarpTeam team{lane};
  const unsigned long long total = *reinterpret_cast<volatile unsigned long long*>(&counters->steps_used);
  for (;;) {
    unsigned long long k = 0;
    if (lane == 0) k = atomicAdd(&counters->entropy_queue, 1ull);
    k = __shfl_sync(0xFFFFFFFFu, k, 0);
    if (k >= total) break;
    if (order) k = order[k];  // the largest compressed blocks first
    zl::BlockStep st = steps[k];
    if (st.kind != zl::kStepCompressed) continue;
    const auto* p = static_cast<const zl::u8*>(src[st.owner]);
    zl::decode_block_literals(team, p, &st, &tables[w], arena + st.scratch);
    if (lane == 0) {
      steps[k].status = st.status;
      steps[k].n_ok = st.n_ok;
      for (int r = 0; r < 3; ++r) steps[k].reps_end[r] = st.reps_end[r];
    }
    __syncwarp();
  }
}

// Pass 2b (or, traced, its first half): a warp takes steps_per_warp (<= 32) consecutive steps
// at a time and each lane decodes the sequence stream of its step when pass 2a left it ok,
// reading the block's packed tables from a copy in the lane's slot of shared memory or, without
// shared_tables, where pass 2a wrote them in the scratch; the warp meets again after them. Each
// lane is one long dependent chain (a table lookup per sequence), so the kernel takes as long as
// the block with the most sequences; docs/gpu_zstd.md, versions 3, 3.5, 3.7 and 3.11. `traced`
// (the default, sequence_trace.hpp): the lanes only trace the chain, with the blocks'
// ChainTables, and zstd_records_kernel makes the records; otherwise they make the records
// themselves with `reader`, from the SeqTables.
__global__ void __launch_bounds__(kSeqLanes)
    zstd_sequences_kernel(const void* const* src, Counters* counters, zl::BlockStep* steps, unsigned char* arena,
                          zl::SeqReader reader, bool traced, bool shared_tables, unsigned steps_per_warp,
                          unsigned long long run_from, unsigned long long run_to) {
  extern __shared__ uint4 seq_smem[];
  // Runs only for batches of run_from..run_to steps (the plan's count): the dispatch launches
  // one configuration per range and the others return at once (launch_sequences in the
  // dispatch).
  const unsigned long long total = *reinterpret_cast<volatile unsigned long long*>(&counters->steps_used);
  if (total < run_from || total > run_to) return;
  // The length codes' baselines and extra-bit counts (zl::seq_code_word), one copy per CTA:
  // looked up, not computed, so that lanes on different blocks do not diverge on them.
  __shared__ zl::u32 codes[zl::kSeqCodeWords];
  // Each lane's ring of sequence-stream words (zl::TraceWindow, zl::BackwardWordQueue).
  __shared__ zl::u64 rings[kSeqLanes][kSeqRingWords];
  if (!traced) {
    for (unsigned i = threadIdx.x; i < zl::kSeqCodeWords; i += blockDim.x) codes[i] = zl::seq_code_word(i);
  }
  __syncthreads();
  const unsigned lane = threadIdx.x & 31u;
  static_assert(sizeof(zl::ChainTables) == kSeqSlot, "a slot holds either table set");
  uint4* slot = seq_smem + lane * (kSeqSlot / sizeof(uint4));  // used by lanes < steps_per_warp
  for (;;) {
    unsigned long long base = 0;
    if (lane == 0) base = atomicAdd(&counters->seq_queue, static_cast<unsigned long long>(steps_per_warp));
    base = __shfl_sync(0xFFFFFFFFu, base, 0);
    if (base >= total) break;
    const unsigned long long k = base + lane;
    if (lane < steps_per_warp && k < total) {
      zl::BlockStep st = steps[k];
      if (zl::needs_sequences(st)) {
        const auto* p = static_cast<const zl::u8*>(src[st.owner]);
        unsigned char* blk = arena + st.scratch;
        const unsigned char* tables = blk + (traced ? zl::step_chain_at(st) : zl::step_tables_at(st));
        if (shared_tables) {
          // Both table sets: three arrays of 2-byte entries at the same places, then the logs.
          const auto* g = reinterpret_cast<const zl::SeqTables*>(tables);
          const zl::u32 logs[3] = {g->ll_log, g->ml_log, g->of_log};
          auto* mine = reinterpret_cast<zl::SeqTables*>(slot);
          // The used states of each table, in 16-byte words (8 packed entries); the arrays
          // start 16-byte aligned and hold whole words, so the last word stays inside them.
          const uint4* from[3] = {reinterpret_cast<const uint4*>(g->ll), reinterpret_cast<const uint4*>(g->ml),
                                  reinterpret_cast<const uint4*>(g->of)};
          uint4* to[3] = {reinterpret_cast<uint4*>(mine->ll), reinterpret_cast<uint4*>(mine->ml),
                          reinterpret_cast<uint4*>(mine->of)};
          for (int t = 0; t < 3; ++t) {
            const unsigned words = ((1u << logs[t]) + 7) / 8;
            unsigned i = 0;
            for (; i + 4 <= words; i += 4) {
              const uint4 a = from[t][i], b = from[t][i + 1], c = from[t][i + 2], d = from[t][i + 3];
              to[t][i] = a;
              to[t][i + 1] = b;
              to[t][i + 2] = c;
              to[t][i + 3] = d;
            }
            for (; i < words; ++i) to[t][i] = from[t][i];
          }
          // The logs go in through the type they are read with. Calls of their own, so that
          // the compiler sees the tables' address space and looks them up with shared-memory
          // loads rather than generic ones.
          if (traced) {
            auto* chain = reinterpret_cast<zl::ChainTables*>(slot);
            chain->ll_log = logs[0];
            chain->ml_log = logs[1];
            chain->of_log = logs[2];
            zl::trace_block_sequences(p, &st, zl::view_of(chain), blk, rings[lane]);
          } else {
            mine->ll_log = logs[0];
            mine->ml_log = logs[1];
            mine->of_log = logs[2];
            zl::decode_block_sequences(p, &st, mine, blk, reader, codes, rings[lane]);
          }
        } else if (traced) {
          zl::trace_block_sequences(p, &st, zl::view_of(reinterpret_cast<const zl::ChainTables*>(tables)), blk,
                                    rings[lane]);
        } else {
          zl::decode_block_sequences(p, &st, reinterpret_cast<const zl::SeqTables*>(tables), blk, reader, codes,
                                     rings[lane]);
        }
        if (traced) {
          steps[k].trace_n = st.trace_n;
          steps[k].trace_status = st.trace_status;
        } else {
          steps[k].status = st.status;
          steps[k].n_ok = st.n_ok;
          for (int r = 0; r < 3; ++r) steps[k].reps_end[r] = st.reps_end[r];
        }
      }
    }
    __syncwarp();
  }
}

// An inclusive prefix sum over the warp's lanes.
__device__ zl::u32 warp_scan_add(zl::u32 v, unsigned lane) {
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const zl::u32 t = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += t;
  }
  return v;
}

__device__ zl::RepMap shfl_map(const zl::RepMap& m, unsigned from) {
  zl::RepMap r;
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    r.kind[k] = __shfl_sync(0xFFFFFFFFu, m.kind[k], from);
    r.v[k] = __shfl_sync(0xFFFFFFFFu, m.v[k], from);
  }
  return r;
}

// A lane's sequence of one chunk between its trace entry and its values: its codes, where its
// extra bits lie, and (where stream_words found them whole) the two stream words, in flight
// until the chunk is taken.
struct PendingSequence {
  zl::TracedCodes c;
  zl::u32 lo, n, shift;
  bool in, whole;
  zl::u64 w0, w1;
};

__device__ PendingSequence pending_sequence(bool in, zl::u32 states, zl::u32 pos, const zl::u8* p, std::size_t size,
                                            bool lead_ok, const zl::SeqTablesView& t, const zl::u32* codes) {
  PendingSequence q{};
  q.in = in;
  if (!in) return q;
  q.c = zl::traced_codes(t, codes, states);
  q.n = q.c.extra_bits();
  q.lo = pos - q.n;
  const zl::StreamWords sw = zl::stream_words(p, size, q.lo, lead_ok);
  q.shift = sw.shift;
  q.whole = sw.whole;
  if (sw.whole) {
    q.w0 = sw.w[0];
    q.w1 = sw.w[1];
  }
  return q;
}

// The traced pass 2b's second half for one block by a warp, 32 sequences at a time: the same
// records, group table, repeat offsets and status as zl::records_from_trace (one thread), with
// the repeat-offset lists from a scan of the sequences' RepMaps (each lane's map composed with
// those of the lanes below it, in five shuffle rounds) applied to the list the chunk starts with.
// The loads run ahead (an ncu profile of the first form, which loaded each chunk's trace and
// words when it took the chunk, put 30 % of the stall samples on them): a chunk's trace entries
// are loaded two chunks ahead and its stream words one chunk ahead. Lane 0 writes the step's
// fields into *s.
__device__ void warp_records_from_trace(unsigned lane, const zl::u8* src, zl::BlockStep* s,
                                        const zl::SeqTablesView& t, const zl::u32* codes, unsigned char* blk) {
  const zl::u8* p = src + s->seq_at;
  const std::size_t size = static_cast<std::size_t>(s->seq_avail);
  zl::u32* rec_ll = reinterpret_cast<zl::u32*>(blk + zl::step_lit_bytes(*s));
  zl::u32* rec_ml = rec_ll + zl::step_rec_stride(*s);
  zl::u32* rec_off = rec_ml + zl::step_rec_stride(*s);
  // Running output and literal sums (the group table's entries), one chunk at a time.
  zl::detail::GroupSums sums{reinterpret_cast<zl::GroupStart*>(blk + zl::step_groups_at(*s))};
  const zl::u32 traced = s->trace_n;
  const bool lead_ok = s->seq_at >= 8;
  zl::RepMap carry = zl::rep_identity();
  zl::u32 n_ok = traced;
  bool rep_error = false;
  // The trace entries of the chunk after the current one, and the current chunk pending.
  const auto load_trace = [&](zl::u32 i, zl::u32* st, zl::u32* pos) {
    if (i < traced) {
      *st = rec_ml[i];
      *pos = rec_off[i];
    }
  };
  zl::u32 st0 = 0, pos0 = 0, st1 = 0, pos1 = 0;
  load_trace(lane, &st0, &pos0);
  load_trace(32 + lane, &st1, &pos1);
  PendingSequence cur = pending_sequence(lane < traced, st0, pos0, p, size, lead_ok, t, codes);
  for (zl::u32 base = 0; base < traced; base += 32) {
    const zl::u32 i = base + lane;
    // Two chunks ahead: trace entries; one chunk ahead: codes and stream words.
    zl::u32 st2 = 0, pos2 = 0;
    load_trace(i + 64, &st2, &pos2);
    const PendingSequence next = pending_sequence(i + 32 < traced, st1, pos1, p, size, lead_ok, t, codes);
    zl::SequenceValues sv{0, 0, 0};
    zl::RepMap m = zl::rep_identity();
    if (cur.in) {
      const zl::u64 v = cur.whole ? zl::cut_words(cur.w0, cur.w1, cur.shift) & ((zl::u64(1) << cur.n) - 1)
                                  : zl::stream_bits_bytes(p, size, cur.lo, cur.n);
      sv = zl::values_from_bits(cur.c, v);
      m = zl::rep_of_sequence(sv.of_value, sv.ll);
    }
    zl::RepMap list;
    zl::u32 bad = 0;
    if (__ballot_sync(0xFFFFFFFFu, cur.in && sv.of_value <= 3) == 0) {
      // No repeat offset in the chunk (most chunks of numeric fields): each lane's list is its
      // offset and the two before it; no offset can be zero.
      const zl::u32 off = sv.of_value - 3;
      list = zl::rep_after_literals(carry, lane, off, __shfl_up_sync(0xFFFFFFFFu, off, 1),
                                    __shfl_up_sync(0xFFFFFFFFu, off, 2));
    } else {
#pragma unroll
      for (unsigned d = 1; d < 32; d <<= 1) {
        const zl::RepMap below = shfl_map(m, lane >= d ? lane - d : lane);
        m = zl::rep_pick(lane >= d, m, zl::rep_then(below, m));
      }
      list = zl::rep_then(carry, m);
      bad = __ballot_sync(0xFFFFFFFFu, cur.in && !zl::rep_offset_ok(list));
    }
    const zl::u32 left = traced - base;
    const zl::u32 count = bad ? static_cast<zl::u32>(__ffs(static_cast<int>(bad)) - 1) : (left < 32 ? left : 32u);
    const bool ok = lane < count;
    const zl::u32 lit_sum = warp_scan_add(ok ? sv.ll : 0u, lane);
    const zl::u32 out_sum = warp_scan_add(ok ? sv.ll + sv.ml : 0u, lane);
    if (lane == 0 && count > 0) sums.table[base / zl::kGroupSeqs] = sums.now();
    if (ok) zl::traced_record(sv, list, &rec_ll[i], &rec_ml[i], &rec_off[i]);
    if (count > 0) {
      carry = shfl_map(list, count - 1);
      sums.out += __shfl_sync(0xFFFFFFFFu, out_sum, count - 1);
      sums.lit += __shfl_sync(0xFFFFFFFFu, lit_sum, count - 1);
    }
    if (bad) {
      rep_error = true;
      n_ok = base + count;
      break;
    }
    cur = next;
    st1 = st2;
    pos1 = pos2;
  }
  if (lane == 0) {
    sums.table[(n_ok + zl::kGroupSeqs - 1) / zl::kGroupSeqs] = sums.now();
    s->status = rep_error ? static_cast<zl::u32>(DecodeStatus::kCorrupt) : s->trace_status;
    s->n_ok = n_ok;
    for (int k = 0; k < 3; ++k) s->reps_end[k] = zl::rep_entry64(carry, k);
  }
}

// The traced pass 2b's second half: a warp per block with sequences, from a queue over the
// steps (in the entropy pass's order, largest compressed blocks first, when it has one), the
// block's SeqTables copied into the warp's slot of shared memory first.
// Eight CTAs an SM (32 warps, at most 64 registers a thread): the batch's blocks are the work
// items, ~5 400 for 1024 chunks of 64 KiB-1 MiB, so the warps resident at once set how many
// rounds the pass takes.
constexpr int kRecordWarps = 4;
constexpr int kRecordBlocksPerSm = 8;
__global__ void __launch_bounds__(kRecordWarps * 32, kRecordBlocksPerSm)
    zstd_records_kernel(const void* const* src, Counters* counters, zl::BlockStep* steps, unsigned char* arena,
                        const std::uint32_t* order) {
  __shared__ zl::u32 codes[zl::kSeqCodeWords];
  __shared__ uint4 slots[kRecordWarps][sizeof(zl::SeqTables) / sizeof(uint4)];
  for (unsigned i = threadIdx.x; i < zl::kSeqCodeWords; i += blockDim.x) codes[i] = zl::seq_code_word(i);
  __syncthreads();
  const unsigned lane = threadIdx.x & 31u, w = threadIdx.x / 32;
  const unsigned long long total = *reinterpret_cast<volatile unsigned long long*>(&counters->steps_used);
  auto* mine = reinterpret_cast<zl::SeqTables*>(slots[w]);
  for (;;) {
    unsigned long long k = 0;
    if (lane == 0) k = atomicAdd(&counters->records_queue, 1ull);
    k = __shfl_sync(0xFFFFFFFFu, k, 0);
    if (k >= total) break;
    if (order) k = order[k];
    zl::BlockStep st = steps[k];
    if (!zl::needs_sequences(st)) continue;
    unsigned char* blk = arena + st.scratch;
    const auto* g = reinterpret_cast<const uint4*>(blk + zl::step_tables_at(st));
    for (unsigned i = lane; i < sizeof(zl::SeqTables) / sizeof(uint4); i += 32) slots[w][i] = g[i];
    __syncwarp();
    warp_records_from_trace(lane, static_cast<const zl::u8*>(src[st.owner]), &st, zl::view_of(mine), codes, blk);
    if (lane == 0) {
      steps[k].status = st.status;
      steps[k].n_ok = st.n_ok;
      for (int r = 0; r < 3; ++r) steps[k].reps_end[r] = st.reps_end[r];
    }
    __syncwarp();
  }
}

__global__ void __launch_bounds__(kExecWarps * 32)
    zstd_execute_kernel(const void* const* src, void* const* dst, const std::size_t* dst_sizes, DecodeStatus* status,
                        std::size_t num_buffers, const BufferPlan* plans, const zl::BlockStep* steps,
                        const unsigned char* arena, bool verify) {
  __shared__ zl::u64 xxh[kExecWarps][4];
  const std::size_t b = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x & 31u;
  if (b >= num_buffers) return;
  const BufferPlan plan = plans[b];
  if (plan.route != kRouteV2) return;
  const WarpTeam team{lane};
  const DecodeStatus s =
      zl::execute_steps(team, static_cast<const zl::u8*>(src[b]), steps + plan.first_step, plan.num_steps, arena,
                        static_cast<zl::u8*>(dst[b]), dst_sizes[b], verify, xxh[threadIdx.x / 32]);
  if (lane == 0) status[b] = s;
}

// A warp of the units kernel whose unit must wait (zl::RunState::kBlocked): lane 0 polls the
// CTA's queue until the bytes or units it waits for are final, or a unit before its own
// failed (the spin then ends too: run_units drops the unit). A unit waits only on earlier
// units, all taken by warps of this CTA, which are resident together; the first incomplete
// unit waits at most for a warp that is raising done_bytes and waits on nothing; so the wait
// ends. __nanosleep keeps the poll from taking issue slots from the warps that do the work;
// capped at 256 ns because a group that reads the previous group's last bytes waits about one
// group's copy (~1 us), and a longer sleep would add to that chain.
__device__ void wait_until_runnable(const WarpTeam& team, const zl::UnitQueue* queue, const zl::UnitRunner& runner) {
  unsigned ns = 32;
  for (;;) {
    bool go = false;
    if (team.lane == 0) go = runner.runnable(queue);
    if (__shfl_sync(0xFFFFFFFFu, go, 0)) return;
    __nanosleep(ns);
    if (ns < 256) ns *= 2;
  }
}

// Pass 3 by several warps per buffer (execute_groups.hpp): one CTA per buffer, blockDim / 32
// warps (at most kMaxThreads / 32), the buffer's UnitQueue in shared memory, so that it is set
// up afresh by every launch and all the warps that wait on each other are resident at once.
// Thread 0 resolves the steps (a walk of ~34 steps for a 4 MiB frame) while the others clear
// the completion ring.
template <int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads)
    zstd_execute_units_kernel(const void* const* src, void* const* dst, const std::size_t* dst_sizes,
                              DecodeStatus* status, const BufferPlan* plans, zl::BlockStep* steps,
                              const unsigned char* arena, bool verify, const std::uint32_t* order) {
  __shared__ zl::UnitQueue queue;
  __shared__ zl::u64 xxh[kMaxThreads / 32][4];
  // CTAs start roughly in index order: through `order` the largest buffers start first.
  const std::size_t b = order ? order[blockIdx.x] : blockIdx.x;
  const BufferPlan plan = plans[b];
  if (plan.route != kRouteV2) return;  // the whole CTA: skipped, or version 1's
  zl::BlockStep* mine = steps + plan.first_step;
  zl::reset_unit_ring(&queue, threadIdx.x, blockDim.x);
  if (threadIdx.x == 0) zl::resolve_units(mine, plan.num_steps, arena, dst_sizes[b], &queue);
  __syncthreads();
  const WarpTeam team{threadIdx.x & 31u};
  const zl::UnitContext c{static_cast<const zl::u8*>(src[b]), mine, arena, static_cast<zl::u8*>(dst[b]),
                          dst_sizes[b], verify, xxh[threadIdx.x / 32]};
  zl::UnitRunner runner;
  for (;;) {
    const zl::RunState st = zl::run_units(team, c, &queue, &runner);
    if (st == zl::RunState::kFinished) break;
    if (st == zl::RunState::kBlocked) wait_until_runnable(team, &queue, runner);
  }
  __syncthreads();
  if (threadIdx.x == 0) status[b] = zl::units_status(&queue);
}

// The execute pass's buffers largest first (largest_first.hpp): one CTA, kSizeClasses threads.
// One CTA per buffer, and a buffer's time grows with its decoded size; in index order the
// 64 KiB-1 MiB batch ended with SMs idle while the last large buffers ran alone (ncu, session
// 21: the SMs' active cycles 7.6 M on average, 9.4 M on the busiest).
__global__ void __launch_bounds__(kSizeClasses)
    zstd_order_kernel(const std::size_t* dst_sizes, std::size_t num_buffers, std::uint32_t* order) {
  __shared__ detail::LargestFirstShared sh;
  detail::order_largest_first(num_buffers, [&](std::size_t i) { return dst_sizes[i]; }, order, sh);
}

// The entropy pass's steps largest first: compressed blocks by their compressed size (their
// Huffman streams and tables), every other step last (the pass skips them). One CTA, after the
// plan, which counted the steps. In the plan's order (buffers in whatever order their threads
// reserved) the pass ended with a tail on the 64 KiB-1 MiB batch (ncu, session 21: the SMs'
// active cycles 7.4 M on average, 8.2 M on the busiest).
__global__ void __launch_bounds__(kSizeClasses)
    zstd_order_steps_kernel(const Counters* counters, const zl::BlockStep* steps, std::uint32_t* order) {
  __shared__ detail::LargestFirstShared sh;
  const unsigned long long total = counters->steps_used;
  detail::order_largest_first(
      total, [&](std::size_t i) { return steps[i].kind == zl::kStepCompressed ? steps[i].size + 1 : 0; }, order, sh);
}

std::size_t warps_for(std::size_t num_buffers) {
  return num_buffers < kZstdBatchMaxWarps ? (num_buffers ? num_buffers : 1) : kZstdBatchMaxWarps;
}

// Bytes of version 2's bookkeeping before the workspaces: counters, the buffer plans and the
// execute pass's order.
std::size_t v2_order_offset(std::size_t num_buffers) {
  return kHeaderBytes + align_up(num_buffers * sizeof(BufferPlan));
}
std::size_t v2_head_bytes(std::size_t num_buffers) {
  return v2_order_offset(num_buffers) + align_up(num_buffers * sizeof(std::uint32_t));
}

// A pass takes its work largest first unless its variable (CUBESTREAM_ZSTD_ENTROPY_ORDER,
// CUBESTREAM_ZSTD_EXEC_ORDER) says "index" (A/B runs).
bool largest_first_from_env(const char* name) {
  const char* env = std::getenv(name);
  return !(env && std::strcmp(env, "index") == 0);
}

// The smallest scratch with which version 2 is tried: bookkeeping, one workspace, and room
// for some steps and one block's scratch.
std::size_t v2_min_bytes(std::size_t num_buffers) {
  return v2_head_bytes(num_buffers) + kWorkspaceStride + (1u << 20);
}

// How pass 2b runs: traced (the default: a serial trace of the chain, then the records by a
// warp per block; sequence_trace.hpp), or in one serial pass with one of split.hpp's readers:
// CUBESTREAM_ZSTD_SEQ_READER=window (v3.5-v3.10's default), =bits or =general. The same records
// and statuses from each (A/B runs).
struct SequencePass {
  bool traced;
  zl::SeqReader reader;
};
SequencePass sequence_pass_from_env() {
  const char* env = std::getenv("CUBESTREAM_ZSTD_SEQ_READER");
  if (env && std::strcmp(env, "window") == 0) return {false, zl::SeqReader::kWindow};
  if (env && std::strcmp(env, "general") == 0) return {false, zl::SeqReader::kGeneral};
  if (env && std::strcmp(env, "bits") == 0) return {false, zl::SeqReader::kFastBits};
  return {true, zl::SeqReader::kWindow};
}

// Steps a warp of the sequences kernel takes at a time, one per lane. With the tables in the
// scratch, 8 had beaten 32 (each lookup instruction touching 8 cache lines, not 32:
// docs/gpu_zstd.md, v3.5); with packed tables in shared memory, 16 lanes per warp (41 KiB a
// CTA, 5 CTAs and 80 lanes per SM of an H100) ran levels 3 and 5 of 256 x 4 MiB 3 % faster than
// 8, 20 % faster than 4 (v3.7) and 10-15 % faster than 32 (session 12), but on 1024 chunks of
// 64 KiB-1 MiB 32 lanes ran 7-10 % faster than 16 (session 12). So the width follows the
// batch's step count (a frame's blocks plus its start and end steps), which only the plan
// knows: kSeqWide lanes for batches of at most kSeqWideStepsPerSm steps per SM, kSeqNarrow
// otherwise. The bound lies between the two measured batches (counted on the host: ~7 000 steps,
// 53 per SM of an H100, for the small one; ~8 700, 66 per SM, for the large one), and on the H100
// the default then ran each batch as fast as its better forced width (session 13); where between
// them the better width changes is not measured.
// CUBESTREAM_ZSTD_SEQ_STEPS_PER_WARP (1-32) fixes one width for every batch (A/B runs).
constexpr unsigned kSeqNarrow = 16;
constexpr unsigned kSeqWide = 32;
constexpr unsigned long long kSeqWideStepsPerSm = 60;
unsigned sequence_steps_per_warp_from_env() {  // 0: by the batch's step count
  const char* env = std::getenv("CUBESTREAM_ZSTD_SEQ_STEPS_PER_WARP");
  const long v = env ? std::strtol(env, nullptr, 10) : 0;
  return v >= 1 && v <= 32 ? static_cast<unsigned>(v) : 0u;
}

// Which kernel runs pass 3: by default the units kernel, several warps per buffer
// (CUBESTREAM_ZSTD_EXEC=multi, or unset); CUBESTREAM_ZSTD_EXEC=warp keeps the single-warp
// zstd_execute_kernel for A/B runs. The same statuses and bytes from both.
bool single_warp_execute_from_env() {
  const char* env = std::getenv("CUBESTREAM_ZSTD_EXEC");
  return env && std::strcmp(env, "warp") == 0;
}

// Warps per buffer of the units kernel: 8 by default (256 buffers of 4 MiB: 2 048 warps, ~16
// per SM of an H100, each hiding the others' memory latency; docs/gpu_zstd.md, v3.6).
// CUBESTREAM_ZSTD_EXEC_WARPS (1-32) changes it.
unsigned execute_warps_from_env() {
  const char* env = std::getenv("CUBESTREAM_ZSTD_EXEC_WARPS");
  const long v = env ? std::strtol(env, nullptr, 10) : 8;
  return v >= 1 && v <= 32 ? static_cast<unsigned>(v) : 8u;
}

int entropy_blocks() {
  const int sms = multiprocessor_count();
  int per_sm = 0;
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, zstd_entropy_kernel, kEntropyWarps * 32, 0));
  return sms * (per_sm > 0 ? per_sm : 1);
}

int records_blocks() {
  const int sms = multiprocessor_count();
  int per_sm = 0;
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, zstd_records_kernel, kRecordWarps * 32, 0));
  return sms * (per_sm > 0 ? per_sm : 1);
}

int sequences_blocks(std::size_t smem) {
  // Per call, not once: the attributes belong to the current device's context. With tables in
  // shared memory the SM's split between L1 and shared memory favours shared memory, so that
  // as many CTAs fit as the occupancy below counts on (the lanes read little else: their
  // streams' words, a line per ~40 sequences).
  CS_CUDA_CHECK(cudaFuncSetAttribute(zstd_sequences_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem)));
  CS_CUDA_CHECK(cudaFuncSetAttribute(zstd_sequences_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     smem ? static_cast<int>(cudaSharedmemCarveoutMaxShared)
                                          : static_cast<int>(cudaSharedmemCarveoutDefault)));
  const int sms = multiprocessor_count();
  int per_sm = 0;
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, zstd_sequences_kernel, kSeqLanes, smem));
  return sms * (per_sm > 0 ? per_sm : 1);
}

}  // namespace

std::size_t zstd_batch_scratch_bytes(std::size_t num_buffers) {
  return kHeaderBytes + warps_for(num_buffers) * kWorkspaceStride + kScratchAlign;
}

std::size_t zstd_batch_scratch_bytes(std::size_t num_buffers, std::size_t total_decoded_bytes) {
  // Arena: literals (at most the decoded bytes) and 12-byte sequence records (ERA5-like
  // fields at levels 3-5: ~0.12 sequences per decoded byte, 1.4 bytes per byte), plus a
  // partly used last block per buffer. Steps: kStepShare-th of the rest.
  // Blocks with sequences also keep their three code tables twice (zl::SeqTables and
  // zl::ChainTables, ~2.5 KiB each) and their
  // group table (zl::GroupStart, 8 bytes per 32 sequences and one for the totals, 16-byte
  // aligned): one block per 128 KiB of output and a partial last block per buffer; the group
  // tables' decoded / 32 covers 0.125 sequences per decoded byte, the rate the 2x above
  // assumes (ERA5-like data at levels 3-5: ~0.12).
  const std::size_t blocks = total_decoded_bytes / (128u << 10) + num_buffers;
  const std::size_t arena = 2 * total_decoded_bytes + num_buffers * (256u << 10) +
                            blocks * (sizeof(zl::SeqTables) + sizeof(zl::ChainTables) + 2 * sizeof(zl::GroupStart) + 16) +
                            total_decoded_bytes / 32;
  const std::size_t rest = arena + arena / (kStepShare - 1) + 2 * kScratchAlign;
  const std::size_t warps = num_buffers < kFallbackWarps ? (num_buffers ? num_buffers : 1) : kFallbackWarps;
  return v2_head_bytes(num_buffers) + warps * kWorkspaceStride + rest + kScratchAlign;
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
  // Align the scratch start; the first 256 bytes hold the counters.
  const auto addr = reinterpret_cast<std::uintptr_t>(d_scratch);
  const std::size_t pad = (kScratchAlign - addr % kScratchAlign) % kScratchAlign;
  auto* base = static_cast<unsigned char*>(d_scratch) + pad;
  const std::size_t usable = scratch_bytes - pad;
  CS_CUDA_CHECK(cudaMemsetAsync(base, 0, kHeaderBytes, stream));
  const unsigned threads = kWarpsPerBlock * 32;
  // CUBESTREAM_ZSTD_V1=1 forces version 1, for comparisons (bench/gpu_zstd_bench.cu).
  const char* force = std::getenv("CUBESTREAM_ZSTD_V1");
  if (usable < v2_min_bytes(num_buffers) || (force && force[0] == '1')) {
    // Version 1 only: every warp a workspace.
    std::size_t warps = (usable - kHeaderBytes) / kWorkspaceStride;
    if (warps > warps_for(num_buffers)) warps = warps_for(num_buffers);
    const unsigned blocks = static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
    zstd_decode_warp_kernel<<<blocks, threads, 0, stream>>>(
        d_src, d_src_sizes, d_dst, d_dst_sizes, d_status, num_buffers, reinterpret_cast<unsigned long long*>(base),
        base + kHeaderBytes, warps, nullptr, verify_checksum);
  } else {
    auto* counters = reinterpret_cast<Counters*>(base);
    auto* plans = reinterpret_cast<BufferPlan*>(base + kHeaderBytes);
    unsigned char* ws = base + v2_head_bytes(num_buffers);
    std::size_t rest = usable - v2_head_bytes(num_buffers);
    std::size_t v1_warps = (rest - (1u << 20)) / kWorkspaceStride;
    if (v1_warps > kFallbackWarps) v1_warps = kFallbackWarps;
    if (v1_warps > num_buffers) v1_warps = num_buffers;
    rest -= v1_warps * kWorkspaceStride;
    const std::size_t step_bytes = align_up(rest / kStepShare);
    auto* steps = reinterpret_cast<zl::BlockStep*>(ws + v1_warps * kWorkspaceStride);
    // The step region holds the steps and, after them, the entropy pass's order (4 bytes a step).
    const unsigned long long step_cap = step_bytes / (sizeof(zl::BlockStep) + sizeof(std::uint32_t));
    auto* step_order = reinterpret_cast<std::uint32_t*>(steps + step_cap);
    unsigned char* arena = reinterpret_cast<unsigned char*>(steps) + step_bytes;
    const unsigned long long arena_cap = rest > step_bytes ? rest - step_bytes : 0;
    zstd_plan_kernel<<<static_cast<unsigned>((num_buffers + kPlanThreads - 1) / kPlanThreads), kPlanThreads, 0,
                       stream>>>(d_src, d_src_sizes, num_buffers, counters, plans, steps, step_cap, arena_cap);
    const bool units_execute = !single_warp_execute_from_env();
    std::uint32_t* order = nullptr;
    if (units_execute && largest_first_from_env("CUBESTREAM_ZSTD_EXEC_ORDER") && num_buffers > 1) {
      order = reinterpret_cast<std::uint32_t*>(base + v2_order_offset(num_buffers));
      zstd_order_kernel<<<1, kSizeClasses, 0, stream>>>(d_dst_sizes, num_buffers, order);
    }
    const bool entropy_sorted = largest_first_from_env("CUBESTREAM_ZSTD_ENTROPY_ORDER");
    if (entropy_sorted) zstd_order_steps_kernel<<<1, kSizeClasses, 0, stream>>>(counters, steps, step_order);
    zstd_entropy_kernel<<<entropy_blocks(), kEntropyWarps * 32, 0, stream>>>(d_src, counters, steps, arena,
                                                                           entropy_sorted ? step_order : nullptr);
    // How pass 2b runs (sequence_pass_from_env): traced by default (docs/gpu_zstd.md, v3.11).
    const SequencePass seq_pass = sequence_pass_from_env();
    // Where the lanes read their block's FSE tables: by default from a copy in shared memory,
    // one 2.5 KiB slot per lane, so that no lookup of the dependent chain waits for L2 (with
    // the tables in the scratch, 62 blocks' tables per SM did not fit L1: 78 % hits, and a
    // warp waits for its slowest lane; docs/gpu_zstd.md, v3.7). CUBESTREAM_ZSTD_SEQ_SMEM=0
    // reads them from the scratch instead (A/B runs), as does a device whose CTAs cannot have
    // steps_per_warp slots.
    // One launch per width, each for its range of block counts (the other returns at once).
    const char* smem_env = std::getenv("CUBESTREAM_ZSTD_SEQ_SMEM");
    const auto launch_sequences = [&](unsigned seq_steps, unsigned long long from, unsigned long long to) {
      const std::size_t want_smem = seq_steps * kSeqSlot;
      // The kernel's own static shared memory (the code words, the stream rings, as the
      // compiler laid them out) comes on top of the slots.
      cudaFuncAttributes attr{};
      CS_CUDA_CHECK(cudaFuncGetAttributes(&attr, zstd_sequences_kernel));
      const bool shared_tables = !(smem_env && smem_env[0] == '0') &&
                                 optin_shared_memory_per_block() >= want_smem + attr.sharedSizeBytes;
      const std::size_t seq_smem = shared_tables ? want_smem : 0;
      zstd_sequences_kernel<<<sequences_blocks(seq_smem), kSeqLanes, seq_smem, stream>>>(
          d_src, counters, steps, arena, seq_pass.reader, seq_pass.traced, shared_tables, seq_steps, from, to);
    };
    constexpr unsigned long long kAll = ~0ull;
    if (const unsigned fixed = sequence_steps_per_warp_from_env(); fixed != 0) {
      launch_sequences(fixed, 0, kAll);
    } else {
      const unsigned long long wide_max = kSeqWideStepsPerSm * static_cast<unsigned long long>(multiprocessor_count());
      launch_sequences(kSeqWide, 0, wide_max);
      launch_sequences(kSeqNarrow, wide_max + 1, kAll);
    }
    if (seq_pass.traced) {
      zstd_records_kernel<<<records_blocks(), kRecordWarps * 32, 0, stream>>>(d_src, counters, steps, arena,
                                                                             entropy_sorted ? step_order : nullptr);
    }
    if (!units_execute) {
      zstd_execute_kernel<<<static_cast<unsigned>((num_buffers + kExecWarps - 1) / kExecWarps), kExecWarps * 32, 0,
                            stream>>>(d_src, d_dst, d_dst_sizes, d_status, num_buffers, plans, steps, arena,
                                      verify_checksum);
    } else {
      // Two instantiations: the default (up to 8 warps) keeps the register budget of a
      // 256-thread CTA; more warps need the 1024-thread bound.
      const unsigned exec_threads = 32 * execute_warps_from_env();
      const auto grid = static_cast<unsigned>(num_buffers);
      if (exec_threads <= 256) {
        zstd_execute_units_kernel<256><<<grid, exec_threads, 0, stream>>>(d_src, d_dst, d_dst_sizes, d_status, plans,
                                                                         steps, arena, verify_checksum, order);
      } else {
        zstd_execute_units_kernel<1024><<<grid, exec_threads, 0, stream>>>(d_src, d_dst, d_dst_sizes, d_status, plans,
                                                                          steps, arena, verify_checksum, order);
      }
    }
    // Whatever did not fit: version 1, on the buffers the plan marked.
    zstd_decode_warp_kernel<<<static_cast<unsigned>((v1_warps + kWarpsPerBlock - 1) / kWarpsPerBlock), threads, 0,
                              stream>>>(d_src, d_src_sizes, d_dst, d_dst_sizes, d_status, num_buffers,
                                        &counters->v1_queue, ws, v1_warps, plans, verify_checksum);
  }
  const cudaError_t launch = cudaGetLastError();
  nvtxRangePop();
  CS_CUDA_CHECK(launch);
}

}  // namespace cubestream::cuda
