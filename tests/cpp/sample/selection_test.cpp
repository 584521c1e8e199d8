// Selection: channel order and names, label selection and its errors, broadcasting allowed and
// refused, ConcatenatedTime across 3 stores (index mapping, overlap / order / dims errors), and
// sample buffers equal to a naive reference (whole arrays read and decoded here, then indexed)
// for many random samples of real Samplers.
//
// The stores are hand-written Zarr v2 in memory (no compressor, little-endian), several chunks
// per array so that reads cross chunk borders: per year store, dims time (4, 3, 5 steps),
// level (1000, 850, 500), latitude (5), longitude (6):
//   t2m          float32 (time, latitude, longitude), NaN fill, a few NaNs
//   temperature  int16 (time, level, latitude, longitude), _FillValue -32767, scale 0.01, offset 250
//   vt           float64 (longitude, time, latitude): axes in another order
//   lsm          float32 (latitude, longitude): static, in the year stores
// and a static store: orography (latitude, longitude), soil (soil_layer 2, latitude, longitude)
// with no soil_layer coordinate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "cubestream/sampler.hpp"
#include "cubestream/selection.hpp"
#include "selection_test_stores.hpp"
#include "test_util_fixtures.hpp"

namespace cubestream {
namespace {

using nlohmann::json;
using test::throws_error;

using namespace test_stores;

// ---- ConcatenatedTime --------------------------------------------------------------------

TEST(ConcatenatedTime, MapsGlobalTimeToStores) {
  ConcatenatedTime ct(three_years());
  EXPECT_EQ(ct.num_parts(), 3u);
  EXPECT_EQ(ct.time_size(), 12);
  EXPECT_EQ(ct.dims().at("time"), 12);
  EXPECT_EQ(ct.dims().at("latitude"), kLat);
  EXPECT_EQ(ct.part_start(0), 0);
  EXPECT_EQ(ct.part_start(1), 4);
  EXPECT_EQ(ct.part_start(2), 7);
  EXPECT_EQ(ct.part_start(3), 12);
  const std::vector<ConcatenatedTime::Location> want = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1},
                                                        {1, 2}, {2, 0}, {2, 1}, {2, 2}, {2, 3}, {2, 4}};
  for (std::int64_t t = 0; t < 12; ++t) EXPECT_EQ(ct.locate(t), want[static_cast<std::size_t>(t)]) << t;
  EXPECT_TRUE(throws_error([&] { ct.locate(12); }, ErrorCode::kOutOfRange, {"12"}));
  EXPECT_TRUE(throws_error([&] { ct.locate(-1); }, ErrorCode::kOutOfRange));
  ASSERT_EQ(ct.times().size(), 12u);
  EXPECT_EQ(ct.times()[0].iso(), "2000-01-01T00:00:00");
  EXPECT_EQ(ct.times()[4].iso(), "2000-01-02T00:00:00");
  EXPECT_EQ(ct.times()[11].iso(), "2000-01-03T18:00:00");
  // One dataset is one part.
  ConcatenatedTime one(Dataset::open(year_store(0, {hours(0, 4)})));
  EXPECT_EQ(one.time_size(), 4);
  EXPECT_EQ(one.locate(3), (ConcatenatedTime::Location{0, 3}));
}

