// The sample grid: the validated product of positions along every dim (patch starts, batch
// indices, window anchors, or the whole dim), with row-major sample ids, regions, and the
// chunk groups the chunk-aware shuffle draws from. See include/cubestream/sampler.hpp for the
// semantics; this file only does the index arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cubestream/sampler.hpp"

namespace cubestream::sample {

enum class AxisKind { kWhole, kPatch, kBatch, kTime };

struct Axis {
  std::string name;
  std::int64_t size = 0;
  AxisKind kind = AxisKind::kWhole;
  std::int64_t extent = 0;   // region shape along the dim (1 for batch and time)
  std::int64_t stride = 1;
  std::int64_t first = 0;    // start of position 0 (the first valid anchor on time)
  std::int64_t count = 1;    // number of positions
  std::int64_t chunk = 0;    // chunk length along the dim (the whole dim when not given)
  // Positions are cut into runs that start in the same chunk: run r holds positions
  // [run_begin[r], run_begin[r + 1]). Starts grow with the position, so runs are contiguous.
  std::vector<std::int64_t> run_begin;
  std::vector<std::int64_t> run_of;  // position -> run

  std::int64_t start(std::int64_t pos) const { return first + pos * stride; }
  std::int64_t num_runs() const { return static_cast<std::int64_t>(run_begin.size()) - 1; }
  std::int64_t run_length(std::int64_t r) const { return run_begin[r + 1] - run_begin[r]; }
};

class SampleGrid {
 public:
  // Validates `config` (dims, patch, overlap, batch_dims, window, chunks) and throws
  // Error(kInvalidArgument) for anything impossible.
  explicit SampleGrid(const SamplerConfig& config);

  const std::vector<Axis>& axes() const { return axes_; }
  int time_axis() const { return time_axis_; }   // -1 without a window
  std::int64_t num_samples() const { return num_samples_; }

  Sample sample(std::int64_t id) const;
  std::vector<Region> regions(const Sample& s, const std::vector<std::int64_t>& steps) const;
  const std::vector<std::int64_t>& input_offsets() const { return input_offsets_; }
  const std::vector<std::int64_t>& target_leads() const { return target_leads_; }

  // Chunk groups: the product of the per-axis runs, numbered row-major.
  std::int64_t num_groups() const { return num_groups_; }
  std::int64_t group_of(std::int64_t id) const;
  std::int64_t group_size(std::int64_t g) const;
  // The k-th sample (row-major within the group's box) of group g, k in [0, group_size(g)).
  std::int64_t member(std::int64_t g, std::int64_t k) const;

 private:
  std::vector<Axis> axes_;
  int time_axis_ = -1;
  std::vector<std::int64_t> input_offsets_;
  std::vector<std::int64_t> target_leads_;
  std::int64_t num_samples_ = 0;
  std::int64_t num_groups_ = 0;
};

// "a, b, c": the valid dim names, for error messages.
std::string dim_list(const SamplerConfig& config);

}  // namespace cubestream::sample
