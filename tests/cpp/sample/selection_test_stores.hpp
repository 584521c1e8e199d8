// Small in-memory ERA5-like stores shared by the selection and loader tests: hand-written
// Zarr v2 (no compressor, little-endian) with several chunks per array, so that reads cross
// chunk borders. Per year store: dims time (4, 3, 5 steps in three_years()), level
// (1000, 850, 500), latitude (5), longitude (6):
//   t2m          float32 (time, latitude, longitude), NaN fill, a few NaNs
//   temperature  int16 (time, level, latitude, longitude), _FillValue -32767, scale 0.01, offset 250
//   vt           float64 (longitude, time, latitude): axes in another order
//   lsm          float32 (latitude, longitude): static, in the year stores
// and a static store: orography (latitude, longitude), soil (soil_layer 2, latitude, longitude)
// with no soil_layer coordinate.
#pragma once

#include <cstring>
#include <random>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/dataset.hpp"
#include "cubestream/sampler.hpp"
#include "cubestream/store.hpp"

namespace cubestream::test_stores {

using nlohmann::json;

// Writes a v2 array with chunking from its full C-order values (edge chunks padded with 0).
template <class T>
void put_v2(MemoryStore& s, const std::string& path, const std::string& dtype, std::vector<std::int64_t> shape,
            std::vector<std::int64_t> chunks, json fill, json attrs, const std::vector<T>& values) {
  json z = {{"zarr_format", 2}, {"shape", shape}, {"chunks", chunks}, {"dtype", dtype}, {"compressor", nullptr},
            {"fill_value", fill}, {"filters", nullptr}, {"order", "C"}};
  s.set(path + "/.zarray", z.dump());
  s.set(path + "/.zattrs", attrs.dump());
  const std::size_t nd = shape.size();
  std::vector<std::int64_t> grid(nd), ci(nd, 0);
  for (std::size_t d = 0; d < nd; ++d) grid[d] = (shape[d] + chunks[d] - 1) / chunks[d];
  for (;;) {
    std::int64_t n = 1;
    for (auto c : chunks) n *= c;
    std::vector<T> chunk(static_cast<std::size_t>(n), T{});
    std::vector<std::int64_t> e(nd, 0);
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t r = i, src = 0;
      bool inside = true;
      for (std::size_t d = nd; d-- > 0;) {
        e[d] = r % chunks[d];
        r /= chunks[d];
      }
      for (std::size_t d = 0; d < nd; ++d) {
        const std::int64_t g = ci[d] * chunks[d] + e[d];
        inside = inside && g < shape[d];
        src = src * shape[d] + g;
      }
      if (inside) chunk[static_cast<std::size_t>(i)] = values[static_cast<std::size_t>(src)];
    }
    std::string key;
    for (std::size_t d = 0; d < nd; ++d) key += (d ? "." : "") + std::to_string(ci[d]);
    if (nd == 0) key = "0";
    Bytes b(chunk.size() * sizeof(T));
    std::memcpy(b.data(), chunk.data(), b.size());
    s.set(path + "/" + key, std::move(b));
    std::size_t d = nd;
    while (d > 0 && ++ci[d - 1] == grid[d - 1]) ci[--d] = 0;
    if (d == 0) break;
  }
}

inline constexpr std::int64_t kLat = 5, kLon = 6, kLev = 3;

// Deterministic pseudo-random values per (store seed, variable, element).
inline double noise(int seed, int var, std::int64_t i) {
  std::uint64_t x = (static_cast<std::uint64_t>(seed) * 1000003u + static_cast<std::uint64_t>(var)) * 2654435761u +
                    static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<double>(x % 100000) / 1000.0;  // [0, 100)
}

struct YearOptions {
  std::vector<std::int64_t> hours;          // time coordinate values
  std::vector<std::int64_t> levels = {1000, 850, 500};
  std::int64_t lat = kLat;
  double lon0 = 0;                          // first longitude
  bool drop_vt = false;
};

