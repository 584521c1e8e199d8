// The Sampler: validation of the whole config, epoch plans (order + rank split + batches),
// the iteration cursor and its resumable state.
#include "cubestream/sampler.hpp"

#include <algorithm>
#include <cstdio>

#include "cubestream/error.hpp"
#include "sample/distributed.hpp"
#include "sample/sample_grid.hpp"
#include "sample/shuffle.hpp"

namespace cubestream {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "sampler: " + message);
}

// FNV-1a over a canonical rendering of everything that shapes the plan except the seed (which
// the state carries itself) and the rank (so one rank's state restores on every rank).
class Fingerprint {
 public:
  void add(std::string_view s) {
    add(static_cast<std::int64_t>(s.size()));
    for (unsigned char c : s) byte(c);
  }
  void add(std::int64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i)));
  }
  std::uint64_t value() const { return h_; }

 private:
  void byte(unsigned char c) {
    h_ ^= c;
    h_ *= 0x100000001b3ULL;
  }
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

std::uint64_t fingerprint_of(const SamplerConfig& c) {
  Fingerprint f;
  f.add(static_cast<std::int64_t>(c.dims.size()));
  for (const auto& d : c.dims) f.add(d.name), f.add(d.size);
  for (const auto* m : {&c.patch, &c.overlap, &c.chunks}) {
    f.add(static_cast<std::int64_t>(m->size()));
    for (const auto& [k, v] : *m) f.add(k), f.add(v);
  }
  f.add(static_cast<std::int64_t>(c.batch_dims.size()));
  for (const auto& d : c.batch_dims) f.add(d);
  f.add(std::int64_t{c.window.has_value()});
  if (c.window) {
    f.add(c.window->time_dim);
    for (const auto* v : {&c.window->input_offsets, &c.window->target_leads}) {
      f.add(static_cast<std::int64_t>(v->size()));
      for (std::int64_t o : *v) f.add(o);
    }
  }
  f.add(static_cast<std::int64_t>(c.shuffle));
  f.add(c.buffer_size);
  f.add(c.batch_size);
  f.add(std::int64_t{c.drop_last});
  f.add(c.world_size);
  return f.value();
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

// ---- EpochPlan ---------------------------------------------------------------------------

std::int64_t EpochPlan::batch_size(std::int64_t i) const {
  if (i < 0 || i >= num_batches_)
    throw Error(ErrorCode::kOutOfRange, "sampler: batch " + std::to_string(i) + " outside [0, " +
                                            std::to_string(num_batches_) + ") of epoch " + std::to_string(epoch_));
  return std::min(batch_size_, per_rank_ - i * batch_size_);
}

Sample EpochPlan::sample(std::int64_t position) const {
  if (position < 0 || position >= per_rank_)
    throw Error(ErrorCode::kOutOfRange, "sampler: position " + std::to_string(position) + " outside [0, " +
                                            std::to_string(per_rank_) + ") of this rank's epoch");
  const std::int64_t n = grid_->num_samples();
  const std::int64_t p = first_ + position;
  Sample s = grid_->sample(order_->at(p % n));
  s.repeat = p >= n;
  return s;
}

std::vector<Sample> EpochPlan::batch(std::int64_t i) const {
  const std::int64_t count = batch_size(i);
  const std::int64_t n = grid_->num_samples();
  const std::int64_t p0 = first_ + i * batch_size_;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(count));
  // Resolve runs of consecutive order positions at once; a run breaks where padding wraps.
  for (std::int64_t done = 0; done < count;) {
    const std::int64_t q = (p0 + done) % n;
    const std::int64_t len = std::min(count - done, n - q);
    order_->fill(q, len, ids.data() + done);
    done += len;
  }
  std::vector<Sample> out;
  out.reserve(ids.size());
  for (std::int64_t k = 0; k < count; ++k) {
    out.push_back(grid_->sample(ids[static_cast<std::size_t>(k)]));
    out.back().repeat = p0 + k >= n;
  }
  return out;
}

// ---- Sampler -----------------------------------------------------------------------------

Sampler::Sampler(SamplerConfig config) : config_(std::move(config)) {
  // Cheap scalar checks first so their messages win over geometry ones.
  if (config_.world_size < 1)
    invalid("world_size is " + std::to_string(config_.world_size) + "; it must be >= 1");
  if (config_.rank < 0 || config_.rank >= config_.world_size)
    invalid("rank " + std::to_string(config_.rank) + " is outside [0, world_size " +
            std::to_string(config_.world_size) + ")");
  if (config_.batch_size < 1) invalid("batch_size is " + std::to_string(config_.batch_size) + "; it must be >= 1");
  if (config_.buffer_size < 1)
    invalid("buffer_size is " + std::to_string(config_.buffer_size) + "; it must be >= 1");
  grid_ = std::make_shared<const sample::SampleGrid>(config_);
  const std::int64_t n = grid_->num_samples();
  if (config_.drop_last && n / config_.world_size / config_.batch_size == 0)
    invalid("drop_last with " + std::to_string(n) + " samples, batch_size " + std::to_string(config_.batch_size) +
            " and world_size " + std::to_string(config_.world_size) +
            " leaves no full batch on any rank (needs at least world_size * batch_size samples)");
  fingerprint_ = fingerprint_of(config_);
  seed_ = config_.seed;
}

