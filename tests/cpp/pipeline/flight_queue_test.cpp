// The loader's batches in flight (pipeline/flight_queue.hpp), on the CPU: whatever order the
// asynchronous work completes in, items are handed on in push order, only done ones are
// finished without waiting, at most `depth` stay in flight, and a failure hands on every item
// before it and none after it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeline/flight_queue.hpp"

namespace cubestream::pipeline {
namespace {

// Stands in for a batch whose GPU work runs elsewhere: `work_done` is set by another thread.
struct Item {
  int id = -1;
  std::shared_ptr<std::atomic<bool>> work_done;
  std::vector<int> payload;  // must arrive intact
  bool finished = false;
  std::shared_ptr<std::atomic<int>> abandoned;  // counts items dropped unfinished
  Item() = default;
  Item(Item&&) = default;
  Item& operator=(Item&&) = default;
  ~Item() {
    if (abandoned && !finished && id >= 0) ++*abandoned;
  }
};

TEST(FlightQueue, ItemsCompletingInAnyOrderAreHandedOnInPushOrder) {
  std::mt19937 rng(5);
  for (int depth : {1, 2, 3, 5}) {
    constexpr int kItems = 300;
    std::vector<std::shared_ptr<std::atomic<bool>>> flags;
    for (int i = 0; i < kItems; ++i) flags.push_back(std::make_shared<std::atomic<bool>>(false));
    // The "GPU": completes the items in a shuffled order, a few microseconds apart.
    std::vector<int> order(kItems);
    for (int i = 0; i < kItems; ++i) order[static_cast<std::size_t>(i)] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::thread worker([&] {
      for (int i : order) {
        std::this_thread::sleep_for(std::chrono::microseconds(i % 7 * 20));
        flags[static_cast<std::size_t>(i)]->store(true);
      }
    });
    std::vector<int> published;
    int finished_without_wait = 0, waited = 0;
    bool bad_payload = false;
    FlightQueue<Item> q(FlightQueue<Item>::Hooks{
        [](Item& it) { return it.work_done->load(); },
        [&](Item& it) {
          if (!it.work_done->load()) ++waited;
          else ++finished_without_wait;
          while (!it.work_done->load()) std::this_thread::yield();
          it.finished = true;
        },
        [&](Item&& it) {
          published.push_back(it.id);
          for (std::size_t k = 0; k < it.payload.size(); ++k) {
            if (it.payload[k] != it.id * 1000 + static_cast<int>(k)) bad_payload = true;
          }
        }});
    std::size_t most = 0;
    for (int i = 0; i < kItems; ++i) {
      // As the loader: room first (the oldest finished, waiting), then push, then what is done.
      while (q.size() >= static_cast<std::size_t>(depth)) ASSERT_TRUE(q.retire_oldest());
      Item it;
      it.id = i;
      it.work_done = flags[static_cast<std::size_t>(i)];
      for (int k = 0; k < 50; ++k) it.payload.push_back(i * 1000 + k);
      q.push(std::move(it));
      most = std::max(most, q.size());
      const std::size_t before = q.size();
      const std::size_t n = q.retire_done();
      EXPECT_EQ(q.size(), before - n);
    }
    q.retire_all();
    worker.join();
    ASSERT_EQ(published.size(), static_cast<std::size_t>(kItems)) << "depth " << depth;
    for (int i = 0; i < kItems; ++i) EXPECT_EQ(published[static_cast<std::size_t>(i)], i) << "depth " << depth;
    EXPECT_FALSE(bad_payload);
    EXPECT_LE(most, static_cast<std::size_t>(depth));
    EXPECT_EQ(finished_without_wait + waited, kItems);
  }
}

TEST(FlightQueue, RetireDoneNeverWaitsAndStopsAtTheFirstItemNotDone) {
  auto yes = std::make_shared<std::atomic<bool>>(true);
  auto no = std::make_shared<std::atomic<bool>>(false);
  std::vector<int> published;
  FlightQueue<Item> q(FlightQueue<Item>::Hooks{[](Item& it) { return it.work_done->load(); },
                                               [](Item& it) {
                                                 ASSERT_TRUE(it.work_done->load()) << "finished before done";
                                                 it.finished = true;
                                               },
                                               [&](Item&& it) { published.push_back(it.id); }});
  for (int i = 0; i < 5; ++i) {
    Item it;
    it.id = i;
    it.work_done = (i == 2) ? no : yes;  // item 2 is still running; 3 and 4 are done behind it
    q.push(std::move(it));
  }
  EXPECT_EQ(q.retire_done(), 2u);
  EXPECT_EQ(published, (std::vector<int>{0, 1}));
  EXPECT_EQ(q.retire_done(), 0u);
  no->store(true);
  EXPECT_EQ(q.retire_done(), 3u);
  EXPECT_EQ(published, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(q.retire_oldest());
}

TEST(FlightQueue, AFailureHandsOnEveryEarlierItemAndNoLaterOne) {
  auto done = std::make_shared<std::atomic<bool>>(true);
  auto abandoned = std::make_shared<std::atomic<int>>(0);
  std::vector<int> published;
  constexpr int kBad = 3;
  {
    FlightQueue<Item> q(FlightQueue<Item>::Hooks{[](Item& it) { return it.work_done->load(); },
                                                 [](Item& it) {
                                                   if (it.id == kBad) throw std::runtime_error("item 3 is corrupt");
                                                   it.finished = true;
                                                 },
                                                 [&](Item&& it) { published.push_back(it.id); }});
    for (int i = 0; i < 7; ++i) {
      Item it;
      it.id = i;
      it.work_done = done;
      it.abandoned = abandoned;
      q.push(std::move(it));
    }
    EXPECT_THROW(q.retire_all(), std::runtime_error);
    EXPECT_TRUE(q.broken());
    EXPECT_EQ(published, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(abandoned->load(), 1);  // the failed item, dropped at once
    // Later items may depend on the failed one: they are neither finished nor handed on.
    EXPECT_FALSE(q.retire_oldest());
    EXPECT_EQ(q.retire_done(), 0u);
    q.retire_all();
    EXPECT_EQ(q.size(), 3u);
  }
  EXPECT_EQ(published, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(abandoned->load(), 4);  // 3 and the three behind it, when the queue goes
}

}  // namespace
}  // namespace cubestream::pipeline