TEST(ConcatenatedTime, RefusesOverlapOrderAndMismatches) {
  auto y = [](int seed, YearOptions o) { return Dataset::open(year_store(seed, o)); };
  // Overlap: the second store starts at hour 18, the first one's last step.
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(0, {hours(0, 4)}), y(1, {hours(18, 3)})}); },
                           ErrorCode::kInvalidArgument, {"strictly increasing", "store #1", "year1", "overlap"}));
  // Out of order.
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(1, {hours(24, 3)}), y(0, {hours(0, 4)})}); },
                           ErrorCode::kInvalidArgument, {"strictly increasing", "store #1"}));
  // Not increasing inside a store.
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(0, {{0, 12, 6}})}); }, ErrorCode::kInvalidArgument,
                           {"not increasing"}));
  // A non-time dim of another size.
  YearOptions small{hours(24, 3)};
  small.lat = 4;
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(0, {hours(0, 4)}), y(1, small)}); }, ErrorCode::kInvalidArgument,
                           {"\"latitude\"", "size 4", "store #1"}));
  // Other coordinate values.
  YearOptions shifted{hours(24, 3)};
  shifted.lon0 = 1;
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(0, {hours(0, 4)}), y(1, shifted)}); },
                           ErrorCode::kInvalidArgument, {"coordinate \"longitude\"", "store #1"}));
  YearOptions levels{hours(24, 3)};
  levels.levels = {1000, 850, 300};
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(0, {hours(0, 4)}), y(1, levels)}); },
                           ErrorCode::kInvalidArgument, {"coordinate \"level\""}));
  // A variable missing.
  YearOptions no_vt{hours(24, 3)};
  no_vt.drop_vt = true;
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({y(0, {hours(0, 4)}), y(1, no_vt)}); },
                           ErrorCode::kInvalidArgument, {"variables", "store #1"}));
  // No time dim to concatenate along.
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime({Dataset::open(static_store()), Dataset::open(static_store())}); },
                           ErrorCode::kInvalidArgument, {"no such dim", "latitude"}));
  EXPECT_TRUE(throws_error([&] { ConcatenatedTime(std::vector<Dataset>{}); }, ErrorCode::kInvalidArgument));
}

// ---- channels ----------------------------------------------------------------------------

