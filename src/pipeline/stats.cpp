// Normalisation statistics through the loader: one pass over time, every time step once
// (time as a batch dim, no shuffle), channels as the loader stacks them.
#include "cubestream/stats.hpp"

#include <cmath>
#include <limits>

#include "cubestream/error.hpp"
#include "cubestream/loader.hpp"

namespace cubestream {

void Moments::add(double x) {
  ++count;
  const double d = x - mean;
  mean += d / static_cast<double>(count);
  m2 += d * (x - mean);
}

void Moments::merge(const Moments& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  const double n = static_cast<double>(count) + static_cast<double>(o.count);
  const double d = o.mean - mean;
  mean += d * static_cast<double>(o.count) / n;
  m2 += o.m2 + d * d * static_cast<double>(count) * static_cast<double>(o.count) / n;
  count += o.count;
}

double Moments::std() const { return count ? std::sqrt(m2 / static_cast<double>(count)) : 0.0; }

nlohmann::json DatasetStats::to_json() const {
  auto one = [](const Moments& m) { return nlohmann::json{{"mean", m.mean}, {"std", m.std()}, {"count", m.count}}; };
  nlohmann::json ch = nlohmann::json::object(), var = nlohmann::json::object();
  for (const auto& [k, m] : channels) ch[k] = one(m);
  for (const auto& [k, m] : variables) var[k] = one(m);
  return {{"format", "cubestream-stats/1"}, {"ddof", 0}, {"channels", ch}, {"variables", var}};
}

std::map<std::string, Normalisation> DatasetStats::normalisation() const {
  std::map<std::string, Normalisation> out;
  // A constant channel (std 0) keeps std 1: normalising it would divide by zero.
  auto put = [&](const std::string& k, const Moments& m) {
    if (m.count) out[k] = Normalisation{m.mean, m.std() > 0 ? m.std() : 1.0};
  };
  for (const auto& [k, m] : variables) put(k, m);
  for (const auto& [k, m] : channels) put(k, m);
  return out;
}

DatasetStats compute_stats(const ConcatenatedTime& source, const std::vector<std::string>& variables, int threads) {
  DatasetStats out;
  for (const auto& v : variables) {
    // One loader per variable: its dims rule then makes every non-sample dim a channel dim
    // of that variable alone (time and the dims it shares with nothing else are sampled).
    LoaderConfig cfg;
    cfg.selection.variables = {v};
    cfg.threads = threads;
    cfg.prefetch = 1;
    const std::string& time = source.time_dim();
    const bool has_time = source.has_variable(v) && [&] {
      for (const auto& d : source.variable(v).dims)
        if (d == time) return true;
      return false;
    }();
    if (!source.has_variable(v)) {
      std::string names;
      for (const auto& n : source.part(0).data_variable_names()) names += (names.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::kInvalidArgument, "stats: unknown variable \"" + v + "\"; the dataset has: " + names);
    }
    // Sample dims: time (one step per sample) and the dims of the two trailing axes (the
    // horizontal grid); any other dim (level, member) is a channel dim.
    const auto& dims = source.variable(v).dims;
    for (std::size_t a = 0; a < dims.size(); ++a) {
      if (dims[a] == time || a + 2 >= dims.size()) cfg.sampler.dims.push_back({dims[a], source.dims().at(dims[a])});
    }
    if (has_time) cfg.sampler.batch_dims = {time};
    std::int64_t steps = has_time ? source.dims().at(time) : 1;
    // Batches of about 64 MiB.
    std::int64_t per_step = 1;
    for (const auto& d : dims) per_step *= source.dims().at(d);
    per_step /= std::max<std::int64_t>(1, steps);
    cfg.sampler.batch_size = std::max<std::int64_t>(1, std::min<std::int64_t>(steps, (std::int64_t{16} << 20) / std::max<std::int64_t>(1, per_step)));
    Loader loader(source, cfg);
    const auto names = loader.channel_names();
    std::vector<Moments> per(names.size());
    while (auto b = loader.next()) {
      const auto& sh = b->inputs.shape;  // [n, 1, C, ...]
      const std::int64_t n = sh[0], c = sh[2];
      std::int64_t block = 1;
      for (std::size_t i = 3; i < sh.size(); ++i) block *= sh[i];
      const auto* p = static_cast<const float*>(b->inputs.data);
      for (std::int64_t s = 0; s < n; ++s) {
        for (std::int64_t ch = 0; ch < c; ++ch) {
          Moments m;
          const float* q = p + (s * c + ch) * block;
          // Sum the block in float64, then merge: two-pass for accuracy.
          double sum = 0;
          std::uint64_t cnt = 0;
          for (std::int64_t i = 0; i < block; ++i) {
            if (!std::isnan(q[i])) {
              sum += q[i];
              ++cnt;
            }
          }
          if (cnt == 0) continue;
          m.count = cnt;
          m.mean = sum / static_cast<double>(cnt);
          double m2 = 0;
          for (std::int64_t i = 0; i < block; ++i) {
            if (!std::isnan(q[i])) {
              const double d = q[i] - m.mean;
              m2 += d * d;
            }
          }
          m.m2 = m2;
          per[static_cast<std::size_t>(ch)].merge(m);
        }
      }
    }
    Moments all;
    for (std::size_t i = 0; i < names.size(); ++i) {
      all.merge(per[i]);
      if (names.size() > 1) out.channels[names[i]] = per[i];
    }
    out.variables[v] = all;
    if (names.size() == 1) out.channels[v] = all;
  }
  return out;
}

}  // namespace cubestream
