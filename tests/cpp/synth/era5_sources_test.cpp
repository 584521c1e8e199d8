// The synthetic dataset through the write engine: what is stored reads back as the model's
// fields, in v2 and in sharded v3 with chunks that cut the fields, with coordinates and CF
// attributes as xarray expects them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cubestream/array.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "synth/era5_sources.hpp"

namespace cubestream::synth {
namespace {

DatasetSpec small_dataset() {
  DatasetSpec d;
  d.model.grid = {19, 36};  // 10 degrees
  d.model.variables = {"2m_temperature", "temperature"};
  d.model.levels = {500, 850};
  d.model.seed = 3;
  d.times = 5;
  return d;
}

std::vector<float> read_floats(const Array& a, const Region& r) {
  std::vector<float> out(static_cast<std::size_t>(r.num_elements()));
  a.read(r, out.data(), out.size() * sizeof(float));
  return out;
}

void expect_store_holds_model(const std::shared_ptr<Store>& store, const Era5Model& model, const DatasetSpec& d) {
  const std::size_t field = model.field_elements();
  std::vector<float> want(field);
  const Array t2m = Array::open(store, "2m_temperature");
  ASSERT_EQ(t2m.shape(), (std::vector<std::int64_t>{5, 19, 36}));
  for (std::int64_t t = 0; t < d.times; ++t) {
    model.field(0, 0, t, want.data());
    EXPECT_EQ(read_floats(t2m, {{t, 0, 0}, {1, 19, 36}}), want) << t;
  }
  const Array temp = Array::open(store, "temperature");
  ASSERT_EQ(temp.shape(), (std::vector<std::int64_t>{5, 2, 19, 36}));
  for (std::int64_t t = 0; t < d.times; ++t) {
    for (std::int64_t l = 0; l < 2; ++l) {
      model.field(1, static_cast<std::size_t>(l), t, want.data());
      EXPECT_EQ(read_floats(temp, {{t, l, 0, 0}, {1, 1, 19, 36}}), want) << t << " " << l;
    }
  }
}

TEST(SynthSources, WeatherBench2StyleV2ReadsBackAsTheModel) {
  const DatasetSpec d = small_dataset();
  auto model = std::make_shared<const Era5Model>(d.model, 1);
  auto store = std::make_shared<MemoryStore>("synth");
  zarr::RechunkOptions o;
  o.zarr_format = 2;
  o.codec.compressor = "blosc-lz4";
  o.codec.shuffle = true;
  o.threads = 2;
  zarr::RechunkProgress progress;
  zarr::write_arrays(era5_sources(model, d), store, era5_group_attributes(d), {}, o, progress);
  expect_store_holds_model(store, *model, d);

  // One chunk per time step with every level, as WeatherBench2 chunks it.
  EXPECT_EQ(Array::open(store, "temperature").metadata().chunk_shape, (std::vector<std::int64_t>{1, 2, 19, 36}));
  const Dataset ds = Dataset::open(store);
  const Array time = Array::open(store, "time");
  EXPECT_EQ(time.metadata().attributes["units"], "hours since 1979-01-01 00:00:00");
  std::vector<std::int64_t> hours(5);
  time.read({{0}, {5}}, hours.data(), hours.size() * 8);
  EXPECT_EQ(hours, (std::vector<std::int64_t>{0, 6, 12, 18, 24}));
  std::vector<double> lat(19), lon(36);
  Array::open(store, "latitude").read({{0}, {19}}, lat.data(), lat.size() * 8);
  Array::open(store, "longitude").read({{0}, {36}}, lon.data(), lon.size() * 8);
  EXPECT_EQ(lat.front(), 90.0);
  EXPECT_EQ(lat.back(), -90.0);
  EXPECT_EQ(lon[1], 10.0);
  std::vector<std::int64_t> levels(2);
  Array::open(store, "level").read({{0}, {2}}, levels.data(), 16);
  EXPECT_EQ(levels, (std::vector<std::int64_t>{500, 850}));
  const ArrayMetadata m = Array::open(store, "temperature").metadata();
  EXPECT_EQ(m.dimension_names, (std::vector<std::string>{"time", "level", "latitude", "longitude"}));
  EXPECT_EQ(m.attributes["units"], "K");
  EXPECT_EQ(m.attributes["standard_name"], "air_temperature");
  float fill = 0;
  std::memcpy(&fill, m.fill_value.data(), 4);
  EXPECT_TRUE(std::isnan(fill));
  EXPECT_TRUE(store->exists(".zmetadata"));
}

TEST(SynthSources, ShardedV3WithChunksThatCutTheFields) {
  const DatasetSpec d = small_dataset();
  auto model = std::make_shared<const Era5Model>(d.model, 1);
  auto store = std::make_shared<MemoryStore>("synth3");
  zarr::RechunkOptions o;
  o.zarr_format = 3;
  o.codec.compressor = "zstd";
  o.chunks = {{"level", 1}, {"latitude", 7}, {"longitude", 12}};
  o.shards = {{"time", 4}};
  o.threads = 2;
  o.memory_bytes = 64 << 10;  // forces small work items: many partial-field reads
  zarr::RechunkProgress progress;
  zarr::write_arrays(era5_sources(model, d), store, era5_group_attributes(d), {}, o, progress);
  expect_store_holds_model(store, *model, d);
  const ArrayMetadata m = Array::open(store, "temperature").metadata();
  ASSERT_TRUE(m.inner_chunk_shape.has_value());
  EXPECT_EQ(*m.inner_chunk_shape, (std::vector<std::int64_t>{1, 1, 7, 12}));
  EXPECT_EQ(m.attributes["units"], "K");
  EXPECT_TRUE(m.attributes.contains("_FillValue"));  // xarray's v3 form (base64 float64 NaN)
}

TEST(SynthSources, SizesAndErrors) {
  DatasetSpec d = small_dataset();
  // One step: 19 * 36 * 4 bytes for 2m_temperature, twice that for temperature on 2 levels.
  const std::uint64_t step = 19 * 36 * 4 * 3;
  EXPECT_EQ(data_bytes(d.model, 10), 10 * step);
  EXPECT_EQ(times_for_bytes(d.model, 10 * step + step / 2), 10);
  EXPECT_EQ(times_for_bytes(d.model, 1), 1);
  auto model = std::make_shared<const Era5Model>(d.model, 1);
  d.times = 0;
  EXPECT_THROW(era5_sources(model, d), Error);
  d = small_dataset();
  d.model.levels.clear();
  auto no_levels = std::make_shared<const Era5Model>(d.model, 1);
  EXPECT_THROW(era5_sources(no_levels, d), Error);
  EXPECT_THROW(parse_grid("0.5"), Error);
  EXPECT_THROW(parse_grid("2x100"), Error);
  EXPECT_EQ(parse_grid("121x240").nlon, 240);
  EXPECT_EQ(parse_grid("0.25").nlat, 721);
}

}  // namespace
}  // namespace cubestream::synth
