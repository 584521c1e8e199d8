// How much of the GPU's decoding the fetch threads take over (GPU decode path).
//
// On the GPU decode path the fetch threads read every unit of a batch into pinned staging and
// the GPU decodes them. The decode kernels then share the GPU with training (on one H200 they
// took ~19 ms of a 97 ms U-Net step), while the host cores often sit idle; on the CPU path the
// opposite holds (on four GPUs, 16 cores per rank decode and assemble too slowly). Units a
// GPU could decode may instead be decoded by the fetch thread that read them (the same bytes
// come out: both decoders are tested against each other) and copied up decoded; assembly
// stays on the GPU. The share is the fraction of a batch's GPU-decodable units decoded so.
//
// Adaptive mode balances the two resources with nothing but the producer's own clock: W is
// the wall time of a batch's fetch (host work, which grows with the share) and C the time from
// one batch's fetch start to the next one's (the producer's cycle: it waits for a prefetch
// slot when the consumer is slower, or for the GPU when the GPU is). W much below C means the
// host threads idle most of the cycle: take more units to the host. W close to C means the
// host work is what sets the pace: give units back to the GPU. The band between keeps the
// host threads busy without making them the bottleneck; smoothing over a few batches keeps
// one slow read from swinging the share.
//
// All that holds while the consumer keeps the GPU busy (training): decode kernels then take
// GPU time from it. When the consumer instead waits for batches most of the cycle (the loader
// sets the pace: a loader-only loop, a small model), the GPU has room and its decoders are the
// fastest path; host decoding then only lengthened the producer's critical path (on the H100,
// a loader-only loop ran at 538-548 samples/s with the share at 0.1, 746-749 at 0). So while
// the consumer's smoothed wait exceeds kStarving of the cycle the share only comes down. The
// loader counts only waits that begin once the GPU has finished what the consumer queued
// before its latest release: a training loop running ahead of its GPU also waits for
// batches, but there the GPU is busy and the share should rise.
//
// The cycle understates the pace the producer has to keep while it fills its prefetch queue:
// it then starts each batch as soon as the last one is fetched, so C is W, whatever the
// consumer needs. The consumer's own step D (its time between taking a batch and asking for
// the next, waits excluded) is that pace, so the ratio is W / max(C, D), D capped at 2 C so
// that one long pause of the consumer (an evaluation at an epoch's end) reads as one cycle of
// a host with room, which moves the share by two steps at most, not as seconds of room. In a
// full queue C is D anyway.
//
// Whole batches on the host (see whole_batches_on_host) cost the host far less per unit than
// host-decoded units copied up for the GPU to assemble (no decoded unit is written to memory,
// read back and copied, see Array::decode_unit_blocks). So W / C at a share below 1 says
// little about whole batches: on four H200s of one 64-core host, ranks of 16 threads each
// rested at a share of 0.6, with the host busy inside the band, where whole batches (the CPU
// path's work) kept all four fed at 0.98 of four times one GPU against 0.91 (docs/
// benchmarks.md, session 28). The climb from the band never reaches them. So an adaptive share
// that may build whole batches tries them: it starts with a trial of them, and tries them
// again after resting below them for kProbeAfter batches (a slow start, a cold page cache,
// may have failed the first trial). A trial lasts kTrialBatches batches after the one it
// starts at; it ends with whole batches kept, or with the share back where it was, when W
// is then above kWholeHigh of the pace or the consumer starves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cubestream::pipeline {

class HostDecodeShare {
 public:
  // Target band of W / C (see above) and the step per batch outside it.
  static constexpr double kLow = 0.55, kHigh = 0.80, kStep = 0.05;
  // Whole batches on the host (see whole_batches_on_host) leave the GPU only their copy, so
  // they are where the share should be whenever the host keeps up with them: they step down
  // only above kWholeHigh (the host's build is nearly the cycle), and the step up to them
  // from 1 - kStep needs W / C below kHigh only. With the plain band a build over 80 % of
  // the cycle sent the share to 0.95, where W / C sat inside the band and the share stayed
  // (H100 U-Net runs: 184-185 samples/s there against 188 with whole batches). At 1 - kStep
  // there is then no band to rest in (up below kHigh, down above it), and W differs between
  // the two (a whole batch's includes its assembly), so the share may move between 1 - kStep
  // and 1 batch by batch where a whole batch's host time is near kWholeHigh of the cycle.
  static constexpr double kWholeHigh = 0.95;
  // Fraction of the cycle the consumer waits for batches above which it is starving.
  static constexpr double kStarving = 0.5;
  // Trials of whole batches (above): the batches judged after the one a trial starts at (whose
  // cycle mixes the two ways of building, and at the start is cold), and the batches resting
  // below whole batches before the next trial.
  static constexpr int kTrialBatches = 3;
  static constexpr int kProbeAfter = 100;

