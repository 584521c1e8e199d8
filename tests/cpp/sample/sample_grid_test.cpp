// The sample grid: xbatcher's patch/overlap starts on hand-computed cases and against a
// reference of its rule on random sizes, forecast windows and their regions, batch dims, and
// every config error with a message that names what is wrong.
#include <gtest/gtest.h>

#include <random>

#include "cubestream/error.hpp"
#include "cubestream/sampler.hpp"
#include "sampler_test_util.hpp"

namespace cubestream {
namespace {

using V = std::vector<std::int64_t>;

SamplerConfig one_dim(std::int64_t size, std::int64_t patch, std::int64_t overlap) {
  SamplerConfig c;
  c.dims = {{"x", size}};
  c.patch = {{"x", patch}};
  if (overlap) c.overlap = {{"x", overlap}};
  return c;
}

// xbatcher's _iterate_through_dimensions: range(0, size, stride), keeping start + patch <= size.
V xbatcher_starts(std::int64_t size, std::int64_t patch, std::int64_t overlap) {
  V out;
  for (std::int64_t s = 0; s < size; s += patch - overlap)
    if (s + patch <= size) out.push_back(s);
  return out;
}

TEST(SamplerGrid, XbatcherHandComputedStarts) {
  EXPECT_EQ(Sampler(one_dim(10, 4, 1)).starts("x"), (V{0, 3, 6}));   // 9 would run off
  EXPECT_EQ(Sampler(one_dim(10, 5, 0)).starts("x"), (V{0, 5}));
  EXPECT_EQ(Sampler(one_dim(10, 4, 0)).starts("x"), (V{0, 4}));      // 8..11 runs off
  EXPECT_EQ(Sampler(one_dim(7, 7, 0)).starts("x"), (V{0}));
  EXPECT_EQ(Sampler(one_dim(9, 2, 1)).starts("x"), (V{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(Sampler(one_dim(1, 1, 0)).starts("x"), (V{0}));
  EXPECT_EQ(Sampler(one_dim(10, 4, 1)).num_samples(), 3);
}

TEST(SamplerGrid, XbatcherRuleOnRandomSizes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    const std::int64_t size = std::uniform_int_distribution<std::int64_t>(1, 60)(rng);
    const std::int64_t patch = std::uniform_int_distribution<std::int64_t>(1, size)(rng);
    const std::int64_t overlap = std::uniform_int_distribution<std::int64_t>(0, patch - 1)(rng);
    Sampler s(one_dim(size, patch, overlap));
    ASSERT_EQ(s.starts("x"), xbatcher_starts(size, patch, overlap)) << size << " " << patch << " " << overlap;
  }
}

TEST(SamplerGrid, ProductIsRowMajorInDimsOrderAndRegionsAreExact) {
  SamplerConfig c;
  c.dims = {{"y", 6}, {"c", 5}, {"x", 10}};
  c.patch = {{"x", 4}, {"y", 3}};
  c.overlap = {{"x", 1}};
  Sampler s(c);
  ASSERT_EQ(s.num_samples(), 2 * 1 * 3);
  EXPECT_EQ(s.starts("c"), (V{0}));  // not named: taken whole
  const V ys{0, 0, 0, 3, 3, 3}, xs{0, 3, 6, 0, 3, 6};
  for (std::int64_t id = 0; id < 6; ++id) {
    const Sample smp = s.sample(id);
    EXPECT_EQ(smp.start, (V{ys[id], 0, xs[id]}));
    EXPECT_EQ(smp.anchor, -1);
    const auto in = s.input_regions(smp);
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].start, smp.start);
    EXPECT_EQ(in[0].shape, (V{3, 5, 4}));
    EXPECT_TRUE(s.target_regions(smp).empty());
  }
  EXPECT_THROW(s.sample(6), Error);
}

TEST(SamplerGrid, ForecastWindowAnchorsAndRegions) {
  SamplerConfig c;
  c.dims = {{"time", 10}, {"lat", 4}, {"lon", 8}};
  c.patch = {{"lon", 4}};
  c.window = ForecastWindow{"time", {-1, 0}, {1, 6}};
  Sampler s(c);
  // t - 1 >= 0 and t + 6 <= 9: anchors 1, 2, 3; nothing clipped.
  EXPECT_EQ(s.starts("time"), (V{1, 2, 3}));
  ASSERT_EQ(s.num_samples(), 3 * 2);
  const Sample smp = s.sample(3);  // anchor 2, lon start 4
  EXPECT_EQ(smp.anchor, 2);
  EXPECT_EQ(smp.start, (V{2, 0, 4}));
  const auto in = s.input_regions(smp);
  const auto tg = s.target_regions(smp);
  ASSERT_EQ(in.size(), 2u);
  ASSERT_EQ(tg.size(), 2u);
  EXPECT_EQ(in[0].start, (V{1, 0, 4}));
  EXPECT_EQ(in[1].start, (V{2, 0, 4}));
  EXPECT_EQ(tg[0].start, (V{3, 0, 4}));
  EXPECT_EQ(tg[1].start, (V{8, 0, 4}));
  for (const auto* rs : {&in, &tg})
    for (const auto& r : *rs) EXPECT_EQ(r.shape, (V{1, 4, 4}));
}

TEST(SamplerGrid, WindowKeepsTheAnchorOnTheAxis) {
  // Inputs after the anchor only: the anchor itself must still be a valid time index.
  SamplerConfig c;
  c.dims = {{"time", 5}};
  c.window = ForecastWindow{"time", {2}, {}};
  Sampler s(c);
  EXPECT_EQ(s.starts("time"), (V{0, 1, 2}));
  EXPECT_EQ(s.input_regions(s.sample(2))[0].start, (V{4}));
}

TEST(SamplerGrid, EveryWindowStepOfEverySampleLiesOnTheAxis) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    SamplerConfig c = testing_sample::random_config(rng);
    Sampler s(c);
    for (std::int64_t id = 0; id < s.num_samples(); ++id) {
      const Sample smp = s.sample(id);
      for (const auto& rs : {s.input_regions(smp), s.target_regions(smp)})
        for (const auto& r : rs)
          for (std::size_t d = 0; d < c.dims.size(); ++d) {
            ASSERT_GE(r.start[d], 0);
            ASSERT_GE(r.shape[d], 1);
            ASSERT_LE(r.start[d] + r.shape[d], c.dims[d].size);
          }
    }
  }
}

