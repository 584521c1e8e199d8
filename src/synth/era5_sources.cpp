// Coordinates and data variables of the synthetic ERA5-like dataset as write-engine sources.
#include "synth/era5_sources.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/strided_copy.hpp"
#include "cubestream/error.hpp"

namespace cubestream::synth {
namespace {

std::uint64_t step_bytes(const ModelSpec& spec) {
  std::uint64_t fields = 0;
  for (const auto& name : spec.variables) fields += era5_variable(name).on_levels ? spec.levels.size() : 1;
  return fields * static_cast<std::uint64_t>(spec.grid.nlat) * static_cast<std::uint64_t>(spec.grid.nlon) * sizeof(float);
}

template <typename T>
Bytes element(T v) {
  Bytes b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

// A 1-d coordinate whose values are a function of the index.
template <typename T, typename F>
zarr::SourceArray coordinate(const std::string& name, std::int64_t n, DataType dtype, nlohmann::json attrs, F value) {
  zarr::SourceArray s;
  s.path = name;
  s.meta.zarr_format = 2;
  s.meta.shape = {n};
  s.meta.chunk_shape = {std::max<std::int64_t>(n, 1)};
  s.meta.dtype = dtype;
  s.meta.dimension_names = {name};
  s.meta.attributes = std::move(attrs);
  s.meta.fill_value.assign(dtype.size, 0);
  s.meta.fill_value_is_null = true;
  s.read = [value](const Region& r, std::uint8_t* out) {
    for (std::int64_t i = 0; i < r.shape[0]; ++i) {
      const T v = value(r.start[0] + i);
      std::memcpy(out + static_cast<std::size_t>(i) * sizeof(T), &v, sizeof(T));
    }
  };
  return s;
}

}  // namespace

std::uint64_t data_bytes(const ModelSpec& spec, std::int64_t times) {
  return step_bytes(spec) * static_cast<std::uint64_t>(std::max<std::int64_t>(times, 0));
}

std::int64_t times_for_bytes(const ModelSpec& spec, std::uint64_t bytes) {
  const std::uint64_t per = step_bytes(spec);
  if (per == 0) return 1;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / per));
}

