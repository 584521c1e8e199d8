// The rounds path for numcodecs lz4 (lz4_rounds.hpp; the logic, shared with the host tests, is
// codec/logic/lz4_rounds.hpp): lz4_rounds_kernel, a persistent grid of 256-thread blocks, each
// taking one buffer at a time from a queue in `order`.
//
// Per buffer, thread r owns input region r:
//  1. the split walk: region walks from guessed entries (lz4_rounds_guess_start), then rounds of walks from the
//     predecessors' exits until no entry moves (at most kLz4SplitRounds), and thread 0's test
//     that the serial decoder would accept the block, with each region's output base;
//  2. the bitmap zeroed by the block, then each thread's emit walk: its literals copied and
//     marked, its matches kept in its slots of the pool (with CUBESTREAM_LZ4_ROUNDS_WALK=records
//     the split walk's walks keep their sequences in the slots, a walk after the first stops
//     where it meets its region's last recorded chain, and the emit reads the records instead of
//     walking: logic::lz4_region_walk_records, lz4_region_emit_records);
//  3. rounds: each thread copies its pending matches whose source bytes are marked, fences at
//     block scope (its copy before its marks), and marks them; a reader fences after the marks it
//     tested and before it reads. A block barrier ends each round, so a round sees every copy of
//     the rounds before; copies of the same round by other threads may be seen early (the fences
//     make that safe), which only saves rounds.
// The block's threads all run the same decisions (go or decline) from shared values, so every
// barrier is reached by all of them.
#include "cuda/decode/lz4_rounds.hpp"

#include <algorithm>

#include "codec/logic/lz4_rounds.hpp"
#include "codec/logic/lz4_split_walk.hpp"
#include "cuda/check.hpp"
#include "cuda/device_info.hpp"

