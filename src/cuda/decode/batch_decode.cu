// The batched GPU decoders of LZ4 (numcodecs framing) and blosc, and the dispatch by codec.
//
// LZ4: a numcodecs lz4 buffer is one block, which only a serial parse can walk. Batches take
// the segmented path (lz4_segments.cu: a checking walk per block, and in the same kernel
// thousands of warps copying the segments the walks have marked); any buffer that path cannot
// or should not take (dense blocks), and every buffer where CUBESTREAM_LZ4_PATH=ring, is one
// thread block's work
// (lz4_ring_kernel): one warp runs a lean parse and hands out batches of up to 32 sequences,
// three warps copy their literals and independent matches together and the other matches in
// order, all inside a 64 KiB ring of recent output in shared memory (codec/logic/lz4_ring.hpp).
// Buffers are taken from a queue.
//
// blosc: blocks, and the streams of split blocks, are independent, so the work unit is one
// stream and a batch of 256 chunks of 4 MB is ~4000-65000 units. Four launches, no host sync:
//   blosc_plan_kernel       one thread per buffer: header, status, unit/block/staging counts
//   blosc_scan_kernel       one block: exclusive prefix sums of the three counts
//   blosc_unit_kernel       persistent warps taking the batch's units from a queue (a binary
//                           search of the unit prefix finds a unit's buffer): one stream each
//   blosc_unshuffle_kernel  persistent thread blocks over all blocks of shuffled buffers
// Scratch (host-computable size, see blosc_scratch_layout): the queue counter, the plans, the
// three prefix arrays, and a staging area as large as the decoded batch for shuffled buffers.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "codec/logic/blosc_decode.hpp"
#include "codec/logic/lz4_block.hpp"
#include "codec/logic/lz4_ring.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "cubestream/error.hpp"
#include "cuda/check.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "cuda/decode/device_status.cuh"
#include "cuda/largest_first.cuh"
#include "cuda/decode/lz4_rounds.hpp"
#include "cuda/decode/lz4_segments.hpp"
#include "cuda/device_info.hpp"
#include "cuda/decode/nvtx_range.hpp"
#include "cuda/decode/warp_copy.cuh"
#include "cuda/decode/zstd_dispatch.hpp"

namespace cubestream::cuda {

namespace {

namespace logic = codec::logic;
using detail::WarpCopier;
using detail::WarpRingCopier;
// numcodecs lz4 decodes through the 64 KiB ring, blosc's LZ4 streams through the 4 KiB ring
static_assert(logic::Lz4HasBlock<detail::WarpRing64Copier>::value && logic::Lz4HasBlock<WarpRingCopier>::value);

constexpr int kThreads = 256;                 // 8 warps per thread block
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kBlocksPerSm = 8;               // 64 warps per SM: full occupancy on sm_90
constexpr std::size_t kAlign = 256;

__device__ std::size_t smin(std::size_t a, std::size_t b) { return a < b ? a : b; }

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Thread blocks of `kernel` that the GPU holds at once: a persistent grid of that many blocks
// takes work from a queue until the batch is done (registers decide how many fit per SM).
template <class Kernel>
unsigned persistent_blocks(Kernel kernel, bool max_shared = false) {
  const int sms = multiprocessor_count();
  int per_sm = 0;
  // the blosc unit kernel holds 48 KiB of shared memory per block (staging windows and output
  // rings): ask for the largest shared-memory carveout so that 4 blocks (32 warps) fit on an SM
  if (max_shared)
    CS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       static_cast<int>(cudaSharedmemCarveoutMaxShared)));
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  return static_cast<unsigned>(std::max(1, sms) * std::max(1, std::min(per_sm, kBlocksPerSm)));
}

// The next work item for this warp from a queue counter in device memory: lane 0 takes it, the
// warp shares it (all lanes must agree: the copies synchronise the whole warp).
__device__ unsigned long long next_item(unsigned long long* counter, unsigned lane) {
  unsigned long long w = 0;
  if (lane == 0) w = atomicAdd(counter, 1ull);
  return __shfl_sync(detail::kFullMask, w, 0);
}


// ---- LZ4 ---------------------------------------------------------------------------------

