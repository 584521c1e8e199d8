// The rank split: equal lengths, disjoint parts, union = the epoch; padding by wrap-around
// (marked as repeats) when nothing may be dropped, truncation to full batches with drop_last.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "cubestream/sampler.hpp"
#include "sample/distributed.hpp"
#include "sampler_test_util.hpp"

namespace cubestream {
namespace {

using testing_sample::epoch_samples;

TEST(SamplerDistributed, SplitArithmetic) {
  // 10 samples over 4 ranks, keeping everything: 3 each, 2 repeats, last rank starts at 9.
  auto s = sample::split_epoch(10, 4, 3, 2, false);
  EXPECT_EQ(s.per_rank, 3);
  EXPECT_EQ(s.first, 9);
  EXPECT_EQ(s.num_batches, 2);
  // drop_last: floor(10 / (2 * 2)) = 2 batches of 2 per rank; 8 kept, 2 dropped.
  s = sample::split_epoch(10, 2, 1, 2, true);
  EXPECT_EQ(s.per_rank, 4);
  EXPECT_EQ(s.first, 4);
  EXPECT_EQ(s.num_batches, 2);
}

TEST(SamplerDistributed, PaddingWrapsAroundTheEpochOrder) {
  SamplerConfig c;
  c.dims = {{"x", 10}};
  c.batch_dims = {"x"};
  c.world_size = 4;
  c.batch_size = 2;
  std::vector<std::vector<Sample>> parts;
  for (std::int64_t r = 0; r < 4; ++r) {
    c.rank = r;
    parts.push_back(epoch_samples(Sampler(c), 0));
    ASSERT_EQ(parts.back().size(), 3u);
  }
  // Unshuffled: rank 3 gets sample 9, then the repeats of positions 0 and 1.
  EXPECT_EQ(parts[3][0].id, 9);
  EXPECT_FALSE(parts[3][0].repeat);
  EXPECT_EQ(parts[3][1].id, 0);
  EXPECT_TRUE(parts[3][1].repeat);
  EXPECT_EQ(parts[3][2].id, 1);
  EXPECT_TRUE(parts[3][2].repeat);
  // Fewer samples than ranks: wraps more than once and still gives everyone one sample.
  c.dims = {{"x", 2}};
  c.batch_size = 1;
  for (std::int64_t r = 0; r < 4; ++r) {
    c.rank = r;
    const auto part = epoch_samples(Sampler(c), 0);
    ASSERT_EQ(part.size(), 1u);
    EXPECT_EQ(part[0].id, r % 2);
    EXPECT_EQ(part[0].repeat, r >= 2);
  }
}

TEST(SamplerDistributed, RanksAreEqualDisjointAndCoverTheEpoch) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 400; ++i) {
    SamplerConfig c = testing_sample::random_config(rng);
    const std::int64_t w = c.world_size;
    for (std::int64_t e : {0, 1}) {
      std::map<std::int64_t, int> real, repeats;
      std::int64_t len = -1, batches = -1, total = 0;
      for (std::int64_t r = 0; r < w; ++r) {
        c.rank = r;
        Sampler s(c);
        const EpochPlan plan = s.epoch(e);
        if (len < 0) len = plan.num_samples(), batches = plan.num_batches();
        ASSERT_EQ(plan.num_samples(), len) << "unequal rank lengths";
        ASSERT_EQ(plan.num_batches(), batches) << "unequal batch counts";
        const auto part = epoch_samples(s, e);
        ASSERT_EQ(static_cast<std::int64_t>(part.size()), len);
        for (const auto& smp : part) ++(smp.repeat ? repeats : real)[smp.id];
        total += static_cast<std::int64_t>(part.size());
      }
      const std::int64_t n = Sampler(c).num_samples();
      for (const auto& [id, k] : real) ASSERT_EQ(k, 1) << "sample " << id << " on two ranks";
      if (c.drop_last) {
        // Whole batches, no repeats, the tail of the order dropped.
        EXPECT_TRUE(repeats.empty());
        EXPECT_EQ(total, n / (w * c.batch_size) * w * c.batch_size);
        EXPECT_EQ(len % c.batch_size, 0);
      } else {
        // Every sample once, plus fewer than w repeats of samples that are there already.
        ASSERT_EQ(static_cast<std::int64_t>(real.size()), n);
        std::int64_t nrep = 0;
        for (const auto& [id, k] : repeats) {
          nrep += k;
          EXPECT_TRUE(real.count(id));
        }
        EXPECT_EQ(nrep, len * w - n);
        EXPECT_LT(nrep, w);
        if (n % w == 0) {
          EXPECT_EQ(nrep, 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace cubestream
