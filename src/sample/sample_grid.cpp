// The sample grid: validation of the geometry part of a SamplerConfig, and the index arithmetic
// between sample ids, per-dim positions, regions and chunk groups.
#include "sample/sample_grid.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "cubestream/error.hpp"

namespace cubestream::sample {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "sampler: " + message);
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) invalid(std::string(what) + " overflows 64-bit integers");
  return r;
}

// Every name a config refers to must be one of its dims; the message lists the valid ones
// because the usual cause is a typo or another dataset's naming ("lat" vs "latitude").
int find_dim(const SamplerConfig& config, const std::string& name, const char* field) {
  for (std::size_t i = 0; i < config.dims.size(); ++i)
    if (config.dims[i].name == name) return static_cast<int>(i);
  invalid("unknown dim '" + name + "' in " + field + "; valid dims: " + dim_list(config));
}

// Cut an axis' positions into runs of equal chunk index (of the region's start).
void build_runs(Axis& a) {
  a.run_begin.clear();
  a.run_of.assign(static_cast<std::size_t>(a.count), 0);
  std::int64_t last_chunk = -1;
  for (std::int64_t p = 0; p < a.count; ++p) {
    const std::int64_t c = a.start(p) / a.chunk;
    if (c != last_chunk) {
      a.run_begin.push_back(p);
      last_chunk = c;
    }
    a.run_of[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(a.run_begin.size()) - 1;
  }
  a.run_begin.push_back(a.count);
}

}  // namespace

std::string dim_list(const SamplerConfig& config) {
  std::string out;
  for (const auto& d : config.dims) {
    if (!out.empty()) out += ", ";
    out += d.name;
  }
  return out.empty() ? "(none)" : out;
}

SampleGrid::SampleGrid(const SamplerConfig& config) {
  if (config.dims.empty()) invalid("no dims given");
  std::set<std::string> seen;
  for (const auto& d : config.dims) {
    if (d.name.empty()) invalid("a dim has an empty name");
    if (!seen.insert(d.name).second) invalid("dim '" + d.name + "' is listed twice");
    if (d.size < 1)
      invalid("dim '" + d.name + "' has size " + std::to_string(d.size) + "; every dim needs at least 1 element");
  }

  axes_.resize(config.dims.size());
  for (std::size_t i = 0; i < config.dims.size(); ++i) {
    Axis& a = axes_[i];
    a.name = config.dims[i].name;
    a.size = config.dims[i].size;
    a.extent = a.size;  // taken whole unless a role below says otherwise
    a.chunk = a.size;
  }

  // The window's time dim first, so patch and batch_dims can refuse to claim it too.
  if (config.window) {
    const ForecastWindow& w = *config.window;
    time_axis_ = find_dim(config, w.time_dim, "window.time_dim");
    if (w.input_offsets.empty()) invalid("window.input_offsets is empty; give at least one input step (e.g. {0})");
    Axis& a = axes_[static_cast<std::size_t>(time_axis_)];
    // The anchor itself (offset 0) must lie on the axis too: its time stamp labels the sample.
    std::int64_t lo = 0, hi = 0;
    for (const auto* list : {&w.input_offsets, &w.target_leads})
      for (std::int64_t o : *list) {
        if (o <= -a.size || o >= a.size)
          invalid("window step " + std::to_string(o) + " runs off time dim '" + a.name + "' of size " +
                  std::to_string(a.size));
        lo = std::min(lo, o);
        hi = std::max(hi, o);
      }
    const std::int64_t span = hi - lo + 1;
    if (span > a.size)
      invalid("window over '" + a.name + "' spans steps " + std::to_string(lo) + ".." + std::to_string(hi) + " (" +
              std::to_string(span) + " steps) but the dim has only " + std::to_string(a.size) +
              " steps: no anchor fits");
    a.kind = AxisKind::kTime;
    a.extent = 1;
    a.first = -lo;
    a.count = a.size - span + 1;
    input_offsets_ = w.input_offsets;
    target_leads_ = w.target_leads;
  } else {
    input_offsets_ = {0};
  }

  for (const auto& [name, size] : config.patch) {
    const int i = find_dim(config, name, "patch");
    Axis& a = axes_[static_cast<std::size_t>(i)];
    if (i == time_axis_)
      invalid("dim '" + name + "' is the window's time dim and cannot also be patched");
    if (size < 1) invalid("patch size of '" + name + "' is " + std::to_string(size) + "; it must be >= 1");
    if (size > a.size)
      invalid("patch size " + std::to_string(size) + " of '" + name + "' is larger than the dim (" +
              std::to_string(a.size) + ")");
    a.kind = AxisKind::kPatch;
    a.extent = size;
  }
  for (const auto& [name, olap] : config.overlap) {
    const int i = find_dim(config, name, "overlap");
    Axis& a = axes_[static_cast<std::size_t>(i)];
    if (a.kind != AxisKind::kPatch)
      invalid("overlap given for '" + name + "', which is not in patch; overlap applies to patched dims only");
    if (olap < 0 || olap >= a.extent)
      invalid("overlap " + std::to_string(olap) + " of '" + name + "' must be in [0, patch size " +
              std::to_string(a.extent) + ")");
  }
  for (Axis& a : axes_) {
    if (a.kind != AxisKind::kPatch) continue;
    auto it = config.overlap.find(a.name);
    a.stride = a.extent - (it == config.overlap.end() ? 0 : it->second);
    // xbatcher: starts 0, stride, ... while start + patch <= size; patches running off the
    // end are not generated.
    a.count = (a.size - a.extent) / a.stride + 1;
  }

  std::set<std::string> batch_seen;
  for (const auto& name : config.batch_dims) {
    const int i = find_dim(config, name, "batch_dims");
    Axis& a = axes_[static_cast<std::size_t>(i)];
    if (!batch_seen.insert(name).second) invalid("dim '" + name + "' is listed twice in batch_dims");
    if (i == time_axis_) invalid("dim '" + name + "' is the window's time dim and cannot also be a batch dim");
    if (a.kind == AxisKind::kPatch)
      invalid("dim '" + name + "' is in both patch and batch_dims; a dim is either patched or iterated");
    a.kind = AxisKind::kBatch;
    a.extent = 1;
    a.count = a.size;
  }

  for (const auto& [name, len] : config.chunks) {
    const int i = find_dim(config, name, "chunks");
    if (len < 1) invalid("chunk length of '" + name + "' is " + std::to_string(len) + "; it must be >= 1");
    axes_[static_cast<std::size_t>(i)].chunk = len;
  }

  num_samples_ = 1;
  num_groups_ = 1;
  for (Axis& a : axes_) {
    build_runs(a);
    num_samples_ = checked_mul(num_samples_, a.count, "the number of samples");
    num_groups_ *= a.num_runs();  // <= num_samples_, cannot overflow
  }
}

