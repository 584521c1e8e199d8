// Planning one batch: which decode units it touches, and for each unit the pieces of the
// batch tensors it fills.
//
// A batch tensor is [batch, steps, channels, d_1..d_k] (Selection's layout). For every sample,
// step and channel the planner maps the step's region to the variable's array (the time
// part of a concatenated source, the channel's index along channel dims), walks the decode
// units that region touches, and records per unit a Piece: a box in the unit's buffer and
// where it lands in the tensor, with strides per layout dim (stride 0 broadcasts a static
// field along time). Tasks are per unique unit, so a unit shared by several samples of the
// batch is fetched and decoded once and fills all of their pieces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cubestream/array.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/sampler.hpp"
#include "cubestream/selection.hpp"

namespace cubestream::pipeline {

// One array the loader reads from: a variable of one time part, or of the static dataset.
struct UnitSource {
  Array array;
  CFEncoding encoding;
  std::string description;   // "2m_temperature (part 1)" for messages and traces
  bool is_static = false;    // from the static dataset: its units serve every batch
};

struct Piece {
  int tensor = 0;                  // 0: inputs, 1: targets
  std::uint32_t channel = 0;
  std::int64_t src_offset = 0;     // elements into the unit buffer
  std::int64_t dst_offset = 0;     // elements into the tensor
  std::vector<std::int64_t> count;       // per layout dim
  std::vector<std::int64_t> src_stride;  // per layout dim, elements (0: broadcast)
  std::vector<std::int64_t> dst_stride;  // per layout dim, elements
};

struct UnitTask {
  std::size_t source = 0;
  std::vector<std::int64_t> unit;  // grid index of the decode unit
  std::string cache_key;
  std::vector<Piece> pieces;
};

struct BatchPlan {
  std::vector<UnitTask> tasks;
  // What the batch would need if its samples shared no unit (a shuffled batch of the same
  // size may not): the sample count, and the most units and unit bytes one sample touches.
  // The GPU stage sizes its pinned staging once from this, so that a later batch never has
  // to pin more.
  std::size_t samples = 0;
  std::size_t sample_units_max = 0;
  std::uint64_t sample_bytes_max = 0;
};

class BatchPlanner {
 public:
  // Both must outlive the planner.
  BatchPlanner(const Selection& selection, const Sampler& sampler);

  BatchPlan plan(const std::vector<Sample>& samples) const;
  const std::vector<UnitSource>& sources() const { return sources_; }
  std::int64_t block_elements() const { return block_; }   // product of the sample shape

 private:
  const Selection& sel_;
  const Sampler& sampler_;
  std::vector<UnitSource> sources_;
  // source_index_[channel][part]: the source of a channel in each time part (statics: [0]).
  std::vector<std::vector<std::size_t>> source_index_;
  std::vector<std::int64_t> layout_pos_;   // per sampler dim: its layout dim, -1 if squeezed
  std::vector<std::int64_t> out_stride_;   // per layout dim, C order within a block
  std::int64_t block_ = 1;
  std::int64_t time_k_ = -1;               // the time dim among the sampler dims
};

}  // namespace cubestream::pipeline