  // fixed in [0, 1]: that share always. fixed < 0: adaptive, starting at 0 (everything on the
  // GPU until the clocks say the host has room), or with whole_batches (the loader builds
  // batches whole on the host while an adaptive share stands at 1) in a trial of whole
  // batches that falls back to 0.
  explicit HostDecodeShare(double fixed, bool whole_batches = false);

  bool adaptive() const { return adaptive_; }
  double share() const { return adaptive_ ? static_cast<double>(steps_) * kStep : fixed_; }
  // Whether a trial of whole batches is under way; trials started, and those that kept them.
  bool in_trial() const { return trial_from_ >= 0; }
  int trials() const { return trials_; }
  int trials_kept() const { return trials_kept_; }

  // One batch's fetch took fetch_ns; cycle_ns is the time from its fetch start to the next
  // batch's fetch start (0 or less: unknown, e.g. after an epoch restart; ignored);
  // consumer_wait_ns is how long the consumer waited for batches within that cycle, and
  // consumer_step_ns its mean time between taking a batch and asking for the next over the
  // batches it took within the cycle (0: none taken, or unknown).
  void observe(std::int64_t fetch_ns, std::int64_t cycle_ns, std::int64_t consumer_wait_ns = 0,
               std::int64_t consumer_step_ns = 0);

  // Whether the next batch is built whole on the host (decoded, assembled and copied as the
  // finished batch, the CPU path) instead of going through the GPU stage with every unit
  // decoded on the host: with whole_batches, an adaptive share that has risen to 1 (the host
  // has kept up with all of the decoding). A fixed share of 1 keeps its meaning (the GPU
  // assembles host-decoded units), so it can still be chosen and tested on its own.
  bool whole_batches_on_host() const { return adaptive_ && whole_batches_ && steps_ == kSteps; }
  // The loader cannot build whole batches after all (no memory for their buffers): the share
  // moves by the plain band from now on, from where it was before a trial under way.
  void disable_whole_batches();

  // Whether unit j of the n GPU-decodable units of a batch is decoded on the host at this
  // share: round(share * n) of them, spread evenly over the batch so that the pool's threads
  // get a mix of long (decode) and short (copy) tasks.
  static bool picks(std::size_t j, std::size_t n, double share);

  // The adaptive share moves in whole steps of kStep, 0..kSteps (1 is reached exactly however
  // often it moved).
  static constexpr int kSteps = 20;
  // One move of the adaptive share, in steps, from the smoothed W / C and whether the
  // consumer is starving (the rules above; whole_batches: the loader builds whole batches on
  // the host at kSteps).
  static int next_steps(int steps, double ratio, bool starving, bool whole_batches);

 private:
  bool adaptive_;
  bool whole_batches_;
  // The adaptive share in steps; the fixed share as given (clamped to 1).
  static_assert(kSteps * kStep > 0.999 && kSteps * kStep < 1.001, "kSteps steps of kStep make 1");
  int steps_ = 0;
  double fixed_ = 0;
  double w_ = 0, c_ = 0, q_ = 0;   // smoothed fetch, pace (cycle or consumer step) and consumer wait (ns)
  int seen_ = 0;       // observations in the smoothing
  int skip_ = 0;       // observations still to ignore (the batch a trial starts at)
  int trial_from_ = -1;   // in a trial of whole batches: the steps it falls back to; else -1
  int resting_ = 0;    // batches observed below whole batches since the last trial
  int trials_ = 0, trials_kept_ = 0;

  void start_trial();
};

}  // namespace cubestream::pipeline