TEST(Selection, ChannelOrderAndNames) {
  SelectionConfig sc;
  sc.variables = {"temperature", "t2m", "lsm"};
  sc.select = {{"level", {500, 1000}}};
  sc.static_variables = {"soil", "orography"};
  Selection sel(ConcatenatedTime(three_years()), sc, spatial_config(), Dataset::open(static_store()));
  EXPECT_EQ(sel.channel_names(),
            (std::vector<std::string>{"temperature@level=500", "temperature@level=1000", "t2m", "lsm",
                                      "soil@soil_layer[0]", "soil@soil_layer[1]", "orography"}));
  EXPECT_EQ(sel.channels()[0].indices, (std::vector<std::pair<std::string, std::int64_t>>{{"level", 2}}));
  EXPECT_EQ(sel.channels()[1].indices, (std::vector<std::pair<std::string, std::int64_t>>{{"level", 0}}));
  EXPECT_TRUE(sel.channels()[4].from_static);
  EXPECT_FALSE(sel.channels()[3].from_static);
  EXPECT_EQ(sel.sample_dims(), (std::vector<std::string>{"latitude", "longitude"}));
  EXPECT_EQ(sel.sample_shape(), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(sel.input_elements(), 2 * 7 * 3 * 4);
  EXPECT_EQ(sel.target_elements(), 1 * 7 * 3 * 4);

  // Without selection every level is a channel, in index order, named by its label.
  SelectionConfig all;
  all.variables = {"t2m", "temperature"};
  Selection sel2(ConcatenatedTime(three_years()), all, spatial_config());
  EXPECT_EQ(sel2.channel_names(), (std::vector<std::string>{"t2m", "temperature@level=1000", "temperature@level=850",
                                                            "temperature@level=500"}));
  // Normalisation by channel name beats the variable's.
  SelectionConfig n = sc;
  n.normalisation = {{"temperature", {250, 10}}, {"temperature@level=1000", {260, 5}}};
  Selection sel3(ConcatenatedTime(three_years()), n, spatial_config(), Dataset::open(static_store()));
  EXPECT_EQ(sel3.channels()[0].norm.mean, 250);
  EXPECT_EQ(sel3.channels()[1].norm.mean, 260);
  EXPECT_EQ(sel3.channels()[1].norm.std, 5);
  EXPECT_EQ(sel3.channels()[2].norm.std, 1);
}

TEST(Selection, LabelSelectionErrors) {
  auto make = [](SelectionConfig sc) {
    Selection(ConcatenatedTime(three_years()), std::move(sc), spatial_config(), Dataset::open(static_store()));
  };
  SelectionConfig sc;
  sc.variables = {"temperature"};
  sc.select = {{"level", {700}}};
  EXPECT_TRUE(throws_error([&] { make(sc); }, ErrorCode::kInvalidArgument,
                           {"label 700", "\"level\"", "[1000, 850, 500]", "temperature"}));
  sc.select = {{"level", {500, 500}}};
  EXPECT_TRUE(throws_error([&] { make(sc); }, ErrorCode::kInvalidArgument, {"twice"}));
  sc.select = {{"level", {}}};
  EXPECT_TRUE(throws_error([&] { make(sc); }, ErrorCode::kInvalidArgument, {"empty"}));
  sc.select = {{"latitude", {90}}};
  EXPECT_TRUE(throws_error([&] { make(sc); }, ErrorCode::kInvalidArgument, {"sample dim", "latitude"}));
  sc.select = {{"levle", {500}}};
  EXPECT_TRUE(throws_error([&] { make(sc); }, ErrorCode::kInvalidArgument, {"levle", "matches no dim"}));
  SelectionConfig st;
  st.static_variables = {"soil"};
  st.select = {{"soil_layer", {0}}};
  EXPECT_TRUE(throws_error([&] { make(st); }, ErrorCode::kInvalidArgument, {"no coordinate variable \"soil_layer\""}));
  SelectionConfig unknown;
  unknown.variables = {"t2m", "geopotential"};
  EXPECT_TRUE(throws_error([&] { make(unknown); }, ErrorCode::kInvalidArgument,
                           {"\"geopotential\"", "\"t2m\"", "\"temperature\"", "\"lsm\""}));
  SelectionConfig twice;
  twice.variables = {"t2m", "t2m"};
  EXPECT_TRUE(throws_error([&] { make(twice); }, ErrorCode::kInvalidArgument, {"twice"}));
  SelectionConfig norm;
  norm.variables = {"t2m"};
  norm.normalisation = {{"t2n", {0, 1}}};
  EXPECT_TRUE(throws_error([&] { make(norm); }, ErrorCode::kInvalidArgument, {"t2n", "\"t2m\""}));
  norm.normalisation = {{"t2m", {0, 0}}};
  EXPECT_TRUE(throws_error([&] { make(norm); }, ErrorCode::kInvalidArgument, {"std > 0"}));
  SelectionConfig none;
  EXPECT_TRUE(throws_error([&] { make(none); }, ErrorCode::kInvalidArgument, {"no variables"}));
}

TEST(Selection, BroadcastingAllowedAndRefused) {
  // Allowed: static fields (no time) from the year stores and from the static store.
  SelectionConfig ok;
  ok.variables = {"t2m", "lsm"};
  ok.static_variables = {"orography"};
  EXPECT_NO_THROW(Selection(ConcatenatedTime(three_years()), ok, spatial_config(), Dataset::open(static_store())));

  // Refused: a variable missing a spatial sample dim.
  auto s = year_store(0, {hours(0, 4)});
  put_v2<float>(*s, "zonal", "<f4", {4, kLat}, {4, kLat}, "NaN", {{"_ARRAY_DIMENSIONS", {"time", "latitude"}}},
                std::vector<float>(4 * kLat, 1.f));
  SelectionConfig zonal;
  zonal.variables = {"zonal"};
  EXPECT_TRUE(throws_error([&] { Selection(ConcatenatedTime(Dataset::open(s)), zonal, spatial_config(4)); },
                           ErrorCode::kInvalidArgument, {"\"zonal\"", "[\"time\", \"latitude\"]", "\"longitude\""}));
  // Refused: extra dims when asked to refuse them.
  SelectionConfig strict;
  strict.variables = {"temperature"};
  strict.extra_dims = ExtraDims::kRefuse;
  EXPECT_TRUE(throws_error([&] { Selection(ConcatenatedTime(three_years()), strict, spatial_config()); },
                           ErrorCode::kInvalidArgument, {"\"temperature\"", "\"level\"", "neither"}));
  strict.select = {{"level", {850}}};
  EXPECT_NO_THROW(Selection(ConcatenatedTime(three_years()), strict, spatial_config()));
  // Refused: a static-store variable with the time dim.
  SelectionConfig sst;
  sst.variables = {"t2m"};
  sst.static_variables = {"sst"};
  EXPECT_TRUE(throws_error(
      [&] { Selection(ConcatenatedTime(three_years()), sst, spatial_config(), Dataset::open(static_store(true))); },
      ErrorCode::kInvalidArgument, {"static variable \"sst\"", "time"}));
  // Refused: a static store on another grid.
  auto shifted = static_store();
  std::vector<double> lon;
  for (std::int64_t i = 0; i < kLon; ++i) lon.push_back(30.0 + 60.0 * static_cast<double>(i));
  put_v2<double>(*shifted, "longitude", "<f8", {kLon}, {kLon}, "NaN", {{"_ARRAY_DIMENSIONS", {"longitude"}}}, lon);
  EXPECT_TRUE(throws_error(
      [&] { Selection(ConcatenatedTime(three_years()), ok, spatial_config(), Dataset::open(shifted)); },
      ErrorCode::kInvalidArgument, {"coordinate \"longitude\" of the static dataset", "[30, 90"}));
  // Refused: static variables without a static store.
  EXPECT_TRUE(throws_error([&] { Selection(ConcatenatedTime(three_years()), sst, spatial_config()); },
                           ErrorCode::kInvalidArgument, {"no static dataset"}));
  // Refused: sampler dims that do not match.
  SelectionConfig t;
  t.variables = {"t2m"};
  EXPECT_TRUE(throws_error([&] { Selection(ConcatenatedTime(three_years()), t, spatial_config(11)); },
                           ErrorCode::kInvalidArgument, {"\"time\"", "11", "12"}));
  SamplerConfig bad = spatial_config();
  bad.dims[1].name = "lat";
  bad.patch = {{"lat", 3}};
  EXPECT_TRUE(throws_error([&] { Selection(ConcatenatedTime(three_years()), t, bad); }, ErrorCode::kInvalidArgument,
                           {"\"lat\"", "\"latitude\""}));
  // Concatenated stores need time among the sample dims.
  SamplerConfig notime;
  notime.dims = {{"latitude", kLat}, {"longitude", kLon}};
  EXPECT_TRUE(throws_error([&] { Selection(ConcatenatedTime(three_years()), t, notime); },
                           ErrorCode::kInvalidArgument, {"must be a sample dim"}));
}

// ---- sample buffers against a naive reference ---------------------------------------------

// Whole arrays decoded here (by hand, not through the library's CF code), indexed by name.
struct Reference {
  struct Var {
    std::vector<std::string> dims;
    std::vector<std::int64_t> shape;
    std::vector<std::vector<double>> parts;  // per store (one for non-time / static variables)
  };
  std::map<std::string, Var> vars;
  std::vector<std::int64_t> part_start;

  static std::vector<double> decode(const Variable& v) {
    Bytes b = v.array.read_all();
    const std::size_t n = b.size() / v.array.dtype().size;
    std::vector<double> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (v.array.dtype() == DataType::float_(4)) {
        float f;
        std::memcpy(&f, b.data() + 4 * i, 4);
        out[i] = f;
      } else if (v.array.dtype() == DataType::float_(8)) {
        std::memcpy(&out[i], b.data() + 8 * i, 8);
      } else if (v.array.dtype() == DataType::int_(2)) {
        std::int16_t x;
        std::memcpy(&x, b.data() + 2 * i, 2);
        out[i] = x == -32767 ? NAN : x * 0.01 + 250.0;
      } else {
        ADD_FAILURE() << "unexpected dtype";
      }
    }
    return out;
  }

  Reference(const std::vector<Dataset>& years, const std::optional<Dataset>& statics) {
    part_start.push_back(0);
    for (const auto& y : years) part_start.push_back(part_start.back() + y.dims().at("time"));
    for (const auto& name : years[0].data_variable_names()) {
      Var v;
      v.dims = years[0].variable(name).dims;
      v.shape = years[0].variable(name).array.shape();
      const bool timed = std::find(v.dims.begin(), v.dims.end(), "time") != v.dims.end();
      for (std::size_t p = 0; p < (timed ? years.size() : 1); ++p) v.parts.push_back(decode(years[p].variable(name)));
      vars[name] = v;
    }
    if (statics) {
      for (const auto& name : statics->data_variable_names()) {
        vars[name] = Var{statics->variable(name).dims, statics->variable(name).array.shape(),
                         {decode(statics->variable(name))}};
      }
    }
  }

  double at(const std::string& name, std::map<std::string, std::int64_t> idx) const {
    const Var& v = vars.at(name);
    std::size_t part = 0;
    if (v.parts.size() > 1) {
      const std::int64_t t = idx.at("time");
      while (t >= part_start[part + 1]) ++part;
      idx["time"] = t - part_start[part];
    }
    std::int64_t off = 0;
    for (std::size_t a = 0; a < v.dims.size(); ++a) {
      std::int64_t n = v.shape[a];
      if (v.dims[a] == "time" && v.parts.size() > 1) n = part_start[part + 1] - part_start[part];
      off = off * n + idx.at(v.dims[a]);
    }
    return v.parts[part][static_cast<std::size_t>(off)];
  }
};

