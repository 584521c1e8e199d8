// The Sampler as a whole: every sample once per epoch in every shuffle mode and batching
// choice, batch shapes, random access equal to the cursor, and resume == uninterrupted.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cubestream/error.hpp"
#include "cubestream/sampler.hpp"
#include "sampler_test_util.hpp"

namespace cubestream {
namespace {

using testing_sample::epoch_samples;
using testing_sample::ids_of;

TEST(SamplerCoverage, EachSampleExactlyOncePerEpoch) {
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 600; ++i) {
    SamplerConfig c = testing_sample::random_config(rng);
    c.world_size = 1;
    c.rank = 0;
    c.shuffle = static_cast<ShuffleMode>(i % 3);  // every mode equally often
    for (bool drop : {false, true}) {
      c.drop_last = drop;
      SamplerConfig keep_all = c;
      keep_all.drop_last = false;
      const std::int64_t n = Sampler(keep_all).num_samples();
      if (drop && n < c.batch_size) continue;
      Sampler s(c);
      ASSERT_EQ(s.num_samples(), n);
      for (std::int64_t e : {0, 1, 5}) {
        const EpochPlan plan = s.epoch(e);
        std::vector<std::int64_t> ids;
        for (std::int64_t b = 0; b < plan.num_batches(); ++b) {
          const auto batch = plan.batch(b);
          ASSERT_EQ(static_cast<std::int64_t>(batch.size()), plan.batch_size(b));
          // Only the last batch may be partial, and only without drop_last.
          if (b + 1 < plan.num_batches() || drop) {
            ASSERT_EQ(static_cast<std::int64_t>(batch.size()), c.batch_size);
          }
          for (const auto& smp : batch) {
            ASSERT_FALSE(smp.repeat);
            ASSERT_EQ(smp, s.sample(smp.id));  // descriptors agree with the grid
            ids.push_back(smp.id);
          }
        }
        std::sort(ids.begin(), ids.end());
        ASSERT_TRUE(std::adjacent_find(ids.begin(), ids.end()) == ids.end()) << "a sample twice";
        const std::int64_t expect = drop ? n / c.batch_size * c.batch_size : n;
        ASSERT_EQ(static_cast<std::int64_t>(ids.size()), expect);
        ASSERT_EQ(plan.len(), drop ? n / c.batch_size : (n + c.batch_size - 1) / c.batch_size);
        if (!drop) {
          for (std::int64_t k = 0; k < n; ++k) ASSERT_EQ(ids[static_cast<std::size_t>(k)], k);
        }
      }
    }
  }
}

TEST(SamplerCoverage, RandomAccessEqualsTheCursorAndOutOfRangeThrows) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100; ++i) {
    Sampler s(testing_sample::random_config(rng));
    const EpochPlan plan = s.epoch(0);
    for (std::int64_t b = 0; b < plan.num_batches(); ++b) {
      auto next = s.next_batch();
      ASSERT_TRUE(next.has_value());
      ASSERT_EQ(*next, plan.batch(b));
      for (std::size_t k = 0; k < next->size(); ++k)
        ASSERT_EQ((*next)[k], plan.sample(b * s.config().batch_size + static_cast<std::int64_t>(k)));
    }
    EXPECT_FALSE(s.next_batch().has_value());  // end of epoch 0, once
    EXPECT_EQ(s.state().epoch, 1);
    EXPECT_EQ(*s.next_batch(), s.epoch(1).batch(0));
    try {
      plan.batch(plan.num_batches());
      ADD_FAILURE();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    }
    EXPECT_THROW(plan.batch(-1), Error);
    EXPECT_THROW(plan.sample(plan.num_samples()), Error);
  }
}

// Every batch the cursor hands out (nullopt marks an epoch end) over `count` calls.
std::vector<std::optional<std::vector<Sample>>> run(Sampler& s, int count) {
  std::vector<std::optional<std::vector<Sample>>> out;
  for (int i = 0; i < count; ++i) out.push_back(s.next_batch());
  return out;
}

