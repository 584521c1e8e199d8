// The ERA5 / WeatherBench2 variable table, levels and grids.
#include "synth/era5_catalog.hpp"

#include <charconv>

#include "cubestream/error.hpp"

namespace cubestream::synth {

const std::vector<VariableInfo>& era5_variables() {
  static const std::vector<VariableInfo> vars = {
      {VariableId::k2mTemperature, "2m_temperature", "2 metre temperature", "air_temperature", "K", false},
      {VariableId::k10mU, "10m_u_component_of_wind", "10 metre U wind component", "eastward_wind", "m s**-1", false},
      {VariableId::k10mV, "10m_v_component_of_wind", "10 metre V wind component", "northward_wind", "m s**-1", false},
      {VariableId::kMeanSeaLevelPressure, "mean_sea_level_pressure", "Mean sea level pressure",
       "air_pressure_at_mean_sea_level", "Pa", false},
      {VariableId::kTotalColumnWaterVapour, "total_column_water_vapour", "Total column vertically-integrated water vapour",
       "lwe_thickness_of_atmosphere_mass_content_of_water_vapor", "kg m**-2", false},
      {VariableId::kSurfacePressure, "surface_pressure", "Surface pressure", "surface_air_pressure", "Pa", false},
      {VariableId::kGeopotential, "geopotential", "Geopotential", "geopotential", "m**2 s**-2", true},
      {VariableId::kTemperature, "temperature", "Temperature", "air_temperature", "K", true},
      {VariableId::kU, "u_component_of_wind", "U component of wind", "eastward_wind", "m s**-1", true},
      {VariableId::kV, "v_component_of_wind", "V component of wind", "northward_wind", "m s**-1", true},
      {VariableId::kSpecificHumidity, "specific_humidity", "Specific humidity", "specific_humidity", "kg kg**-1", true},
  };
  return vars;
}

const VariableInfo& era5_variable(std::string_view name) {
  std::string known;
  for (const auto& v : era5_variables()) {
    if (v.name == name) return v;
    known += (known.empty() ? "" : ", ") + v.name;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown variable '" + std::string(name) + "' (known: " + known + ")");
}

const std::vector<int>& wb2_levels() {
  static const std::vector<int> levels = {50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 850, 925, 1000};
  return levels;
}

Grid parse_grid(std::string_view text) {
  if (text == "0.25") return {721, 1440};
  if (text == "1.5") return {121, 240};
  const auto x = text.find('x');
  Grid g{0, 0};
  if (x != std::string_view::npos) {
    const char* b = text.data();
    const auto r1 = std::from_chars(b, b + x, g.nlat);
    const auto r2 = std::from_chars(b + x + 1, b + text.size(), g.nlon);
    const bool ok = r1.ec == std::errc{} && r1.ptr == b + x && r2.ec == std::errc{} && r2.ptr == b + text.size();
    if (ok && g.nlat >= 3 && g.nlon >= 4 && g.nlat <= 100000 && g.nlon <= 100000) return g;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "grid '" + std::string(text) + "': use 0.25 (721x1440), 1.5 (121x240) or NLATxNLON (at least 3x4)");
}

}  // namespace cubestream::synth
