// Batches in flight: launched (their GPU work enqueued) but not yet finished, handed on in
// launch order.
//
// The loader's producer launches batch after batch without waiting for the GPU; a batch is
// finished (its decode statuses checked, its assembly enqueued) once its GPU work is done, or
// earlier, waiting for it, when the producer needs its staging slot or prefetch slot back.
// Finishing is strictly in launch order, so batches, end-of-epoch markers and errors reach
// the consumer in the order an unpipelined producer would give them.
//
// An item whose finish throws is dropped (its destructor abandons whatever it still holds)
// and the exception goes to the caller. The queue is then broken: later items may depend on
// the failed one (a unit it decoded), so none is finished or handed on any more; they stay
// queued until the queue is dropped.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <utility>

namespace cubestream::pipeline {

template <class Item>
class FlightQueue {
 public:
  struct Hooks {
    std::function<bool(Item&)> done;     // non-blocking: may the item be finished without waiting?
    std::function<void(Item&)> finish;   // completes the item, waiting if need be; may throw
    std::function<void(Item&&)> publish; // hands a finished item on
  };
  explicit FlightQueue(Hooks hooks) : hooks_(std::move(hooks)) {}

  void push(Item item) { items_.push_back(std::move(item)); }

  // Finishes and publishes, oldest first, the items that are done; stops at the first that
  // is not. Returns how many were published.
  std::size_t retire_done() {
    std::size_t n = 0;
    while (!broken_ && !items_.empty() && hooks_.done(items_.front())) {
      retire_front();
      ++n;
    }
    return n;
  }

  // Finishes and publishes the oldest item, waiting for it; false when none is in flight
  // (or the queue is broken).
  bool retire_oldest() {
    if (broken_ || items_.empty()) return false;
    retire_front();
    return true;
  }

  void retire_all() {
    while (retire_oldest()) {
    }
  }

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool broken() const { return broken_; }

 private:
  void retire_front() {
    Item item = std::move(items_.front());
    items_.pop_front();
    try {
      hooks_.finish(item);
    } catch (...) {
      broken_ = true;
      throw;
    }
    hooks_.publish(std::move(item));
  }

  Hooks hooks_;
  bool broken_ = false;
  std::deque<Item> items_;
};

}  // namespace cubestream::pipeline