std::int64_t Sampler::num_samples() const { return grid_->num_samples(); }

std::vector<std::int64_t> Sampler::starts(const std::string& dim) const {
  for (const auto& a : grid_->axes()) {
    if (a.name != dim) continue;
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(a.count));
    for (std::int64_t p = 0; p < a.count; ++p) out.push_back(a.start(p));
    return out;
  }
  invalid("unknown dim '" + dim + "'; valid dims: " + sample::dim_list(config_));
}

Sample Sampler::sample(std::int64_t id) const { return grid_->sample(id); }

std::vector<Region> Sampler::input_regions(const Sample& s) const {
  return grid_->regions(s, grid_->input_offsets());
}

std::vector<Region> Sampler::target_regions(const Sample& s) const {
  return grid_->regions(s, grid_->target_leads());
}

std::int64_t Sampler::num_chunk_groups() const { return grid_->num_groups(); }

std::int64_t Sampler::chunk_group(const Sample& s) const { return grid_->group_of(s.id); }

EpochPlan Sampler::epoch(std::int64_t e) const {
  if (e < 0) invalid("epoch " + std::to_string(e) + " is negative");
  EpochPlan plan;
  plan.grid_ = grid_;
  plan.order_ = std::make_shared<const sample::EpochOrder>(grid_, config_.shuffle, config_.buffer_size, seed_, e);
  const sample::RankSplit split =
      sample::split_epoch(grid_->num_samples(), config_.world_size, config_.rank, config_.batch_size, config_.drop_last);
  plan.epoch_ = e;
  plan.per_rank_ = split.per_rank;
  plan.first_ = split.first;
  plan.batch_size_ = config_.batch_size;
  plan.num_batches_ = split.num_batches;
  return plan;
}

const EpochPlan& Sampler::current_plan() {
  if (!plan_ || plan_->epoch() != epoch_) plan_ = epoch(epoch_);
  return *plan_;
}

std::optional<std::vector<Sample>> Sampler::next_batch() {
  const EpochPlan& plan = current_plan();
  if (batch_ >= plan.num_batches()) {
    // The end of the epoch: report it once, then continue with the next.
    ++epoch_;
    batch_ = 0;
    return std::nullopt;
  }
  return plan.batch(batch_++);
}

void Sampler::set_epoch(std::int64_t e) {
  if (e < 0) invalid("epoch " + std::to_string(e) + " is negative");
  epoch_ = e;
  batch_ = 0;
}

SamplerState Sampler::state() const {
  return SamplerState{seed_, epoch_, batch_, config_.world_size, fingerprint_};
}

void Sampler::restore(const SamplerState& state) {
  if (state.fingerprint != fingerprint_ || state.world_size != config_.world_size)
    invalid("cannot restore a state taken with another config (fingerprint " + hex(state.fingerprint) +
            ", world_size " + std::to_string(state.world_size) + "; this sampler has " + hex(fingerprint_) +
            ", world_size " + std::to_string(config_.world_size) + ")");
  if (state.epoch < 0) invalid("state epoch " + std::to_string(state.epoch) + " is negative");
  // Every epoch has the same number of batches, so one split tells the bound.
  const sample::RankSplit split =
      sample::split_epoch(grid_->num_samples(), config_.world_size, config_.rank, config_.batch_size, config_.drop_last);
  if (state.batch < 0 || state.batch > split.num_batches)
    invalid("state batch " + std::to_string(state.batch) + " is outside [0, " + std::to_string(split.num_batches) +
            "] for this config");
  if (state.seed != seed_) plan_.reset();
  seed_ = state.seed;
  epoch_ = state.epoch;
  batch_ = state.batch;
}

// ---- state as JSON ---------------------------------------------------------------------

nlohmann::json to_json(const SamplerState& s) {
  // The fingerprint as hex text: 64-bit integers do not survive every JSON reader (JavaScript).
  // The seed stays a number because users write it by hand; Python's json keeps it exact.
  return nlohmann::json{{"version", 1},         {"seed", s.seed},
                        {"epoch", s.epoch},     {"batch", s.batch},
                        {"world_size", s.world_size}, {"fingerprint", hex(s.fingerprint)}};
}

SamplerState sampler_state_from_json(const nlohmann::json& j) {
  try {
    if (!j.is_object()) invalid("sampler state must be a JSON object");
    if (j.at("version").get<int>() != 1)
      invalid("sampler state version " + j.at("version").dump() + " is not supported (expected 1)");
    SamplerState s;
    // get<uint64_t>() would wrap a negative number silently.
    if (!j.at("seed").is_number_unsigned()) invalid("sampler state seed must be an unsigned integer");
    s.seed = j.at("seed").get<std::uint64_t>();
    s.epoch = j.at("epoch").get<std::int64_t>();
    s.batch = j.at("batch").get<std::int64_t>();
    s.world_size = j.at("world_size").get<std::int64_t>();
    const std::string fp = j.at("fingerprint").get<std::string>();
    std::size_t used = 0;
    s.fingerprint = std::stoull(fp, &used, 16);
    if (used != fp.size() || fp.empty()) invalid("sampler state fingerprint '" + fp + "' is not hex");
    return s;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    invalid(std::string("malformed sampler state: ") + e.what());
  }
}

}  // namespace cubestream