// The expected buffer of one sample: [steps, channels, layout dims].
std::vector<float> expected(const Reference& ref, const Selection& sel, const SamplerConfig& cfg,
                            const std::vector<Region>& steps, std::optional<float> nan_fill) {
  std::vector<float> out;
  for (const Region& r : steps) {
    for (const Channel& c : sel.channels()) {
      std::vector<std::int64_t> pos(sel.sample_dims().size(), 0);
      for (;;) {
        std::map<std::string, std::int64_t> idx;
        for (std::size_t k = 0; k < cfg.dims.size(); ++k) idx[cfg.dims[k].name] = r.start[k];
        for (std::size_t l = 0; l < pos.size(); ++l) idx[sel.sample_dims()[l]] += pos[l];
        for (const auto& [d, i] : c.indices) idx[d] = i;
        double v = ref.at(c.variable, idx);
        v = (v - c.norm.mean) / c.norm.std;
        float f = static_cast<float>(v);
        if (nan_fill && std::isnan(f)) f = *nan_fill;
        out.push_back(f);
        std::size_t l = pos.size();
        while (l > 0 && ++pos[l - 1] == sel.sample_shape()[l - 1]) pos[--l] = 0;
        if (l == 0) break;
      }
    }
  }
  return out;
}

::testing::AssertionResult same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (got[i] != want[i]) return ::testing::AssertionFailure() << "[" << i << "] " << got[i] << " != " << want[i];
  }
  return ::testing::AssertionSuccess();
}

