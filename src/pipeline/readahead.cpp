#include "pipeline/readahead.hpp"

#include <unordered_set>
#include <utility>

namespace cubestream::pipeline {

Readahead::Readahead(const Sampler& sampler, const BatchPlanner& planner, int batches, TraceRecorder& trace)
    : sampler_(sampler), planner_(planner), batches_(batches > 0 ? batches : 0), trace_(trace) {
  if (batches_ > 0) thread_ = std::thread([this] { run(); });
}

Readahead::~Readahead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    // Hints still queued are for batches nobody will fetch now: each is an open and a few
    // fadvise calls that can block on a busy (or hung network) disk, so they are dropped.
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

EpochPlan Readahead::epoch(std::int64_t e) {
  if (next_epoch_ && next_epoch_->epoch() == e) return *next_epoch_;
  return sampler_.epoch(e);
}

Readahead::Planned Readahead::take(const EpochPlan& plan, std::int64_t index) {
  if (!window_.empty() && window_.front().epoch == plan.epoch() && window_.front().index == index) {
    Planned p = std::move(window_.front().planned);
    window_.pop_front();
    return p;
  }
  window_.clear();  // the producer went elsewhere: what was planned ahead is not its path
  Planned p;
  p.samples = plan.batch(index);
  p.plan = planner_.plan(p.samples);
  return p;
}

const EpochPlan& Readahead::plan_of(std::int64_t e) {
  if (current_ && current_->epoch() == e) return *current_;
  // The next epoch's plan (a permutation of the samples) is made here once and later handed
  // to the producer by epoch().
  if (!next_epoch_ || next_epoch_->epoch() != e) next_epoch_ = sampler_.epoch(e);
  return *next_epoch_;
}

std::optional<std::pair<std::int64_t, std::int64_t>> Readahead::after(std::int64_t epoch, std::int64_t index) {
  if (index + 1 < plan_of(epoch).len()) return std::make_pair(epoch, index + 1);
  if (plan_of(epoch + 1).len() == 0) return std::nullopt;
  return std::make_pair(epoch + 1, std::int64_t{0});
}

void Readahead::fetch_starts(const EpochPlan& plan, std::int64_t index, const BatchPlan& current,
                             const Cached& cached) {
  if (batches_ == 0) return;
  // Planning ahead must not fail the batch being fetched (a hint never fails anything):
  // on an error (allocation) the look-ahead is dropped and take() plans as it goes.
  try {
    current_ = plan;  // a copy of a few pointers
    // Units this batch fetches, and those of the batches already hinted: not hinted again.
    std::unordered_set<std::string> seen;
    for (const auto& t : current.tasks) seen.insert(t.cache_key);
    std::pair<std::int64_t, std::int64_t> pos{plan.epoch(), index};
    std::size_t kept = 0;
    for (; kept < window_.size(); ++kept) {
      const auto nx = after(pos.first, pos.second);
      const Ahead& a = window_[kept];
      if (!nx || nx->first != a.epoch || nx->second != a.index) break;
      for (const auto& t : a.planned.plan.tasks) seen.insert(t.cache_key);
      pos = *nx;
    }
    window_.resize(kept);

    std::vector<Hint> hints;
    while (window_.size() < static_cast<std::size_t>(batches_)) {
      const auto nx = after(pos.first, pos.second);
      if (!nx) break;
      const EpochPlan& ep = plan_of(nx->first);
      Ahead a;
      a.epoch = nx->first;
      a.index = nx->second;
      a.planned.samples = ep.batch(nx->second);
      a.planned.plan = planner_.plan(a.planned.samples);
      for (const auto& t : a.planned.plan.tasks) {
        if (seen.insert(t.cache_key).second && !cached(t.cache_key)) hints.push_back(Hint{t.source, t.unit});
      }
      window_.push_back(std::move(a));
      pos = *nx;
    }
    if (hints.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Hints the hint thread has not reached while the fetch moved on are for batches being
      // fetched now (their reads are issued anyway): the oldest go once a few wait.
      while (queue_.size() >= static_cast<std::size_t>(batches_) + 2) queue_.pop_front();
      queue_.push_back(std::move(hints));
    }
    cv_.notify_one();
  } catch (...) {
    window_.clear();
  }
}

void Readahead::reset() {
  window_.clear();
  current_.reset();
  next_epoch_.reset();
}

bool Readahead::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

std::uint64_t Readahead::hinted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hinted_;
}

void Readahead::reset_count() {
  std::lock_guard<std::mutex> lock(mu_);
  hinted_ = 0;
}

void Readahead::run() {
  for (;;) {
    std::vector<Hint> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    // A hint never fails anything: whatever goes wrong here (allocation) drops the job.
    try {
      const std::int64_t t0 = now_ns();
      std::uint64_t n = 0;
      for (const Hint& h : job) {
        if (stopping()) break;  // a loader going away does not wait for the rest of the job
        n += planner_.sources()[h.source].array.will_need_unit(h.unit);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        hinted_ += n;
      }
      if (trace_.enabled()) trace_.record("readahead hints", t0, now_ns(), std::to_string(n) + " units");
    } catch (...) {
    }
  }
}

}  // namespace cubestream::pipeline