namespace cubestream::cuda::detail {

namespace {

namespace logic = codec::logic;
using logic::DecodeStatus;

constexpr unsigned kRoundsThreads = logic::kLz4SplitMaxRegions;  // a thread per region
static_assert(kRoundsThreads % 32 == 0 && kRoundsThreads <= 1024);
constexpr std::size_t kAlign = 256;
// -DCS_LZ4_ROUNDS_CLOCKS=1 (a profiling build, not for use): thread 0 reads clock64 after each
// phase's barrier and prints the phases' cycles for every 16th buffer it takes (the split walk's
// first walk, its later rounds, the bitmap and emit walks, the rounds and their count).
#ifndef CS_LZ4_ROUNDS_CLOCKS
#define CS_LZ4_ROUNDS_CLOCKS 0
#endif
// Records a thread's round pass tests at once (logic::lz4_round_pass); -DCS_LZ4_ROUND_BATCH=1
// tests one after another, for the A/B.
#ifndef CS_LZ4_ROUND_BATCH
#define CS_LZ4_ROUND_BATCH 8
#endif

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The done bitmap on the device: marks by atomicOr (neighbouring regions share words), tests by
// volatile loads (another thread's marks may land while this one tests).
struct DeviceBits {
  std::uint32_t* w;
  __device__ void set(std::uint32_t i, std::uint32_t mask) { atomicOr(w + i, mask); }
  __device__ std::uint32_t get(std::uint32_t i) const { return *reinterpret_cast<volatile const std::uint32_t*>(w + i); }
};

__device__ void leave_to_ring(const Lz4RoundsScratch& s, std::size_t i) {
  s.ring_list[atomicAdd(s.ring_count, 1u)] = static_cast<std::uint32_t>(i);
}

__global__ void __launch_bounds__(kRoundsThreads) lz4_rounds_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                    Lz4RoundsScratch s) {
  __shared__ logic::Lz4RegionWalk walk[kRoundsThreads];
  __shared__ std::uint32_t entry[kRoundsThreads];
  __shared__ std::uint64_t base[kRoundsThreads];
  __shared__ unsigned long long item, at;
  __shared__ int accepted;
  const unsigned t = threadIdx.x;
  const auto none = [](std::uint32_t, std::uint32_t, std::uint32_t) {};
  for (;;) {
    if (t == 0) item = atomicAdd(s.counter, 1ull);
    __syncthreads();
    if (item >= b.num_buffers) break;
    const std::size_t i = order[item];
    const std::uint8_t* src = b.src[i];
    const std::size_t src_n = b.src_bytes[i], size = b.dst_bytes[i];
    std::uint8_t* dst = b.dst[i];
    // the header and the shape, the same on every thread
    bool go = src_n >= logic::kLz4NumcodecsHeader + 1 && size >= s.min_bytes && size < (std::size_t{1} << 32) - 1 &&
              src_n - logic::kLz4NumcodecsHeader < (std::size_t{1} << 32) - 1;
    if (go) {
      const std::size_t header = static_cast<std::size_t>(src[0]) | (static_cast<std::size_t>(src[1]) << 8) |
                                 (static_cast<std::size_t>(src[2]) << 16) | (static_cast<std::size_t>(src[3]) << 24);
      go = header == size && logic::lz4_split_worth(static_cast<std::uint32_t>(src_n - logic::kLz4NumcodecsHeader),
                                                    static_cast<std::uint32_t>(size));
    }
    const std::uint8_t* in = src + logic::kLz4NumcodecsHeader;
    const auto in_n = static_cast<std::uint32_t>(go ? src_n - logic::kLz4NumcodecsHeader : 1);
    const logic::Lz4SplitShape shape = logic::lz4_split_shape(in_n, s.region_min);
    const logic::Lz4RoundsLayout layout = logic::lz4_rounds_layout(shape, size, s.records);
    if (go && t == 0) at = atomicAdd(s.cursor, static_cast<unsigned long long>(layout.bytes));
    __syncthreads();
    if (go) go = at + layout.bytes <= s.pool_bytes;
    if (!go) {
      if (t == 0) leave_to_ring(s, i);
      __syncthreads();  // `item` and `at` are read before thread 0 takes the next
      continue;
    }
    const std::uint32_t regions = shape.regions;
    const bool mine = t < regions;
    const std::uint32_t end = logic::lz4_split_end(shape, t, in_n);
    const std::uint32_t slots = logic::lz4_rounds_region_slots(shape);
    // this thread's slots: match records, or (s.records) the sequence records its walks keep
    std::uint8_t* const slot =
        mine ? s.pool + at + std::size_t{t} * slots * logic::lz4_rounds_slot_bytes(s.records) : nullptr;
    auto* const seq = reinterpret_cast<logic::Lz4RoundSeq*>(slot);
    logic::Lz4RegionRecords kept;
    // (walk[t], read before it is written: this thread's walk before, for a walk that stops where
    // it meets that walk's chain)
    const auto walk_from = [&](std::uint32_t from, const logic::Lz4RegionWalk* last) {
      if (!s.records) return logic::lz4_region_walk(in, in_n, from, end, none);
      return logic::lz4_region_walk_records(in, in_n, from, end, seq, slots, &kept, last);
    };

    [[maybe_unused]] long long c0 = 0, c1 = 0, cf = 0, c2 = 0, c3 = 0;
    if (CS_LZ4_ROUNDS_CLOCKS) c0 = clock64();
    // 1. the split walk
    if (mine) {
      entry[t] = logic::lz4_rounds_guess_start(shape, t, in_n);
      walk[t] = walk_from(entry[t], nullptr);
    }
    bool fixed = false;
    std::uint32_t walk_rounds = 0;
    for (std::uint32_t round = 1; round <= logic::kLz4SplitRounds; ++round) {
      __syncthreads();  // the walks of the round before are in place
      if (CS_LZ4_ROUNDS_CLOCKS && round == 1) c1 = clock64();
      walk_rounds = round;
      const std::uint32_t next = !mine ? 0u : t == 0 ? 0u : walk[t - 1].exit;
      const bool changed = mine && next != entry[t];
      __syncthreads();  // every thread read its predecessor's exit before any walks again
      if (changed) {
        entry[t] = next;
        const logic::Lz4RegionWalk before = walk[t];
        walk[t] = walk_from(next, &before);
      }
      if (__syncthreads_or(changed) == 0) {
        fixed = true;
        break;
      }
    }
    if (t == 0) accepted = fixed && logic::lz4_split_accepts(walk, regions, size, base) ? 1 : 0;
    __syncthreads();
    if (accepted == 0) {
      if (t == 0) leave_to_ring(s, i);
      __syncthreads();
      continue;
    }

    if (CS_LZ4_ROUNDS_CLOCKS) cf = clock64();
    // 2. the bitmap, then the emit walks
    auto* const rec = reinterpret_cast<logic::Lz4RoundMatch*>(slot);
    auto* words = reinterpret_cast<std::uint32_t*>(s.pool + at + layout.bits_at);
    for (std::uint64_t w = t; w < layout.words; w += kRoundsThreads) words[w] = 0;
    __syncthreads();
    DeviceBits bits{words};
    std::uint32_t count = 0;
    bool ok = true;
    if (mine && s.records)
      ok = logic::lz4_region_emit_records(in, in_n, seq, slots, kept, walk[t].out, dst,
                                          static_cast<std::uint32_t>(size), static_cast<std::uint32_t>(base[t]), bits,
                                          &count, src, src + src_n);
    else if (mine)
      ok = logic::lz4_region_emit(in, in_n, entry[t], end, dst, static_cast<std::uint32_t>(size),
                                  static_cast<std::uint32_t>(base[t]), bits, rec, slots, &count, src, src + src_n);
    // (never for an accepted block: the emit walk is the fixed point's walk, and the records are
    // the last walk's, from the true entry)
    if (__syncthreads_or(!ok) != 0) {
      if (t == 0) leave_to_ring(s, i);
      __syncthreads();
      continue;
    }
    if (CS_LZ4_ROUNDS_CLOCKS) c2 = clock64();

    // 3. the rounds
    std::uint32_t rounds = 0;
    const auto fence = [] { __threadfence_block(); };
    while (__syncthreads_or(count != 0) != 0) {
      if (++rounds > logic::kLz4RoundsMax) break;  // the same count on every thread
      if (count != 0)
        logic::lz4_round_pass<CS_LZ4_ROUND_BATCH>(rec, &count, dst, static_cast<std::uint32_t>(size), bits, fence,
                                                  fence);
    }
    if (CS_LZ4_ROUNDS_CLOCKS && t == 0 && item % 16 == 0) {
      c3 = clock64();
      printf("rounds clocks: buffer %llu in %u out %llu regions %u | walk %lld | fix %lld (%u rounds) | emit %lld | "
             "rounds %lld (%u) | total %lld\n",
             static_cast<unsigned long long>(i), in_n, static_cast<unsigned long long>(size), regions, c1 - c0,
             cf - c1, walk_rounds, c2 - cf, c3 - c2, rounds, c3 - c0);
    }
    if (t == 0) {
      if (rounds > logic::kLz4RoundsMax) leave_to_ring(s, i);
      else b.status[i] = DecodeStatus::kOk;
    }
    __syncthreads();  // shared state is read before the next buffer's
  }
}

unsigned rounds_blocks() {
  int per_sm = 0;
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lz4_rounds_kernel, kRoundsThreads, 0));
  return static_cast<unsigned>(std::max(1, multiprocessor_count()) * std::max(1, per_sm));
}

}  // namespace

