// Normalisation statistics: the mean and standard deviation of every channel of a dataset,
// computed once (the `cubestream stats` command) and stored beside the data, where the loader
// finds them (normalisation="stored" in Python).
//
// A channel is what the loader stacks into the channel axis: with the sample dims (time and
// the spatial dims, the loader's dims rule), each index along a variable's other dims, named
// as Selection names channels ("temperature@level=500"); a variable without such dims is one
// channel. Every value is CF-decoded as the loader reads it; NaNs (masked or stored) are
// skipped. Sums are in float64, per batch of time steps, combined with Chan et al.'s pairwise
// update, so the result does not depend on the order or the number of threads beyond
// rounding. std is the population standard deviation (ddof = 0).
//
// The file `cubestream_stats.json`:
//   {"format": "cubestream-stats/1", "ddof": 0,
//    "channels":  {"temperature@level=500": {"mean": 252.1, "std": 11.3, "count": 8301600}, ...},
//    "variables": {"temperature": {"mean": ..., "std": ..., "count": ...}, ...}}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/selection.hpp"

namespace cubestream {

struct Moments {
  std::uint64_t count = 0;
  double mean = 0;
  double m2 = 0;  // sum of squared deviations from the mean
  void add(double x);
  void merge(const Moments& other);
  double std() const;  // population standard deviation; 0 for fewer than one value
};

struct DatasetStats {
  std::map<std::string, Moments> channels;
  std::map<std::string, Moments> variables;
  nlohmann::json to_json() const;
  // Mean/std per channel and per variable, for SelectionConfig::normalisation (as a table).
  std::map<std::string, Normalisation> normalisation() const;
};

inline constexpr const char* kStatsFileName = "cubestream_stats.json";

// Reads every value of `variables` once (through the loader's pipeline, `threads` wide).
// Error(kInvalidArgument) for unknown variables; read errors pass through.
DatasetStats compute_stats(const ConcatenatedTime& source, const std::vector<std::string>& variables, int threads = 0);

}  // namespace cubestream
