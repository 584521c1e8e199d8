// The ERA5-like test chunk of the GPU decoder benchmarks (bench/gpu_decode_bench.cpp) and of
// bench/micro/lz4_match_deps.cpp, which analyses the same bytes: one chunk of `n` float32
// values, a smooth 2-D field (a temperature-like pattern with a chunk-dependent phase) plus
// Gaussian noise, quantised to 16 bits over its range as GRIB packing does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace cubestream_bench {

inline std::vector<std::uint8_t> era5_chunk(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.4);
  const std::size_t cols = std::max<std::size_t>(1, static_cast<std::size_t>(std::sqrt(double(n))));
  std::vector<double> v(n);
  const double phase = seed * 0.37;
  double lo = 1e300, hi = -1e300;
  for (std::size_t i = 0; i < n; ++i) {
    const double lat = (double(i / cols) / double(cols) - 0.5) * M_PI;
    const double lon = double(i % cols) / double(cols) * 2 * M_PI;
    v[i] = 273.15 + 30 * std::cos(lat) + 6 * std::sin(3 * lon + phase) * std::cos(lat) +
           2 * std::sin(11 * lon + 5 * lat + phase) + noise(rng);
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  std::vector<std::uint8_t> out(n * 4);
  const double step = (hi - lo) / 65535.0;
  for (std::size_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(lo + std::round((v[i] - lo) / step) * step);
    std::memcpy(out.data() + 4 * i, &f, 4);
  }
  return out;
}

}  // namespace cubestream_bench
