// The ERA5-like field model (see era5_model.hpp for the recipe).
#include "synth/era5_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/thread_pool.hpp"
#include "cubestream/error.hpp"
#include "synth/random_fields.hpp"

namespace cubestream::synth {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kGravity = 9.80665;         // m s-2, WMO standard
constexpr double kHoursPerYear = 8766.0;     // 365.25 days

double gauss(double x, double centre, double width) {
  const double d = (x - centre) / width;
  return std::exp(-d * d);
}

// Height (m) of a pressure level in the ICAO standard atmosphere (troposphere formula; good to
// a few per cent up to 50 hPa, which is all a climatology needs).
double standard_height(double p_hpa) { return 44330.8 * (1.0 - std::pow(p_hpa / 1013.25, 0.190263)); }

// Standard-atmosphere temperature (K) at a height: 6.5 K/km lapse to the tropopause at 11 km,
// isothermal to 20 km, then warming by 1 K/km.
double standard_temperature(double z) {
  if (z < 11000) return 288.15 - 0.0065 * z;
  if (z < 20000) return 216.65;
  return 216.65 + 0.001 * (z - 20000);
}

// Sea-level pressure's zonal mean (Pa): subtropical highs at 30 degrees, subpolar lows at 60,
// higher over the winter hemisphere's continents.
double sea_level_pressure(double abs_lat_deg, double sin_lat, double nh_summer) {
  return 101300.0 + 900.0 * gauss(abs_lat_deg, 30, 10) - 1500.0 * gauss(abs_lat_deg, 60, 10) + 400.0 * sin_lat * nh_summer;
}

// Weather in the wind components peaks near the jet level (250 hPa).
double jet_level_weather(double p_hpa) { return 0.6 + 0.8 * std::exp(-std::pow((p_hpa - 250.0) / 250.0, 2)); }

// How one variable behaves along one latitude row at one level and time.
struct RowLaw {
  double base = 0;       // climatology (log-normal variables: the median)
  double amp = 0;        // weather amplitude (log-normal: of the logarithm)
  double orography = 0;  // per km of orography
  double diurnal = 0;    // amplitude of the diurnal cycle over land
  double planetary = 0;  // amplitude of the planetary waves
  double noise = 0;      // white noise at every step
  bool lognormal = false;
};

RowLaw row_law(VariableId id, double lat_deg, double p, double year_phase) {
  const double lat = lat_deg * kPi / 180.0;
  const double sl = std::sin(lat), cl = std::cos(lat), al = std::fabs(lat_deg), asl = std::fabs(sl);
  // +1 in the northern summer, -1 in the northern winter (peak in mid-July, trough in January).
  const double nh_summer = -std::cos(year_phase);
  RowLaw r;
  switch (id) {
    case VariableId::k2mTemperature:
      r.base = 300.0 - 48.0 * sl * sl + 12.0 * sl * nh_summer;
      r.amp = 2.0 + 4.0 * asl;
      r.orography = -6.5;  // the lapse rate over high ground
      r.diurnal = 5.0 * cl;
      r.planetary = 3.0 * asl;
      r.noise = 0.03;
      break;
    case VariableId::k10mU:
      r.base = -5.0 * gauss(lat_deg, 0, 14) + 7.0 * gauss(al, 50, 12) - 3.0 * gauss(al, 80, 8);
      r.amp = 2.5 + 3.0 * asl;
      r.orography = 1.2;
      r.planetary = 1.5 * asl;
      r.noise = 0.04;
      break;
    case VariableId::k10mV:
      r.base = -2.0 * std::sin(6.0 * lat) * gauss(al, 0, 35);  // trades blow towards the equator
      r.amp = 2.5 + 2.5 * asl;
      r.orography = 1.0;
      r.planetary = 1.0 * asl;
      r.noise = 0.04;
      break;
    case VariableId::kMeanSeaLevelPressure:
      r.base = sea_level_pressure(al, sl, nh_summer);
      r.amp = 300.0 + 1100.0 * asl;
      r.orography = 120.0;  // reduction to sea level is noisy over mountains
      r.planetary = 500.0 * asl;
      r.noise = 15.0;
      break;
    case VariableId::kTotalColumnWaterVapour:
      // Like humidity near the ground: a moist band following the sun, log-normal weather.
      r.base = 42.0 * gauss(lat_deg, 8.0 * nh_summer, 25) + 4.0 * cl + 1.0;
      r.amp = 0.35;
      r.planetary = 0.1;
      r.noise = 0.04;
      r.lognormal = true;
      break;
    case VariableId::kSurfacePressure:
      // Sea-level pressure less the weight of the air below the ground's height (~12 hPa per
      // 100 m): mountains dominate the field, as in ERA5.
      r.base = sea_level_pressure(al, sl, nh_summer);
      r.amp = 300.0 + 1100.0 * asl;
      r.orography = -11500.0;
      r.planetary = 500.0 * asl;
      r.noise = 15.0;
      break;
    case VariableId::kGeopotential: {
      const double z = standard_height(p);
      // Warm columns are thick: heights fall towards the poles, more so aloft and in winter.
      const double thick = z / 10000.0;
      r.base = kGravity * (z + 250.0 * thick * (cl * cl - 0.5) * 2.0 + 80.0 * thick * sl * nh_summer);
      r.amp = kGravity * (20.0 + 12.0 * z / 1000.0) * (0.35 + asl);
      r.orography = p >= 850 ? kGravity * 30.0 : 0.0;
      r.planetary = 1.2 * r.amp;
      r.noise = 6.0;
      break;
    }
    case VariableId::kTemperature: {
      const double z = standard_height(p);
      const double w = std::clamp((p - 150.0) / 850.0, 0.0, 1.0);  // 1 near the ground, 0 aloft
      // Below the tropopause the tropics are warm; above it the polar stratosphere is warmer.
      r.base = standard_temperature(z) + w * (15.0 - 40.0 * sl * sl) + (1.0 - w) * (-6.0 + 10.0 * sl * sl) +
               8.0 * w * sl * nh_summer;
      r.amp = (1.2 + 2.8 * asl) * (0.6 + 0.4 * w);
      r.orography = p >= 850 ? -4.0 : 0.0;
      r.planetary = 2.0 * asl;
      r.noise = 0.015;
      break;
    }
    case VariableId::kU: {
      const double jet_level = std::exp(-std::pow((p - 225.0) / 180.0, 2));
      r.base = 30.0 * gauss(al, 35, 10) * jet_level + 6.0 * gauss(al, 50, 14) - 4.0 * gauss(lat_deg, 0, 15);
      r.amp = (3.0 + 7.0 * asl) * jet_level_weather(p);
      r.orography = p >= 850 ? 1.0 : 0.0;
      r.planetary = 2.5 * asl;
      r.noise = 0.04;
      break;
    }
    case VariableId::kV: {
      r.base = -1.5 * std::sin(6.0 * lat) * gauss(al, 0, 35) * (p / 1000.0);
      r.amp = (2.5 + 6.0 * asl) * jet_level_weather(p);
      r.orography = p >= 850 ? 0.8 : 0.0;
      r.planetary = 1.5 * asl;
      r.noise = 0.04;
      break;
    }
    case VariableId::kSpecificHumidity: {
      // Moist tropics following the sun, drying fast with height; a floor in the stratosphere.
      const double moist = 0.0175 * gauss(lat_deg, 8.0 * nh_summer, 28) + 0.0012 * cl;
      r.base = std::max(moist * std::pow(p / 1000.0, 3.3), 2.5e-6);
      r.amp = 0.45;
      r.planetary = 0.1;
      r.noise = 0.08;
      r.lognormal = true;
      break;
    }
  }
  return r;
}

// dst[j] += weight * src[(j - shift) mod n], the pattern moved `shift` cells east.
void add_shifted(float* dst, const float* src, int n, std::int64_t shift, float weight) {
  const int s = static_cast<int>(((shift % n) + n) % n);
  for (int j = 0; j < s; ++j) dst[j] += weight * src[n - s + j];
  for (int j = s; j < n; ++j) dst[j] += weight * src[j - s];
}

// GRIB simple packing with 16 bits (see era5_model.hpp).
void grib16_quantise(float* f, std::size_t n) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < n; ++i) {
    lo = std::min(lo, static_cast<double>(f[i]));
    hi = std::max(hi, static_cast<double>(f[i]));
  }
  const double range = hi - lo;
  if (!(range > 0)) return;
  int e = 0;
  std::frexp(range, &e);  // range = m * 2^e, m in [0.5, 1): range / 2^(e-16) = m * 65536 < 65536
  const double scale = std::ldexp(1.0, e - 16);
  float ref = static_cast<float>(lo);
  if (static_cast<double>(ref) > lo) ref = std::nextafter(ref, -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < n; ++i) {
    const double q = std::min(std::nearbyint((static_cast<double>(f[i]) - ref) / scale), 65535.0);
    f[i] = static_cast<float>(ref + q * scale);
  }
}