inline std::shared_ptr<MemoryStore> year_store(int seed, const YearOptions& o) {
  auto s = std::make_shared<MemoryStore>("year" + std::to_string(seed));
  s->set(".zgroup", R"({"zarr_format": 2})");
  const auto nt = static_cast<std::int64_t>(o.hours.size());
  const std::int64_t nlat = o.lat;
  put_v2<std::int64_t>(*s, "time", "<i8", {nt}, {2}, nullptr,
                       {{"_ARRAY_DIMENSIONS", {"time"}}, {"units", "hours since 2000-01-01"}, {"calendar", "standard"}},
                       o.hours);
  put_v2<std::int64_t>(*s, "level", "<i8", {kLev}, {kLev}, nullptr, {{"_ARRAY_DIMENSIONS", {"level"}}}, o.levels);
  std::vector<double> lat, lon;
  for (std::int64_t i = 0; i < nlat; ++i) lat.push_back(90.0 - 45.0 * static_cast<double>(i));
  for (std::int64_t i = 0; i < kLon; ++i) lon.push_back(o.lon0 + 60.0 * static_cast<double>(i));
  put_v2<double>(*s, "latitude", "<f8", {nlat}, {nlat}, "NaN", {{"_ARRAY_DIMENSIONS", {"latitude"}}}, lat);
  put_v2<double>(*s, "longitude", "<f8", {kLon}, {kLon}, "NaN", {{"_ARRAY_DIMENSIONS", {"longitude"}}}, lon);
  std::vector<float> t2m(static_cast<std::size_t>(nt * nlat * kLon));
  for (std::size_t i = 0; i < t2m.size(); ++i) t2m[i] = static_cast<float>(250 + noise(seed, 1, static_cast<std::int64_t>(i)));
  if (t2m.size() > 7) t2m[7] = NAN;
  put_v2<float>(*s, "t2m", "<f4", {nt, nlat, kLon}, {2, 3, 4}, "NaN",
                {{"_ARRAY_DIMENSIONS", {"time", "latitude", "longitude"}}, {"units", "K"}}, t2m);
  std::vector<std::int16_t> temp(static_cast<std::size_t>(nt * kLev * nlat * kLon));
  for (std::size_t i = 0; i < temp.size(); ++i) temp[i] = static_cast<std::int16_t>(noise(seed, 2, static_cast<std::int64_t>(i)) * 300 - 15000);
  temp[3] = -32767;
  if (temp.size() > 100) temp[100] = -32767;
  put_v2<std::int16_t>(*s, "temperature", "<i2", {nt, kLev, nlat, kLon}, {1, 2, 3, 3}, -32767,
                       {{"_ARRAY_DIMENSIONS", {"time", "level", "latitude", "longitude"}}, {"scale_factor", 0.01},
                        {"add_offset", 250.0}},
                       temp);
  if (!o.drop_vt) {
    std::vector<double> vt(static_cast<std::size_t>(kLon * nt * nlat));
    for (std::size_t i = 0; i < vt.size(); ++i) vt[i] = noise(seed, 3, static_cast<std::int64_t>(i)) - 50;
    put_v2<double>(*s, "vt", "<f8", {kLon, nt, nlat}, {4, 3, 2}, "NaN",
                   {{"_ARRAY_DIMENSIONS", {"longitude", "time", "latitude"}}}, vt);
  }
  std::vector<float> lsm(static_cast<std::size_t>(nlat * kLon));
  for (std::size_t i = 0; i < lsm.size(); ++i) lsm[i] = static_cast<float>(i % 3 == 0);
  put_v2<float>(*s, "lsm", "<f4", {nlat, kLon}, {2, 5}, "NaN", {{"_ARRAY_DIMENSIONS", {"latitude", "longitude"}}}, lsm);
  return s;
}

