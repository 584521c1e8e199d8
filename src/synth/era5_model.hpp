// A synthetic atmosphere that looks, and compresses, like ERA5: the values behind
// `cubestream synth`.
//
// Each field (one variable, one pressure level, one time step, nlat x nlon float32) is
//
//   climatology(latitude, level, season)              zonal means with realistic magnitudes:
//                                                      standard-atmosphere heights and lapse
//                                                      rate, jets, trade winds, pressure belts
// + amplitude(latitude, level) * weather              two pairs of red-noise patterns: an
//                                                      extratropical pair drifting east at 12
//                                                      degrees a day and rotating into each
//                                                      other over 6 days, a tropical pair
//                                                      drifting west at 5 degrees a day over
//                                                      10 days (time-correlated: consecutive
//                                                      6-hourly steps share most structure)
// + planetary waves                                   zonal wavenumbers 1-4, slowly moving
// + orography (static, over land)                     grid-scale detail that never changes
// + a diurnal cycle (2 m temperature, over land)      following local solar time
// + fine white noise                                  new at every step
//
// (specific humidity is log-normal around its climatology instead of additive), then
// quantised as ERA5's GRIB files store it before it reaches Zarr, 16-bit simple packing:
// ref = the field's minimum (as float32, rounded down), scale = 2^E with E the smallest
// integer such that (max - min) / 2^E < 65536, value = float32(ref + round((x - ref) / scale)
// * scale). The packing, more than the smoothness, sets how well float32 fields compress;
// with it zstd-3 and blosc-lz4 + byte shuffle reach the ratios real ERA5 fields reach.
//
// Deterministic: a field depends only on (seed, variable, level in hPa, time step), not on
// which other variables or levels are generated, nor on threads or order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "synth/era5_catalog.hpp"

namespace cubestream::synth {

struct ModelSpec {
  Grid grid;
  std::vector<std::string> variables;  // names from era5_variables()
  std::vector<int> levels;             // pressure levels in hPa (for variables on levels)
  int step_hours = 6;                  // time between steps; step 0 is 1 January 00 UTC
  std::uint64_t seed = 0;
};

class Era5Model {
 public:
  // Builds the static patterns (four nlat x nlon fields per variable, two shared), on
  // `threads` threads (0: all cores). Error(kInvalidArgument) for an unknown variable, a
  // level outside (0, 1100] hPa or a step_hours < 1.
  explicit Era5Model(ModelSpec spec, int threads = 0);

  const ModelSpec& spec() const { return spec_; }
  const VariableInfo& variable(std::size_t var) const { return *vars_[var]; }
  std::size_t field_elements() const { return n_; }
  // Memory the patterns take.
  std::size_t memory_bytes() const;

  // Writes one quantised field into out[0, field_elements()): variable `var` (an index into
  // spec().variables), level `level` (an index into spec().levels; ignored for surface
  // variables), time step t >= 0. Thread-safe.
  void field(std::size_t var, std::size_t level, std::int64_t t, float* out) const;

 private:
  struct Patterns {
    std::vector<float> ex1, ex2, tr1, tr2;  // extratropical and tropical weather pairs
  };
  ModelSpec spec_;
  std::size_t n_ = 0;
  std::vector<const VariableInfo*> vars_;
  std::vector<Patterns> patterns_;    // per variable
  std::vector<float> orography_km_;   // >= 0, zero over sea
  std::vector<float> land_;           // land fraction in [0, 1]
};

}  // namespace cubestream::synth
