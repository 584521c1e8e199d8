// An ERA5-like dataset as arrays for the write engine (zarr::write_arrays, the engine of
// `cubestream rechunk`): coordinates time / level / latitude / longitude and one float32
// array per variable, generated on demand by Era5Model region by region, so that a store of
// any size is written out of core, in parallel, resumably and in parts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "synth/era5_model.hpp"
#include "zarr/rechunk.hpp"

namespace cubestream::synth {

struct DatasetSpec {
  ModelSpec model;
  std::int64_t times = 0;                 // time steps
  int start_year = 1979;                  // step 0 is 1 January of this year, 00 UTC
};

// Time steps whose data (every variable, every level) comes closest to `bytes` without
// exceeding it, and at least one.
std::int64_t times_for_bytes(const ModelSpec& spec, std::uint64_t bytes);

// Decoded bytes of the data variables (coordinates excluded).
std::uint64_t data_bytes(const ModelSpec& spec, std::int64_t times);

// The arrays to write. Metadata follows xarray's Zarr conventions as WeatherBench2 stores
// them (zarr_format 2 form: dimension names, CF attributes; float fill value NaN); the engine
// turns it into v3 when asked. Each source's chunk_shape, its natural unit, is one time step
// of every level (1, L, nlat, nlon) (WeatherBench2's chunking); `--chunks` and `--shards`
// choose others. The model is shared by every source and must outlive the writing.
std::vector<zarr::SourceArray> era5_sources(const std::shared_ptr<const Era5Model>& model, const DatasetSpec& spec);

// The root group's attributes (title, source, seed, grid, Conventions).
nlohmann::json era5_group_attributes(const DatasetSpec& spec);

}  // namespace cubestream::synth