TEST(SamplerState, ResumeEqualsUninterruptedOnEveryRank) {
  std::mt19937_64 rng(77);
  for (int i = 0; i < 150; ++i) {
    SamplerConfig c = testing_sample::random_config(rng);
    const std::int64_t per_epoch = Sampler(c).epoch(0).num_batches() + 1;  // + the end marker
    const int total = static_cast<int>(3 * per_epoch);
    const int stop = static_cast<int>(std::uniform_int_distribution<std::int64_t>(0, total)(rng));
    const std::int64_t start_epoch = std::uniform_int_distribution<std::int64_t>(0, 3)(rng);
    // The checkpoint is taken on rank 0 and restored on every rank.
    c.rank = 0;
    Sampler rank0(c);
    rank0.set_epoch(start_epoch);
    run(rank0, stop);
    const nlohmann::json saved = to_json(rank0.state());
    const SamplerState state = sampler_state_from_json(nlohmann::json::parse(saved.dump()));
    ASSERT_EQ(state, rank0.state());
    for (std::int64_t r = 0; r < c.world_size; ++r) {
      c.rank = r;
      Sampler whole(c);
      whole.set_epoch(start_epoch);
      const auto expected = run(whole, total);
      Sampler resumed(c);
      resumed.restore(state);
      const auto tail = run(resumed, total - stop);
      ASSERT_TRUE(std::equal(tail.begin(), tail.end(), expected.begin() + stop)) << "config " << i << " rank " << r;
    }
  }
}

TEST(SamplerState, JsonIsSmallAndRestoreRefusesAnotherConfig) {
  SamplerConfig c;
  c.dims = {{"time", 100}, {"x", 8}};
  c.window = ForecastWindow{"time", {-1, 0}, {1}};
  c.shuffle = ShuffleMode::kSample;
  c.seed = 0xffffffffffffffffULL;  // survives JSON
  c.batch_size = 4;
  Sampler s(c);
  run(s, 30);
  const SamplerState st = s.state();
  EXPECT_EQ(st.epoch, 1);          // 25 batches + end marker, then 4 more
  EXPECT_EQ(st.batch, 4);
  const nlohmann::json j = to_json(st);
  EXPECT_EQ(j["seed"].get<std::uint64_t>(), c.seed);
  EXPECT_EQ(sampler_state_from_json(nlohmann::json::parse(j.dump())), st);

  SamplerConfig other = c;
  other.batch_size = 5;
  Sampler o(other);
  try {
    o.restore(st);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("another config"), std::string::npos);
  }
  SamplerConfig more_ranks = c;
  more_ranks.world_size = 2;
  EXPECT_THROW(Sampler(more_ranks).restore(st), Error);
  SamplerState past = st;
  past.batch = 26;
  EXPECT_THROW(Sampler(c).restore(past), Error);
  // Another seed in the state is adopted: the resumed run follows the state, not the config.
  SamplerConfig reseeded = c;
  reseeded.seed = 1;
  Sampler r(reseeded);
  r.restore(st);
  EXPECT_EQ(r.state().seed, c.seed);
  EXPECT_EQ(r.next_batch(), s.next_batch());
}

TEST(SamplerState, MalformedJsonIsAnInvalidArgument) {
  for (const char* text : {R"([])", R"({"version":1})", R"({"version":2,"seed":0,"epoch":0,"batch":0,
      "world_size":1,"fingerprint":"00"})", R"({"version":1,"seed":0,"epoch":0,"batch":0,"world_size":1,
      "fingerprint":"xyz"})", R"({"version":1,"seed":-1,"epoch":0,"batch":0,"world_size":1,"fingerprint":"0"})"}) {
    try {
      sampler_state_from_json(nlohmann::json::parse(text));
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << text;
    }
  }
}

}  // namespace
}  // namespace cubestream
