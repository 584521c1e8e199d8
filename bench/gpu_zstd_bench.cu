// GPU Zstandard batch decode benchmark (issue 4): cubestream::cuda::zstd_batch_decode
// against libzstd on every core, on the same batch, in the same run.
//
//   build/gpu_zstd_bench [--big N] [--small N] [--repeat R] [--levels 1,3,5] [--md FILE]
//
// Batches (generated here, compressed as numcodecs / zarr-python / TensorStore write them:
// plain ZSTD_compress, content size on, no checksum):
//   big   N ERA5-like float32 chunks of 4 MiB (default 256)
//   small N chunks of 64 KiB to 1 MiB, sizes drawn at random (default 2048)
// Every GPU output byte is checked against the source (which libzstd also reproduces)
// before timing. Reported, median of R repeats (default 5), in GB/s of decoded bytes:
//   kernel   cudaEvents around zstd_batch_decode alone
//   e2e      pinned host -> device copy of the compressed bytes + decode
//   libzstd  ZSTD_decompressDCtx on std::thread::hardware_concurrency() threads
// and a markdown table on stdout (and in --md FILE).
#include <cuda_runtime_api.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "era5_row_chunk.hpp"

#include "codec/logic/decode_status.hpp"
#include "cuda/zstd/zstd_batch.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
using cubestream::codec::logic::DecodeStatus;

#define BENCH_CUDA(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)

unsigned threads() { return std::max(1u, std::thread::hardware_concurrency()); }

template <class F>
void parallel_for(std::size_t n, F f) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads(); ++t) {
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) f(i);
    });
  }
  for (auto& th : pool) th.join();
}

struct Batch {
  std::string name;
  std::vector<Bytes> raw;
};

struct Row {
  std::string batch;
  int level;
  std::size_t chunks;
  double decoded_gb, ratio;
  double kernel_gbs, e2e_gbs, cpu_gbs, v1_kernel_gbs;
  bool verified;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Row run(const Batch& batch, int level, int repeat, int v1_repeat, bool have_gpu) {
  const std::size_t n = batch.raw.size();
  std::vector<Bytes> enc(n);
  parallel_for(n, [&](std::size_t i) {
    enc[i].resize(ZSTD_compressBound(batch.raw[i].size()));
    const std::size_t r = ZSTD_compress(enc[i].data(), enc[i].size(), batch.raw[i].data(), batch.raw[i].size(), level);
    if (ZSTD_isError(r)) std::abort();
    enc[i].resize(r);
  });
  std::size_t raw_total = 0, enc_total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    raw_total += batch.raw[i].size();
    enc_total += enc[i].size();
  }
  Row row{batch.name, level, n, raw_total / 1e9, double(raw_total) / double(enc_total), 0, 0, 0, 0, true};

