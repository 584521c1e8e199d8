// Does compute-sanitizer racecheck understand the numcodecs-LZ4 table walk's job handshake?
// (docs/gpu_decoders.md, session 32.) The walk's block hands jobs from warp 0 to seven helper
// warps through shared memory: warp 0 writes the job, everyone meets named barrier 1, every warp
// copies the job and does its part, everyone meets barrier 2. With the window ahead, warp 0
// leaves after barrier 1 and works alone while the helpers run their job (with barriers of their
// own among 224 threads); warp 0 meets barrier 2 only before it writes the next job. With one
// job slot, racecheck reported hazards between the helpers' copy of job n and warp 0's write of
// job n + 1 in the walk's damaged-buffers test, in that form only. These kernels are that
// protocol with one slot and nothing else around it:
//
//   together  every job run by all 256 threads between barriers 1 and 2 (the walk without ahead)
//   ahead     warp 0 leaves after barrier 1, joins at barrier 2 before its next write
//   ahead4    as ahead, and the helpers meet barrier 4 (224 threads) inside their job
//   mixed     every third job as ahead4, the others together (the walk: a table's fill ahead,
//             then refills and token passes by the whole block)
//   buffers   mixed over several buffers a block with __syncthreads between them (the fused
//             kernel's walker blocks), some without jobs, some ending on a job run ahead
//
// Each checks its own result (the helpers' sums of the jobs they saw). On the H200 (session 32)
// racecheck reported nothing on any of them, so the bare protocol does not explain the walk's
// report; the walk now alternates two job slots (lz4_table_walk.cuh, TableShared::job), which
// orders each write after the last copy of that slot by barrier 1 alone, and racecheck is clean.
// Build and run on the GPU machine:
//   nvcc -O3 -lineinfo -arch=sm_90 -o /tmp/handshake bench/micro/racecheck_handshake.cu
//   for f in together ahead ahead4 mixed buffers; do compute-sanitizer --tool racecheck /tmp/handshake $f; done
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr unsigned kThreads = 256, kHelpers = 224, kJobs = 64;

template <unsigned Id>
__device__ inline void bar_sync(unsigned threads) {
  asm volatile("barrier.sync %0, %1;" ::"n"(Id), "r"(threads) : "memory");
}

struct Job {
  unsigned kind;  // 0 work, 1 done
  unsigned value;
  unsigned pad[6];  // the walk's job is 64 bytes: a copy is several shared loads
};

enum Form { kTogether = 0, kAhead = 1, kAhead4 = 2, kMixed = 3, kBuffers = 4 };
constexpr unsigned kBufferCount = 9;

// One buffer's jobs (`jobs` of them, job values from v0) by the whole block, as the walk's
// table_walk_buffer: the helpers add up what they saw into *sum.
template <int F>
__device__ __noinline__ void one_buffer(Job& job, unsigned* own, unsigned jobs, unsigned v0, unsigned* sum) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t / 32;
  if (warp != 0) {
    const unsigned h = t - 32;
    for (;;) {
      bar_sync<1>(kThreads);
      const Job j = job;
      if (j.kind == 1) return;
      if (F != kTogether && F != kAhead) bar_sync<4>(kHelpers);
      *sum += j.value + j.pad[h % 6];
      bar_sync<2>(kThreads);
    }
  }
  bool pending = false;
  for (unsigned n = 0; n < jobs; ++n) {
    if (pending) {  // join: the helpers have finished (and copied) the last job
      bar_sync<2>(kThreads);
      pending = false;
    }
    const unsigned v = v0 + n;
    if (lane == 0) {
      job.kind = 0;
      job.value = v + 1;
      for (unsigned k = 0; k < 6; ++k) job.pad[k] = 7 * v + k;
    }
    bar_sync<1>(kThreads);
    if (F == kTogether || (F != kAhead && F != kAhead4 && v % 3 != 0)) {
      own[lane] = job.value + lane;  // warp 0's part, between the barriers like the helpers'
      bar_sync<2>(kThreads);
    } else {
      pending = true;
      for (unsigned r = 0; r < 64; ++r) {  // warp 0 alone while the helpers run the job
        const unsigned x = own[(lane + 1) & 31u] + r;
        __syncwarp();
        own[lane] = x;
        __syncwarp();
      }
    }
  }
  if (pending) bar_sync<2>(kThreads);
  if (lane == 0) job.kind = 1;
  bar_sync<1>(kThreads);
}

template <int F>
__global__ void handshake(unsigned* sums) {
  __shared__ Job job;
  __shared__ unsigned own[32];  // warp 0's own work while the helpers run (the chain's stand-in)
  __shared__ unsigned next;
  unsigned sum = 0;
  if (F != kBuffers) {
    one_buffer<F>(job, own, kJobs, 0, &sum);
  } else {
    // several buffers a block, as the fused kernel's walkers take them: a __syncthreads after
    // each, thread 0 takes the next; every third buffer has no job (a damaged header), the
    // others end on a job the helpers run alone half the time (a walk that fails ahead)
    unsigned v0 = 0;
    for (unsigned b = 0; b < kBufferCount; ++b) {
      if (threadIdx.x == 0) next = b % 3 == 0 ? 0 : (b % 2 == 0 ? kJobs : kJobs - 1);
      __syncthreads();
      const unsigned jobs = next;
      one_buffer<F>(job, own, jobs, v0, &sum);
      v0 += jobs;
      __syncthreads();
    }
  }
  if (threadIdx.x >= 32) sums[blockIdx.x * kHelpers + threadIdx.x - 32] = sum;
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "ahead";
  const int form = std::strcmp(name, "together") == 0 ? kTogether
                   : std::strcmp(name, "ahead4") == 0 ? kAhead4
                   : std::strcmp(name, "mixed") == 0  ? kMixed
                   : std::strcmp(name, "buffers") == 0 ? kBuffers
                                                      : kAhead;
  constexpr unsigned blocks = 4;
  unsigned* d = nullptr;
  if (cudaMalloc(&d, blocks * kHelpers * sizeof(unsigned)) != cudaSuccess) return 2;
  if (form == kTogether) handshake<kTogether><<<blocks, kThreads>>>(d);
  if (form == kAhead) handshake<kAhead><<<blocks, kThreads>>>(d);
  if (form == kAhead4) handshake<kAhead4><<<blocks, kThreads>>>(d);
  if (form == kMixed) handshake<kMixed><<<blocks, kThreads>>>(d);
  if (form == kBuffers) handshake<kBuffers><<<blocks, kThreads>>>(d);
  if (cudaDeviceSynchronize() != cudaSuccess) return 3;
  unsigned host[blocks * kHelpers];
  cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost);
  cudaFree(d);
  // each helper saw every job once: the sum of (v + 1) + (7v + h % 6) over the jobs' values v
  unsigned all = kJobs;
  if (form == kBuffers) {
    all = 0;
    for (unsigned b = 0; b < kBufferCount; ++b) all += b % 3 == 0 ? 0 : (b % 2 == 0 ? kJobs : kJobs - 1);
  }
  unsigned bad = 0;
  for (unsigned i = 0; i < blocks * kHelpers; ++i) {
    const unsigned h = i % kHelpers;
    unsigned want = 0;
    for (unsigned v = 0; v < all; ++v) want += (v + 1) + 7 * v + h % 6;
    bad += host[i] != want;
  }
  std::printf("%s: %u of %u helper sums wrong\n", name, bad, blocks * kHelpers);
  return bad == 0 ? 0 : 1;
}
