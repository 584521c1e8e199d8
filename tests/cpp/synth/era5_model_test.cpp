// The synthetic ERA5-like field model: determinism, GRIB packing, magnitudes, structure in
// space and time, and compression ratios measured with libzstd and libblosc themselves.
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "cubestream/error.hpp"
#include "synth/era5_model.hpp"

#ifdef CUBESTREAM_TEST_HAVE_BLOSC  // the oracle library; the GPU machine has no libblosc-dev
#include <blosc.h>
#endif

namespace cubestream::synth {
namespace {

ModelSpec small_spec(std::uint64_t seed = 7) {
  ModelSpec s;
  s.grid = {91, 180};  // 2 degrees
  s.variables = {"2m_temperature", "geopotential", "u_component_of_wind", "specific_humidity", "mean_sea_level_pressure"};
  s.levels = {250, 500, 850};
  s.seed = seed;
  return s;
}

std::vector<float> field_of(const Era5Model& m, std::size_t var, std::size_t level, std::int64_t t) {
  std::vector<float> f(m.field_elements());
  m.field(var, level, t, f.data());
  return f;
}

double mean(const std::vector<float>& f) {
  double s = 0;
  for (float v : f) s += v;
  return s / static_cast<double>(f.size());
}

// The field minus its zonal (row) mean: the weather, without climatology.
std::vector<double> anomaly(const std::vector<float>& f, int nlat, int nlon) {
  std::vector<double> a(f.size());
  for (int i = 0; i < nlat; ++i) {
    double s = 0;
    for (int j = 0; j < nlon; ++j) s += f[static_cast<std::size_t>(i * nlon + j)];
    s /= nlon;
    for (int j = 0; j < nlon; ++j) a[static_cast<std::size_t>(i * nlon + j)] = f[static_cast<std::size_t>(i * nlon + j)] - s;
  }
  return a;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(SynthModel, SameSeedSameBytesWhateverElseIsGenerated) {
  const Era5Model a(small_spec(), 1), b(small_spec(), 2);
  // Only geopotential, and other levels: its 500 hPa field must not change.
  ModelSpec only = small_spec();
  only.variables = {"geopotential"};
  only.levels = {500, 1000};
  const Era5Model c(only, 1);
  for (std::int64_t t : {0, 5, 1000}) {
    EXPECT_EQ(field_of(a, 1, 1, t), field_of(b, 1, 1, t)) << t;
    EXPECT_EQ(field_of(a, 1, 1, t), field_of(c, 0, 0, t)) << t;
    EXPECT_EQ(field_of(a, 0, 0, t), field_of(b, 0, 0, t)) << t;
  }
  const Era5Model other(small_spec(8), 1);
  EXPECT_NE(field_of(a, 1, 1, 3), field_of(other, 1, 1, 3));
  EXPECT_NE(field_of(a, 1, 1, 3), field_of(a, 1, 1, 4));
}

TEST(SynthModel, ValuesAreGrib16Packed) {
  const Era5Model m(small_spec(), 1);
  for (std::size_t v = 0; v < m.spec().variables.size(); ++v) {
    const auto f = field_of(m, v, 1, 11);
    const double lo = *std::min_element(f.begin(), f.end()), hi = *std::max_element(f.begin(), f.end());
    int e = 0;
    std::frexp(hi - lo, &e);
    const double scale = std::ldexp(1.0, e - 16);
    std::set<long> levels;
    for (float x : f) {
      const double q = (x - lo) / scale;
      // float32 rounding of ref + q * scale may move a value by an ulp, far below a step.
      ASSERT_NEAR(q, std::nearbyint(q), 0.02) << m.variable(v).name;
      ASSERT_LE(std::nearbyint(q), 65535.0);
      levels.insert(std::lround(q));
    }
    // The smallest power-of-two step that fits: the range uses more than half of 16 bits.
    EXPECT_GT(*levels.rbegin(), 32000) << m.variable(v).name;
  }
}

TEST(SynthModel, MagnitudesAreThoseOfTheAtmosphere) {
  const Era5Model m(small_spec(), 1);
  const auto t2m = field_of(m, 0, 0, 40);
  EXPECT_GT(*std::min_element(t2m.begin(), t2m.end()), 190.f);
  EXPECT_LT(*std::max_element(t2m.begin(), t2m.end()), 340.f);
  EXPECT_NEAR(mean(t2m), 285.0, 12.0);
  // Geopotential rises with height: 850 hPa ~ 1.5 km, 500 ~ 5.6 km, 250 ~ 10.4 km (times g).
  EXPECT_NEAR(mean(field_of(m, 1, 2, 40)) / 9.80665, 1460.0, 200.0);
  EXPECT_NEAR(mean(field_of(m, 1, 1, 40)) / 9.80665, 5570.0, 300.0);
  EXPECT_NEAR(mean(field_of(m, 1, 0, 40)) / 9.80665, 10360.0, 500.0);
  // A westerly jet aloft, weaker winds below.
  const auto u250 = field_of(m, 2, 0, 40), u850 = field_of(m, 2, 2, 40);
  EXPECT_GT(*std::max_element(u250.begin(), u250.end()), 35.f);
  EXPECT_GT(mean(u250), mean(u850));
  // Humidity: positive, moist near the ground, dry aloft.
  const auto q850 = field_of(m, 3, 2, 40), q250 = field_of(m, 3, 0, 40);
  EXPECT_GE(*std::min_element(q850.begin(), q850.end()), 0.f);
  EXPECT_LT(*std::max_element(q850.begin(), q850.end()), 0.06f);
  EXPECT_GT(mean(q850), 10 * mean(q250));
  const auto mslp = field_of(m, 4, 0, 40);
  EXPECT_NEAR(mean(mslp), 101300.0, 1500.0);
  EXPECT_GT(*std::min_element(mslp.begin(), mslp.end()), 92000.f);
  EXPECT_LT(*std::max_element(mslp.begin(), mslp.end()), 110000.f);
}

TEST(SynthModel, SeasonsAndDaysCycle) {
  const Era5Model m(small_spec(), 1);
  const int nlon = m.spec().grid.nlon, nlat = m.spec().grid.nlat;
  auto row_mean = [&](const std::vector<float>& f, int i) {
    double s = 0;
    for (int j = 0; j < nlon; ++j) s += f[static_cast<std::size_t>(i * nlon + j)];
    return s / nlon;
  };
  // Northern mid-latitudes (row at 50N) are warmer in July (step 4 * 195) than in January.
  const int row50n = static_cast<int>((90 - 50) / m.spec().grid.dlat());
  EXPECT_GT(row_mean(field_of(m, 0, 0, 4 * 195), row50n), row_mean(field_of(m, 0, 0, 0), row50n) + 8.0);
  const int row50s = nlat - 1 - row50n;
  EXPECT_LT(row_mean(field_of(m, 0, 0, 4 * 195), row50s), row_mean(field_of(m, 0, 0, 0), row50s) - 8.0);
}

TEST(SynthModel, WeatherIsSmoothInSpaceAndCorrelatedInTime) {
  const Era5Model m(small_spec(), 1);
  const int nlat = m.spec().grid.nlat, nlon = m.spec().grid.nlon;
  for (std::size_t v : {0u, 1u, 2u}) {
    const auto a0 = anomaly(field_of(m, v, 1, 100), nlat, nlon);
    const auto a1 = anomaly(field_of(m, v, 1, 101), nlat, nlon);
    const auto a20 = anomaly(field_of(m, v, 1, 120), nlat, nlon);
    const double next = correlation(a0, a1), later = correlation(a0, a20);
    EXPECT_GT(next, 0.75) << m.variable(v).name;
    EXPECT_LT(later, next - 0.3) << m.variable(v).name;
    // Neighbouring cells along a row are alike (large-scale structure), but not identical.
    std::vector<double> east(a0.size());
    for (int i = 0; i < nlat; ++i)
      for (int j = 0; j < nlon; ++j)
        east[static_cast<std::size_t>(i * nlon + j)] = a0[static_cast<std::size_t>(i * nlon + (j + 1) % nlon)];
    const double lag1 = correlation(a0, east);
    EXPECT_GT(lag1, 0.8) << m.variable(v).name;
    EXPECT_LT(lag1, 0.9999) << m.variable(v).name;
  }
}

TEST(SynthModel, RejectsBadSpecs) {
  ModelSpec s = small_spec();
  s.variables = {"2m_temperature", "vorticity"};
  try {
    Era5Model m(s, 1);
    FAIL() << "an unknown variable was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("vorticity"), std::string::npos);
  }
  s = small_spec();
  s.levels = {500, 2000};
  EXPECT_THROW(Era5Model(s, 1), Error);
  s = small_spec();
  s.step_hours = 0;
  EXPECT_THROW(Era5Model(s, 1), Error);
  const Era5Model m(small_spec(), 1);
  std::vector<float> out(m.field_elements());
  EXPECT_THROW(m.field(9, 0, 0, out.data()), Error);
  EXPECT_THROW(m.field(1, 3, 0, out.data()), Error);
  EXPECT_THROW(m.field(0, 0, -1, out.data()), Error);
}

// On ERA5's own grid, one time step per chunk, the fields compress as real float32 reanalysis
// fields do: zstd level 3 about 1.2-2.0x, blosc lz4 + byte shuffle about 1.5-2.1x.
TEST(SynthModel, CompressesLikeReanalysisOnTheQuarterDegreeGrid) {
  ModelSpec s;
  s.variables = {"2m_temperature", "u_component_of_wind", "specific_humidity"};
  s.levels = {500};
  const Era5Model m(s, 0);
  std::vector<float> f(m.field_elements());
  std::vector<char> out(ZSTD_compressBound(f.size() * 4) + 64 * 1024);
  double raw = 0, zstd = 0;
  [[maybe_unused]] double blosc = 0;
  for (std::size_t v = 0; v < 3; ++v) {
    m.field(v, 0, 17, f.data());
    const std::size_t n = f.size() * sizeof(float);
    const std::size_t z = ZSTD_compress(out.data(), out.size(), f.data(), n, 3);
    ASSERT_FALSE(ZSTD_isError(z));
    EXPECT_GT(static_cast<double>(n) / z, 1.2) << m.variable(v).name;
    EXPECT_LT(static_cast<double>(n) / z, 2.2) << m.variable(v).name;
    raw += static_cast<double>(n);
    zstd += static_cast<double>(z);
#ifdef CUBESTREAM_TEST_HAVE_BLOSC
    const int b = blosc_compress_ctx(5, BLOSC_SHUFFLE, 4, n, f.data(), out.data(), out.size(), "lz4", 0, 1);
    ASSERT_GT(b, 0);
    EXPECT_GT(static_cast<double>(n) / b, 1.4) << m.variable(v).name;
    EXPECT_LT(static_cast<double>(n) / b, 2.3) << m.variable(v).name;
    blosc += b;
#endif
  }
  EXPECT_GT(raw / zstd, 1.5);
  EXPECT_LT(raw / zstd, 2.0);
#ifdef CUBESTREAM_TEST_HAVE_BLOSC
  EXPECT_GT(raw / blosc, 1.5);
  EXPECT_LT(raw / blosc, 2.1);
#endif
}

}  // namespace
}  // namespace cubestream::synth
