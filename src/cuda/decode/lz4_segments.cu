// The segmented numcodecs-LZ4 path (lz4_segments.hpp; the logic, shared with the host tests, is
// codec/logic/lz4_segments.hpp).
//
// lz4_table_walk_kernel  one thread block per buffer: the header, the buffer's slots, the
//                     checking walk (warp 0, the table walk over 8 KiB windows whose tables all
//                     the block's warps fill), its segments' starts
// lz4_walk_kernel     the same with the serial walk, one warp per buffer (4 per thread block)
// lz4_segment_kernel  persistent warps taking segments from a queue in segment-major order
//                     (segment k of every buffer before segment k + 1 of any), so that the
//                     chains of different blocks advance side by side; per segment: parse and
//                     literals, records in shared memory, wait for the segment before, matches
//                     in groups, publish
#include "cuda/decode/lz4_segments.hpp"

#include <algorithm>
#include <limits>

#include "cuda/check.hpp"
#include "cuda/decode/device_status.cuh"
#include "cuda/decode/warp_copy.cuh"
#include "cuda/device_info.hpp"

namespace cubestream::cuda::detail {

namespace {

namespace logic = codec::logic;
using logic::DecodeStatus;

constexpr unsigned kWalkWarps = 4;
constexpr std::size_t kWalkWindow = 8192;
constexpr std::size_t kTableWindow = 8192;
// Tokens the chain lists at a time (a window of the era5-like chunks holds ~150, of the synth
// fields ~500; more take several token passes).
constexpr std::uint32_t kTableTokens = 1024;
// Warps per buffer in the table walk (4: 9 % slower on era5-like chunks; 16: 28 % slower on the
// mixed batch, H100, session 15).
constexpr unsigned kTableWarps = 8;
static_assert(kTableWindow >= logic::kLz4TableWindowMin && kTableWindow <= logic::kLz4TableWindowMax, "table window");
constexpr unsigned kSegWarps = 8;
constexpr std::size_t kAlign = 256;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The fixed part: one 256-byte header of counters, then the per-buffer arrays.
struct Layout {
  std::size_t seg_base, seg_count, ring_list, slots;
};
Layout layout(std::size_t n) {
  Layout l{};
  l.seg_base = kAlign;
  l.seg_count = l.seg_base + align_up(n * sizeof(unsigned long long));
  l.ring_list = l.seg_count + align_up(n * sizeof(std::uint32_t));
  l.slots = l.ring_list + align_up(n * sizeof(std::uint32_t));
  return l;
}
constexpr std::size_t kSlotBytes = sizeof(logic::Lz4Segment) + sizeof(std::uint32_t);

__device__ unsigned load_acquire(const std::uint32_t* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release(std::uint32_t* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The walk of buffer i by one warp: the numcodecs header, the buffer's slots, then
// walk(in, in_size, size, bound, mark, &count) (a status; mark(k, ip, op) records segment k's
// start), then the buffer's outputs (lane 0). Every lane of the warp calls it.
template <class Walk>
__device__ void walk_buffer(const DeviceBatch& b, std::size_t i, const Lz4SegmentScratch& s, unsigned lane,
                            Walk&& walk) {
  const std::uint8_t* src = b.src[i];
  const std::size_t src_bytes = b.src_bytes[i], size = b.dst_bytes[i];
  std::uint32_t count = 0;
  DecodeStatus st = DecodeStatus::kOk;
  bool ring = false;
  // numcodecs framing first (lz4_numcodecs_decode_with's checks, in its order)
  if (src_bytes < logic::kLz4NumcodecsHeader) {
    st = DecodeStatus::kCorrupt;
  } else if ((static_cast<std::size_t>(src[0]) | (static_cast<std::size_t>(src[1]) << 8) |
              (static_cast<std::size_t>(src[2]) << 16) | (static_cast<std::size_t>(src[3]) << 24)) != size) {
    st = DecodeStatus::kWrongSize;
  } else {
    const std::size_t in_size = src_bytes - logic::kLz4NumcodecsHeader;
    ring = in_size >= logic::kLz4RingMaxBytes || size >= logic::kLz4RingMaxBytes;
    unsigned long long base = 0;
    if (!ring) {
      const std::size_t bound = logic::lz4_segment_bound(in_size, size);
      if (lane == 0) base = atomicAdd(s.cursor, static_cast<unsigned long long>(bound));
      base = __shfl_sync(kFullMask, base, 0);
      ring = base + bound > s.capacity;
      if (!ring) {
        logic::Lz4Segment* segs = s.segs + base;
        std::uint32_t* flags = s.flags + base;
        st = walk(src + logic::kLz4NumcodecsHeader, static_cast<std::uint32_t>(in_size),
                  static_cast<std::uint32_t>(size), bound,
                  [&](std::uint32_t k, std::uint32_t ip, std::uint32_t op) {
                    if (lane == 0) {
                      segs[k] = logic::Lz4Segment{ip, op};
                      flags[k] = 0;
                    }
                  },
                  &count);
        if (st != DecodeStatus::kOk) count = 0;
      }
    }
    if (lane == 0) s.seg_base[i] = base;
  }
  if (lane != 0) return;
  if (ring) {
    s.ring_list[atomicAdd(s.ring_count, 1u)] = static_cast<std::uint32_t>(i);
    s.seg_count[i] = 0;
    return;
  }
  s.seg_count[i] = count;
  if (count != 0) atomicMax(s.max_segments, count);
  b.status[i] = st;
}

// The table walk's window fill: the next window (kTableWindow bytes) prefetched into L2.
using TableFill = PrefetchFill<kTableWindow / (32 * 128)>;

// The serial walk (lz4_segment_walk), one warp per buffer.
__global__ void __launch_bounds__(32 * kWalkWarps) lz4_walk_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                   Lz4SegmentScratch s) {
  __shared__ alignas(16) std::uint8_t windows[kWalkWarps][kWalkWindow];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const std::size_t w = static_cast<std::size_t>(blockIdx.x) * kWalkWarps + warp;
  if (w >= b.num_buffers) return;
  walk_buffer(b, order[w], s, lane,
              [&](const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, std::size_t bound, auto&& mark,
                  std::uint32_t* count) {
                logic::Lz4StagedReader<WarpFill> rd{in, in_size, windows[warp], kWalkWindow, WarpFill{lane}};
                return logic::lz4_segment_walk(rd, in_size, size, bound, mark, count);
              });
}

// The table walk (lz4_segment_walk_table), one thread block of kTableWarps warps per buffer:
// warp 0 walks (lane 0 stores the chain's tokens); the whole block is the team, which fills the
// table of each window warp 0 stages and runs the token pass. Warp 0 hands out a job (named
// barrier 1: the job and its inputs are ready), every warp does it, and barrier 2 closes it
// (barrier 3 orders the token pass's scan). The helpers leave on the job kDone.
enum class TableJobKind : std::uint32_t { kFill, kTokens, kDone };
struct TableJob {
  TableJobKind kind;
  std::uint32_t r0, end;          // kFill
  std::uint32_t n, op0;           // kTokens
  std::uint32_t len, left0, size; // the window's staged bytes, the block's bytes from its start
};

struct TableShared {
  alignas(16) std::uint8_t window[kTableWindow];
  std::uint16_t table[kTableWindow];
  std::uint16_t toks[kTableTokens];
  std::uint32_t at[kTableTokens + 1];
  std::uint32_t warp_sum[kTableWarps];
  std::uint32_t first_bad;
  TableJob job;
};
constexpr unsigned kTableThreads = 32 * kTableWarps;

__device__ void table_job(TableShared& sh, const TableJob& j) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t / 32;
  if (j.kind == TableJobKind::kFill) {
    logic::lz4_table_fill(sh.window, sh.table, j.r0, j.end, j.len, j.left0, t, kTableThreads);
    return;
  }
  // the token pass: each thread's tokens, a block-wide exclusive scan of their output lengths
  std::uint32_t i0 = 0, i1 = 0;
  logic::lz4_table_share(j.n, t, kTableThreads, &i0, &i1);
  const std::uint32_t sum = logic::lz4_table_token_sum(sh.window, j.len, j.left0, sh.toks, i0, i1);
  std::uint32_t v = sum;
#pragma unroll
  for (unsigned d = 1; d < 32; d *= 2) {
    const std::uint32_t up = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += up;
  }
  if (lane == 31) sh.warp_sum[warp] = v;
  bar_sync_id<3>(kTableThreads);
  std::uint32_t pre = v - sum;
  for (unsigned w = 0; w < warp; ++w) pre += sh.warp_sum[w];
  const std::uint32_t bad =
      logic::lz4_table_token_place(sh.window, j.len, j.left0, j.size, sh.toks, j.n, i0, i1, j.op0 + pre, sh.at);
  if (bad < j.n) atomicMin(&sh.first_bad, bad);
}

__global__ void __launch_bounds__(kTableThreads) lz4_table_walk_kernel(DeviceBatch b, const std::uint32_t* order,
                                                                       Lz4SegmentScratch s) {
  __shared__ TableShared sh;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  if (warp != 0) {
    for (;;) {
      bar_sync_id<1>(kTableThreads);
      const TableJob j = sh.job;
      if (j.kind == TableJobKind::kDone) return;
      table_job(sh, j);
      bar_sync_id<2>(kTableThreads);
    }
  }
  // warp 0: hands out job j, does its part, returns once every warp has done its part
  const auto run = [&](const TableJob& j) {
    if (lane == 0) {
      sh.job = j;
      sh.first_bad = j.n;
    }
    bar_sync_id<1>(kTableThreads);
    table_job(sh, j);
    bar_sync_id<2>(kTableThreads);
  };
  walk_buffer(b, order[blockIdx.x], s, lane,
              [&](const std::uint8_t* in, std::uint32_t in_size, std::uint32_t size, std::size_t bound, auto&& mark,
                  std::uint32_t* count) {
                logic::Lz4StagedReader<TableFill> rd{in, in_size, sh.window, kTableWindow, TableFill{lane, in + in_size}};
                struct Team {
                  decltype(run)& go;
                  TableShared& sh;
                  std::uint32_t size;
                  __device__ void stage(const std::uint8_t*, std::uint32_t r0, std::uint32_t end, std::uint32_t len,
                                        std::uint32_t left0) {
                    go(TableJob{TableJobKind::kFill, r0, end, 0, 0, len, left0, size});
                  }
                  __device__ std::uint32_t tokens(const std::uint8_t*, std::uint32_t len, std::uint32_t left0,
                                                  std::uint32_t n, std::uint32_t op0) {
                    go(TableJob{TableJobKind::kTokens, 0, 0, n, op0, len, left0, size});
                    return sh.first_bad;
                  }
                } team{run, sh, size};
                return logic::lz4_segment_walk_table(rd, team, sh.table, sh.toks, kTableTokens, sh.at, lane == 0,
                                                     in_size, size, bound, mark, count);
              });
  if (lane == 0) sh.job.kind = TableJobKind::kDone;
  bar_sync_id<1>(kTableThreads);
}

// One group of matches (codec/logic/lz4_segments.hpp, lz4_group_size): lane j holds match r + j.
// Returns how many matches it copied.
__device__ std::uint32_t copy_group(std::uint8_t* out, const logic::Lz4MatchRecord* recs, std::uint32_t n,
                                    unsigned lane) {
  const bool have = lane < n;
  const logic::Lz4MatchRecord m = have ? recs[lane] : logic::Lz4MatchRecord{0, 1, 0};
  const std::uint32_t len0 = __shfl_sync(kFullMask, m.len, 0);
  if (len0 > logic::kLz4LaneMatchMax) {
    // alone, by the whole warp: every byte's source is final (before the match), so the lanes
    // load four bytes each, then store them
    const logic::Lz4MatchRecord m0{__shfl_sync(kFullMask, m.dst, 0), __shfl_sync(kFullMask, m.off, 0), len0};
    for (std::uint32_t at = 0; at < len0; at += 4 * 32) {
      std::uint8_t v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::uint32_t k = at + lane + 32u * u;
        v[u] = k < len0 ? __ldcg(out + logic::lz4_match_source(m0, k)) : std::uint8_t{0};
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::uint32_t k = at + lane + 32u * u;
        if (k < len0) out[m0.dst + k] = v[u];
      }
    }
    return 1;
  }
  // the group: the last lane i < lane whose match starts below this one's read end is the only
  // one that can meet it (output ranges sorted and disjoint): a binary search over the lanes
  const std::uint32_t a = m.dst - m.off, reads = m.off < m.len ? m.off : m.len;
  unsigned pos = 0;
#pragma unroll
  for (unsigned step = 16; step != 0; step >>= 1) {
    const unsigned probe = pos + step - 1;
    const std::uint32_t d = __shfl_sync(kFullMask, m.dst, probe);
    if (probe < lane && d < a + reads) pos += step;
  }
  const unsigned prev = pos == 0 ? 0 : pos - 1;
  const std::uint32_t prev_dst = __shfl_sync(kFullMask, m.dst, prev), prev_len = __shfl_sync(kFullMask, m.len, prev);
  const bool meets = pos != 0 && logic::lz4_reads_meet(m, prev_dst, prev_len);
  const bool member = lane == 0 || (have && m.len <= logic::kLz4LaneMatchMax && !meets);
  const unsigned refused = ~__ballot_sync(kFullMask, member);
  const unsigned g = refused == 0 ? 32u : static_cast<unsigned>(__ffs(static_cast<int>(refused))) - 1u;
  if (lane < g) {
    std::uint8_t v[logic::kLz4LaneMatchMax];
    std::uint32_t r = 0;  // i mod off, kept without a division
#pragma unroll
    for (std::uint32_t k = 0; k < logic::kLz4LaneMatchMax; ++k) {
      v[k] = k < m.len ? __ldcg(out + a + r) : std::uint8_t{0};
      r = r + 1 == m.off ? 0 : r + 1;
    }
#pragma unroll
    for (std::uint32_t k = 0; k < logic::kLz4LaneMatchMax; ++k)
      if (k < m.len) out[m.dst + k] = v[k];
  }
  return g;
}

__global__ void __launch_bounds__(32 * kSegWarps) lz4_segment_kernel(DeviceBatch b, Lz4SegmentScratch s) {
  __shared__ alignas(16) std::uint8_t windows[kSegWarps][kWindowBytes];
  __shared__ logic::Lz4MatchRecord records[kSegWarps][logic::kLz4SegmentSeqs];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x / 32;
  const unsigned long long n = b.num_buffers;
  const unsigned long long total = n * *s.max_segments;
  logic::Lz4MatchRecord* recs = records[warp];
  for (;;) {
    unsigned long long q = 0;
    if (lane == 0) q = atomicAdd(s.seg_queue, 1ull);
    q = __shfl_sync(kFullMask, q, 0);
    if (q >= total) break;
    const std::size_t j = q % n;
    const std::uint32_t k = static_cast<std::uint32_t>(q / n), count = s.seg_count[j];
    if (k >= count) continue;
    const std::uint8_t* in = b.src[j] + logic::kLz4NumcodecsHeader;
    const auto in_size = static_cast<std::uint32_t>(b.src_bytes[j] - logic::kLz4NumcodecsHeader);
    const auto size = static_cast<std::uint32_t>(b.dst_bytes[j]);
    std::uint8_t* out = b.dst[j];
    const unsigned long long base = s.seg_base[j];
    const logic::Lz4Segment seg = s.segs[base + k];
    const std::uint32_t end = k + 1 < count ? s.segs[base + k + 1].in : in_size;

    // parse and literals, 32 sequences at a time (lane c keeps sequence c), matches to records
    logic::Lz4StagedReader<WarpFill> rd{in, in_size, windows[warp], kWindowBytes, WarpFill{lane}};
    std::size_t ip = seg.in;
    std::uint32_t op = seg.out, nrec = 0;
    bool bad = false, last = false;
    while (ip < end && !bad && !last) {
      std::uint32_t my_src = 0, my_lit = 0, my_op = 0, my_off = 0, my_len = 0, c = 0;
      for (; c < 32 && ip < end; ++c) {
        logic::Lz4Sequence sq;
        if (logic::lz4_staged_next(rd, in_size, size, &ip, op, &sq, &last) != DecodeStatus::kOk) {
          bad = true;
          break;
        }
        if (lane == c) {
          my_src = static_cast<std::uint32_t>(sq.lit_src);
          my_lit = static_cast<std::uint32_t>(sq.lit_len);
          my_op = op;
          my_off = static_cast<std::uint32_t>(sq.match_offset);
          my_len = static_cast<std::uint32_t>(sq.match_len);
        }
        op += static_cast<std::uint32_t>(sq.lit_len + sq.match_len);
        if (last) {
          ++c;
          break;
        }
      }
      for (std::uint32_t u = 0; u < c; ++u) {
        const std::uint32_t from = __shfl_sync(kFullMask, my_src, u), lit = __shfl_sync(kFullMask, my_lit, u);
        const std::uint32_t at = __shfl_sync(kFullMask, my_op, u);
        logic::lane_copy_forward(out + at, in + from, lit, lane);
      }
      const bool has = lane < c && my_len != 0;
      const unsigned mask = __ballot_sync(kFullMask, has);
      const std::uint32_t idx = nrec + static_cast<std::uint32_t>(__popc(mask & ((1u << lane) - 1u)));
      if (has && idx < logic::kLz4SegmentSeqs) recs[idx] = logic::Lz4MatchRecord{my_op + my_lit, my_off, my_len};
      nrec += static_cast<std::uint32_t>(__popc(mask));
    }
    // the walk accepted the block, so the parse meets the next segment's start exactly
    if (bad || ip != end || nrec > logic::kLz4SegmentSeqs) {
      if (lane == 0) fail_status(b.status + j, DecodeStatus::kCorrupt);
      nrec = 0;
    }
    __syncwarp();
    // the matches read the output of earlier segments' matches: wait for the segment before
    if (k != 0)
      while (load_acquire(s.flags + base + k - 1) == 0) __nanosleep(64);
    for (std::uint32_t r = 0; r < nrec;) {
      r += copy_group(out, recs + r, nrec - r, lane);
      __syncwarp();
    }
    // every lane's writes, then the flag
    __threadfence();
    __syncwarp();
    if (lane == 0) store_release(s.flags + base + k, 1u);
  }
}

}  // namespace