std::size_t catalog_index(const VariableInfo& v) {
  return static_cast<std::size_t>(&v - era5_variables().data());
}

// The weather patterns' spatial spectra: geopotential and pressure are smooth, winds and
// humidity rough, temperatures in between.
std::vector<NoiseScale> weather_scales(VariableId id) {
  switch (id) {
    case VariableId::kGeopotential:
    case VariableId::kMeanSeaLevelPressure:
    case VariableId::kSurfacePressure:
      return {{1.0, 0.12}, {3.0, 0.3}, {8.0, 0.7}, {20.0, 1.0}};
    case VariableId::k2mTemperature:
    case VariableId::kTemperature:
      return {{0.5, 0.15}, {2.0, 0.4}, {6.0, 0.8}, {15.0, 0.8}};
    default:
      return {{0.5, 0.3}, {1.5, 0.6}, {4.0, 0.8}, {10.0, 0.6}};
  }
}

}  // namespace

Era5Model::Era5Model(ModelSpec spec, int threads) : spec_(std::move(spec)) {
  const Grid& g = spec_.grid;
  if (g.nlat < 3 || g.nlon < 4) throw Error(ErrorCode::kInvalidArgument, "synth: the grid needs at least 3 x 4 points");
  if (spec_.step_hours < 1) throw Error(ErrorCode::kInvalidArgument, "synth: the time step must be at least one hour");
  for (int p : spec_.levels)
    if (p <= 0 || p > 1100)
      throw Error(ErrorCode::kInvalidArgument, "synth: pressure level " + std::to_string(p) + " hPa is outside (0, 1100]");
  for (const auto& name : spec_.variables) vars_.push_back(&era5_variable(name));
  n_ = static_cast<std::size_t>(g.nlat) * static_cast<std::size_t>(g.nlon);
  patterns_.resize(vars_.size());

  // Job 0: land and orography; job 1 + v: the weather patterns of variable v. Keys use the
  // variable's place in the catalog, so a variable's values do not depend on which others
  // are generated.
  ThreadPool::shared(threads).parallel_for(vars_.size() + 1, [&](std::size_t job) {
    if (job == 0) {
      std::vector<float> continents = red_noise(g, {{15.0, 1.0}, {35.0, 1.0}}, stream_key(spec_.seed, 0, 1));
      std::vector<float> relief = red_noise(g, {{0.25, 0.25}, {1.0, 0.45}, {4.0, 0.7}, {12.0, 0.8}}, stream_key(spec_.seed, 0, 2));
      land_.resize(n_);
      orography_km_.resize(n_);
      for (std::size_t c = 0; c < n_; ++c) {
        // About 30% land, with coasts a few grid cells wide.
        const float x = std::clamp((continents[c] - 0.45f) / 0.35f, 0.0f, 1.0f);
        land_[c] = x * x * (3.0f - 2.0f * x);
        orography_km_[c] = land_[c] * std::max(0.0f, 0.8f * relief[c] + 0.3f);
      }
      return;
    }
    const VariableInfo& v = *vars_[job - 1];
    const auto scales = weather_scales(v.id);
    const std::uint64_t k = catalog_index(v) + 1;
    Patterns& p = patterns_[job - 1];
    p.ex1 = red_noise(g, scales, stream_key(spec_.seed, k, 1));
    p.ex2 = red_noise(g, scales, stream_key(spec_.seed, k, 2));
    p.tr1 = red_noise(g, scales, stream_key(spec_.seed, k, 3));
    p.tr2 = red_noise(g, scales, stream_key(spec_.seed, k, 4));
  });
}