// One thread block per buffer (a numcodecs lz4 buffer is one LZ4 block: a serial chain of
// sequences): warp 0 walks the block and hands out batches of up to 32 sequences, the other
// warps copy them into a 64 KiB ring of recent output in shared memory and flush it to the
// output (codec/logic/lz4_ring.hpp says why the copies stay inside the block; warp_copy.cuh,
// WarpRing64Copier, the barrier protocol). ~71 KiB of dynamic shared memory per block (ring,
// input window, two batch buffers), so 3 buffers decode at once per SM. Buffers are taken from
// a queue (`counter`, zeroed before the launch) in the order lz4_order_kernel wrote (largest
// first, so that the batch does not end on a few large buffers), and blocks that drew small
// chunks take more.
constexpr std::size_t kLz4RingWindow = 4096;
// The buffers that take the walker's bursts: decoded size at least this times the compressed
// size (Lz4BurstSplit). With bursts the synth fields (ratio 1.18) ran 1.6x faster, the era5-like
// 4 MiB batch (1.04) 3 % faster and the mixed one (1.03) 6 % slower (H100, session 13;
// docs/gpu_decoders.md, "Bursts in the walker"); a ratio cannot tell the last two apart, and
// 1.05-1.2 measured alike.
constexpr float kLz4BurstMinRatio = 1.1f;
constexpr std::size_t kLz4RingSmem = logic::kLz4RingBytes + kLz4RingWindow +
                                     2 * logic::kLz4BatchMax * sizeof(logic::Lz4BatchSeq) +
                                     2 * sizeof(logic::Lz4BatchHead) + logic::kLz4BurstBytes * sizeof(std::uint16_t);
static_assert(kLz4RingWindow >= detail::kWindowBytes && kLz4RingWindow >= logic::kLz4FastSpan + 16 &&
              kLz4RingWindow >= logic::kLz4BurstBytes + logic::kLz4FastSpan + 16);  // the walker's bursts

// The LZ4 buffers' queue order: largest decoded size first (a buffer's sequences, its cost,
// grow with it). One block of 1024 threads.
__global__ void __launch_bounds__(1024) lz4_order_kernel(DeviceBatch b, std::uint32_t* order) {
  __shared__ detail::LargestFirstShared sh;
  detail::order_largest_first(b.num_buffers, [&](std::size_t i) { return b.dst_bytes[i]; }, order, sh);
}

// Which buffers' walks take bursts (the kernel chooses per buffer): those whose decoded size is
// at least `min_ratio` times their compressed size (lz4_burst_buffer). Denser sequences come
// with higher ratios, and bursts pay most where sequences are dense (kLz4BurstMinRatio says how
// much; docs/gpu_decoders.md, "Bursts in the walker").
struct Lz4BurstSplit {
  logic::Lz4BurstRule rule;
  float min_ratio;
};
__device__ inline bool lz4_burst_buffer(const DeviceBatch& b, std::size_t i, float min_ratio) {
  return static_cast<double>(b.dst_bytes[i]) >= static_cast<double>(min_ratio) * static_cast<double>(b.src_bytes[i]);
}

// Buffers: order[0, num_buffers), or, where `list_count` is given, list[0, *list_count) (the
// buffers the segmented path left to this kernel).
__global__ void __launch_bounds__(detail::kLz4Threads) lz4_ring_kernel(DeviceBatch b, unsigned long long* counter,
                                                                       const std::uint32_t* order, Lz4BurstSplit split,
                                                                       const std::uint32_t* list,
                                                                       const std::uint32_t* list_count) {
  extern __shared__ uint4 lz4_smem[];
  __shared__ unsigned long long item;
  auto* ring = reinterpret_cast<std::uint8_t*>(lz4_smem);
  std::uint8_t* window = ring + logic::kLz4RingBytes;
  auto* seqs = reinterpret_cast<logic::Lz4BatchSeq*>(window + kLz4RingWindow);
  auto* heads = reinterpret_cast<logic::Lz4BatchHead*>(seqs + 2 * logic::kLz4BatchMax);
  auto* burst = reinterpret_cast<std::uint16_t*>(heads + 2);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const unsigned long long items = list_count != nullptr ? *list_count : b.num_buffers;
  for (;;) {
    if (threadIdx.x == 0) item = atomicAdd(counter, 1ull);
    __syncthreads();
    if (item >= items) break;
    const std::size_t i = list_count != nullptr ? list[item] : order[item];
    detail::WarpRing64Copier copy{{lane, window}, ring, seqs, heads, burst, split.rule,
                                  lz4_burst_buffer(b, i, split.min_ratio), kLz4RingWindow, warp};
    const DecodeStatus st = logic::lz4_numcodecs_decode_with(b.src[i], b.src_bytes[i], b.dst[i], b.dst_bytes[i], copy);
    if (threadIdx.x == 0) b.status[i] = st;
    // every warp is done with the ring, the window and `item` before the next buffer
    __syncthreads();
  }
}

// The same buffers on a device whose blocks cannot opt in to the ring's shared memory (sm_75:
// 64 KiB): one warp per buffer, taken from the same queue, copying straight into the output
// through a 2 KiB window per warp (WarpCopier; the version before the ring kernel).
__global__ void __launch_bounds__(kThreads) lz4_warp_kernel(DeviceBatch b, unsigned long long* counter,
                                                          const std::uint32_t* order) {
  __shared__ alignas(16) std::uint8_t windows[kWarpsPerBlock][detail::kWindowBytes];
  const unsigned lane = threadIdx.x & 31u;
  for (unsigned long long w = next_item(counter, lane); w < b.num_buffers; w = next_item(counter, lane)) {
    const std::size_t i = order[w];
    detail::WarpCopier copy{lane, windows[threadIdx.x / 32]};
    const DecodeStatus st = logic::lz4_numcodecs_decode_with(b.src[i], b.src_bytes[i], b.dst[i], b.dst_bytes[i], copy);
    if (lane == 0) b.status[i] = st;
  }
}

