// The loader's pipeline against the reference read (Selection::read, itself checked against
// whole arrays sliced by hand in selection_test.cpp): batch contents for many random configs
// (patches, overlaps, windows, variables, levels, statics, shuffles, dtypes, threads,
// prefetch), every sample once per epoch, resume equal to an uninterrupted run, the memory
// bound, chunk sharing through the cache, errors at construction and mid-epoch, traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <chrono>

#include "cubestream/error.hpp"
#include "cubestream/loader.hpp"
#include "pipeline/batch_plan.hpp"
#include "sample/selection_test_stores.hpp"
#include "store/hint_recording_store.hpp"
#include "test_util_fixtures.hpp"

namespace cubestream {
namespace {

using namespace test_stores;

// The reference tensor of one batch: Selection::read per sample, converted to `dtype`, as bits.
std::vector<std::uint16_t> to16(const std::vector<float>& v, OutputDType dtype) {
  std::vector<std::uint16_t> out(v.size());
  if (dtype == OutputDType::kBFloat16) float_to_bfloat16(v.data(), out.data(), v.size());
  else float_to_float16(v.data(), out.data(), v.size());
  return out;
}

void expect_tensor_equals_reference(const Tensor& t, const Loader& loader, const Batch& b, bool targets,
                                    const std::string& what) {
  const Selection& sel = loader.selection();
  const Sampler& sampler = loader.sampler();
  const std::int64_t per = targets ? sel.target_elements() : sel.input_elements();
  ASSERT_EQ(t.shape.front(), static_cast<std::int64_t>(b.samples.size())) << what;
  ASSERT_EQ(t.num_elements(), per * static_cast<std::int64_t>(b.samples.size())) << what;
  for (std::size_t i = 0; i < b.samples.size(); ++i) {
    const auto regions = targets ? sampler.target_regions(b.samples[i]) : sampler.input_regions(b.samples[i]);
    std::vector<float> want(static_cast<std::size_t>(per));
    sel.read(regions, want.data(), want.size(), ReadOptions{1});
    const auto* base = static_cast<const std::uint8_t*>(t.data) + static_cast<std::size_t>(per) * i * t.element_size();
    if (t.dtype == OutputDType::kFloat32) {
      ASSERT_EQ(std::memcmp(base, want.data(), want.size() * 4), 0) << what << " sample " << i;
    } else {
      const auto w16 = to16(want, t.dtype);
      ASSERT_EQ(std::memcmp(base, w16.data(), w16.size() * 2), 0) << what << " sample " << i;
    }
  }
}

LoaderConfig random_config(std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  LoaderConfig lc;
  lc.sampler = random_grid_config(rng);
  SamplerConfig& cfg = lc.sampler;
  cfg.shuffle = static_cast<ShuffleMode>(pick(0, 2));
  cfg.chunks = {{"time", pick(1, 4)}, {"latitude", 3}};
  cfg.buffer_size = pick(1, 4);
  cfg.seed = rng();
  cfg.batch_size = pick(1, 5);
  cfg.drop_last = pick(0, 3) == 0;
  cfg.world_size = pick(1, 3);
  cfg.rank = pick(0, cfg.world_size - 1);
  SamplerConfig probe = cfg;
  probe.drop_last = false;
  if (cfg.drop_last && Sampler(probe).num_samples() < cfg.world_size * cfg.batch_size) cfg.drop_last = false;
  SelectionConfig& sc = lc.selection;
  std::vector<std::string> pool = {"t2m", "temperature", "vt", "lsm"};
  std::shuffle(pool.begin(), pool.end(), rng);
  pool.resize(static_cast<std::size_t>(pick(1, 4)));
  sc.variables = pool;
  const bool has_temp = std::find(pool.begin(), pool.end(), "temperature") != pool.end();
  if (has_temp && pick(0, 1)) {
    std::vector<double> levels = {1000, 850, 500};
    std::shuffle(levels.begin(), levels.end(), rng);
    levels.resize(static_cast<std::size_t>(pick(1, 3)));
    sc.select["level"] = levels;
  }
  if (pick(0, 1)) sc.static_variables = {"orography"};
  if (pick(0, 1)) sc.static_variables.push_back("soil");
  if (has_temp && pick(0, 1)) sc.normalisation["temperature"] = {250, 3};
  if (pick(0, 1)) sc.nan_fill = static_cast<float>(pick(-2, 2));
  lc.dtype = static_cast<OutputDType>(pick(0, 2));
  lc.threads = static_cast<int>(pick(1, 4));
  lc.prefetch = static_cast<int>(pick(1, 3));
  lc.memory_limit = std::uint64_t{64} << 20;
  return lc;
}

TEST(Loader, BatchesEqualReferenceForRandomConfigs) {
  const auto years = three_years();
  const std::optional<Dataset> statics = Dataset::open(static_store());
  std::mt19937_64 rng(7);
  int configs = 0, batches = 0, hits = 0;
  std::set<int> dtypes;
  for (int round = 0; round < 80; ++round) {
    const LoaderConfig cfg = random_config(rng);
    Loader loader(ConcatenatedTime(years), cfg, statics);
    const std::int64_t epoch = static_cast<std::int64_t>(rng() % 3);
    loader.set_epoch(epoch);
    const EpochPlan plan = loader.sampler().epoch(epoch);
    std::int64_t i = 0;
    while (auto b = loader.next()) {
      ASSERT_LT(i, plan.len());
      ASSERT_EQ(b->epoch, epoch);
      ASSERT_EQ(b->index, i);
      ASSERT_EQ(b->samples, plan.batch(i)) << "round " << round;
      ASSERT_EQ(b->time_ns.size(), b->samples.size());
      const std::string what = "round " + std::to_string(round) + " batch " + std::to_string(i);
      expect_tensor_equals_reference(b->inputs, loader, *b, false, what + " inputs");
      ASSERT_EQ(b->targets.has_value(), !loader.target_shape().empty());
      if (b->targets) expect_tensor_equals_reference(*b->targets, loader, *b, true, what + " targets");
      ++i;
      ++batches;
    }
    EXPECT_EQ(i, plan.len()) << "round " << round;
    EXPECT_EQ(loader.epoch(), epoch + 1);
    const LoaderStats st = loader.stats();
    EXPECT_EQ(st.batches, static_cast<std::uint64_t>(plan.len()));
    EXPECT_LE(st.memory_peak, st.memory_limit);
    hits += st.cache_hits > 0;
    dtypes.insert(static_cast<int>(cfg.dtype));
    ++configs;
  }
  EXPECT_EQ(configs, 80);
  EXPECT_GT(batches, 300);
  EXPECT_GT(hits, 10);
  EXPECT_EQ(dtypes.size(), 3u);
}

// The configuration of the issue's benchmark, in miniature: full fields, inputs t and targets
// t+1, several variables and levels; every sample once per epoch, batches in plan order.
LoaderConfig forecast_config() {
  LoaderConfig c;
  c.selection.variables = {"t2m", "temperature"};
  c.selection.select = {{"level", {500, 850}}};
  c.sampler.window = ForecastWindow{"time", {0}, {1}};
  c.sampler.batch_size = 3;
  c.sampler.shuffle = ShuffleMode::kSample;
  c.sampler.seed = 11;
  c.threads = 3;
  c.memory_limit = std::uint64_t{32} << 20;
  return c;
}

TEST(Loader, InfersDimsAndCoversEveryAnchorOnce) {
  Loader loader(ConcatenatedTime(three_years()), forecast_config());
  ASSERT_EQ(loader.sampler().dims().size(), 3u);
  EXPECT_EQ(loader.sampler().dims()[0].name, "time");
  EXPECT_EQ(loader.channel_names(),
            (std::vector<std::string>{"t2m", "temperature@level=500", "temperature@level=850"}));
  EXPECT_EQ(loader.input_shape(), (std::vector<std::int64_t>{3, 1, 3, kLat, kLon}));
  EXPECT_EQ(loader.target_shape(), (std::vector<std::int64_t>{3, 1, 3, kLat, kLon}));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::int64_t> anchors;
    std::vector<std::int64_t> order;
    while (auto b = loader.next()) {
      for (std::size_t i = 0; i < b->samples.size(); ++i) {
        anchors.insert(b->samples[i].anchor);
        order.push_back(b->samples[i].anchor);
        // Time stamps: 6-hourly from 2000-01-01 (three stores, contiguous).
        ASSERT_TRUE(b->time_ns[i].has_value());
        EXPECT_EQ(*b->time_ns[i], 946684800LL * 1000000000LL + b->samples[i].anchor * 6 * 3600LL * 1000000000LL);
      }
    }
    EXPECT_EQ(anchors.size(), 11u);  // anchors 0..10 (t+1 must exist)
    for (std::int64_t t = 0; t < 11; ++t) EXPECT_EQ(anchors.count(t), 1u) << t;
    EXPECT_FALSE(std::is_sorted(order.begin(), order.end())) << "shuffled";
  }
}

TEST(Loader, ResumeEqualsUninterruptedRunOnEveryRank) {
  for (std::int64_t world = 1; world <= 3; ++world) {
    for (std::int64_t rank = 0; rank < world; ++rank) {
      LoaderConfig cfg = forecast_config();
      cfg.sampler.batch_size = 2;
      cfg.sampler.world_size = world;
      cfg.sampler.rank = rank;
      cfg.sampler.patch = {{"latitude", 2}};
      auto collect = [](Loader& l, int n) {
        // Bit patterns, so that NaNs compare equal.
        std::vector<std::vector<std::uint32_t>> out;
        for (int i = 0; i < n; ++i) {
          auto b = l.next();
          if (!b) {
            out.push_back({});
            continue;
          }
          const auto* p = static_cast<const std::uint32_t*>(b->inputs.data);
          out.emplace_back(p, p + b->inputs.num_elements());
        }
        return out;
      };
      Loader straight(ConcatenatedTime(three_years()), cfg);
      const auto all = collect(straight, 3 * static_cast<int>(straight.len()) + 2);
      Loader first(ConcatenatedTime(three_years()), cfg);
      const int cut = static_cast<int>(straight.len()) + 2;  // mid second epoch
      const auto head = collect(first, cut);
      const SamplerState st = first.state();
      EXPECT_EQ(st.epoch, 1);
      EXPECT_EQ(st.batch, 1);
      Loader resumed(ConcatenatedTime(three_years()), cfg);
      resumed.load_state(sampler_state_from_json(to_json(st)));
      const auto tail = collect(resumed, static_cast<int>(all.size()) - cut);
      for (int i = 0; i < cut; ++i) EXPECT_EQ(head[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(i)]);
      for (std::size_t i = 0; i < tail.size(); ++i) {
        EXPECT_EQ(tail[i], all[static_cast<std::size_t>(cut) + i]) << "world " << world << " rank " << rank << " i " << i;
      }
    }
  }
}

TEST(Loader, RanksAreDisjointAndEqualLength) {
  std::multiset<std::int64_t> ids;
  std::set<std::int64_t> lengths;
  for (std::int64_t rank = 0; rank < 2; ++rank) {
    LoaderConfig cfg = forecast_config();
    cfg.sampler.world_size = 2;
    cfg.sampler.rank = rank;
    cfg.sampler.batch_size = 2;
    cfg.sampler.drop_last = true;
    Loader l(ConcatenatedTime(three_years()), cfg);
    std::int64_t n = 0;
    while (auto b = l.next()) {
      for (const auto& s : b->samples) ids.insert(s.id);
      n += static_cast<std::int64_t>(b->samples.size());
    }
    lengths.insert(n);
  }
  EXPECT_EQ(lengths.size(), 1u);
  EXPECT_EQ(ids.size(), 8u);  // 11 anchors, 2 ranks x 2 per batch: 8 kept, none twice
  for (auto id : ids) EXPECT_EQ(ids.count(id), 1u);
}

TEST(Loader, SharedChunksAreDecodedOnceAndTheCacheServesLaterBatches) {
  LoaderConfig cfg = forecast_config();
  cfg.sampler.shuffle = ShuffleMode::kNone;
  cfg.sampler.batch_size = 11;  // the whole epoch in one batch: t and t+1 share every chunk
  cfg.threads = 2;
  Loader l(ConcatenatedTime(three_years()), cfg);
  ASSERT_TRUE(l.next());
  ASSERT_FALSE(l.next());  // end of epoch 0
  ASSERT_TRUE(l.next());   // epoch 1: everything from the cache
  // The producer may already be building later epochs' batches (prefetch runs across epochs),
  // also from the cache, and counts their hits as it goes: every unit was fetched exactly
  // once; epoch 1 was all hits, and at most `prefetch` batches beyond it can have added more.
  const LoaderStats two = l.stats();
  // t2m: time chunks of 2 per store (2 + 2 + 3 along time), 2 x 2 spatial; temperature:
  // time chunks of 1, 2 levels (chunks of 2 levels hold 500 and 850 in two chunks), 2 x 2.
  const std::uint64_t units = (2u + 2u + 3u) * 4u + 12u * 2u * 4u;
  EXPECT_EQ(two.units_fetched, units);
  EXPECT_GE(two.cache_hits, units);
  EXPECT_LE(two.cache_hits, units * (1u + static_cast<std::uint64_t>(cfg.prefetch)));
  EXPECT_GT(two.assemble_s, 0.0);
  EXPECT_GT(two.bytes_delivered, 0u);
}

TEST(Loader, MemoryBoundHoldsWhereTheCacheWouldOtherwiseGrow) {
  // A store of many 40 KB chunks read in random order: without a bound the cache (and the
  // prefetched batches) would hold all of them.
  auto s = std::make_shared<MemoryStore>("big");
  s->set(".zgroup", R"({"zarr_format": 2})");
  const std::int64_t nt = 64, ny = 100, nx = 100;
  std::vector<float> v(static_cast<std::size_t>(nt * ny * nx));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(noise(3, 1, static_cast<std::int64_t>(i)));
  put_v2<float>(*s, "x", "<f4", {nt, ny, nx}, {1, 100, 100}, "NaN", {{"_ARRAY_DIMENSIONS", {"time", "y", "x"}}}, v);
  LoaderConfig cfg;
  cfg.selection.variables = {"x"};
  cfg.sampler.window = ForecastWindow{"time", {-1, 0}, {1, 2}};
  cfg.sampler.shuffle = ShuffleMode::kSample;
  cfg.sampler.batch_size = 4;
  cfg.threads = 3;
  cfg.prefetch = 2;
  const std::uint64_t batch_bytes = 2 * 4 * 2 * 40000;
  const std::uint64_t task = 2 * 40000 + 40000 / 64 + 65536;
  cfg.memory_limit = 3 * batch_bytes + 3 * task + 100000;  // room for ~2 cached chunks
  Loader l(ConcatenatedTime(Dataset::open(s)), cfg);
  for (int e = 0; e < 3; ++e) {
    std::int64_t n = 0;
    while (auto b = l.next()) {
      expect_tensor_equals_reference(b->inputs, l, *b, false, "bounded");
      n += static_cast<std::int64_t>(b->samples.size());
    }
    EXPECT_EQ(n, 61);
  }
  const LoaderStats st = l.stats();
  EXPECT_LE(st.memory_peak, cfg.memory_limit);
  EXPECT_LE(st.cache_bytes, 2u * 40000u + 40000u);
  EXPECT_GT(st.units_fetched, 61u * 4u / 2u);  // the small cache forces re-decoding

  // A limit that cannot hold the batch buffers and one task per thread is refused up front.
  LoaderConfig tiny = cfg;
  tiny.memory_limit = batch_bytes;
  EXPECT_TRUE(test::throws_error([&] { Loader bad(ConcatenatedTime(Dataset::open(s)), tiny); },
                                 ErrorCode::kInvalidArgument, {"memory_limit"}));
}

TEST(Loader, BadConfigsAreRefusedAtConstruction) {
  const auto years = three_years();
  auto refused = [&](LoaderConfig c, const std::string& needle) {
    return test::throws_error([&] { Loader l(ConcatenatedTime(years), c); }, ErrorCode::kInvalidArgument, {needle});
  };
  LoaderConfig c = forecast_config();
  c.selection.variables = {"t2m", "nope"};
  EXPECT_TRUE(refused(c, "t2m"));  // the message lists the valid names
  c = forecast_config();
  c.sampler.patch = {{"latitude", 99}};
  EXPECT_TRUE(refused(c, "latitude"));
  c = forecast_config();
  c.sampler.patch = {{"height", 2}};
  EXPECT_TRUE(refused(c, "height"));
  c = forecast_config();
  c.sampler.window = ForecastWindow{"time", {-20}, {1}};
  EXPECT_TRUE(refused(c, "window"));
  c = forecast_config();
  c.sampler.world_size = 0;
  EXPECT_TRUE(refused(c, "world_size"));
  c = forecast_config();
  c.prefetch = 0;
  EXPECT_TRUE(refused(c, "prefetch"));
  c = forecast_config();
  c.device = DeviceKind::kCuda;
  c.device_index = 1000;
  EXPECT_TRUE(refused(c, "cuda:1000"));
}

TEST(Loader, ReadErrorsSurfaceFromNextWithTheKey) {
  auto s = year_store(0, {hours(0, 4)});
  s->set("t2m/1.0.0", std::string("garbage that is not 24 bytes of float32"));
  LoaderConfig cfg = forecast_config();
  cfg.sampler.shuffle = ShuffleMode::kNone;
  cfg.sampler.batch_size = 1;
  cfg.threads = 1;
  Loader l(ConcatenatedTime(Dataset::open(s)), cfg);
  ASSERT_TRUE(l.next());  // anchor 0: time chunk 0 only (t = 0, t + 1 = 1)
  try {
    while (l.next()) {
    }
    FAIL() << "a corrupt chunk went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t2m/1.0.0"), std::string::npos) << e.what();
  }
  // The failure is sticky until the loader is restarted.
  EXPECT_THROW(l.next(), Error);
  l.set_epoch(0);
  EXPECT_TRUE(l.next());
}

