#include "pipeline/host_decode_share.hpp"

#include <algorithm>
#include <cmath>

namespace cubestream::pipeline {

HostDecodeShare::HostDecodeShare(double fixed, bool whole_batches)
    : adaptive_(fixed < 0 || std::isnan(fixed)),
      whole_batches_(whole_batches),
      fixed_(adaptive_ ? 0.0 : std::min(fixed, 1.0)) {
  if (adaptive_ && whole_batches_) start_trial();
}

void HostDecodeShare::start_trial() {
  ++trials_;
  trial_from_ = steps_;
  steps_ = kSteps;
  seen_ = 0;   // judged on whole batches alone
  skip_ = 1;
  resting_ = 0;
}

void HostDecodeShare::disable_whole_batches() {
  whole_batches_ = false;
  if (trial_from_ >= 0) {
    steps_ = trial_from_;
    trial_from_ = -1;
    seen_ = 0;
  }
}

void HostDecodeShare::observe(std::int64_t fetch_ns, std::int64_t cycle_ns, std::int64_t consumer_wait_ns,
                              std::int64_t consumer_step_ns) {
  if (!adaptive_ || cycle_ns <= 0 || fetch_ns < 0) return;
  if (skip_ > 0) {
    --skip_;
    return;
  }
  // Exponential smoothing over ~3 batches; the first observation seeds it.
  constexpr double kAlpha = 0.35;
  const auto w = static_cast<double>(fetch_ns);
  const auto cycle = static_cast<double>(std::max(cycle_ns, fetch_ns));
  const double step = std::clamp(static_cast<double>(consumer_step_ns), 0.0, 2 * cycle);
  const double c = std::max(cycle, step);
  const double q = std::clamp(static_cast<double>(consumer_wait_ns), 0.0, cycle);
  if (seen_++ == 0) {
    w_ = w;
    c_ = c;
    q_ = q;
  } else {
    w_ += kAlpha * (w - w_);
    c_ += kAlpha * (c - c_);
    q_ += kAlpha * (q - q_);
  }
  const double ratio = w_ / c_;
  const bool starving = q_ > kStarving * c_;
  if (trial_from_ >= 0) {
    if (seen_ < kTrialBatches) return;
    // The trial's verdict: whole batches stay (and move by the rules below from now on), or
    // the share goes back to where the trial found it, with a fresh smoothing.
    if (starving || ratio > kWholeHigh) {
      steps_ = trial_from_;
      seen_ = 0;
    } else {
      ++trials_kept_;
    }
    trial_from_ = -1;
    return;
  }
  if (seen_ < 2) return;   // one batch says little (first reads, cold threads)
  steps_ = next_steps(steps_, ratio, starving, whole_batches_);
  // Below whole batches and not starving (a starving consumer wants the GPU's decoders): count
  // towards the next trial. One step under them is left to the band's own climb.
  if (whole_batches_ && steps_ < kSteps - 1 && !starving) {
    if (++resting_ >= kProbeAfter) start_trial();
  } else {
    resting_ = 0;
  }
}

int HostDecodeShare::next_steps(int steps, double ratio, bool starving, bool whole_batches) {
  const bool whole = whole_batches && steps == kSteps;
  const double high = whole ? kWholeHigh : kHigh;
  const double low = whole_batches && steps == kSteps - 1 ? kHigh : kLow;
  if (ratio > high || (starving && steps > 0)) return std::max(0, steps - 1);
  if (ratio < low && !starving) return std::min(kSteps, steps + 1);
  return steps;
}

bool HostDecodeShare::picks(std::size_t j, std::size_t n, double share) {
  if (n == 0 || share <= 0) return false;
  if (share >= 1) return true;
  // Unit j is picked when the running count floor((j + 1) * k / n) steps up at j, with
  // k = round(share * n) picked in all: exactly k picks, evenly spaced.
  const auto k = static_cast<std::size_t>(std::llround(share * static_cast<double>(n)));
  return (j + 1) * k / n > j * k / n;
}

}  // namespace cubestream::pipeline