// The LZ4 walker's bursts (codec/logic/lz4_ring.hpp, Lz4RingWalker::burst): which buffers take
// them and when the walker tries one (Lz4BurstRule). CUBESTREAM_LZ4_BURSTS=0 gives them to no
// buffer, =1 to every buffer; CUBESTREAM_LZ4_BURST_RATIO (a decimal number) replaces the ratio
// bound; CUBESTREAM_LZ4_BURST_MIN_TAKE and CUBESTREAM_LZ4_BURST_MAX_WAIT (0-32 and 0-4096)
// replace the rule's numbers. For A/B runs: every setting decodes the same bytes.
Lz4BurstSplit lz4_bursts_from_env() {
  Lz4BurstSplit s{{}, kLz4BurstMinRatio};
  if (const char* env = std::getenv("CUBESTREAM_LZ4_BURST_RATIO")) {
    char* end = nullptr;
    const float r = std::strtof(env, &end);
    if (end != env && *end == '\0' && r >= 0.0f) s.min_ratio = r;
  }
  if (const char* env = std::getenv("CUBESTREAM_LZ4_BURSTS")) {
    if (env[0] == '0') s.min_ratio = std::numeric_limits<float>::infinity();
    if (env[0] == '1') s.min_ratio = 0.0f;
  }
  const auto number = [](const char* name, std::uint32_t max, std::uint32_t* v) {
    const char* env = std::getenv(name);
    if (env == nullptr || *env == '\0') return;
    char* end = nullptr;
    const unsigned long x = std::strtoul(env, &end, 10);
    if (*end == '\0' && x <= max) *v = static_cast<std::uint32_t>(x);
  };
  number("CUBESTREAM_LZ4_BURST_MIN_TAKE", logic::kLz4BatchMax, &s.rule.min_take);
  number("CUBESTREAM_LZ4_BURST_MAX_WAIT", 4096, &s.rule.max_wait);
  return s;
}

// The queue counter and the buffer order, before the segmented path's scratch.
std::size_t lz4_fixed_scratch(std::size_t n) { return kAlign + align_up(n * sizeof(std::uint32_t)); }

// Numcodecs lz4 batches take the segmented path (cuda/decode/lz4_segments.hpp; the ring kernel
// then decodes what it cannot take, and dense blocks: lz4_segments_take), the table walk (and
// the split walk before it where CUBESTREAM_LZ4_SPLIT_REGION asks) and the segment workers in
// one kernel. For A/B runs (every setting gives the same bytes and statuses):
// CUBESTREAM_LZ4_PATH=ring sends every buffer to the ring kernel, =segments every buffer the
// segments can take, dense ones too; CUBESTREAM_LZ4_WALK=table runs the table walk as its own
// kernel before the workers, =serial the serial walk. env_equals reads those switches.
bool env_equals(const char* name, const char* value) {
  const char* env = std::getenv(name);
  return env != nullptr && std::string(env) == value;
}
// A positive integer setting: 0 where unset, empty or not positive (read with strtoll, not
// strtoul, so that "-1" does not wrap around).
long long env_positive(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return 0;
  const long long v = std::strtoll(env, nullptr, 10);
  return v <= 0 ? 0 : v;
}

// The segments' ready pass for numcodecs lz4 (codec/logic/lz4_match_bits.hpp: matches whose
// bytes are final go before the segment waits for the one before), off by default: on the H200
// (session 27, same call) the fused kernel measured 10.4-10.7 ms with it against 9.7-9.8 without
// on the era5-like batch, 4.9 against 4.6 on the mixed one and 36 against 29 on the synth
// fields, though the segment kernel alone gained 5 % (docs/gpu_decoders.md, "The ready pass").
// CUBESTREAM_LZ4_MATCHES=ready turns it on; the scratch then holds a bit per decoded byte
// (batch_decode_scratch_bytes reads the same switch). A scratch sized without the switch and
// decoded with it gives most of its slot space to bits (the carving cannot know the batch's
// total), so that most buffers go to the ring kernel: correct, but slow.
bool lz4_ready_pass_from_env() { return env_equals("CUBESTREAM_LZ4_MATCHES", "ready"); }