// The work the producer has done: every unit it fetched or took from the cache.
std::uint64_t units_touched(const Loader& l) {
  const LoaderStats st = l.stats();
  return st.units_fetched + st.cache_hits;
}

// Waits until the producer has filled its prefetch slots (its work stops growing).
std::uint64_t settle(const Loader& l) {
  std::uint64_t last = units_touched(l);
  for (int quiet = 0; quiet < 4;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const std::uint64_t now = units_touched(l);
    quiet = now == last ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

TEST(Loader, SetEpochAtTheStartOfThatEpochKeepsWhatIsPrefetched) {
  LoaderConfig cfg = forecast_config();
  cfg.prefetch = 3;
  Loader l(ConcatenatedTime(three_years()), cfg);
  while (auto b = l.next()) {
  }
  // Epoch 0 ended; the producer has prefetched into epoch 1 across the boundary.
  const std::uint64_t before = settle(l);
  l.set_epoch(1);
  EXPECT_EQ(settle(l), before) << "set_epoch(1) at the start of epoch 1 restarted the producer";
  // Rewinding does restart (and prepares the batches again).
  Loader r(ConcatenatedTime(three_years()), cfg);
  const std::uint64_t r0 = settle(r);
  r.set_epoch(1);
  EXPECT_GT(settle(r), r0);
  // Both deliver epoch 1 exactly as a loader started there does.
  Loader fresh(ConcatenatedTime(three_years()), cfg);
  fresh.set_epoch(1);
  for (Loader* x : {&l, &r}) {
    Loader& ref = fresh;
    ref.set_epoch(1);
    while (auto b = x->next()) {
      auto want = ref.next();
      ASSERT_TRUE(want);
      EXPECT_EQ(b->samples, want->samples);
      ASSERT_EQ(b->inputs.num_bytes(), want->inputs.num_bytes());
      EXPECT_EQ(std::memcmp(b->inputs.data, want->inputs.data, b->inputs.num_bytes()), 0);
    }
    EXPECT_FALSE(ref.next());
  }
}

TEST(Loader, TraceRecordsEveryStage) {
  LoaderConfig cfg = forecast_config();
  cfg.trace = true;
  Loader l(ConcatenatedTime(three_years()), cfg);
  while (l.next()) {
  }
  const auto j = l.trace_json();
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) names.insert(e["name"].get<std::string>());
  for (const char* stage : {"plan", "fetch", "decode", "assemble", "batch", "consumer wait"}) {
    EXPECT_TRUE(names.count(stage)) << stage;
  }
  const auto st = l.stats().to_json();
  EXPECT_GT(st["busy_s"]["decode"].get<double>(), 0.0);
}

// ---- block assembly ------------------------------------------------------------------------

// CUBESTREAM_BLOCK_ASSEMBLY=on: the demo store's blosc-lz4 chunks (real CMIP5 fields, float32,
// byte shuffle) decoded block by block straight into the batch give the reference's batches
// bit for bit, as whole fields and as patches whose rows are long enough; patches with short
// rows are decoded whole (and counted so); =off never takes the block path; auto leaves it off
// for data that fits the cache; another value is refused.
TEST(Loader, BlockAssemblyGivesTheReferenceBatches) {
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  struct Case {
    std::map<std::string, std::int64_t> patch;
    OutputDType dtype;
    bool blocks;   // whether the pieces' rows allow the block path
  };
  const Case cases[] = {{{}, OutputDType::kFloat32, true},
                        {{{"lat", 40}, {"lon", 64}}, OutputDType::kBFloat16, true},
                        {{{"lat", 96}, {"lon", 96}}, OutputDType::kFloat16, true},
                        {{{"lat", 5}, {"lon", 7}}, OutputDType::kFloat32, false}};
  for (const Case& k : cases) {
    LoaderConfig c;
    c.selection.variables = {"tas", "uas", "vas"};
    c.sampler.window = ForecastWindow{"time", {-1, 0}, {1}};
    c.sampler.patch = k.patch;
    c.sampler.shuffle = ShuffleMode::kSample;
    c.sampler.batch_size = 3;
    c.dtype = k.dtype;
    c.threads = 2;
    for (const char* mode : {"on", "off"}) {
      SCOPED_TRACE(std::string(mode) + (k.patch.empty() ? " whole fields" : " patch " + std::to_string(k.patch.at("lon"))));
      struct Env {
        explicit Env(const char* v) { setenv("CUBESTREAM_BLOCK_ASSEMBLY", v, 1); }
        ~Env() { unsetenv("CUBESTREAM_BLOCK_ASSEMBLY"); }
      };
      std::optional<Loader> made;
      {
        const Env env(mode);   // read by the constructor only
        made.emplace(ConcatenatedTime({Dataset::open(open_store(demo))}), c);
      }
      Loader& l = *made;
      for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
        l.set_epoch(epoch);
        std::int64_t i = 0;
        while (auto b = l.next()) {
          const std::string what = "epoch " + std::to_string(epoch) + " batch " + std::to_string(i++);
          expect_tensor_equals_reference(b->inputs, l, *b, false, what + " inputs");
          expect_tensor_equals_reference(*b->targets, l, *b, true, what + " targets");
          if (HasFatalFailure()) return;
        }
        ASSERT_GT(i, 2);
      }
      const LoaderStats st = l.stats();
      if (std::string(mode) == "on" && k.blocks) {
        // every unit fetched goes the block path: none is cached, so none is found again
        EXPECT_EQ(st.units_block_assembled, st.units_fetched);
        EXPECT_EQ(st.cache_hits, 0u);
      } else {
        EXPECT_EQ(st.units_block_assembled, 0u);
      }
      EXPECT_GT(st.units_fetched, 0u);
    }
  }
  LoaderConfig c;
  c.selection.variables = {"tas"};
  c.sampler.window = ForecastWindow{"time", {0}, {1}};
  c.sampler.shuffle = ShuffleMode::kSample;
  Loader automatic(ConcatenatedTime({Dataset::open(open_store(demo))}), c);
  while (automatic.next()) {
  }
  EXPECT_EQ(automatic.stats().units_block_assembled, 0u);   // 1 MB of data: the cache holds it
  setenv("CUBESTREAM_BLOCK_ASSEMBLY", "sometimes", 1);
  const ::testing::AssertionResult refused = test::throws_error(
      [&] { Loader(ConcatenatedTime({Dataset::open(open_store(demo))}), c); }, ErrorCode::kInvalidArgument,
      {"CUBESTREAM_BLOCK_ASSEMBLY"});
  unsetenv("CUBESTREAM_BLOCK_ASSEMBLY");
  EXPECT_TRUE(refused);
}