std::size_t Era5Model::memory_bytes() const { return (4 * patterns_.size() + 2) * n_ * sizeof(float); }

void Era5Model::field(std::size_t var, std::size_t level, std::int64_t t, float* out) const {
  if (var >= vars_.size()) throw Error(ErrorCode::kInvalidArgument, "synth: variable index out of range");
  const VariableInfo& v = *vars_[var];
  if (v.on_levels && level >= spec_.levels.size()) throw Error(ErrorCode::kInvalidArgument, "synth: level index out of range");
  if (t < 0) throw Error(ErrorCode::kInvalidArgument, "synth: negative time step");
  const Grid& g = spec_.grid;
  const int nlon = g.nlon;
  const double p = v.on_levels ? spec_.levels[level] : 1000.0;
  const double hours = static_cast<double>(t) * spec_.step_hours;
  const double year_phase = 2.0 * kPi * std::fmod(hours, kHoursPerYear) / kHoursPerYear;
  const Patterns& pat = patterns_[var];

  // The weather: each pair rotates between its two patterns (cos/sin keep the variance at
  // one) while drifting; levels are offset in phase and position so that the vertical
  // structure is coherent but not identical.
  const double level_phase = v.on_levels ? p / 1000.0 * 1.7 : 0.0;
  const double th_ex = 2.0 * kPi * hours / (6.0 * 24.0) + level_phase;
  const double th_tr = 2.0 * kPi * hours / (10.0 * 24.0) + 0.5 * level_phase;
  const auto cells = [&](double degrees) { return static_cast<std::int64_t>(std::llround(degrees / g.dlon())); };
  const std::int64_t shift_ex = cells(12.0 * hours / 24.0 + (v.on_levels ? 10.0 * (1.0 - p / 1000.0) : 0.0));
  const std::int64_t shift_tr = cells(-5.0 * hours / 24.0);

  // Rows shared by every latitude: planetary waves and the diurnal heating by local time.
  std::vector<float> planetary(static_cast<std::size_t>(nlon)), diurnal(static_cast<std::size_t>(nlon));
  {
    const double norm = 1.0 / std::sqrt(0.5 * (1.0 + 1.0 / 4 + 1.0 / 9 + 1.0 / 16));
    const std::uint64_t key = stream_key(spec_.seed, catalog_index(v) + 1, 5);
    for (int j = 0; j < nlon; ++j) {
      const double lon = g.longitude(j) * kPi / 180.0;
      double s = 0;
      for (int k = 1; k <= 4; ++k) {
        const double phase = 2.0 * kPi * (mix64(key + static_cast<std::uint64_t>(k)) >> 11) * 0x1.0p-53;
        const double omega = 2.0 * kPi / (24.0 * (20.0 + 10.0 * k));  // slow, eastward
        s += std::cos(k * lon - omega * hours + phase + 0.3 * level_phase) / k;
      }
      planetary[static_cast<std::size_t>(j)] = static_cast<float>(s * norm);
      // Warmest at 15 h local solar time.
      const double local_hours = std::fmod(hours, 24.0) + g.longitude(j) / 15.0;
      diurnal[static_cast<std::size_t>(j)] = static_cast<float>(std::cos(2.0 * kPi * (local_hours - 15.0) / 24.0));
    }
  }

  const std::uint64_t noise_key = stream_key(spec_.seed, 100 + catalog_index(v), static_cast<std::uint64_t>(p), static_cast<std::uint64_t>(t));
  std::vector<float> weather(static_cast<std::size_t>(nlon));
  for (int i = 0; i < g.nlat; ++i) {
    const double lat = g.latitude(i);
    const RowLaw law = row_law(v.id, lat, p, year_phase);
    const std::size_t row = static_cast<std::size_t>(i) * static_cast<std::size_t>(nlon);
    // Tropical weight b and extratropical a with a^2 + b^2 = 1: unit variance everywhere.
    const double b = gauss(lat, 0, 18), a = std::sqrt(1.0 - b * b);
    std::fill(weather.begin(), weather.end(), 0.0f);
    add_shifted(weather.data(), pat.ex1.data() + row, nlon, shift_ex, static_cast<float>(a * std::cos(th_ex)));
    add_shifted(weather.data(), pat.ex2.data() + row, nlon, shift_ex, static_cast<float>(a * std::sin(th_ex)));
    add_shifted(weather.data(), pat.tr1.data() + row, nlon, shift_tr, static_cast<float>(b * std::cos(th_tr)));
    add_shifted(weather.data(), pat.tr2.data() + row, nlon, shift_tr, static_cast<float>(b * std::sin(th_tr)));

    const float amp = static_cast<float>(law.amp), oro = static_cast<float>(law.orography);
    const float plan = static_cast<float>(law.planetary * (law.lognormal ? 1.0 : gauss(std::fabs(lat), 55, 25)));
    const float di = static_cast<float>(law.diurnal), nz = static_cast<float>(law.noise);
    const float* orog = orography_km_.data() + row;
    const float* land = land_.data() + row;
    float* o = out + row;
    if (law.lognormal) {
      const float base = static_cast<float>(law.base);
      // tanh bounds the logarithm: air saturates, so the moist tail stays within e (2.7x)
      // of the median instead of growing without limit.
      for (int j = 0; j < nlon; ++j)
        o[j] = base * std::exp(std::tanh(amp * weather[static_cast<std::size_t>(j)] + plan * planetary[static_cast<std::size_t>(j)] +
                                         nz * unit_noise(noise_key, row + static_cast<std::size_t>(j))));
    } else {
      const float base = static_cast<float>(law.base);
      for (int j = 0; j < nlon; ++j) {
        const std::size_t jj = static_cast<std::size_t>(j);
        o[j] = base + amp * weather[jj] + plan * planetary[jj] + oro * orog[j] + di * land[j] * diurnal[jj] +
               nz * unit_noise(noise_key, row + jj);
      }
    }
  }
  grib16_quantise(out, n_);
}

}  // namespace cubestream::synth