// The rounds path for numcodecs lz4 (cuda/decode/lz4_rounds.hpp: the split walk, then matches
// copied in rounds of readiness), instead of the segmented path: CUBESTREAM_LZ4_PATH=rounds.
// Off by default until the GPU machine has measured it against the segments.
bool lz4_rounds_from_env() { return env_equals("CUBESTREAM_LZ4_PATH", "rounds"); }
// Its emit from the split walk's sequence records instead of a walk again:
// CUBESTREAM_LZ4_ROUNDS_WALK=records.
bool lz4_rounds_records_from_env() { return env_equals("CUBESTREAM_LZ4_ROUNDS_WALK", "records"); }

// The split walk for numcodecs lz4 (codec/logic/lz4_split_walk.hpp), off by default: on the
// H200 (session 26, same calls) it measured 11.4 ms against the table walk's 9.7 on the
// era5-like batch, 10.5 against 4.6 on the mixed one and 38.4 against 27.7 on the synth fields,
// its threads waiting on one dependent DRAM load after another (docs/gpu_decoders.md, "The split
// walk"). CUBESTREAM_LZ4_SPLIT_REGION=N turns it on with regions of at least N bytes
// (kLz4SplitRegionDefault is the one measured; values below kLz4SplitRegionFloor are raised to
// it, the size the scratch's slots allow for); unset or 0, the table walk alone.
std::uint32_t lz4_split_region_from_env() {
  const long long v = env_positive("CUBESTREAM_LZ4_SPLIT_REGION");
  if (v == 0) return 0;
  return static_cast<std::uint32_t>(std::clamp<long long>(v, codec::logic::kLz4SplitRegionFloor, 1ll << 30));
}

// The rounds path's smallest buffer: CUBESTREAM_LZ4_ROUNDS_MIN=N leaves buffers that decode to
// fewer than N bytes to the ring kernel (a 64 KiB block gets 16 of the rounds kernel's 256
// threads, so the mixed batch's small buffers may decode faster there); unset or 0, none.
std::uint64_t lz4_rounds_min_from_env() {
  return static_cast<std::uint64_t>(env_positive("CUBESTREAM_LZ4_ROUNDS_MIN"));
}

unsigned lz4_ring_blocks() {
  const int sms = multiprocessor_count();
  int per_sm = 0;
  CS_CUDA_CHECK(cudaFuncSetAttribute(lz4_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(kLz4RingSmem)));
  CS_CUDA_CHECK(cudaFuncSetAttribute(lz4_ring_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     static_cast<int>(cudaSharedmemCarveoutMaxShared)));
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lz4_ring_kernel, detail::kLz4Threads,
                                                              kLz4RingSmem));
  return static_cast<unsigned>(std::max(1, sms) * std::max(1, per_sm));
}

// ---- blosc -------------------------------------------------------------------------------

struct BloscScratch {
  unsigned long long* next_unit;  // the unit queue's counter, zeroed before the unit kernel
  logic::BloscPlan* plans;
  unsigned long long* unit_count; // N: units of buffer i (0 for a failed buffer)
  std::uint32_t* order;           // N: the queue's buffer order, largest units first
  unsigned long long* unit_off;   // N + 1, in queue order: the other units before buffer order[k]
  unsigned long long* lead_off;   // N + 1, in queue order: the leading units before buffer order[k]
  unsigned long long* block_off;  // N + 1
  unsigned long long* stage_off;  // N + 1
  std::uint8_t* stage;
  unsigned long long stage_bytes;
};

struct BloscLayout {
  std::size_t counter, plans, unit_count, order, unit_off, lead_off, block_off, stage_off, stage, total;
};

BloscLayout blosc_scratch_layout(std::size_t n, std::size_t total_decoded) {
  BloscLayout l{};
  l.counter = 0;
  l.plans = align_up(sizeof(unsigned long long));
  l.unit_count = l.plans + align_up(n * sizeof(logic::BloscPlan));
  l.order = l.unit_count + align_up(n * sizeof(unsigned long long));
  l.unit_off = l.order + align_up(n * sizeof(std::uint32_t));
  l.lead_off = l.unit_off + align_up((n + 1) * sizeof(unsigned long long));
  l.block_off = l.lead_off + align_up((n + 1) * sizeof(unsigned long long));
  l.stage_off = l.block_off + align_up((n + 1) * sizeof(unsigned long long));
  l.stage = l.stage_off + align_up((n + 1) * sizeof(unsigned long long));
  l.total = l.stage + align_up(total_decoded);
  return l;
}

__global__ void blosc_plan_kernel(DeviceBatch b, BloscScratch s) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < b.num_buffers;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    logic::BloscPlan plan;
    const DecodeStatus st = logic::blosc_plan(b.src[i], b.src_bytes[i], b.dst_bytes[i], &plan);
    const bool ok = st == DecodeStatus::kOk;
    s.plans[i] = plan;
    b.status[i] = st;
    s.unit_count[i] = ok ? plan.units : 0;
    s.block_off[i] = ok && plan.staged ? plan.nblocks : 0;
    s.stage_off[i] = ok && plan.staged ? plan.h.nbytes : 0;
  }
}