TEST(SamplerGrid, BatchDimsIterateOneIndexPerSample) {
  SamplerConfig c;
  c.dims = {{"member", 3}, {"x", 8}};
  c.batch_dims = {"member"};
  c.patch = {{"x", 4}};
  Sampler s(c);
  EXPECT_EQ(s.starts("member"), (V{0, 1, 2}));
  ASSERT_EQ(s.num_samples(), 6);
  const auto r = s.input_regions(s.sample(5))[0];
  EXPECT_EQ(r.start, (V{2, 4}));
  EXPECT_EQ(r.shape, (V{1, 4}));
}

TEST(SamplerGrid, ChunkGroupsFollowTheChunkOfEachStart) {
  SamplerConfig c;
  c.dims = {{"time", 10}, {"x", 12}};
  c.window = ForecastWindow{"time", {0}, {1}};  // anchors 0..8
  c.patch = {{"x", 4}};                          // starts 0, 4, 8
  c.chunks = {{"time", 4}, {"x", 6}};            // time chunks {0-3},{4-7},{8}; x: {0,4},{8}
  Sampler s(c);
  EXPECT_EQ(s.num_chunk_groups(), 3 * 2);
  for (std::int64_t id = 0; id < s.num_samples(); ++id) {
    const Sample smp = s.sample(id);
    EXPECT_EQ(s.chunk_group(smp), (smp.anchor / 4) * 2 + smp.start[1] / 6) << id;
  }
}

// ---- errors ----

void expect_invalid(const SamplerConfig& c, const std::vector<std::string>& needles) {
  try {
    Sampler s(c);
    ADD_FAILURE() << "no error; expected one mentioning " << needles.front();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    for (const auto& n : needles) EXPECT_NE(e.message().find(n), std::string::npos) << e.message() << " lacks " << n;
  }
}

SamplerConfig base() {
  SamplerConfig c;
  c.dims = {{"time", 20}, {"latitude", 8}, {"longitude", 16}};
  return c;
}