std::size_t lz4_rounds_scratch_bytes(std::size_t n, std::size_t total_decoded, bool records) {
  return kAlign + align_up(n * sizeof(std::uint32_t)) +
         static_cast<std::size_t>(logic::lz4_rounds_pool_bound(n, total_decoded, records));
}

Lz4RoundsScratch lz4_rounds_scratch(void* base, std::size_t bytes, std::size_t n, bool records, bool* ok) {
  Lz4RoundsScratch s{};
  s.records = records;
  const std::size_t fixed = kAlign + align_up(n * sizeof(std::uint32_t));
  *ok = bytes >= fixed;
  if (!*ok) return s;
  auto* p = static_cast<std::uint8_t*>(base);
  s.counter = reinterpret_cast<unsigned long long*>(p);
  s.cursor = reinterpret_cast<unsigned long long*>(p + 8);
  s.ring_count = reinterpret_cast<std::uint32_t*>(p + 16);
  s.ring_list = reinterpret_cast<std::uint32_t*>(p + kAlign);
  s.pool = p + fixed;
  s.pool_bytes = bytes - fixed;
  s.region_min = logic::kLz4RoundsRegionMin;
  return s;
}

void lz4_rounds_enqueue(const DeviceBatch& b, const std::uint32_t* order, const Lz4RoundsScratch& s,
                        cudaStream_t stream) {
  CS_CUDA_CHECK(cudaMemsetAsync(s.counter, 0, 24, stream));  // counter, cursor, ring_count
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(b.num_buffers, rounds_blocks()));
  lz4_rounds_kernel<<<blocks, kRoundsThreads, 0, stream>>>(b, order, s);
  CS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cubestream::cuda::detail
