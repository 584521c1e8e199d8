// Host count of the steps the GPU Zstandard plan (codec/logic/zstd/split.hpp, plan_buffer_bound)
// makes for gpu_zstd_bench's two batches: 256 ERA5-like chunks of 4 MiB and 1024 of 64 KiB-1 MiB
// (the small batch sampled one chunk in eight), at levels 1, 3 and 5. The sequences kernel picks
// its width by this count (src/cuda/zstd/zstd_batch.cu, kSeqWideStepsPerSm).
// Build (one line): g++ -std=c++20 -O2 -Isrc -Iinclude bench/micro/zstd_plan_steps.cpp -lzstd
//   -o zstd_plan_steps && ./zstd_plan_steps
#include <zstd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "../era5_row_chunk.hpp"
#include "codec/logic/zstd/split.hpp"
namespace zl = cubestream::codec::logic::zstd;
using Bytes = std::vector<unsigned char>;
unsigned long long steps_of(const Bytes& raw, int level) {
  Bytes enc(ZSTD_compressBound(raw.size()));
  enc.resize(ZSTD_compress(enc.data(), enc.size(), raw.data(), raw.size(), level));
  short norm[zl::kFseMaxSymbols]; zl::PlanTotals t{};
  zl::plan_buffer_bound(enc.data(), enc.size(), norm, &t);
  return t.steps;
}
int main() {
  for (int level : {1, 3, 5}) {
    unsigned long long big = 0, small = 0;
    for (int i = 0; i < 16; ++i) big += steps_of(cubestream_bench::era5_row_chunk(4u << 20, 1000 + i), level);
    std::mt19937 rng(7);
    std::vector<std::size_t> sizes(1024);
    for (auto& s : sizes) s = (64u << 10) + (rng() % ((1u << 20) - (64u << 10) + 1)) / 4 * 4;
    for (int i = 0; i < 1024; i += 8) small += steps_of(cubestream_bench::era5_row_chunk(sizes[i], 5000 + i), level) * 8;
    std::printf("level %d: big x256 ~%llu steps, small x1024 ~%llu steps (the wide bound: 60 x 132 = 7920 on an H100)\n", level, big * 16, small);
  }
}
