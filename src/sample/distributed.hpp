// The rank split of an epoch: equal, contiguous, disjoint parts; padding by wrap-around when
// nothing may be dropped, truncation to whole batches when drop_last. The rule and why are in
// include/cubestream/sampler.hpp, "Batches and ranks".
#pragma once

#include <cstdint>

namespace cubestream::sample {

struct RankSplit {
  std::int64_t per_rank = 0;     // samples on every rank (repeats included)
  std::int64_t first = 0;        // epoch position of this rank's first sample
  std::int64_t num_batches = 0;  // batches on every rank
  // Epoch position p of the rank's part maps to order[p % n]; p >= n marks a padding repeat.
};

// n >= 1 samples, world_size >= 1, 0 <= rank < world_size, batch_size >= 1 (the caller
// validates). With drop_last and n < world_size * batch_size the split is empty; the Sampler
// refuses that config at construction.
RankSplit split_epoch(std::int64_t n, std::int64_t world_size, std::int64_t rank, std::int64_t batch_size,
                      bool drop_last);

}  // namespace cubestream::sample