// The units' queue, largest first (largest_first.hpp says why), in two parts: first the
// leftover units that are longer than their buffer's other units (blosc_leftover_leads), then
// all other units, buffer after buffer; in both parts the buffers go in `order`, whose largest
// unit is largest first.
//
// In one thread block: the order, then exclusive prefix sums of the four count arrays (entry
// N receives the total; the unit counts taken in queue order): each thread sums a contiguous
// run, the run totals are scanned in shared memory, and each thread rewrites its run. N is
// the number of buffers of a batch (thousands), so one block suffices.
constexpr int kScanArrays = 4;
__global__ void __launch_bounds__(1024) blosc_scan_kernel(BloscScratch s, std::size_t n) {
  __shared__ unsigned long long totals[kScanArrays][1024];
  __shared__ detail::LargestFirstShared sh;
  detail::order_largest_first(
      n, [&](std::size_t i) { return s.unit_count[i] ? logic::blosc_largest_unit_bytes(s.plans[i]) : 0; }, s.order,
      sh);
  for (std::size_t k = threadIdx.x; k < n; k += blockDim.x) {
    const std::size_t i = s.order[k];
    const unsigned long long units = s.unit_count[i];
    const unsigned long long lead = units != 0 && logic::blosc_leftover_leads(s.plans[i]) ? 1 : 0;
    s.lead_off[k] = lead;
    s.unit_off[k] = units - lead;
  }
  __syncthreads();
  unsigned long long* arrays[kScanArrays] = {s.unit_off, s.lead_off, s.block_off, s.stage_off};
  const std::size_t per = (n + blockDim.x - 1) / blockDim.x;
  const std::size_t begin = smin(n, threadIdx.x * per), end = smin(n, begin + per);
  for (int a = 0; a < kScanArrays; ++a) {
    unsigned long long sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += arrays[a][i];
    totals[a][threadIdx.x] = sum;
  }
  __syncthreads();
  // Hillis-Steele inclusive scan of the run totals
  for (unsigned d = 1; d < blockDim.x; d *= 2) {
    unsigned long long add[kScanArrays] = {};
    if (threadIdx.x >= d)
      for (int a = 0; a < kScanArrays; ++a) add[a] = totals[a][threadIdx.x - d];
    __syncthreads();
    for (int a = 0; a < kScanArrays; ++a) totals[a][threadIdx.x] += add[a];
    __syncthreads();
  }
  for (int a = 0; a < kScanArrays; ++a) {
    unsigned long long run = threadIdx.x == 0 ? 0 : totals[a][threadIdx.x - 1];
    for (std::size_t i = begin; i < end; ++i) {
      const unsigned long long c = arrays[a][i];
      arrays[a][i] = run;
      run += c;
    }
    if (threadIdx.x == blockDim.x - 1) arrays[a][n] = totals[a][threadIdx.x];
  }
}