TEST(SamplerErrors, UnknownDimsListTheValidNames) {
  const std::vector<std::string> valid{"time, latitude, longitude", "unknown dim 'lat'"};
  SamplerConfig c = base();
  c.patch = {{"lat", 4}};
  expect_invalid(c, valid);
  c = base();
  c.patch = {{"latitude", 4}};
  c.overlap = {{"lat", 1}};
  expect_invalid(c, valid);
  c = base();
  c.batch_dims = {"lat"};
  expect_invalid(c, valid);
  c = base();
  c.chunks = {{"lat", 1}};
  expect_invalid(c, valid);
  c = base();
  c.window = ForecastWindow{"lat", {0}, {1}};
  expect_invalid(c, valid);
  Sampler ok(base());
  try {
    ok.starts("lat");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("time, latitude, longitude"), std::string::npos);
  }
}

TEST(SamplerErrors, GeometryErrors) {
  SamplerConfig c = base();
  c.patch = {{"latitude", 9}};
  expect_invalid(c, {"patch size 9", "larger than the dim (8)"});
  c.patch = {{"latitude", 0}};
  expect_invalid(c, {"must be >= 1"});
  c.patch = {{"latitude", 4}};
  c.overlap = {{"latitude", 4}};
  expect_invalid(c, {"overlap 4"});
  c.overlap = {{"latitude", -1}};
  expect_invalid(c, {"overlap -1"});
  c = base();
  c.overlap = {{"latitude", 1}};
  expect_invalid(c, {"not in patch"});
  c = base();
  c.patch = {{"latitude", 4}};
  c.batch_dims = {"latitude"};
  expect_invalid(c, {"both patch and batch_dims"});
  c = base();
  c.batch_dims = {"latitude", "latitude"};
  expect_invalid(c, {"twice"});
  c = base();
  c.dims.push_back({"time", 3});
  expect_invalid(c, {"listed twice"});
  c = base();
  c.dims[1].size = 0;
  expect_invalid(c, {"size 0"});
  c = base();
  c.dims.clear();
  expect_invalid(c, {"no dims"});
  c = base();
  c.chunks = {{"time", 0}};
  expect_invalid(c, {"chunk length"});
}

TEST(SamplerErrors, WindowsOffTheTimeAxis) {
  SamplerConfig c = base();  // time has 20 steps
  c.window = ForecastWindow{"time", {-10, 0}, {10}};
  expect_invalid(c, {"21 steps", "only 20"});
  c.window = ForecastWindow{"time", {0}, {20}};
  expect_invalid(c, {"step 20 runs off"});
  c.window = ForecastWindow{"time", {-25}, {}};
  expect_invalid(c, {"step -25 runs off"});
  c.window = ForecastWindow{"time", {}, {1}};
  expect_invalid(c, {"input_offsets is empty"});
  c.window = ForecastWindow{"time", {0}, {1}};
  c.patch = {{"time", 2}};
  expect_invalid(c, {"cannot also be patched"});
  c.patch.clear();
  c.batch_dims = {"time"};
  expect_invalid(c, {"cannot also be a batch dim"});
  // The widest window that fits: exactly one anchor.
  c.batch_dims.clear();
  c.window = ForecastWindow{"time", {-9, 0}, {10}};
  EXPECT_EQ(Sampler(c).num_samples(), 1);
}

TEST(SamplerErrors, BatchingAndRankErrors) {
  SamplerConfig c = base();
  c.world_size = 0;
  expect_invalid(c, {"world_size is 0"});
  c.world_size = 2;
  c.rank = 2;
  expect_invalid(c, {"rank 2", "world_size 2"});
  c.rank = -1;
  expect_invalid(c, {"rank -1"});
  c.rank = 0;
  c.batch_size = 0;
  expect_invalid(c, {"batch_size is 0"});
  c.batch_size = 1;
  c.buffer_size = 0;
  expect_invalid(c, {"buffer_size is 0"});
  c = base();
  c.window = ForecastWindow{"time", {0}, {}};  // 20 samples
  c.drop_last = true;
  c.batch_size = 21;
  expect_invalid(c, {"no full batch"});
  c.batch_size = 10;
  c.world_size = 3;
  expect_invalid(c, {"no full batch"});
  c.world_size = 2;
  EXPECT_EQ(Sampler(c).epoch(0).num_batches(), 1);
  EXPECT_THROW(Sampler(c).epoch(-1), Error);
}

}  // namespace
}  // namespace cubestream