  // libzstd on every core, each thread with its own context, chunks from a shared counter.
  std::vector<Bytes> cpu_out(n);
  for (std::size_t i = 0; i < n; ++i) cpu_out[i].resize(batch.raw[i].size());
  std::vector<double> cpu_s;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads(); ++t) {
      pool.emplace_back([&] {
        ZSTD_DCtx* d = ZSTD_createDCtx();
        for (std::size_t i; (i = next.fetch_add(1)) < n;) {
          const std::size_t got = ZSTD_decompressDCtx(d, cpu_out[i].data(), cpu_out[i].size(), enc[i].data(), enc[i].size());
          if (ZSTD_isError(got) || got != cpu_out[i].size()) std::abort();
        }
        ZSTD_freeDCtx(d);
      });
    }
    for (auto& th : pool) th.join();
    cpu_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (cpu_out[i] != batch.raw[i]) row.verified = false;
  }
  cpu_out.clear();
  row.cpu_gbs = raw_total / 1e9 / median(cpu_s);
  if (!have_gpu) return row;

  // GPU: compressed bytes packed in one pinned buffer -> one device buffer; outputs in one.
  std::vector<std::size_t> src_off(n), dst_off(n), src_sizes(n), dst_sizes(n);
  std::size_t so = 0, dof = 0;
  for (std::size_t i = 0; i < n; ++i) {
    src_off[i] = so;
    dst_off[i] = dof;
    src_sizes[i] = enc[i].size();
    dst_sizes[i] = batch.raw[i].size();
    so += (enc[i].size() + 15) / 16 * 16;
    dof += (batch.raw[i].size() + 15) / 16 * 16;
  }
  std::uint8_t* h_src;
  BENCH_CUDA(cudaMallocHost(&h_src, so));
  for (std::size_t i = 0; i < n; ++i) std::memcpy(h_src + src_off[i], enc[i].data(), enc[i].size());
  std::uint8_t *d_src, *d_dst;
  BENCH_CUDA(cudaMalloc(&d_src, so));
  BENCH_CUDA(cudaMalloc(&d_dst, dof));
  std::vector<const void*> src_ptrs(n);
  std::vector<void*> dst_ptrs(n);
  for (std::size_t i = 0; i < n; ++i) {
    src_ptrs[i] = d_src + src_off[i];
    dst_ptrs[i] = d_dst + dst_off[i];
  }
  const void** dd_src;
  void** dd_dst;
  std::size_t *d_src_sizes, *d_dst_sizes;
  DecodeStatus* d_status;
  BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&dd_src), n * sizeof(void*)));
  BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&dd_dst), n * sizeof(void*)));
  BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_src_sizes), n * sizeof(std::size_t)));
  BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_dst_sizes), n * sizeof(std::size_t)));
  BENCH_CUDA(cudaMalloc(reinterpret_cast<void**>(&d_status), n * sizeof(DecodeStatus)));
  BENCH_CUDA(cudaMemcpy(dd_src, src_ptrs.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(dd_dst, dst_ptrs.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(d_src_sizes, src_sizes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(d_dst_sizes, dst_sizes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
  const std::size_t scratch_bytes = cubestream::cuda::zstd_batch_scratch_bytes(n, raw_total);
  void* d_scratch;
  BENCH_CUDA(cudaMalloc(&d_scratch, scratch_bytes));
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, e2;
  BENCH_CUDA(cudaEventCreate(&e0));
  BENCH_CUDA(cudaEventCreate(&e1));
  BENCH_CUDA(cudaEventCreate(&e2));

  // Correctness first: one run, every byte and status checked.
  BENCH_CUDA(cudaMemcpyAsync(d_src, h_src, so, cudaMemcpyHostToDevice, stream));
  BENCH_CUDA(cudaMemsetAsync(d_dst, 0, dof, stream));
  cubestream::cuda::zstd_batch_decode(reinterpret_cast<const void* const*>(dd_src), d_src_sizes, dd_dst, d_dst_sizes,
                                      d_status, n, d_scratch, scratch_bytes, false, stream);
  BENCH_CUDA(cudaStreamSynchronize(stream));
  std::vector<DecodeStatus> st(n);
  BENCH_CUDA(cudaMemcpy(st.data(), d_status, n * sizeof(DecodeStatus), cudaMemcpyDeviceToHost));
  {
    Bytes out(dof);
    BENCH_CUDA(cudaMemcpy(out.data(), d_dst, dof, cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (st[i] != DecodeStatus::kOk || std::memcmp(out.data() + dst_off[i], batch.raw[i].data(), dst_sizes[i]) != 0) {
        if (bad++ < 5) {
          std::fprintf(stderr, "MISMATCH %s level %d chunk %zu: status %s\n", batch.name.c_str(), level, i,
                       cubestream::codec::logic::decode_status_name(st[i]));
        }
      }
    }
    if (bad) row.verified = false;
  }
  std::vector<double> kernel_s, e2e_s;
  for (int r = 0; r < repeat; ++r) {
    BENCH_CUDA(cudaEventRecord(e0, stream));
    BENCH_CUDA(cudaMemcpyAsync(d_src, h_src, so, cudaMemcpyHostToDevice, stream));
    BENCH_CUDA(cudaEventRecord(e1, stream));
    cubestream::cuda::zstd_batch_decode(reinterpret_cast<const void* const*>(dd_src), d_src_sizes, dd_dst,
                                        d_dst_sizes, d_status, n, d_scratch, scratch_bytes, false, stream);
    BENCH_CUDA(cudaEventRecord(e2, stream));
    BENCH_CUDA(cudaEventSynchronize(e2));
    float copy_ms = 0, kernel_ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&copy_ms, e0, e1));
    BENCH_CUDA(cudaEventElapsedTime(&kernel_ms, e1, e2));
    kernel_s.push_back(kernel_ms / 1e3);
    e2e_s.push_back((copy_ms + kernel_ms) / 1e3);
  }
  row.kernel_gbs = raw_total / 1e9 / median(kernel_s);
  row.e2e_gbs = raw_total / 1e9 / median(e2e_s);
  // Version 1 on the same batch, same process (CUBESTREAM_ZSTD_V1 forces it), also verified.
  if (v1_repeat > 0) {
    setenv("CUBESTREAM_ZSTD_V1", "1", 1);
    BENCH_CUDA(cudaMemsetAsync(d_dst, 0, dof, stream));
    std::vector<double> v1_s;
    for (int r = 0; r < v1_repeat; ++r) {
      BENCH_CUDA(cudaEventRecord(e1, stream));
      cubestream::cuda::zstd_batch_decode(reinterpret_cast<const void* const*>(dd_src), d_src_sizes, dd_dst,
                                          d_dst_sizes, d_status, n, d_scratch, scratch_bytes, false, stream);
      BENCH_CUDA(cudaEventRecord(e2, stream));
      BENCH_CUDA(cudaEventSynchronize(e2));
      float ms = 0;
      BENCH_CUDA(cudaEventElapsedTime(&ms, e1, e2));
      v1_s.push_back(ms / 1e3);
    }
    unsetenv("CUBESTREAM_ZSTD_V1");
    Bytes out(dof);
    BENCH_CUDA(cudaMemcpy(out.data(), d_dst, dof, cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(st.data(), d_status, n * sizeof(DecodeStatus), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i) {
      if (st[i] != DecodeStatus::kOk || std::memcmp(out.data() + dst_off[i], batch.raw[i].data(), dst_sizes[i]) != 0) {
        row.verified = false;
      }
    }
    row.v1_kernel_gbs = raw_total / 1e9 / median(v1_s);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaEventDestroy(e2);
  cudaStreamDestroy(stream);
  cudaFree(d_scratch);
  cudaFree(d_status);
  cudaFree(d_dst_sizes);
  cudaFree(d_src_sizes);
  cudaFree(dd_dst);
  cudaFree(dd_src);
  cudaFree(d_dst);
  cudaFree(d_src);
  cudaFreeHost(h_src);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t big = 256, small = 2048;
  int repeat = 5, v1_repeat = 3;
  std::vector<int> levels{1, 3, 5};
  std::string md;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--big") big = std::strtoull(v, nullptr, 10), ++i;
    else if (a == "--small") small = std::strtoull(v, nullptr, 10), ++i;
    else if (a == "--repeat") repeat = std::max(1, std::atoi(v)), ++i;
    else if (a == "--md") md = v, ++i;
    else if (a == "--v1-repeat") v1_repeat = std::max(0, std::atoi(v)), ++i;
    else if (a == "--levels") {
      levels.clear();
      for (char* p = argv[++i]; *p;) {
        levels.push_back(static_cast<int>(std::strtol(p, &p, 10)));
        if (*p == ',') ++p;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--big N] [--small N] [--repeat R] [--v1-repeat R] [--levels 1,3,5] [--md FILE]\n", argv[0]);
      return 2;
    }
  }
  int devices = 0;
  const bool have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  std::string device = "no GPU visible (libzstd column only)";
  if (have_gpu) {
    cudaDeviceProp p{};
    BENCH_CUDA(cudaGetDeviceProperties(&p, 0));
    device = std::string(p.name) + ", " + std::to_string(p.multiProcessorCount) + " SMs";
  } else {
    cudaGetLastError();
  }
  std::vector<Batch> batches;
  if (big) {
    Batch b{"era5 4MiB x" + std::to_string(big), std::vector<Bytes>(big)};
    parallel_for(big, [&](std::size_t i) { b.raw[i] = cubestream_bench::era5_row_chunk(4u << 20, 1000 + static_cast<std::uint32_t>(i)); });
    batches.push_back(std::move(b));
  }
  if (small) {
    std::mt19937 rng(7);
    std::vector<std::size_t> sizes(small);
    for (auto& s : sizes) s = (64u << 10) + (rng() % ((1u << 20) - (64u << 10) + 1)) / 4 * 4;
    Batch b{"era5 64KiB-1MiB x" + std::to_string(small), std::vector<Bytes>(small)};
    parallel_for(small, [&](std::size_t i) { b.raw[i] = cubestream_bench::era5_row_chunk(sizes[i], 5000 + static_cast<std::uint32_t>(i)); });
    batches.push_back(std::move(b));
  }
  std::vector<Row> rows;
  for (const auto& b : batches) {
    for (int level : levels) {
      rows.push_back(run(b, level, repeat, v1_repeat, have_gpu));
      const Row& r = rows.back();
      std::fprintf(stderr, "%s level %d: ratio %.2f v1 kernel %.2f v2 kernel %.2f GB/s e2e %.2f GB/s libzstd %.2f GB/s %s\n",
                   r.batch.c_str(), r.level, r.ratio, r.v1_kernel_gbs, r.kernel_gbs, r.e2e_gbs, r.cpu_gbs,
                   r.verified ? "verified" : "MISMATCH");
    }
  }
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "GPU zstd batch decode (version 2: plan / entropy per block / execute; version 1: one warp per "
                "buffer) on %s; libzstd %s on %u threads; median of %d (version 1: %d)\n\n",
                device.c_str(), ZSTD_versionString(), threads(), repeat, v1_repeat);
  out += line;
  out += "| batch | level | decoded GB | ratio | v1 kernel GB/s | v2 kernel GB/s | v2 e2e GB/s | libzstd GB/s | v2 kernel / libzstd | bytes verified |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "| %s | %d | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx | %s |\n",
                  r.batch.c_str(), r.level, r.decoded_gb, r.ratio, r.v1_kernel_gbs, r.kernel_gbs, r.e2e_gbs, r.cpu_gbs,
                  r.cpu_gbs > 0 ? r.kernel_gbs / r.cpu_gbs : 0.0, r.verified ? "yes" : "NO");
    out += line;
  }
  std::fputs(out.c_str(), stdout);
  if (!md.empty()) {
    if (FILE* f = std::fopen(md.c_str(), "w")) {
      std::fputs(out.c_str(), f);
      std::fclose(f);
    }
  }
  for (const auto& r : rows) {
    if (!r.verified) return 1;
  }
  return 0;
}
