// The GPU path's host decode share: which units it picks and how the adaptive share moves
// with the producer's clock (W = a batch's fetch time, C = the producer's cycle).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "pipeline/host_decode_share.hpp"

namespace cubestream::pipeline {
namespace {

std::size_t picked(std::size_t n, double share) {
  std::size_t k = 0;
  for (std::size_t j = 0; j < n; ++j) k += HostDecodeShare::picks(j, n, share);
  return k;
}

TEST(HostDecodeShare, PicksRoundShareTimesNUnitsEvenlySpread) {
  EXPECT_EQ(picked(0, 0.5), 0u);
  EXPECT_EQ(picked(10, 0.0), 0u);
  EXPECT_EQ(picked(10, 1.0), 10u);
  EXPECT_EQ(picked(10, 0.5), 5u);
  EXPECT_EQ(picked(192, 0.25), 48u);
  EXPECT_EQ(picked(7, 0.3), 2u);    // round(2.1)
  EXPECT_EQ(picked(7, 0.36), 3u);   // round(2.52)
  for (std::size_t n : {1u, 2u, 3u, 17u, 100u, 193u}) {
    for (double s : {0.05, 0.1, 0.33, 0.5, 0.77, 0.95}) {
      const auto k = static_cast<std::size_t>(std::llround(s * static_cast<double>(n)));
      EXPECT_EQ(picked(n, s), k) << n << " " << s;
    }
  }
  // Spread: with half picked, no two neighbours are both picked or both left.
  for (std::size_t j = 0; j + 1 < 100; ++j) {
    EXPECT_NE(HostDecodeShare::picks(j, 100, 0.5), HostDecodeShare::picks(j + 1, 100, 0.5)) << j;
  }
  // A quarter: every window of 4 consecutive units holds exactly one pick.
  for (std::size_t j = 0; j + 4 <= 192; ++j) {
    std::size_t k = 0;
    for (std::size_t i = j; i < j + 4; ++i) k += HostDecodeShare::picks(i, 192, 0.25);
    EXPECT_EQ(k, 1u) << j;
  }
}

TEST(HostDecodeShare, FixedShareNeverMoves) {
  HostDecodeShare s(0.4);
  EXPECT_FALSE(s.adaptive());
  for (int i = 0; i < 50; ++i) s.observe(1'000'000, 100'000'000);   // lots of idle host time
  EXPECT_DOUBLE_EQ(s.share(), 0.4);
  HostDecodeShare big(3.0);
  EXPECT_DOUBLE_EQ(big.share(), 1.0);
  HostDecodeShare zero(0.0);
  EXPECT_FALSE(zero.adaptive());
  EXPECT_DOUBLE_EQ(zero.share(), 0.0);
}

TEST(HostDecodeShare, AdaptiveGrowsWhileTheHostIdlesAndShrinksWhenItSetsThePace) {
  HostDecodeShare s(-1);
  EXPECT_TRUE(s.adaptive());
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
  // Fetch takes 10 ms of an 80 ms cycle: the share climbs to 1 and stays there.
  for (int i = 0; i < 40; ++i) s.observe(10'000'000, 80'000'000);
  EXPECT_DOUBLE_EQ(s.share(), 1.0);
  // The host's work now is the cycle (fetch 78 of 80 ms): the share comes down to 0.
  for (int i = 0; i < 60; ++i) s.observe(78'000'000, 80'000'000);
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
  // A cycle shorter than the fetch (cannot be: clamped to the fetch) reads as ratio 1.
  for (int i = 0; i < 5; ++i) s.observe(50'000'000, 10'000'000);
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
}

TEST(HostDecodeShare, AStarvingConsumerKeepsTheUnitsOnTheGpu) {
  HostDecodeShare s(-1);
  // The host idles (fetch 10 of 40 ms) but the consumer waits 30 ms of every cycle: the
  // loader sets the pace, the GPU has room, the share stays at 0.
  for (int i = 0; i < 40; ++i) s.observe(10'000'000, 40'000'000, 30'000'000);
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
  // Training takes over (the consumer waits 0.5 ms a cycle): the share climbs as before.
  for (int i = 0; i < 40; ++i) s.observe(10'000'000, 80'000'000, 500'000);
  EXPECT_DOUBLE_EQ(s.share(), 1.0);
  // The consumer starts starving with the share up: it comes back down, whatever W/C says.
  for (int i = 0; i < 60; ++i) s.observe(10'000'000, 40'000'000, 35'000'000);
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
  // One long wait (a stall) is smoothed out: a single starving cycle moves the share at most
  // one step from where training left it.
  for (int i = 0; i < 40; ++i) s.observe(10'000'000, 80'000'000, 0);
  ASSERT_DOUBLE_EQ(s.share(), 1.0);
  s.observe(10'000'000, 80'000'000, 80'000'000);
  EXPECT_GE(s.share(), 1.0 - HostDecodeShare::kStep);
  for (int i = 0; i < 5; ++i) s.observe(10'000'000, 80'000'000, 0);
  EXPECT_DOUBLE_EQ(s.share(), 1.0);
  // The consumer's wait is clamped to [0, cycle]: a negative one counts as none; one longer
  // than its cycle (a wait that began before the cycle did) counts as the whole cycle.
  HostDecodeShare t(-1);
  for (int i = 0; i < 40; ++i) t.observe(10'000'000, 80'000'000, -5);
  EXPECT_DOUBLE_EQ(t.share(), 1.0);
  HostDecodeShare u(-1);
  for (int i = 0; i < 5; ++i) u.observe(10'000'000, 80'000'000, 0);
  const double before = u.share();
  EXPECT_GT(before, 0.0);
  for (int i = 0; i < 40; ++i) u.observe(10'000'000, 80'000'000, 10'000'000'000);
  EXPECT_DOUBLE_EQ(u.share(), 0.0);
}

TEST(HostDecodeShare, AdaptiveSettlesInTheBandOnAModelOfTheTwoResources) {
  // A model of one GPU-path rank: the host fetches every unit (0.3 ms) and decodes the share
  // it takes (5 ms each) on 16 threads; the GPU decodes the rest (0.07 ms each) next to a
  // 78 ms training step; the cycle is the slowest of the three.
  HostDecodeShare s(-1);
  const double units = 192;
  double share = 0;
  for (int i = 0; i < 200; ++i) {
    const double host_ms = units * (0.3 + share * 5.0) / 16;
    const double gpu_ms = 78 + units * (1 - share) * 0.07;
    const double cycle_ms = std::max(host_ms, gpu_ms);
    s.observe(static_cast<std::int64_t>(host_ms * 1e6), static_cast<std::int64_t>(cycle_ms * 1e6));
    share = s.share();
  }
  const double host_ms = units * (0.3 + share * 5.0) / 16;
  const double cycle_ms = std::max(host_ms, 78 + units * (1 - share) * 0.07);
  // It ends where the host is busy but not the bottleneck (within a step of the band).
  EXPECT_GT(share, 0.5);
  EXPECT_LT(share, 1.0);
  EXPECT_GE(host_ms / cycle_ms, HostDecodeShare::kLow - 0.1);
  EXPECT_LE(host_ms / cycle_ms, HostDecodeShare::kHigh + 0.1);
}

TEST(HostDecodeShare, WholeBatchesGoToTheHostOnlyAtAnAdaptiveShareOfOne) {
  // A fixed share of 1 keeps the GPU stage (the GPU assembles); so does an adaptive one
  // without whole batches.
  HostDecodeShare fixed(1.0, true);
  EXPECT_FALSE(fixed.whole_batches_on_host());
  HostDecodeShare without(-1, false);
  for (int i = 0; i < 40; ++i) without.observe(10'000'000, 80'000'000);
  EXPECT_DOUBLE_EQ(without.share(), 1.0);
  EXPECT_FALSE(without.whole_batches_on_host());
  // With them: whole batches once the share has climbed to 1, not before.
  HostDecodeShare s(-1, true);
  int whole = 0;
  for (int i = 0; i < 40; ++i) {
    whole += s.whole_batches_on_host();
    s.observe(10'000'000, 80'000'000);
  }
  EXPECT_TRUE(s.whole_batches_on_host());
  EXPECT_GT(whole, 10);
  EXPECT_LT(whole, 40);
}

TEST(HostDecodeShare, WholeBatchesStayWhileTheHostKeepsUpAndLeaveWhenItSetsThePace) {
  HostDecodeShare s(-1, true), gpu_stage(-1, false);
  for (int i = 0; i < 40; ++i) {
    s.observe(10'000'000, 80'000'000);
    gpu_stage.observe(10'000'000, 80'000'000);
  }
  ASSERT_TRUE(s.whole_batches_on_host());
  // A build (decode and assembly) takes 85 % of the cycle: above kHigh, below kWholeHigh.
  // Whole batches stay; the GPU stage's share at 1 steps down at the same ratio.
  for (int i = 0; i < 30; ++i) {
    s.observe(68'000'000, 80'000'000);
    gpu_stage.observe(68'000'000, 80'000'000);
  }
  EXPECT_TRUE(s.whole_batches_on_host());
  EXPECT_LT(gpu_stage.share(), 1.0);
  // The host sets the pace (the cycle is the build): back to the GPU stage, step by step.
  for (int i = 0; i < 3; ++i) s.observe(80'000'000, 80'000'000);
  EXPECT_FALSE(s.whole_batches_on_host());
  EXPECT_LT(s.share(), 1.0);
  // A starving consumer also takes them back, whatever W / C says.
  HostDecodeShare t(-1, true);
  for (int i = 0; i < 40; ++i) t.observe(10'000'000, 80'000'000);
  ASSERT_TRUE(t.whole_batches_on_host());
  for (int i = 0; i < 5; ++i) t.observe(10'000'000, 80'000'000, 70'000'000);
  EXPECT_FALSE(t.whole_batches_on_host());
}

TEST(HostDecodeShare, StepRulesWithAndWithoutWholeBatches) {
  constexpr int top = HostDecodeShare::kSteps;
  for (const bool whole : {false, true}) {
    // Below the band: up; inside: stay; above: down; starving: down, never up.
    EXPECT_EQ(HostDecodeShare::next_steps(10, 0.30, false, whole), 11);
    EXPECT_EQ(HostDecodeShare::next_steps(10, 0.70, false, whole), 10);
    EXPECT_EQ(HostDecodeShare::next_steps(10, 0.85, false, whole), 9);
    EXPECT_EQ(HostDecodeShare::next_steps(10, 0.30, true, whole), 9);
    EXPECT_EQ(HostDecodeShare::next_steps(0, 0.30, true, whole), 0);
    EXPECT_EQ(HostDecodeShare::next_steps(top - 2, 0.70, false, whole), top - 2);
    EXPECT_EQ(HostDecodeShare::next_steps(top, 0.30, false, whole), top);
    EXPECT_EQ(HostDecodeShare::next_steps(top, 0.99, false, whole), top - 1);
    EXPECT_EQ(HostDecodeShare::next_steps(top, 0.30, true, whole), top - 1);
  }
  // Whole batches: the last step up needs W / C below kHigh only, and they stay up to kWholeHigh.
  EXPECT_EQ(HostDecodeShare::next_steps(top - 1, 0.70, false, true), top);
  EXPECT_EQ(HostDecodeShare::next_steps(top - 1, 0.70, false, false), top - 1);
  EXPECT_EQ(HostDecodeShare::next_steps(top - 1, 0.85, false, true), top - 2);
  EXPECT_EQ(HostDecodeShare::next_steps(top, 0.90, false, true), top);
  EXPECT_EQ(HostDecodeShare::next_steps(top, 0.90, false, false), top - 1);
}

TEST(HostDecodeShare, UnknownCyclesAreIgnored) {
  HostDecodeShare s(-1);
  for (int i = 0; i < 20; ++i) s.observe(1'000'000, 0);
  for (int i = 0; i < 20; ++i) s.observe(1'000'000, -5);
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
}

}  // namespace
}  // namespace cubestream::pipeline