// The buffer that item w of a prefix array belongs to: the last i with off[i] <= w (empty
// buffers share their offset with the next one). Requires w < off[n].
__device__ std::size_t owner(const unsigned long long* off, std::size_t n, unsigned long long w) {
  std::size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    if (off[mid] <= w) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

__global__ void __launch_bounds__(kThreads) blosc_unit_kernel(DeviceBatch b, BloscScratch s) {
  __shared__ alignas(16) std::uint8_t windows[kWarpsPerBlock][detail::kWindowBytes];
  __shared__ alignas(16) std::uint8_t rings[kWarpsPerBlock][detail::kRingBytes];
  const unsigned lane = threadIdx.x & 31u;
  const std::size_t n = b.num_buffers;
  const unsigned long long leads = s.lead_off[n], total = leads + s.unit_off[n];
  // units from a queue (blosc_scan_kernel's order): their cost varies (long leftover blocks,
  // raw streams, BloscLZ)
  for (unsigned long long w = next_item(s.next_unit, lane); w < total; w = next_item(s.next_unit, lane)) {
    const bool lead = w < leads;
    // the queue position of the unit's buffer
    const std::size_t k = lead ? owner(s.lead_off, n, w) : owner(s.unit_off, n, w - leads);
    const std::size_t i = s.order[k];
    // one read, broadcast: another warp may fail this buffer meanwhile, and the lanes must
    // agree on skipping it (the copies __syncwarp with all 32 lanes)
    const unsigned st0 = lane == 0 ? static_cast<unsigned>(detail::load_status(&b.status[i])) : 0u;
    if (__shfl_sync(detail::kFullMask, st0, 0) != static_cast<unsigned>(DecodeStatus::kOk)) continue;
    const logic::BloscPlan plan = s.plans[i];
    std::uint8_t* stage = nullptr;
    if (plan.staged) {
      // the caller's total_decoded_bytes bounds the staging area; a buffer beyond it (a
      // caller that under-counted) is left to the CPU rather than written out of bounds
      if (s.stage_off[i] + plan.h.nbytes > s.stage_bytes) {
        if (lane == 0) detail::fail_status(&b.status[i], DecodeStatus::kUnsupported);
        continue;
      }
      stage = s.stage + s.stage_off[i];
    }
    WarpRingCopier copy{{lane, windows[threadIdx.x / 32]}, rings[threadIdx.x / 32]};
    // a leading unit is its buffer's last (the leftover block); the others are 0, 1, ... in order
    const unsigned long long u = lead ? plan.units - 1 : w - leads - s.unit_off[k];
    const DecodeStatus st = logic::blosc_decode_unit(b.src[i], plan, u, b.dst[i], stage, copy, lane == 0);
    if (st != DecodeStatus::kOk && lane == 0) detail::fail_status(&b.status[i], st);
  }
}

// Byte unshuffle of a float32 block, four elements per thread: one 4-byte load from each byte
// plane (consecutive threads read consecutive words of a plane), byte permutes, one 16-byte
// store. Needs the planes 4-byte aligned (n % 4 == 0 and the staged block 4-aligned) and the
// output 16-byte aligned; otherwise unshuffle_words below. (H100, session 11: the word
// version, one byte load per plane per element, moved 1.63 TB/s, 49 % of DRAM peak.)
__device__ bool unshuffle_quads(const logic::BloscBlockShuffle& bs, std::size_t ts, const std::uint8_t* src,
                                std::uint8_t* dst, std::size_t t, std::size_t stride) {
  const std::size_t n = bs.n;
  if (ts != 4 || n % 4 != 0 || reinterpret_cast<std::uintptr_t>(src) % 4 != 0 ||
      reinterpret_cast<std::uintptr_t>(dst) % 16 != 0)
    return false;
  const std::size_t q = n / 4;  // words per plane
  const auto* p0 = reinterpret_cast<const std::uint32_t*>(src);
  auto* d = reinterpret_cast<uint4*>(dst);
  for (std::size_t k = t; k < q; k += stride) {
    const std::uint32_t a = p0[k], b = p0[q + k], c = p0[2 * q + k], e = p0[3 * q + k];
    // element j of the four is (a.j, b.j, c.j, e.j), byte 0 lowest (__byte_perm selectors:
    // nibble i picks result byte i from x bytes 0-3 and y bytes 4-7)
    const std::uint32_t ab01 = __byte_perm(a, b, 0x5140), ce01 = __byte_perm(c, e, 0x5140);  // a0 b0 a1 b1
    const std::uint32_t ab23 = __byte_perm(a, b, 0x7362), ce23 = __byte_perm(c, e, 0x7362);  // a2 b2 a3 b3
    d[k] = make_uint4(__byte_perm(ab01, ce01, 0x5410), __byte_perm(ab01, ce01, 0x7632),
                      __byte_perm(ab23, ce23, 0x5410), __byte_perm(ab23, ce23, 0x7632));
  }
  return true;
}

// Byte unshuffle of elements [begin, end) for typesize 4 and 8 with whole-word stores when the
// block's output is aligned (the common float32/float64 case).
__device__ bool unshuffle_words(const logic::BloscBlockShuffle& bs, std::size_t ts, const std::uint8_t* src,
                                std::uint8_t* dst, std::size_t t, std::size_t stride) {
  if (reinterpret_cast<std::uintptr_t>(dst) % 4 != 0 || (ts != 4 && ts != 8)) return false;
  const std::size_t n = bs.n;
  auto* d = reinterpret_cast<std::uint32_t*>(dst);
  for (std::size_t i = t; i < n; i += stride) {
    for (std::size_t w = 0; w < ts / 4; ++w) {
      const std::size_t p = 4 * w;
      d[i * (ts / 4) + w] = static_cast<std::uint32_t>(src[p * n + i]) |
                            (static_cast<std::uint32_t>(src[(p + 1) * n + i]) << 8) |
                            (static_cast<std::uint32_t>(src[(p + 2) * n + i]) << 16) |
                            (static_cast<std::uint32_t>(src[(p + 3) * n + i]) << 24);
    }
  }
  return true;
}

__global__ void __launch_bounds__(kThreads) blosc_unshuffle_kernel(DeviceBatch b, BloscScratch s) {
  const std::size_t n = b.num_buffers;
  const unsigned long long total = s.block_off[n];
  for (unsigned long long w = blockIdx.x; w < total; w += gridDim.x) {
    const std::size_t i = owner(s.block_off, n, w);
    if (detail::load_status(&b.status[i]) != DecodeStatus::kOk) continue;
    const logic::BloscPlan& plan = s.plans[i];
    const auto j = static_cast<std::uint32_t>(w - s.block_off[i]);
    const logic::BloscBlockShuffle bs = logic::blosc_block_shuffle(plan.h, j);
    const std::uint8_t* stage = s.stage + s.stage_off[i];
    std::uint8_t* dst = b.dst[i];
    const std::size_t at = static_cast<std::size_t>(j) * plan.h.blocksize;
    if (bs.kind == logic::BloscUnshuffleKind::kByte &&
        (unshuffle_quads(bs, plan.h.typesize, stage + at, dst + at, threadIdx.x, blockDim.x) ||
         unshuffle_words(bs, plan.h.typesize, stage + at, dst + at, threadIdx.x, blockDim.x))) {
      for (std::size_t k = bs.bytes - bs.tail + threadIdx.x; k < bs.bytes; k += blockDim.x) dst[at + k] = stage[at + k];
      continue;
    }
    // items interleaved over the threads, so that neighbouring threads read neighbouring bytes
    // of each plane (or row); whoever takes item 0 also copies the block's tail (thread 0 does
    // it alone when there are no items: a block shorter than one element)
    if (bs.items == 0 && threadIdx.x == 0) logic::blosc_unshuffle_block_range(plan.h, j, bs, stage, dst, 0, 0);
    for (std::size_t item = threadIdx.x; item < bs.items; item += blockDim.x)
      logic::blosc_unshuffle_block_range(plan.h, j, bs, stage, dst, item, item + 1);
  }
}

void check_scratch(const char* what, std::size_t need, std::size_t have) {
  if (have < need) {
    throw Error(ErrorCode::kInvalidArgument, std::string("batch_decode(") + what + "): scratch of " +
                                                 std::to_string(have) + " bytes, " + std::to_string(need) + " needed");
  }
}

}  // namespace

