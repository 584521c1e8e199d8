// Epoch orders for the three shuffle modes. Everything is a pure function of (seed, epoch) so
// every rank and every resumed run computes the same order without communicating.
#include "sample/shuffle.hpp"

#include <algorithm>

#include "cubestream/error.hpp"

namespace cubestream::sample {
namespace {
// Tags that keep the permutation streams of one (seed, epoch) apart.
constexpr std::uint64_t kTagSamples = 1;
constexpr std::uint64_t kTagGroups = 2;
constexpr std::uint64_t kTagBlock = 3;
}  // namespace

EpochOrder::EpochOrder(std::shared_ptr<const SampleGrid> grid, ShuffleMode mode, std::int64_t buffer_size,
                       std::uint64_t seed, std::int64_t epoch)
    : grid_(std::move(grid)), mode_(mode), buffer_size_(buffer_size), seed_(seed), epoch_(epoch) {
  const auto e = static_cast<std::uint64_t>(epoch);
  if (mode_ == ShuffleMode::kSample) {
    perm_ = Permutation(static_cast<std::uint64_t>(grid_->num_samples()), derive_key(seed, e, kTagSamples));
  } else if (mode_ == ShuffleMode::kChunk) {
    const std::int64_t groups = grid_->num_groups();
    perm_ = Permutation(static_cast<std::uint64_t>(groups), derive_key(seed, e, kTagGroups));
    // Groups differ in size (a dim's last chunk may hold fewer patch starts), so block
    // boundaries need a prefix sum: O(groups) time once per epoch, O(groups / buffer) memory.
    const std::int64_t blocks = (groups + buffer_size_ - 1) / buffer_size_;
    block_begin_.assign(static_cast<std::size_t>(blocks) + 1, 0);
    std::int64_t pos = 0;
    for (std::int64_t j = 0; j < groups; ++j) {
      if (j % buffer_size_ == 0) block_begin_[static_cast<std::size_t>(j / buffer_size_)] = pos;
      pos += grid_->group_size(static_cast<std::int64_t>(perm_(static_cast<std::uint64_t>(j))));
    }
    block_begin_.back() = pos;
    if (pos != grid_->num_samples()) throw Error(ErrorCode::kInternal, "sampler: chunk groups do not cover the grid");
  }
}

void EpochOrder::load_block(std::int64_t b, Block& block) const {
  block.index = b;
  block.begin = block_begin_[static_cast<std::size_t>(b)];
  const std::int64_t first = b * buffer_size_;
  const std::int64_t last = std::min(first + buffer_size_, grid_->num_groups());
  block.groups.clear();
  block.ends.clear();
  std::int64_t end = 0;
  for (std::int64_t j = first; j < last; ++j) {
    const auto g = static_cast<std::int64_t>(perm_(static_cast<std::uint64_t>(j)));
    end += grid_->group_size(g);
    block.groups.push_back(g);
    block.ends.push_back(end);
  }
  block.perm = Permutation(static_cast<std::uint64_t>(end),
                           derive_key(seed_, static_cast<std::uint64_t>(epoch_), kTagBlock, static_cast<std::uint64_t>(b)));
}

std::int64_t EpochOrder::chunk_at(std::int64_t position, Block& block) const {
  if (block.index < 0 || position < block_begin_[static_cast<std::size_t>(block.index)] ||
      position >= block_begin_[static_cast<std::size_t>(block.index) + 1]) {
    const auto it = std::upper_bound(block_begin_.begin(), block_begin_.end(), position);
    load_block(static_cast<std::int64_t>(it - block_begin_.begin()) - 1, block);
  }
  // A uniform-looking place inside the block, then which group and which member it is.
  const auto m = static_cast<std::int64_t>(block.perm(static_cast<std::uint64_t>(position - block.begin)));
  const auto it = std::upper_bound(block.ends.begin(), block.ends.end(), m);
  const auto j = static_cast<std::size_t>(it - block.ends.begin());
  const std::int64_t before = j == 0 ? 0 : block.ends[j - 1];
  return grid_->member(block.groups[j], m - before);
}

std::int64_t EpochOrder::at(std::int64_t position) const {
  std::int64_t id = 0;
  fill(position, 1, &id);
  return id;
}

void EpochOrder::fill(std::int64_t first, std::int64_t count, std::int64_t* out) const {
  switch (mode_) {
    case ShuffleMode::kNone:
      for (std::int64_t i = 0; i < count; ++i) out[i] = first + i;
      return;
    case ShuffleMode::kSample:
      for (std::int64_t i = 0; i < count; ++i)
        out[i] = static_cast<std::int64_t>(perm_(static_cast<std::uint64_t>(first + i)));
      return;
    case ShuffleMode::kChunk: {
      Block block;
      for (std::int64_t i = 0; i < count; ++i) out[i] = chunk_at(first + i, block);
      return;
    }
  }
}

}  // namespace cubestream::sample
