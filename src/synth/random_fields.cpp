// Red-noise fields by repeated box blurs: three passes of a box filter approximate a Gaussian
// (central limit), and a running sum makes each pass cost O(1) per cell whatever the radius,
// so a 721 x 1440 field at a 20-degree scale costs no more than one at 1 degree.
#include "synth/random_fields.hpp"

#include <algorithm>
#include <cmath>

namespace cubestream::synth {
namespace {

// Box blur of radius r along longitude, periodic (the grid wraps around the globe).
void blur_lon(std::vector<float>& f, int nlat, int nlon, int r, std::vector<float>& row) {
  r = std::min(r, (nlon - 1) / 2);
  if (r <= 0) return;
  const double inv = 1.0 / (2 * r + 1);
  row.resize(static_cast<std::size_t>(nlon));
  for (int i = 0; i < nlat; ++i) {
    float* p = f.data() + static_cast<std::size_t>(i) * nlon;
    std::copy(p, p + nlon, row.begin());
    double sum = 0;
    for (int k = -r; k <= r; ++k) sum += row[static_cast<std::size_t>((k + nlon) % nlon)];
    for (int j = 0; j < nlon; ++j) {
      p[j] = static_cast<float>(sum * inv);
      const int add = (j + r + 1) % nlon, drop = (j - r + nlon) % nlon;
      sum += row[static_cast<std::size_t>(add)] - row[static_cast<std::size_t>(drop)];
    }
  }
}

// Box blur of radius r along latitude; rows past a pole repeat the polar row.
void blur_lat(std::vector<float>& f, int nlat, int nlon, int r, std::vector<float>& copy) {
  r = std::min(r, nlat - 1);
  if (r <= 0) return;
  const double inv = 1.0 / (2 * r + 1);
  copy = f;
  auto row = [&](int i) { return copy.data() + static_cast<std::size_t>(std::clamp(i, 0, nlat - 1)) * nlon; };
  std::vector<double> sum(static_cast<std::size_t>(nlon), 0.0);
  for (int k = -r; k <= r; ++k) {
    const float* s = row(k);
    for (int j = 0; j < nlon; ++j) sum[static_cast<std::size_t>(j)] += s[j];
  }
  for (int i = 0; i < nlat; ++i) {
    float* out = f.data() + static_cast<std::size_t>(i) * nlon;
    const float* add = row(i + r + 1);
    const float* drop = row(i - r);
    for (int j = 0; j < nlon; ++j) {
      out[j] = static_cast<float>(sum[static_cast<std::size_t>(j)] * inv);
      sum[static_cast<std::size_t>(j)] += static_cast<double>(add[j]) - drop[j];
    }
  }
}

void normalise(std::vector<float>& f) {
  double s = 0, s2 = 0;
  for (float v : f) {
    s += v;
    s2 += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(f.size());
  const double mean = s / n, var = std::max(s2 / n - mean * mean, 0.0);
  const double inv = var > 0 ? 1.0 / std::sqrt(var) : 0.0;
  for (float& v : f) v = static_cast<float>((v - mean) * inv);
}

}  // namespace

std::vector<float> red_noise(const Grid& grid, const std::vector<NoiseScale>& scales, std::uint64_t key) {
  const std::size_t n = static_cast<std::size_t>(grid.nlat) * static_cast<std::size_t>(grid.nlon);
  std::vector<float> out(n, 0.0f), comp(n), scratch;
  for (std::size_t s = 0; s < scales.size(); ++s) {
    const std::uint64_t k = mix64(key + 0x1000 * (s + 1));
    for (std::size_t c = 0; c < n; ++c) comp[c] = unit_noise(k, c);
    const int rlat = static_cast<int>(std::lround(scales[s].scale_deg / grid.dlat()));
    const int rlon = static_cast<int>(std::lround(scales[s].scale_deg / grid.dlon()));
    for (int pass = 0; pass < 3; ++pass) {
      blur_lon(comp, grid.nlat, grid.nlon, rlon, scratch);
      blur_lat(comp, grid.nlat, grid.nlon, rlat, scratch);
    }
    normalise(comp);
    const float w = static_cast<float>(scales[s].weight);
    for (std::size_t c = 0; c < n; ++c) out[c] += w * comp[c];
  }
  normalise(out);
  return out;
}

}  // namespace cubestream::synth