inline std::shared_ptr<MemoryStore> static_store(bool with_time = false) {
  auto s = std::make_shared<MemoryStore>("static");
  s->set(".zgroup", R"({"zarr_format": 2})");
  std::vector<double> lat, lon;
  for (std::int64_t i = 0; i < kLat; ++i) lat.push_back(90.0 - 45.0 * static_cast<double>(i));
  for (std::int64_t i = 0; i < kLon; ++i) lon.push_back(60.0 * static_cast<double>(i));
  put_v2<double>(*s, "latitude", "<f8", {kLat}, {kLat}, "NaN", {{"_ARRAY_DIMENSIONS", {"latitude"}}}, lat);
  put_v2<double>(*s, "longitude", "<f8", {kLon}, {kLon}, "NaN", {{"_ARRAY_DIMENSIONS", {"longitude"}}}, lon);
  std::vector<float> oro(static_cast<std::size_t>(kLat * kLon));
  for (std::size_t i = 0; i < oro.size(); ++i) oro[i] = static_cast<float>(noise(9, 4, static_cast<std::int64_t>(i)) * 30);
  put_v2<float>(*s, "orography", "<f4", {kLat, kLon}, {3, 3}, "NaN", {{"_ARRAY_DIMENSIONS", {"latitude", "longitude"}}}, oro);
  std::vector<float> soil(static_cast<std::size_t>(2 * kLat * kLon));
  for (std::size_t i = 0; i < soil.size(); ++i) soil[i] = static_cast<float>(noise(9, 5, static_cast<std::int64_t>(i)));
  put_v2<float>(*s, "soil", "<f4", {2, kLat, kLon}, {1, 5, 6}, "NaN",
                {{"_ARRAY_DIMENSIONS", {"soil_layer", "latitude", "longitude"}}}, soil);
  if (with_time) {
    put_v2<float>(*s, "sst", "<f4", {2, kLat, kLon}, {1, 5, 6}, "NaN",
                  {{"_ARRAY_DIMENSIONS", {"time", "latitude", "longitude"}}}, soil);
  }
  return s;
}

inline std::vector<std::int64_t> hours(std::int64_t first, std::int64_t n) {
  std::vector<std::int64_t> h;
  for (std::int64_t i = 0; i < n; ++i) h.push_back(first + 6 * i);
  return h;
}

// Three years: 4, 3 and 5 steps, 6-hourly and contiguous.
inline std::vector<Dataset> three_years() {
  return {Dataset::open(year_store(0, {hours(0, 4)})), Dataset::open(year_store(1, {hours(24, 3)})),
          Dataset::open(year_store(2, {hours(42, 5)}))};
}

inline SamplerConfig spatial_config(std::int64_t nt = 12) {
  SamplerConfig c;
  c.dims = {{"time", nt}, {"latitude", kLat}, {"longitude", kLon}};
  c.patch = {{"latitude", 3}, {"longitude", 4}};
  c.window = ForecastWindow{"time", {-1, 0}, {1}};
  return c;
}

// A random sampler grid over the year stores' dims (time 12, latitude, longitude): each spatial
// dim patched (with overlap), a batch dim, or whole; time a forecast window, patched across
// store borders (no window), or a batch dim. Shuffle, batching and ranks are left to the caller.
inline SamplerConfig random_grid_config(std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  SamplerConfig cfg;
  cfg.dims = {{"time", 12}, {"latitude", kLat}, {"longitude", kLon}};
  for (const auto& [d, n] : std::vector<std::pair<std::string, std::int64_t>>{{"latitude", kLat}, {"longitude", kLon}}) {
    const auto role = pick(0, 2);
    if (role == 0) {
      cfg.patch[d] = pick(1, n);
      cfg.overlap[d] = pick(0, cfg.patch[d] - 1);
    } else if (role == 1) {
      cfg.batch_dims.push_back(d);
    }
  }
  const auto trole = pick(0, 2);
  if (trole == 0) {
    ForecastWindow w{"time", {}, {}};
    for (int k = 0, n = static_cast<int>(pick(1, 3)); k < n; ++k) w.input_offsets.push_back(-pick(0, 3));
    for (int k = 0, n = static_cast<int>(pick(0, 2)); k < n; ++k) w.target_leads.push_back(pick(1, 5));
    cfg.window = w;
  } else if (trole == 1) {
    cfg.patch["time"] = pick(1, 12);
  } else {
    cfg.batch_dims.push_back("time");
  }
  return cfg;
}

}  // namespace cubestream::test_stores
