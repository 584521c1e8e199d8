// Random numbers and spatially correlated random fields on a latitude-longitude grid, for the
// synthetic ERA5-like data.
//
// Everything is counter-based: a value depends only on (key, index), never on the order in
// which values are drawn, so a store generated on any number of threads, in any order, or
// resumed half-way, holds the same bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "synth/era5_catalog.hpp"

namespace cubestream::synth {

// A well-mixed 64-bit hash of x (the splitmix64 finaliser: Steele, Lea and Flood, 2014).
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A key for one stream of random numbers, from a seed and up to three labels.
inline std::uint64_t stream_key(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0) {
  return mix64(mix64(mix64(seed ^ 0x5eedc0ffee123457ULL) ^ a) ^ (b * 0x100000001b3ULL)) ^ mix64(c + 0x2545f4914f6cdd1dULL);
}

// Uniform on [-sqrt(3), sqrt(3)): zero mean, unit variance.
inline float unit_noise(std::uint64_t key, std::uint64_t index) {
  const std::uint64_t h = mix64(key ^ (index * 0xd6e8feb86659fd93ULL));
  // Top 24 bits -> [0, 1).
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  return (u - 0.5f) * 3.4641016f;
}

// One component of a red-noise field: white noise blurred to a correlation length of about
// `scale_deg` degrees, weighted by `weight` (after it is brought to unit variance).
struct NoiseScale {
  double scale_deg;
  double weight;
};

// A zero-mean, unit-variance field on `grid` (nlat * nlon floats, row-major, latitude rows
// from north to south): the weighted sum of white noise blurred at each scale (three passes
// of a box blur of radius scale / grid spacing, periodic in longitude, clamped at the poles),
// so that its spectrum is red, with as much grid-scale detail as the smallest scale gives.
std::vector<float> red_noise(const Grid& grid, const std::vector<NoiseScale>& scales, std::uint64_t key);

}  // namespace cubestream::synth