std::vector<zarr::SourceArray> era5_sources(const std::shared_ptr<const Era5Model>& model, const DatasetSpec& spec) {
  const ModelSpec& m = model->spec();
  if (spec.times < 1) throw Error(ErrorCode::kInvalidArgument, "synth: need at least one time step");
  const Grid g = m.grid;
  const std::int64_t nlat = g.nlat, nlon = g.nlon;
  bool any_levels = false;
  for (const auto& name : m.variables) any_levels = any_levels || era5_variable(name).on_levels;
  if (any_levels && m.levels.empty()) throw Error(ErrorCode::kInvalidArgument, "synth: variables on pressure levels need levels");

  std::vector<zarr::SourceArray> out;
  const int step = m.step_hours;
  out.push_back(coordinate<std::int64_t>(
      "time", spec.times, DataType::int_(8),
      {{"units", "hours since " + std::to_string(spec.start_year) + "-01-01 00:00:00"},
       {"calendar", "proleptic_gregorian"},
       {"long_name", "time"},
       {"standard_name", "time"},
       {"axis", "T"}},
      [step](std::int64_t i) { return i * step; }));
  if (any_levels) {
    const std::vector<int> levels = m.levels;
    out.push_back(coordinate<std::int64_t>(
        "level", static_cast<std::int64_t>(levels.size()), DataType::int_(8),
        {{"units", "millibars"}, {"long_name", "pressure_level"}, {"positive", "down"}, {"axis", "Z"}},
        [levels](std::int64_t i) { return static_cast<std::int64_t>(levels[static_cast<std::size_t>(i)]); }));
  }
  out.push_back(coordinate<double>(
      "latitude", nlat, DataType::float_(8),
      {{"units", "degrees_north"}, {"long_name", "latitude"}, {"standard_name", "latitude"}, {"axis", "Y"}},
      [g](std::int64_t i) { return g.latitude(static_cast<int>(i)); }));
  out.push_back(coordinate<double>(
      "longitude", nlon, DataType::float_(8),
      {{"units", "degrees_east"}, {"long_name", "longitude"}, {"standard_name", "longitude"}, {"axis", "X"}},
      [g](std::int64_t i) { return g.longitude(static_cast<int>(i)); }));

  const std::size_t field = model->field_elements();
  for (std::size_t vi = 0; vi < m.variables.size(); ++vi) {
    const VariableInfo& v = model->variable(vi);
    const std::int64_t nlev = v.on_levels ? static_cast<std::int64_t>(m.levels.size()) : 1;
    zarr::SourceArray s;
    s.path = v.name;
    s.meta.zarr_format = 2;
    s.meta.dtype = DataType::float_(4);
    if (v.on_levels) {
      s.meta.shape = {spec.times, nlev, nlat, nlon};
      s.meta.chunk_shape = {1, nlev, nlat, nlon};
      s.meta.dimension_names = {"time", "level", "latitude", "longitude"};
    } else {
      s.meta.shape = {spec.times, nlat, nlon};
      s.meta.chunk_shape = {1, nlat, nlon};
      s.meta.dimension_names = {"time", "latitude", "longitude"};
    }
    s.meta.fill_value = element(std::numeric_limits<float>::quiet_NaN());
    s.meta.attributes = {{"long_name", v.long_name}, {"standard_name", v.standard_name}, {"units", v.units}};
    // A region that does not cover whole fields needs one field of scratch.
    s.read_scratch_bytes = field * sizeof(float);
    const bool levels = v.on_levels;
    s.read = [model, vi, levels, nlat, nlon, field](const Region& r, std::uint8_t* out_bytes) {
      const std::size_t la = levels ? 2 : 1;  // latitude axis
      const std::int64_t l0 = levels ? r.start[1] : 0, nl = levels ? r.shape[1] : 1;
      const bool whole = r.start[la] == 0 && r.shape[la] == nlat && r.start[la + 1] == 0 && r.shape[la + 1] == nlon;
      const std::size_t box = static_cast<std::size_t>(r.shape[la] * r.shape[la + 1]);
      std::vector<float> scratch(whole ? 0 : field);
      float* out = reinterpret_cast<float*>(out_bytes);
      for (std::int64_t t = 0; t < r.shape[0]; ++t) {
        for (std::int64_t l = 0; l < nl; ++l) {
          float* dst = out + static_cast<std::size_t>(t * nl + l) * box;
          if (whole) {
            model->field(vi, static_cast<std::size_t>(l0 + l), r.start[0] + t, dst);
            continue;
          }
          model->field(vi, static_cast<std::size_t>(l0 + l), r.start[0] + t, scratch.data());
          const std::int64_t full[2] = {nlat, nlon}, from[2] = {r.start[la], r.start[la + 1]};
          const std::int64_t part[2] = {r.shape[la], r.shape[la + 1]}, origin[2] = {0, 0};
          copy_box(reinterpret_cast<const std::uint8_t*>(scratch.data()), full, from, reinterpret_cast<std::uint8_t*>(dst), part,
                   origin, part, sizeof(float));
        }
      }
    };
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json era5_group_attributes(const DatasetSpec& spec) {
  const ModelSpec& m = spec.model;
  return {{"title", "Synthetic ERA5-like reanalysis (cubestream synth)"},
          {"source", "cubestream synth: a synthetic atmosphere with ERA5's layout, magnitudes and GRIB 16-bit packing; not observations"},
          {"Conventions", "CF-1.8"},
          {"cubestream_synth",
           {{"seed", m.seed},
            {"grid", std::to_string(m.grid.nlat) + "x" + std::to_string(m.grid.nlon)},
            {"step_hours", m.step_hours},
            {"times", spec.times},
            {"start_year", spec.start_year},
            {"model_version", 1}}}};
}

}  // namespace cubestream::synth
