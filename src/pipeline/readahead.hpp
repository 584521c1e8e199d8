// Readahead hints: while one batch is fetched, the stores are told which decode units the
// next batches will fetch, so that their reads are already under way when those batches come.
//
// Why: a batch's fetch is a parallel_for over the loader's threads, each a synchronous read
// of one whole chunk. At the tail of every batch fewer and fewer reads are in flight (the
// threads that finished have nothing left to read while the slowest reads complete), and
// between batches none are (the producer plans, publishes and starts the next batch). On a
// disk that needs a deep queue to reach its rate the reads then average well below it: on
// the GPU machine's virtio disk a cold loader epoch read 1.17-1.34 GB/s where 16 plain
// threads reading the same files reached 1.58-1.64 GB/s. With hints the kernel reads the next
// batch's chunks into the page cache during those gaps (Store::will_need; the file store uses
// POSIX_FADV_WILLNEED), and the next batch's reads find them there or already in flight.
//
// The work is split by thread:
//   producer thread   take() hands out each batch's samples and plan, made ahead of time by
//                     fetch_starts() where that batch was hinted (so no batch is planned
//                     twice); fetch_starts() plans the batches up to `batches` ahead of the
//                     one whose fetch starts and picks the units to hint: those that no cache
//                     holds (`cached`, asked now, on the producer's thread, which owns the GPU
//                     path's cache) and that no batch between this one and that one fetches
//                     (those are read, or hinted, already). Planning is the producer's own
//                     work, only done earlier.
//   hint thread       hands those units to their stores (Array::will_need_unit). A hint may
//                     wait to queue its reads when the device's queue is full; that waiting
//                     never holds up the producer. Hints for batches the fetch has overtaken
//                     are dropped once more than a few batches of them wait.
// Batches after the end of an epoch are the next epoch's first ones (the producer prefetches
// across epoch ends too): the next epoch's plan is made ahead and handed to the producer by
// epoch().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cubestream/sampler.hpp"
#include "pipeline/batch_plan.hpp"
#include "pipeline/trace.hpp"

namespace cubestream::pipeline {

class Readahead {
 public:
  // Whether a unit (by its UnitTask::cache_key) is held by the decoded-unit cache in use.
  using Cached = std::function<bool(const std::string& cache_key)>;

  // `batches`: how many batches past the one being fetched to hint (0: none; no thread is
  // started). The sampler, planner and trace must outlive this object.
  Readahead(const Sampler& sampler, const BatchPlanner& planner, int batches, TraceRecorder& trace);
  // Drops the hints still queued (and stops a job between units), then stops the hint thread.
  ~Readahead();
  Readahead(const Readahead&) = delete;
  Readahead& operator=(const Readahead&) = delete;

  // The plan of epoch `e`: the one made ahead if there is one, else made now.
  EpochPlan epoch(std::int64_t e);

  struct Planned {
    std::vector<Sample> samples;
    BatchPlan plan;
  };
  // The samples and plan of batch `index` of `plan`: planned ahead if it was, else now.
  Planned take(const EpochPlan& plan, std::int64_t index);

  // The fetch of batch `index` of `plan`, planned as `current`, starts: queues the hints for
  // the batches after it and returns without waiting for them.
  void fetch_starts(const EpochPlan& plan, std::int64_t index, const BatchPlan& current, const Cached& cached);

  // Forgets what was planned ahead (the producer restarts elsewhere, or the sampler was
  // restored with another seed). Hints already queued are still given.
  void reset();

  // Units handed to their stores as hints (those Array::will_need_unit hinted).
  std::uint64_t hinted() const;
  void reset_count();

 private:
  struct Ahead {
    std::int64_t epoch = 0, index = 0;
    Planned planned;
  };
  struct Hint {
    std::size_t source;
    std::vector<std::int64_t> unit;
  };
  // The plan of epoch `e`: the current one, or the next, made on first use.
  const EpochPlan& plan_of(std::int64_t e);
  // The batch after (epoch, index), or nullopt where there is none to plan (an empty epoch).
  std::optional<std::pair<std::int64_t, std::int64_t>> after(std::int64_t epoch, std::int64_t index);
  bool stopping() const;
  void run();

  const Sampler& sampler_;
  const BatchPlanner& planner_;
  const int batches_;
  TraceRecorder& trace_;
  // Producer thread only.
  std::deque<Ahead> window_;              // the batches after the current one, in order
  std::optional<EpochPlan> current_;      // the plan of the epoch being fetched
  std::optional<EpochPlan> next_epoch_;   // the plan of the epoch after it, once needed

  // Shared with the hint thread.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<Hint>> queue_;   // one entry per batch hinted
  bool stop_ = false;  // set by the destructor: queued hints are dropped, the job stops
  std::uint64_t hinted_ = 0;
  std::thread thread_;
};

}  // namespace cubestream::pipeline