// ---- readahead hints ----------------------------------------------------------------------

// The three years, each behind a store that records the hints it gets; reads take a little
// while, so that the producer never outruns the hint thread (which drops hints it fell behind
// on: they would be for batches already being read).
std::vector<std::shared_ptr<test_stores::HintRecordingStore>> recording_years() {
  const std::vector<std::pair<int, std::vector<std::int64_t>>> years = {{0, hours(0, 4)}, {1, hours(24, 3)}, {2, hours(42, 5)}};
  std::vector<std::shared_ptr<test_stores::HintRecordingStore>> out;
  for (const auto& [seed, h] : years) {
    out.push_back(std::make_shared<test_stores::HintRecordingStore>(year_store(seed, {h}), std::chrono::microseconds(300)));
  }
  return out;
}

std::vector<Dataset> open_all(const std::vector<std::shared_ptr<test_stores::HintRecordingStore>>& stores) {
  std::vector<Dataset> ds;
  for (const auto& s : stores) ds.push_back(Dataset::open(s));
  return ds;
}

// Polls: the hint thread counts what it handed to the stores a moment after it was queued.
std::uint64_t units_hinted_eventually(const Loader& l) {
  for (int i = 0; i < 500 && l.stats().units_hinted == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return l.stats().units_hinted;
}

TEST(Loader, ReadaheadOnAndOffGiveTheSameBatches) {
  std::vector<std::vector<std::uint8_t>> want;
  for (const int ahead : {0, 1, 3}) {
    LoaderConfig cfg = forecast_config();
    cfg.readahead_batches = ahead;
    cfg.prefetch = 2;
    Loader l(ConcatenatedTime(three_years()), cfg);
    std::vector<std::vector<std::uint8_t>> got;
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (auto b = l.next()) {
        const auto* in = static_cast<const std::uint8_t*>(b->inputs.data);
        const auto* tg = static_cast<const std::uint8_t*>(b->targets->data);
        std::vector<std::uint8_t> bytes(in, in + b->inputs.num_bytes());
        bytes.insert(bytes.end(), tg, tg + b->targets->num_bytes());
        for (const auto& smp : b->samples) bytes.push_back(static_cast<std::uint8_t>(smp.anchor));
        got.push_back(std::move(bytes));
      }
    }
    if (ahead == 0) {
      want = got;
      EXPECT_EQ(l.stats().units_hinted, 0u);
      EXPECT_EQ(l.stats().to_json()["units_hinted"].get<std::uint64_t>(), 0u);
    } else {
      EXPECT_EQ(got, want) << "readahead_batches " << ahead;
      EXPECT_GT(units_hinted_eventually(l), 0u) << "readahead_batches " << ahead;
      EXPECT_GT(l.stats().to_json()["units_hinted"].get<std::uint64_t>(), 0u);
    }
  }
  LoaderConfig bad = forecast_config();
  bad.readahead_batches = -1;
  EXPECT_THROW(Loader(ConcatenatedTime(three_years()), bad), Error);
  bad.readahead_batches = 65;
  EXPECT_THROW(Loader(ConcatenatedTime(three_years()), bad), Error);
}

