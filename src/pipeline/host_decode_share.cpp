#include "pipeline/host_decode_share.hpp"

#include <algorithm>
#include <cmath>

namespace cubestream::pipeline {

HostDecodeShare::HostDecodeShare(double fixed, bool whole_batches)
    : adaptive_(fixed < 0 || std::isnan(fixed)),
      whole_batches_(whole_batches),
      fixed_(adaptive_ ? 0.0 : std::min(fixed, 1.0)) {}

void HostDecodeShare::observe(std::int64_t fetch_ns, std::int64_t cycle_ns, std::int64_t consumer_wait_ns) {
  if (!adaptive_ || cycle_ns <= 0 || fetch_ns < 0) return;
  // Exponential smoothing over ~3 batches; the first observation seeds it.
  constexpr double kAlpha = 0.35;
  const auto w = static_cast<double>(fetch_ns), c = static_cast<double>(std::max(cycle_ns, fetch_ns));
  const double q = std::clamp(static_cast<double>(consumer_wait_ns), 0.0, c);
  if (seen_++ == 0) {
    w_ = w;
    c_ = c;
    q_ = q;
  } else {
    w_ += kAlpha * (w - w_);
    c_ += kAlpha * (c - c_);
    q_ += kAlpha * (q - q_);
  }
  if (seen_ < 2) return;   // one batch says little (first reads, cold threads)
  const double ratio = w_ / c_;
  const bool starving = q_ > kStarving * c_;
  steps_ = next_steps(steps_, ratio, starving, whole_batches_);
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
