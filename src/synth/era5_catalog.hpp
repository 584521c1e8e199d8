// What an ERA5-like store holds, in WeatherBench2's terms: the variables (short names, units,
// CF standard names), the 13 pressure levels, and the two usual grids. `cubestream synth`
// writes these; the field model (era5_model.hpp) gives each variable its values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cubestream::synth {

// The variables the model knows. Surface variables are (time, latitude, longitude); the
// others (time, level, latitude, longitude).
enum class VariableId {
  k2mTemperature,
  k10mU,
  k10mV,
  kMeanSeaLevelPressure,
  kTotalColumnWaterVapour,
  kSurfacePressure,
  kGeopotential,
  kTemperature,
  kU,
  kV,
  kSpecificHumidity,
};

struct VariableInfo {
  VariableId id;
  std::string name;           // WeatherBench2 / ARCO-ERA5 name, e.g. "2m_temperature"
  std::string long_name;
  std::string standard_name;  // CF standard name
  std::string units;
  bool on_levels;             // has a pressure-level axis
};

// Every variable, surface ones first, in the order WeatherBench2 lists them.
const std::vector<VariableInfo>& era5_variables();

// The variable called `name`; Error(kInvalidArgument) naming the known ones otherwise.
const VariableInfo& era5_variable(std::string_view name);

// WeatherBench2's 13 pressure levels in hPa, top (50) to bottom (1000).
const std::vector<int>& wb2_levels();

// A regular latitude-longitude grid as ERA5 stores it: latitude from +90 down to -90
// inclusive (nlat rows), longitude from 0 eastwards in steps of 360 / nlon.
struct Grid {
  int nlat = 721;
  int nlon = 1440;
  double dlat() const { return 180.0 / (nlat - 1); }
  double dlon() const { return 360.0 / nlon; }
  double latitude(int i) const { return 90.0 - i * dlat(); }
  double longitude(int j) const { return j * dlon(); }
};

// "0.25" (721 x 1440, ERA5's native grid), "1.5" (121 x 240, WeatherBench2's coarse grid) or
// "NLATxNLON" (at least 3 x 4). Error(kInvalidArgument) otherwise.
Grid parse_grid(std::string_view text);

}  // namespace cubestream::synth
