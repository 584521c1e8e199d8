// Staging for the GPU decode path (pipeline/staging_arena.hpp), on the CPU with plain host
// memory: concurrent claims land at aligned, disjoint offsets and every byte written (before
// or after the arena grew) is there after settle(); the budget is charged exactly the
// arenas' capacity; more slots (batches in flight) are made only within the memory limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "cubestream/bytes.hpp"
#include "pipeline/staging_arena.hpp"

namespace cubestream::pipeline {
namespace {

StagingMemory host_memory(std::atomic<int>* live = nullptr) {
  return StagingMemory{[live](std::size_t n) {
                         if (live) ++*live;
                         return std::malloc(n);
                       },
                       [live](void* p) {
                         if (live && p) --*live;
                         std::free(p);
                       }};
}

std::uint8_t pattern(std::size_t unit, std::size_t k) { return static_cast<std::uint8_t>(unit * 131 + k * 7 + 1); }

struct Written {
  std::size_t offset = 0, length = 0;
  Bytes pending;  // bytes that waited for settle()
};

// One batch as the fetch threads do it: `threads` threads claim room for `sizes` units each.
std::vector<Written> fill(StagingArena& arena, const std::vector<std::size_t>& sizes, int threads) {
  std::vector<Written> w(sizes.size());
  std::atomic<std::size_t> next{0};
  auto run = [&] {
    for (std::size_t u; (u = next.fetch_add(1)) < sizes.size();) {
      const StagingArena::Claim c = arena.claim(sizes[u]);
      w[u].offset = c.offset;
      w[u].length = sizes[u];
      Bytes b(sizes[u]);
      for (std::size_t k = 0; k < b.size(); ++k) b[k] = pattern(u, k);
      if (c.ptr) std::copy(b.begin(), b.end(), c.ptr);
      else w[u].pending = std::move(b);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(run);
  for (auto& t : pool) t.join();
  std::uint8_t* base = arena.settle();
  for (auto& x : w) {
    if (!x.pending.empty()) std::copy(x.pending.begin(), x.pending.end(), base + x.offset);
  }
  return w;
}

void expect_intact(const StagingArena& arena, const std::vector<Written>& w) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (std::size_t u = 0; u < w.size(); ++u) {
    ASSERT_EQ(w[u].offset % StagingArena::kAlign, 0u);
    ASSERT_LE(w[u].offset + w[u].length, arena.capacity());
    for (std::size_t k = 0; k < w[u].length; ++k) {
      ASSERT_EQ(arena.data()[w[u].offset + k], pattern(u, k)) << "unit " << u << " byte " << k;
    }
    spans.emplace_back(w[u].offset, w[u].offset + w[u].length);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) ASSERT_LE(spans[i - 1].second, spans[i].first);
}

TEST(StagingArena, ConcurrentClaimsKeepEveryByteThroughGrowth) {
  std::mt19937 rng(11);
  MemoryBudget budget(std::uint64_t{1} << 30);
  std::atomic<int> live{0};
  {
    StagingArena arena(budget, host_memory(&live));
    std::size_t grown = 0, last_cap = 0;
    for (int batch = 0; batch < 12; ++batch) {
      arena.begin();
      std::vector<std::size_t> sizes(static_cast<std::size_t>(50 + rng() % 150));
      // Compressed chunks: sizes vary (a few empty), later batches are larger now and then.
      for (auto& s : sizes) s = rng() % 9 == 0 ? 0 : 1 + rng() % (batch % 4 == 3 ? 40000 : 20000);
      const auto w = fill(arena, sizes, 1 + batch % 5);
      expect_intact(arena, w);
      EXPECT_EQ(budget.in_use(), arena.capacity());
      grown += arena.capacity() != last_cap;
      last_cap = arena.capacity();
    }
    // The headroom of each growth makes later batches of a similar size fit as they are.
    EXPECT_LT(grown, 6u);
    EXPECT_EQ(live.load(), 1);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(live.load(), 0);
}

TEST(StagingSlots, MoreBatchesInFlightOnlyWithinTheMemoryLimit) {
  constexpr std::size_t kBatch = 100000;  // one batch's staged bytes
  const std::vector<std::size_t> sizes(40, kBatch / 40);
  for (int fit : {1, 2, 3}) {
    // Room for the first arena (grown to a batch plus its headroom) and `fit - 1` more.
    const std::uint64_t one = kBatch + kBatch / 8 + 40 * StagingArena::kAlign;
    MemoryBudget bounded(one * static_cast<std::uint64_t>(fit) + one / 2);
    StagingSlots slots(bounded, host_memory(), 3);
    auto first = slots.acquire();
    ASSERT_TRUE(first);
    StagingArena& a = slots.arena(*first);
    a.begin();
    expect_intact(a, fill(a, sizes, 3));
    std::vector<std::size_t> held{*first};
    while (auto s = slots.acquire()) {
      held.push_back(*s);
      // A new slot starts as large as the largest: the next batch fits without growing.
      StagingArena& b = slots.arena(*s);
      EXPECT_GE(b.capacity(), a.capacity());
      const std::size_t cap = b.capacity();
      b.begin();
      expect_intact(b, fill(b, sizes, 2));
      EXPECT_EQ(b.capacity(), cap);
    }
    EXPECT_EQ(held.size(), static_cast<std::size_t>(fit)) << "limit for " << fit;
    EXPECT_EQ(slots.busy(), held.size());
    EXPECT_LE(bounded.peak(), bounded.limit());
    // A slot given back is handed out again; no new one is made.
    slots.release(held.back());
    const auto again = slots.acquire();
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, held.back());
    EXPECT_EQ(slots.size(), held.size());
  }
}

TEST(StagingSlots, NeverMoreThanMaxSlotsAndTheFirstAlwaysComes) {
  MemoryBudget budget(1);  // no room at all: the first slot is still made (it grows by force)
  StagingSlots slots(budget, host_memory(), 2);
  auto a = slots.acquire();
  ASSERT_TRUE(a);
  StagingArena& arena = slots.arena(*a);
  arena.begin();
  expect_intact(arena, fill(arena, {1000, 2000}, 1));
  EXPECT_FALSE(slots.acquire());  // a second would not fit
  MemoryBudget roomy(std::uint64_t{1} << 30);
  StagingSlots many(roomy, host_memory(), 2);
  EXPECT_TRUE(many.acquire());
  EXPECT_TRUE(many.acquire());
  EXPECT_FALSE(many.acquire());
  EXPECT_EQ(many.size(), 2u);
}

// Slots made ahead, idle and already sized (what the GPU stage does at a run's first batch):
// within max_slots and the memory limit, handed out by acquire() without growing.
TEST(StagingSlots, SlotsMadeAheadAreIdleSizedAndWithinTheLimits) {
  constexpr std::size_t kRoom = 50000;
  MemoryBudget budget(3 * kRoom + kRoom / 2);  // room for three arenas, not four
  StagingSlots slots(budget, host_memory(), 4);
  auto first = slots.acquire();
  ASSERT_TRUE(first);
  slots.arena(*first).reserve(kRoom, /*charged=*/budget.try_acquire(kRoom));
  int made = 0;
  while (slots.add_idle(kRoom)) ++made;
  EXPECT_EQ(made, 2);  // the budget stops it before max_slots
  EXPECT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots.busy(), 1u);
  EXPECT_LE(budget.peak(), budget.limit());
  for (int k = 0; k < 2; ++k) {
    const auto s = slots.acquire();
    ASSERT_TRUE(s);
    EXPECT_NE(*s, *first);
    StagingArena& a = slots.arena(*s);
    EXPECT_GE(a.capacity(), kRoom);
    const std::size_t cap = a.capacity();
    a.begin();
    expect_intact(a, fill(a, {kRoom / 2, kRoom / 4}, 5));
    EXPECT_EQ(a.capacity(), cap);  // no growth: nothing pinned mid-run
  }
  EXPECT_FALSE(slots.acquire());  // all three busy; a fourth does not fit the budget
  MemoryBudget roomy(std::uint64_t{1} << 30);
  StagingSlots capped(roomy, host_memory(), 2);
  ASSERT_TRUE(capped.acquire());
  EXPECT_TRUE(capped.add_idle(kRoom));
  EXPECT_FALSE(capped.add_idle(kRoom));  // max_slots
}

}  // namespace
}  // namespace cubestream::pipeline
