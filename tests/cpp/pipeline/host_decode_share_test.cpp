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

// Observations that end a trial of whole batches: the batch it starts at is ignored, then
// kTrialBatches are judged.
constexpr int kTrial = HostDecodeShare::kTrialBatches + 1;

TEST(HostDecodeShare, WholeBatchesGoToTheHostOnlyAtAnAdaptiveShareOfOne) {
  // A fixed share of 1 keeps the GPU stage (the GPU assembles); so does an adaptive one
  // without whole batches.
  HostDecodeShare fixed(1.0, true);
  EXPECT_FALSE(fixed.whole_batches_on_host());
  EXPECT_FALSE(fixed.in_trial());
  HostDecodeShare without(-1, false);
  EXPECT_FALSE(without.in_trial());
  for (int i = 0; i < 40; ++i) without.observe(10'000'000, 80'000'000);
  EXPECT_DOUBLE_EQ(without.share(), 1.0);
  EXPECT_FALSE(without.whole_batches_on_host());
  // With them, after a failed first trial: whole batches once the share has climbed back to
  // 1, not before.
  HostDecodeShare s(-1, true);
  for (int i = 0; i < kTrial; ++i) s.observe(100'000'000, 100'000'000);
  ASSERT_FALSE(s.in_trial());
  ASSERT_DOUBLE_EQ(s.share(), 0.0);
  int whole = 0;
  for (int i = 0; i < 40; ++i) {
    whole += s.whole_batches_on_host();
    s.observe(10'000'000, 80'000'000);
  }
  EXPECT_TRUE(s.whole_batches_on_host());
  EXPECT_GT(whole, 10);
  EXPECT_LT(whole, 40);
}

TEST(HostDecodeShare, AnAdaptiveShareStartsWithATrialOfWholeBatches) {
  // The host builds a batch in 62 ms, the consumer's step is 80 ms. While the prefetch queue
  // fills, the producer's cycle is its own build (62 ms); the consumer's step says the host
  // keeps up: whole batches pass their trial and stay, also once the queue is full.
  HostDecodeShare s(-1, true);
  EXPECT_TRUE(s.in_trial());
  EXPECT_TRUE(s.whole_batches_on_host());
  for (int i = 0; i < kTrial; ++i) {
    EXPECT_TRUE(s.whole_batches_on_host()) << i;
    s.observe(62'000'000, 62'000'000, 0, 80'000'000);
  }
  EXPECT_FALSE(s.in_trial());
  for (int i = 0; i < 20; ++i) s.observe(62'000'000, 62'000'000, 0, 80'000'000);
  for (int i = 0; i < 50; ++i) s.observe(62'000'000, 80'000'000, 0, 80'000'000);
  EXPECT_TRUE(s.whole_batches_on_host());
  // Without the consumer's step the filling queue looks like a host that sets the pace
  // (W / C = 1): the trial fails, back to 0.
  HostDecodeShare blind(-1, true);
  for (int i = 0; i < kTrial; ++i) blind.observe(62'000'000, 62'000'000);
  EXPECT_FALSE(blind.in_trial());
  EXPECT_DOUBLE_EQ(blind.share(), 0.0);
  // A host slower than the consumer: the verdict comes at the trial's last batch, not before.
  HostDecodeShare slow(-1, true);
  for (int i = 0; i + 1 < kTrial; ++i) slow.observe(100'000'000, 100'000'000, 0, 80'000'000);
  EXPECT_TRUE(slow.whole_batches_on_host());
  slow.observe(100'000'000, 100'000'000, 0, 80'000'000);
  EXPECT_FALSE(slow.whole_batches_on_host());
  EXPECT_DOUBLE_EQ(slow.share(), 0.0);
  // A starving consumer (a loader-only loop) fails it too, however idle the host.
  HostDecodeShare starving(-1, true);
  for (int i = 0; i < kTrial; ++i) starving.observe(10'000'000, 40'000'000, 30'000'000, 1'000'000);
  EXPECT_FALSE(starving.whole_batches_on_host());
  EXPECT_DOUBLE_EQ(starving.share(), 0.0);
  // No memory for whole batches: the trial ends at once, at 0.
  HostDecodeShare refused(-1, true);
  refused.disable_whole_batches();
  EXPECT_FALSE(refused.in_trial());
  EXPECT_FALSE(refused.whole_batches_on_host());
  EXPECT_DOUBLE_EQ(refused.share(), 0.0);
}

