// Helpers shared by the sampler tests: random valid configs and whole-epoch collection.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cubestream/sampler.hpp"

namespace cubestream::testing_sample {

// A random valid config: 1 to 4 dims, each patched (with overlap), a batch dim, taken whole, or
// (at most one) the time dim of a forecast window; random chunks, shuffle, batching and ranks.
inline SamplerConfig random_config(std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  SamplerConfig c;
  const int ndims = static_cast<int>(pick(1, 4));
  bool have_time = false;
  for (int i = 0; i < ndims; ++i) {
    const std::string name = "d" + std::to_string(i);
    std::int64_t size = pick(1, 13);
    const auto role = pick(0, 3);
    if (role == 3 && !have_time) {
      have_time = true;
      ForecastWindow w{name, {}, {}};
      const auto nin = pick(1, 2);
      for (int k = 0; k < nin; ++k) w.input_offsets.push_back(-pick(0, 2));
      const auto nout = pick(0, 2);
      for (int k = 0; k < nout; ++k) w.target_leads.push_back(pick(1, 4));
      std::int64_t lo = 0, hi = 0;
      for (auto o : w.input_offsets) lo = std::min(lo, o), hi = std::max(hi, o);
      for (auto o : w.target_leads) lo = std::min(lo, o), hi = std::max(hi, o);
      size = std::max(size, hi - lo + 1) + pick(0, 20);
      c.window = w;
    } else if (role == 0) {
      const auto p = pick(1, size);
      c.patch[name] = p;
      if (pick(0, 1)) c.overlap[name] = pick(0, p - 1);
    } else if (role == 1) {
      c.batch_dims.push_back(name);
    }
    if (pick(0, 2) > 0) c.chunks[name] = pick(1, size);
    c.dims.push_back({name, size});
  }
  c.shuffle = static_cast<ShuffleMode>(pick(0, 2));
  c.seed = rng();
  c.buffer_size = pick(1, 5);
  c.batch_size = pick(1, 7);
  c.world_size = pick(1, 4);
  c.drop_last = pick(0, 1) == 1;
  // drop_last needs one full batch per rank; fall back to keeping partial batches.
  SamplerConfig probe = c;
  probe.drop_last = false;
  const std::int64_t n = Sampler(probe).num_samples();
  if (c.drop_last && n < c.world_size * c.batch_size) c.drop_last = false;
  return c;
}

// All samples of one epoch on one rank, in order, through random access.
inline std::vector<Sample> epoch_samples(const Sampler& s, std::int64_t e) {
  const EpochPlan plan = s.epoch(e);
  std::vector<Sample> out;
  for (std::int64_t b = 0; b < plan.num_batches(); ++b) {
    auto batch = plan.batch(b);
    out.insert(out.end(), batch.begin(), batch.end());
  }
  return out;
}

inline std::vector<std::int64_t> ids_of(const std::vector<Sample>& samples) {
  std::vector<std::int64_t> ids;
  ids.reserve(samples.size());
  for (const auto& s : samples) ids.push_back(s.id);
  return ids;
}

}  // namespace cubestream::testing_sample