// A batch plan's "no unit shared" bound (what the GPU stage sizes its pinned staging by): the
// most units and unit bytes one sample touches equal those of the sample planned alone, and
// no batch touches more units than its samples times that.
TEST(Loader, BatchPlanBoundsTheUnitsOfAnUnsharedBatch) {
  LoaderConfig cfg = forecast_config();
  Loader l(ConcatenatedTime(three_years()), cfg);
  pipeline::BatchPlanner planner(l.selection(), l.sampler());
  int batches = 0;
  bool shared = false;
  while (auto b = l.next()) {
    const pipeline::BatchPlan plan = planner.plan(b->samples);
    ASSERT_EQ(plan.samples, b->samples.size());
    std::size_t units_max = 0;
    std::uint64_t bytes_max = 0, units_alone = 0;
    for (const Sample& smp : b->samples) {
      const pipeline::BatchPlan one = planner.plan({smp});
      std::uint64_t bytes = 0;
      for (const auto& t : one.tasks) bytes += planner.sources()[t.source].array.unit_bytes();
      units_max = std::max(units_max, one.tasks.size());
      bytes_max = std::max(bytes_max, bytes);
      units_alone += one.tasks.size();
      EXPECT_EQ(one.sample_units_max, one.tasks.size());
    }
    EXPECT_EQ(plan.sample_units_max, units_max);
    EXPECT_EQ(plan.sample_bytes_max, bytes_max);
    EXPECT_LE(plan.tasks.size(), plan.samples * plan.sample_units_max);
    shared = shared || plan.tasks.size() < units_alone;
    ++batches;
  }
  EXPECT_GT(batches, 2);
  EXPECT_TRUE(shared) << "no batch whose samples share a unit: the bound is not tested where it matters";
}