std::size_t lz4_segment_scratch_bytes(std::size_t n, std::size_t total_decoded) {
  // the walk gives a buffer lz4_segment_bound(in, size) slots; a valid block of `size` bytes
  // has in <= size + size / 255 + 16 (liblz4's bound), so the batch needs at most
  // total / kLz4SegmentOut + (total * 256 / 255 + 16 n) / 3 / kLz4SegmentSeqs + 3 n slots
  const std::size_t in_max = total_decoded + total_decoded / 255 + 16 * n;
  const std::size_t slots = total_decoded / logic::kLz4SegmentOut + in_max / 3 / logic::kLz4SegmentSeqs + 3 * n;
  return layout(n).slots + align_up(slots * kSlotBytes);
}

Lz4SegmentScratch lz4_segment_scratch(void* base, std::size_t bytes, std::size_t n, bool* ok) {
  const Layout l = layout(n);
  Lz4SegmentScratch s{};
  *ok = bytes >= l.slots;
  if (!*ok) return s;
  auto* p = static_cast<std::uint8_t*>(base);
  s.seg_queue = reinterpret_cast<unsigned long long*>(p);
  s.cursor = reinterpret_cast<unsigned long long*>(p + 8);
  s.max_segments = reinterpret_cast<std::uint32_t*>(p + 16);
  s.ring_count = reinterpret_cast<std::uint32_t*>(p + 20);
  s.seg_base = reinterpret_cast<unsigned long long*>(p + l.seg_base);
  s.seg_count = reinterpret_cast<std::uint32_t*>(p + l.seg_count);
  s.ring_list = reinterpret_cast<std::uint32_t*>(p + l.ring_list);
  s.capacity = (bytes - l.slots) / kSlotBytes;
  s.segs = reinterpret_cast<logic::Lz4Segment*>(p + l.slots);
  s.flags = reinterpret_cast<std::uint32_t*>(p + l.slots + s.capacity * sizeof(logic::Lz4Segment));
  return s;
}

void lz4_segments_enqueue(const DeviceBatch& b, const std::uint32_t* order, const Lz4SegmentScratch& s,
                          bool table_walk, cudaStream_t stream) {
  // queue, cursor, max_segments, ring_count
  CS_CUDA_CHECK(cudaMemsetAsync(s.seg_queue, 0, 24, stream));
  if (table_walk) {
    lz4_table_walk_kernel<<<static_cast<unsigned>(b.num_buffers), kTableThreads, 0, stream>>>(b, order, s);
  } else {
    const unsigned walk_blocks = static_cast<unsigned>((b.num_buffers + kWalkWarps - 1) / kWalkWarps);
    lz4_walk_kernel<<<walk_blocks, 32 * kWalkWarps, 0, stream>>>(b, order, s);
  }
  CS_CUDA_CHECK(cudaGetLastError());
  int per_sm = 0;
  CS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lz4_segment_kernel, 32 * kSegWarps, 0));
  const unsigned blocks = static_cast<unsigned>(std::max(1, multiprocessor_count()) * std::max(1, per_sm));
  lz4_segment_kernel<<<blocks, 32 * kSegWarps, 0, stream>>>(b, s);
  CS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cubestream::cuda::detail