// A model of one rank of four on a shared host: 192 units a batch; in the GPU stage the host
// fetches every unit (0.3 ms) and decodes its share (5 ms each, written out and copied up) on
// 16 threads, the GPU decodes the rest (0.07 ms each) beside a 78 ms step; a whole batch costs
// the host 2.3 ms a unit (decode and assembly block by block), three times that while `cold`.
struct RankModel {
  double whole_unit_ms = 2.3;
  bool cold = false;
  double host_ms(const HostDecodeShare& s) const {
    if (s.whole_batches_on_host()) return 192 * whole_unit_ms * (cold ? 3 : 1) / 16;
    return 192 * (0.3 + s.share() * 5.0) / 16;
  }
  void step(HostDecodeShare& s) const {
    const double host = host_ms(s);
    const double gpu = s.whole_batches_on_host() ? 78 : 78 + 192 * (1 - s.share()) * 0.07;
    const double cycle = std::max(host, gpu);
    s.observe(static_cast<std::int64_t>(host * 1e6), static_cast<std::int64_t>(cycle * 1e6), 0, 78'000'000);
  }
};

TEST(HostDecodeShare, ATrialFindsWholeBatchesAgainAfterTheShareRested) {
  // A cold start fails the first trial; the share climbs into the band of the GPU stage and
  // rests there (the host busy, so the climb never reaches whole batches); the next trial,
  // warm, finds whole batches and keeps them.
  HostDecodeShare s(-1, true);
  RankModel m;
  m.cold = true;
  for (int i = 0; i < kTrial; ++i) m.step(s);
  ASSERT_FALSE(s.whole_batches_on_host());
  m.cold = false;
  for (int i = 0; i < 40; ++i) m.step(s);
  const double resting = s.share();
  EXPECT_GT(resting, 0.5);
  EXPECT_LT(resting, 0.9);
  int whole = 0;
  for (int i = 0; i < HostDecodeShare::kProbeAfter + 20; ++i) {
    m.step(s);
    whole += s.whole_batches_on_host();
  }
  EXPECT_TRUE(s.whole_batches_on_host());
  EXPECT_FALSE(s.in_trial());
  EXPECT_GT(whole, 10);
  for (int i = 0; i < 200; ++i) m.step(s);
  EXPECT_TRUE(s.whole_batches_on_host());
  EXPECT_EQ(s.trials(), 2);   // the cold start's and the one that kept them; none since
  EXPECT_EQ(s.trials_kept(), 1);
}

TEST(HostDecodeShare, AFailedTrialGoesBackToTheRestingShare) {
  // Whole batches never keep up here (6.6 ms a unit: 79 ms a batch against a 78 ms step):
  // every trial fails and returns the share it found, and trials take at most their own
  // batches of every kProbeAfter + kTrial.
  HostDecodeShare s(-1, true);
  RankModel m;
  m.whole_unit_ms = 6.6;
  for (int i = 0; i < 60; ++i) m.step(s);
  ASSERT_FALSE(s.in_trial());
  const double resting = s.share();
  ASSERT_GT(resting, 0.5);
  ASSERT_LT(resting, 0.9);
  int trials = 0, whole = 0, n = 0;
  for (; n < 4 * (HostDecodeShare::kProbeAfter + kTrial); ++n) {
    const bool was = s.in_trial();
    m.step(s);
    whole += s.whole_batches_on_host();
    if (was && !s.in_trial()) {
      ++trials;
      EXPECT_NEAR(s.share(), resting, HostDecodeShare::kStep + 1e-9) << n;
    }
  }
  EXPECT_GE(trials, 3);
  EXPECT_LE(trials, 4);
  EXPECT_LE(whole, trials * kTrial + kTrial);
  EXPECT_FALSE(s.whole_batches_on_host());
  EXPECT_EQ(s.trials(), trials + 1);   // and the start's
  EXPECT_EQ(s.trials_kept(), 0);
}

TEST(HostDecodeShare, OneLongConsumerPauseMovesTheShareTwoStepsAtMost) {
  // The consumer's step counts up to two cycles: an evaluation of seconds at an epoch's end
  // reads as one cycle of a host with room, which the smoothing carries over two
  // observations. Uncapped, the 5 s would read as room for seven.
  HostDecodeShare s(-1, false);
  RankModel m;
  for (int i = 0; i < 60; ++i) m.step(s);
  const double before = s.share();
  ASSERT_LT(before, 0.85);
  s.observe(40'000'000, 80'000'000, 0, 5'000'000'000);
  EXPECT_LE(s.share(), before + HostDecodeShare::kStep + 1e-9);
  for (int i = 0; i < 20; ++i) m.step(s);
  EXPECT_LE(s.share(), before + 2 * HostDecodeShare::kStep + 1e-9);
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