Sample SampleGrid::sample(std::int64_t id) const {
  if (id < 0 || id >= num_samples_)
    throw Error(ErrorCode::kOutOfRange, "sampler: sample id " + std::to_string(id) + " outside [0, " +
                                            std::to_string(num_samples_) + ")");
  Sample s;
  s.id = id;
  s.start.resize(axes_.size());
  // Row-major: the last dim varies fastest.
  for (std::size_t i = axes_.size(); i-- > 0;) {
    const Axis& a = axes_[i];
    s.start[i] = a.start(id % a.count);
    id /= a.count;
  }
  if (time_axis_ >= 0) s.anchor = s.start[static_cast<std::size_t>(time_axis_)];
  return s;
}

std::vector<Region> SampleGrid::regions(const Sample& s, const std::vector<std::int64_t>& steps) const {
  std::vector<Region> out;
  out.reserve(steps.size());
  for (std::int64_t step : steps) {
    Region r;
    r.start = s.start;
    r.shape.resize(axes_.size());
    for (std::size_t i = 0; i < axes_.size(); ++i) r.shape[i] = axes_[i].extent;
    if (time_axis_ >= 0) r.start[static_cast<std::size_t>(time_axis_)] = s.anchor + step;
    out.push_back(std::move(r));
  }
  return out;
}

std::int64_t SampleGrid::group_of(std::int64_t id) const {
  std::int64_t g = 0, mult = 1;
  for (std::size_t i = axes_.size(); i-- > 0;) {
    const Axis& a = axes_[i];
    g += a.run_of[static_cast<std::size_t>(id % a.count)] * mult;
    mult *= a.num_runs();
    id /= a.count;
  }
  return g;
}

std::int64_t SampleGrid::group_size(std::int64_t g) const {
  std::int64_t n = 1;
  for (std::size_t i = axes_.size(); i-- > 0;) {
    const Axis& a = axes_[i];
    n *= a.run_length(g % a.num_runs());
    g /= a.num_runs();
  }
  return n;
}

std::int64_t SampleGrid::member(std::int64_t g, std::int64_t k) const {
  std::int64_t id = 0, mult = 1;
  for (std::size_t i = axes_.size(); i-- > 0;) {
    const Axis& a = axes_[i];
    const std::int64_t r = g % a.num_runs();
    g /= a.num_runs();
    const std::int64_t len = a.run_length(r);
    id += (a.run_begin[static_cast<std::size_t>(r)] + k % len) * mult;
    k /= len;
    mult *= a.count;
  }
  return id;
}

}  // namespace cubestream::sample
