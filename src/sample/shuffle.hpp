// The order of one epoch: epoch position -> sample id, for each shuffle mode, computed per
// position (random access) from (seed, epoch). See include/cubestream/sampler.hpp, "Shuffles".
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cubestream/sampler.hpp"
#include "sample/permutation.hpp"
#include "sample/sample_grid.hpp"

namespace cubestream::sample {

class EpochOrder {
 public:
  EpochOrder(std::shared_ptr<const SampleGrid> grid, ShuffleMode mode, std::int64_t buffer_size,
             std::uint64_t seed, std::int64_t epoch);

  std::int64_t size() const { return grid_->num_samples(); }
  // The sample id at `position` in [0, size()).
  std::int64_t at(std::int64_t position) const;
  // ids of positions first .. first + count - 1 (all inside [0, size())). Cheaper than at()
  // per position for the chunk-aware mode: consecutive positions share a block.
  void fill(std::int64_t first, std::int64_t count, std::int64_t* out) const;

 private:
  // What the chunk-aware mode needs to resolve positions inside one block.
  struct Block {
    std::int64_t index = -1;
    std::int64_t begin = 0;                 // epoch position of the block's first sample
    std::vector<std::int64_t> groups;       // the block's groups, in permuted order
    std::vector<std::int64_t> ends;         // running sum of their sizes
    Permutation perm;                       // over the block's samples
  };
  void load_block(std::int64_t b, Block& block) const;
  std::int64_t chunk_at(std::int64_t position, Block& block) const;

  std::shared_ptr<const SampleGrid> grid_;
  ShuffleMode mode_;
  std::int64_t buffer_size_;
  std::uint64_t seed_;
  std::int64_t epoch_;
  Permutation perm_;                         // kSample: samples; kChunk: groups
  std::vector<std::int64_t> block_begin_;    // kChunk: epoch position where each block starts, + size
};

}  // namespace cubestream::sample