TEST(Loader, ReadaheadHintsExactlyTheUnitsNoEarlierBatchFetches) {
  for (const int ahead : {1, 2}) {
    auto stores = recording_years();
    LoaderConfig cfg = forecast_config();
    cfg.readahead_batches = ahead;
    cfg.prefetch = 1;
    cfg.threads = 2;
    cfg.memory_limit = std::uint64_t{64} << 20;  // the cache holds every unit: nothing is read twice
    std::vector<std::vector<std::string>> batch_keys;  // per batch of epoch 0: the units' store keys
    {
      Loader l(ConcatenatedTime(open_all(stores)), cfg);
      pipeline::BatchPlanner planner(l.selection(), l.sampler());
      while (auto b = l.next()) {
        std::vector<std::string> keys;
        for (const auto& t : planner.plan(b->samples).tasks) {
          const Array& a = planner.sources()[t.source].array;
          keys.push_back(a.store().describe() + "|" + a.chunk_key(t.unit));
        }
        batch_keys.push_back(std::move(keys));
      }
      ASSERT_GE(batch_keys.size(), 3u);
      EXPECT_GT(units_hinted_eventually(l), 0u);
      // Destroying the loader drops hints still queued (epoch 1 needs none: all cached).
    }
    // Batch b's fetch hints batch b + ahead: its units that neither the cache (batches before
    // b) nor batches b .. b + ahead - 1 hold. Over the epoch: every unit that batch 0 does not
    // fetch, at most once. (Hints the hint thread has not reached when a few more batches'
    // hints queue up are dropped, and so are those queued when the loader goes: under load
    // some may be missing, none may be wrong or repeated.)
    std::vector<std::string> want;
    std::set<std::string> fetched(batch_keys[0].begin(), batch_keys[0].end());
    for (std::size_t b = 1; b < batch_keys.size(); ++b) {
      for (const auto& k : batch_keys[b]) {
        if (fetched.insert(k).second) want.push_back(k);
      }
    }
    std::vector<std::string> got;
    for (const auto& s : stores) {
      for (const auto& h : s->hints()) {
        got.push_back(s->describe() + "|" + h.key);
        EXPECT_EQ(h.range.offset, 0);
        EXPECT_EQ(h.range.length, -1);
      }
    }
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_FALSE(want.empty());
    EXPECT_FALSE(got.empty());
    EXPECT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "a unit hinted twice";
    EXPECT_TRUE(std::includes(want.begin(), want.end(), got.begin(), got.end()))
        << "a hint for a unit no later batch fetches first; readahead_batches " << ahead;
  }
}

}  // namespace
}  // namespace cubestream
