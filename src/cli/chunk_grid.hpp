// The outer chunk grid of an array, walked by flat position (C order), for the CLI's
// reports that visit chunk keys one by one.
#pragma once

#include <cstdint>
#include <vector>

#include "cubestream/array.hpp"

namespace cubestream::cli {

struct ChunkGrid {
  std::vector<std::int64_t> shape;  // chunks per dimension
  std::uint64_t count = 1;          // chunks in all

  static ChunkGrid of(const ArrayMetadata& m) {
    ChunkGrid g;
    for (std::size_t d = 0; d < m.shape.size(); ++d) {
      g.shape.push_back((m.shape[d] + m.chunk_shape[d] - 1) / m.chunk_shape[d]);
      g.count *= static_cast<std::uint64_t>(g.shape.back());
    }
    return g;
  }

  // Grid position of the chunk at flat C-order position `flat`.
  std::vector<std::int64_t> position(std::uint64_t flat) const {
    std::vector<std::int64_t> idx(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
      idx[d] = static_cast<std::int64_t>(flat % static_cast<std::uint64_t>(shape[d]));
      flat /= static_cast<std::uint64_t>(shape[d]);
    }
    return idx;
  }
};

}  // namespace cubestream::cli
