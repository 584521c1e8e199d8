// The ERA5-like chunk of the GPU Zstandard benchmark (bench/gpu_zstd_bench.cu) and of
// bench/micro/zstd_plan_steps.cpp, which counts the plan's steps on the same bytes: float32
// rows of 1440 values (a 0.25 degree grid), a smooth large-scale field plus noise, quantised
// to 16 bits over its range (as tests/cpp/codec/zstd_test_data.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace cubestream_bench {

inline std::vector<std::uint8_t> era5_row_chunk(std::size_t bytes, std::uint32_t seed) {
  const std::size_t n = bytes / 4, nx = 1440, ny = (n + nx - 1) / nx;
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> v(n);
  const double phase = double(seed % 97) * 0.1, lat0 = double(seed % 13) / 13.0;
  float lo = 1e30f, hi = -1e30f;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t y = i / nx, x = i % nx;
    const double lat = ((double(y) / double(ny) + lat0) * 0.5 - 0.5) * M_PI;
    const double lon = double(x) / double(nx) * 2 * M_PI;
    const double t = 250.0 + 45.0 * std::cos(lat) + 8.0 * std::sin(4 * lon + phase) * std::cos(lat) +
                     3.0 * std::tanh(5.0 * (lat - 0.3 * std::sin(lon + phase)));
    v[i] = static_cast<float>(t) + noise(rng);
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  const float scale = (hi - lo) / 65535.0f;
  for (auto& f : v) f = lo + std::round((f - lo) / scale) * scale;
  std::vector<std::uint8_t> b(bytes, 0);
  std::memcpy(b.data(), v.data(), n * 4);
  return b;
}

}  // namespace cubestream_bench