TEST(Selection, SampleBuffersEqualNaiveReference) {
  const auto years = three_years();
  const std::optional<Dataset> statics = Dataset::open(static_store());
  const Reference ref(years, statics);
  std::mt19937_64 rng(42);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int configs = 0, samples = 0, nans = 0, cross_store = 0;
  for (int round = 0; round < 150; ++round) {
    SamplerConfig cfg = random_grid_config(rng);
    cfg.shuffle = static_cast<ShuffleMode>(pick(0, 2));
    cfg.seed = rng();
    cfg.batch_size = pick(1, 4);
    SelectionConfig sc;
    std::vector<std::string> pool = {"t2m", "temperature", "vt", "lsm"};
    std::shuffle(pool.begin(), pool.end(), rng);
    pool.resize(static_cast<std::size_t>(pick(1, 4)));
    sc.variables = pool;
    if (pick(0, 1)) {
      std::vector<double> levels = {1000, 850, 500};
      std::shuffle(levels.begin(), levels.end(), rng);
      levels.resize(static_cast<std::size_t>(pick(1, 3)));
      if (std::find(pool.begin(), pool.end(), "temperature") != pool.end()) sc.select["level"] = levels;
    }
    if (pick(0, 1)) sc.static_variables = {"orography"};
    if (pick(0, 1)) sc.static_variables.push_back("soil");
    if (pick(0, 1) && std::find(pool.begin(), pool.end(), "t2m") != pool.end()) sc.normalisation["t2m"] = {270, 12.5};
    if (pick(0, 1) && std::find(pool.begin(), pool.end(), "temperature") != pool.end()) {
      sc.normalisation["temperature"] = {250, 3};
    }
    if (pick(0, 1)) sc.nan_fill = static_cast<float>(pick(-2, 2));
    Sampler sampler(cfg);
    Selection sel(ConcatenatedTime(years), sc, cfg, statics);
    ++configs;
    const auto plan = sampler.epoch(pick(0, 3));
    for (std::int64_t b = 0; b < plan.num_batches() && b < 6; ++b) {
      for (const Sample& s : plan.batch(b)) {
        const auto in = sampler.input_regions(s);
        if (cfg.patch.count("time") && in[0].start[0] < 7 && in[0].start[0] + in[0].shape[0] > 4) ++cross_store;
        const auto got = sel.read(in, ReadOptions{1});
        ASSERT_EQ(static_cast<std::int64_t>(got.size()), sel.input_elements());
        ASSERT_TRUE(same_bits(got, expected(ref, sel, cfg, in, sc.nan_fill))) << "config " << round << " sample " << s.id;
        for (float f : got) nans += std::isnan(f);
        const auto tg = sampler.target_regions(s);
        std::vector<float> tbuf(static_cast<std::size_t>(sel.target_elements()));
        sel.read(tg, tbuf.data(), tbuf.size());
        ASSERT_TRUE(same_bits(tbuf, expected(ref, sel, cfg, tg, sc.nan_fill))) << "config " << round << " sample " << s.id;
        ++samples;
      }
    }
  }
  EXPECT_EQ(configs, 150);
  EXPECT_GT(cross_store, 0);  // regions spanning two or three stores were read
  EXPECT_GT(samples, 200);
  EXPECT_GT(nans, 0);  // the NaN paths were exercised
}

TEST(Selection, ReadChecksBufferAndRegions) {
  SelectionConfig sc;
  sc.variables = {"t2m"};
  const auto cfg = spatial_config();
  Selection sel(ConcatenatedTime(three_years()), sc, cfg);
  Sampler sampler(cfg);
  const auto regions = sampler.input_regions(sampler.sample(0));
  std::vector<float> buf(static_cast<std::size_t>(sel.input_elements()) + 1);
  EXPECT_TRUE(throws_error([&] { sel.read(regions, buf.data(), buf.size()); }, ErrorCode::kInvalidArgument, {"elements"}));
  EXPECT_TRUE(throws_error([&] { sel.read({Region{{0, 0, 0}, {1, 5, 6}}}); }, ErrorCode::kInvalidArgument,
                           {"\"latitude\""}));
  EXPECT_TRUE(throws_error([&] { sel.read({Region{{12, 0, 0}, {1, 3, 4}}}); }, ErrorCode::kInvalidArgument,
                           {"\"time\""}));
  EXPECT_TRUE(throws_error([&] { sel.read({Region{{0, 0}, {1, 3}}}); }, ErrorCode::kInvalidArgument, {"dims"}));
}

}  // namespace
}  // namespace cubestream
