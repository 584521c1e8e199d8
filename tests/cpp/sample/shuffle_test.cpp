// Shuffles: the Feistel permutation is a bijection and looks uniform; orders are deterministic
// per (seed, epoch) and change with either; the chunk-aware block shuffle really keeps runs of
// samples on few chunks while kSample does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "cubestream/sampler.hpp"
#include "sample/permutation.hpp"
#include "sampler_test_util.hpp"

namespace cubestream {
namespace {

using testing_sample::epoch_samples;
using testing_sample::ids_of;

TEST(SamplerShuffle, FeistelIsABijectionForEverySize) {
  for (std::uint64_t n = 1; n <= 700; ++n) {
    for (std::uint64_t key : {0ULL, 1ULL, 0xdeadbeefULL}) {
      sample::Permutation p(n, key);
      std::vector<char> hit(n, 0);
      for (std::uint64_t i = 0; i < n; ++i) {
        const auto v = p(i);
        ASSERT_LT(v, n);
        ASSERT_FALSE(hit[v]) << "n=" << n << " key=" << key;
        hit[v] = 1;
      }
    }
  }
  // A size that is not small, with an odd bit count.
  const std::uint64_t n = 300007;
  sample::Permutation p(n, 42);
  std::vector<char> hit(n, 0);
  for (std::uint64_t i = 0; i < n; ++i) hit[p(i)] = 1;
  EXPECT_EQ(std::count(hit.begin(), hit.end(), 1), static_cast<long>(n));
}

TEST(SamplerShuffle, FeistelLooksUniform) {
  // Where index 3 of [0, 10) lands over many keys: each place about equally often, and the
  // places of two indices are not tied together (pairs spread over all 90 combinations).
  const int keys = 20000;
  std::vector<int> where(10, 0);
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> pairs;
  for (int k = 0; k < keys; ++k) {
    sample::Permutation p(10, sample::derive_key(1234, static_cast<std::uint64_t>(k), 1));
    ++where[p(3)];
    ++pairs[{p(3), p(4)}];
  }
  for (int c : where) {
    EXPECT_GT(c, keys / 10 * 85 / 100);
    EXPECT_LT(c, keys / 10 * 115 / 100);
  }
  EXPECT_EQ(pairs.size(), 90u);
  for (const auto& [pair, c] : pairs) EXPECT_GT(c, keys / 90 / 2);
}

SamplerConfig cube(ShuffleMode mode, std::uint64_t seed = 5) {
  SamplerConfig c;
  c.dims = {{"time", 2400}, {"lat", 8}, {"lon", 16}};
  c.window = ForecastWindow{"time", {0}, {}};
  c.patch = {{"lon", 4}};
  c.chunks = {{"time", 24}, {"lat", 8}, {"lon", 16}};  // 100 time chunks, one spatial chunk
  c.shuffle = mode;
  c.seed = seed;
  c.buffer_size = 8;
  c.batch_size = 32;
  return c;
}

TEST(SamplerShuffle, DeterministicPerSeedAndNewPerEpoch) {
  for (ShuffleMode mode : {ShuffleMode::kSample, ShuffleMode::kChunk}) {
    Sampler a(cube(mode)), b(cube(mode)), other_seed(cube(mode, 6));
    const auto a0 = ids_of(epoch_samples(a, 0));
    EXPECT_EQ(a0, ids_of(epoch_samples(b, 0)));
    EXPECT_EQ(ids_of(epoch_samples(a, 3)), ids_of(epoch_samples(b, 3)));
    EXPECT_NE(a0, ids_of(epoch_samples(a, 1)));
    EXPECT_NE(a0, ids_of(epoch_samples(other_seed, 0)));
    // Not the grid order, and every epoch of a few is distinct from every other.
    std::vector<std::int64_t> grid(a0.size());
    std::iota(grid.begin(), grid.end(), 0);
    EXPECT_NE(a0, grid);
    std::set<std::vector<std::int64_t>> seen;
    for (int e = 0; e < 5; ++e) EXPECT_TRUE(seen.insert(ids_of(epoch_samples(a, e))).second);
  }
  Sampler none(cube(ShuffleMode::kNone));
  const auto n0 = ids_of(epoch_samples(none, 0));
  for (std::size_t i = 0; i < n0.size(); ++i) ASSERT_EQ(n0[i], static_cast<std::int64_t>(i));
  EXPECT_EQ(n0, ids_of(epoch_samples(none, 7)));
}

// Average number of distinct time chunks among `window` consecutive samples of epoch 0.
double distinct_time_chunks(const Sampler& s, std::size_t window, std::int64_t chunk) {
  const auto samples = epoch_samples(s, 0);
  double total = 0;
  std::size_t windows = 0;
  for (std::size_t i = 0; i + window <= samples.size(); i += window) {
    std::set<std::int64_t> chunks;
    for (std::size_t k = i; k < i + window; ++k) chunks.insert(samples[k].anchor / chunk);
    total += static_cast<double>(chunks.size());
    ++windows;
  }
  return total / static_cast<double>(windows);
}

TEST(SamplerShuffle, ChunkAwareShuffleGroupsSamplesByChunk) {
  Sampler chunked(cube(ShuffleMode::kChunk)), sampled(cube(ShuffleMode::kSample));
  const std::size_t buffer = 8, group = 24 * 4;  // a group: 24 anchors x 4 lon patches
  // Cache footprint: a run of buffer_size groups' worth of samples touches at most the
  // chunks of two blocks under kChunk (one when aligned), nearly all 100 under kSample.
  const double c_run = distinct_time_chunks(chunked, buffer * group, 24);
  const double s_run = distinct_time_chunks(sampled, buffer * group, 24);
  EXPECT_LE(c_run, 2.0 * buffer);
  EXPECT_GT(s_run, 90.0);
  // The brief's measure, windows of buffer_size samples: inside a block the samples of
  // buffer_size groups are mixed uniformly, so a window of 8 holds ~8 * (1 - (7/8)^8) = 5.3
  // chunks against ~7.7 for kSample.
  const double c_small = distinct_time_chunks(chunked, buffer, 24);
  const double s_small = distinct_time_chunks(sampled, buffer, 24);
  EXPECT_LT(c_small, 0.8 * s_small);
  EXPECT_GT(c_small, 4.0);  // still mixed, not chunk after chunk
  RecordProperty("distinct_chunks_run_chunk", std::to_string(c_run));
  RecordProperty("distinct_chunks_run_sample", std::to_string(s_run));
  std::printf("distinct time chunks per %zu samples: chunk-aware %.1f, sample %.1f; per %zu: %.2f vs %.2f\n",
              buffer * group, c_run, s_run, buffer, c_small, s_small);
}

TEST(SamplerShuffle, ChunkAwareBlocksAreMixedAndGroupOrderIsRandom) {
  Sampler s(cube(ShuffleMode::kChunk));
  const auto samples = epoch_samples(s, 0);
  const std::size_t block = 8 * 96;
  // Every block: its first quarter already draws from all 8 of its groups (a uniform mix),
  // and exactly 8 groups appear in it.
  std::vector<std::int64_t> first_chunks;
  for (std::size_t b = 0; b + block <= samples.size(); b += block) {
    std::set<std::int64_t> all, quarter;
    for (std::size_t k = b; k < b + block; ++k) {
      all.insert(s.chunk_group(samples[k]));
      if (k < b + block / 4) quarter.insert(s.chunk_group(samples[k]));
    }
    EXPECT_EQ(all.size(), 8u);
    EXPECT_EQ(quarter.size(), 8u);
    first_chunks.push_back(*all.begin());
  }
  // Blocks do not walk the time axis in order.
  EXPECT_FALSE(std::is_sorted(first_chunks.begin(), first_chunks.end()));
}

TEST(SamplerShuffle, ChunkAwareWithUnevenGroupsCoversEverything) {
  // Sizes that leave short last chunks on every axis, so groups differ in size.
  SamplerConfig c;
  c.dims = {{"time", 53}, {"y", 11}, {"x", 13}};
  c.window = ForecastWindow{"time", {-2, 0}, {3}};
  c.patch = {{"y", 3}, {"x", 4}};
  c.overlap = {{"x", 1}};
  c.chunks = {{"time", 7}, {"y", 5}, {"x", 6}};
  c.shuffle = ShuffleMode::kChunk;
  for (std::int64_t buffer : {1, 2, 3, 7, 1000}) {
    c.buffer_size = buffer;
    Sampler s(c);
    for (int e = 0; e < 3; ++e) {
      auto ids = ids_of(epoch_samples(s, e));
      std::sort(ids.begin(), ids.end());
      ASSERT_EQ(static_cast<std::int64_t>(ids.size()), s.num_samples());
      for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], static_cast<std::int64_t>(i));
    }
  }
  // buffer_size 1: groups one after another, each emitted whole.
  c.buffer_size = 1;
  Sampler s(c);
  const auto samples = epoch_samples(s, 0);
  std::int64_t switches = 0;
  for (std::size_t i = 1; i < samples.size(); ++i)
    switches += s.chunk_group(samples[i]) != s.chunk_group(samples[i - 1]);
  EXPECT_EQ(switches, s.num_chunk_groups() - 1);
}

}  // namespace
}  // namespace cubestream
