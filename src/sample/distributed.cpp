// Rank split of an epoch; see distributed.hpp.
#include "sample/distributed.hpp"

namespace cubestream::sample {

RankSplit split_epoch(std::int64_t n, std::int64_t world_size, std::int64_t rank, std::int64_t batch_size,
                      bool drop_last) {
  RankSplit s;
  if (drop_last) {
    // Whole batches on every rank, nothing repeated: cut the order's tail. Dividing by the
    // world first and then by the batch gives the same count as by both at once.
    s.num_batches = n / world_size / batch_size;
    s.per_rank = s.num_batches * batch_size;
  } else {
    // Pad to a multiple of the world by wrapping around the order (torch's
    // DistributedSampler): fewer than world_size repeats, all on the last rank(s).
    s.per_rank = n / world_size + (n % world_size != 0 ? 1 : 0);
    s.num_batches = (s.per_rank + batch_size - 1) / batch_size;
  }
  s.first = rank * s.per_rank;
  return s;
}

}  // namespace cubestream::sample