std::size_t batch_decode_scratch_bytes(BatchCodec codec, std::size_t num_buffers, std::size_t total_decoded_bytes) {
  switch (codec) {
    case BatchCodec::kLz4:
      if (lz4_rounds_from_env())
        return lz4_fixed_scratch(num_buffers) +
               detail::lz4_rounds_scratch_bytes(num_buffers, total_decoded_bytes, lz4_rounds_records_from_env());
      return lz4_fixed_scratch(num_buffers) +
             detail::lz4_segment_scratch_bytes(num_buffers, total_decoded_bytes, lz4_ready_pass_from_env());
    case BatchCodec::kBlosc: return blosc_scratch_layout(num_buffers, total_decoded_bytes).total;
    case BatchCodec::kZstd: return detail::zstd_dispatch_scratch_bytes(num_buffers, total_decoded_bytes);
  }
  throw Error(ErrorCode::kInvalidArgument, "batch_decode_scratch_bytes: unknown codec");
}

void batch_decode(BatchCodec codec, const DeviceBatch& batch, void* scratch, std::size_t scratch_bytes,
                  StreamHandle stream_handle) {
  const cudaStream_t stream = stream_handle;
  if (batch.num_buffers == 0) return;
  // the queue orders hold 32-bit buffer indices
  if (batch.num_buffers > UINT32_MAX)
    throw Error(ErrorCode::kInvalidArgument, "batch_decode: more than 2^32 - 1 buffers in one batch");
  const detail::NvtxRange range(codec == BatchCodec::kLz4     ? "cubestream::batch_decode(lz4)"
                                : codec == BatchCodec::kBlosc ? "cubestream::batch_decode(blosc)"
                                                              : "cubestream::batch_decode(zstd)");
  switch (codec) {
    case BatchCodec::kLz4: {
      const std::size_t fixed = lz4_fixed_scratch(batch.num_buffers);
      check_scratch("lz4", fixed, scratch_bytes);
      auto* counter = static_cast<unsigned long long*>(scratch);
      auto* order = reinterpret_cast<std::uint32_t*>(static_cast<std::uint8_t*>(scratch) + kAlign);
      CS_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof *counter, stream));
      lz4_order_kernel<<<1, 1024, 0, stream>>>(batch, order);
      CS_CUDA_CHECK(cudaGetLastError());
      if (optin_shared_memory_per_block() < kLz4RingSmem) {
        lz4_warp_kernel<<<persistent_blocks(lz4_warp_kernel), kThreads, 0, stream>>>(batch, counter, order);
        CS_CUDA_CHECK(cudaGetLastError());
        return;
      }
      if (lz4_rounds_from_env()) {
        // the rounds path where the scratch holds its fixed part; what it declines (or all,
        // where the scratch is too small) goes to the ring kernel after it
        bool fits = false;
        detail::Lz4RoundsScratch rs = detail::lz4_rounds_scratch(
            static_cast<std::uint8_t*>(scratch) + fixed, scratch_bytes - fixed, batch.num_buffers,
            lz4_rounds_records_from_env(), &fits);
        rs.min_bytes = lz4_rounds_min_from_env();
        if (fits) detail::lz4_rounds_enqueue(batch, order, rs, stream);
        const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(batch.num_buffers, lz4_ring_blocks()));
        lz4_ring_kernel<<<blocks, detail::kLz4Threads, kLz4RingSmem, stream>>>(
            batch, counter, order, lz4_bursts_from_env(), fits ? rs.ring_list : nullptr, fits ? rs.ring_count : nullptr);
        CS_CUDA_CHECK(cudaGetLastError());
        return;
      }
      // the segmented path where the scratch holds its fixed part (a scratch sized before it
      // existed, or CUBESTREAM_LZ4_PATH=ring, keeps every buffer on the ring kernel); dense
      // blocks go to the ring kernel unless CUBESTREAM_LZ4_PATH=segments
      bool segmented = !env_equals("CUBESTREAM_LZ4_PATH", "ring");
      detail::Lz4SegmentScratch seg{};
      if (segmented) {
        seg = detail::lz4_segment_scratch(static_cast<std::uint8_t*>(scratch) + fixed, scratch_bytes - fixed,
                                          batch.num_buffers, lz4_ready_pass_from_env(), &segmented);
        seg.take_dense = env_equals("CUBESTREAM_LZ4_PATH", "segments");
        seg.split_region = lz4_split_region_from_env();
      }
      if (segmented)
        detail::lz4_segments_enqueue(batch, order, seg,
                                     env_equals("CUBESTREAM_LZ4_WALK", "serial")  ? detail::Lz4WalkMode::kSerial
                                     : env_equals("CUBESTREAM_LZ4_WALK", "table") ? detail::Lz4WalkMode::kTable
                                                                                  : detail::Lz4WalkMode::kFused,
                                     stream);
      const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(batch.num_buffers, lz4_ring_blocks()));
      lz4_ring_kernel<<<blocks, detail::kLz4Threads, kLz4RingSmem, stream>>>(
          batch, counter, order, lz4_bursts_from_env(), segmented ? seg.ring_list : nullptr,
          segmented ? seg.ring_count : nullptr);
      CS_CUDA_CHECK(cudaGetLastError());
      return;
    }
    case BatchCodec::kBlosc: {
      const std::size_t n = batch.num_buffers;
      // the staging capacity is whatever the caller's scratch holds beyond the fixed part
      const BloscLayout fixed = blosc_scratch_layout(n, 0);
      check_scratch("blosc", fixed.total, scratch_bytes);
      auto* base = static_cast<std::uint8_t*>(scratch);
      BloscScratch s{};
      s.next_unit = reinterpret_cast<unsigned long long*>(base + fixed.counter);
      s.plans = reinterpret_cast<logic::BloscPlan*>(base + fixed.plans);
      s.unit_count = reinterpret_cast<unsigned long long*>(base + fixed.unit_count);
      s.order = reinterpret_cast<std::uint32_t*>(base + fixed.order);
      s.unit_off = reinterpret_cast<unsigned long long*>(base + fixed.unit_off);
      s.lead_off = reinterpret_cast<unsigned long long*>(base + fixed.lead_off);
      s.block_off = reinterpret_cast<unsigned long long*>(base + fixed.block_off);
      s.stage_off = reinterpret_cast<unsigned long long*>(base + fixed.stage_off);
      s.stage = base + fixed.stage;
      s.stage_bytes = scratch_bytes - fixed.stage;
      const unsigned plan_blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 4096));
      blosc_plan_kernel<<<plan_blocks, kThreads, 0, stream>>>(batch, s);
      CS_CUDA_CHECK(cudaGetLastError());
      blosc_scan_kernel<<<1, 1024, 0, stream>>>(s, n);
      CS_CUDA_CHECK(cudaGetLastError());
      CS_CUDA_CHECK(cudaMemsetAsync(s.next_unit, 0, sizeof *s.next_unit, stream));
      blosc_unit_kernel<<<persistent_blocks(blosc_unit_kernel, true), kThreads, 0, stream>>>(batch, s);
      CS_CUDA_CHECK(cudaGetLastError());
      blosc_unshuffle_kernel<<<persistent_blocks(blosc_unshuffle_kernel), kThreads, 0, stream>>>(batch, s);
      CS_CUDA_CHECK(cudaGetLastError());
      return;
    }
    case BatchCodec::kZstd:
      check_scratch("zstd", detail::zstd_dispatch_scratch_bytes(batch.num_buffers, 0), scratch_bytes);
      detail::zstd_dispatch(batch, scratch, scratch_bytes, stream);
      return;
  }
  throw Error(ErrorCode::kInvalidArgument, "batch_decode: unknown codec");
}

}  // namespace cubestream::cuda
