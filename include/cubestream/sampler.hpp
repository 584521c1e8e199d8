// The sampling plan: which samples an epoch holds, in what order, in which batch and on which
// rank, and how to resume mid-epoch. Pure index arithmetic over dimension names and sizes: no
// I/O, no decoding. The pipeline turns a sample's Regions into reads.
//
//   cubestream::SamplerConfig cfg;
//   cfg.dims = {{"time", 8760}, {"latitude", 721}, {"longitude", 1440}};
//   cfg.patch = {{"latitude", 128}, {"longitude", 128}};
//   cfg.overlap = {{"latitude", 16}, {"longitude", 16}};
//   cfg.window = cubestream::ForecastWindow{"time", {-1, 0}, {1, 6}};
//   cfg.shuffle = cubestream::ShuffleMode::kChunk;
//   cfg.chunks = {{"time", 24}};                 // the store's chunk length along time
//   cfg.batch_size = 16;
//   cubestream::Sampler sampler(cfg);            // every config error is thrown here
//   auto plan = sampler.epoch(3);                // random access: plan.batch(i), any i, any thread
//   for (const auto& s : plan.batch(0)) read(sampler.input_regions(s), sampler.target_regions(s));
//
// ---- The sample grid (xbatcher semantics) ------------------------------------------------
// `dims` lists the named dimensions and their sizes, in the order of the variables' axes;
// every Region this header returns has one entry per dim in that order. Each dim plays one
// role:
//  * patched (named in `patch`, xbatcher's input_dims): tiled by windows of `patch[d]`
//    elements with stride `patch[d] - overlap[d]` (overlap is xbatcher's input_overlap,
//    default 0). Starts are 0, stride, 2*stride, ... and a patch that would run past the end
//    is not generated, as in xbatcher's BatchGenerator: size 10, patch 4, overlap 1 gives
//    starts 0, 3, 6 (start 9 would need 9..12). The tail elements it leaves out are never
//    sampled; pick patch/overlap that tile the dim when that matters.
//  * batch dims (named in `batch_dims`): not patched but iterated, one sample per index:
//    every index along the dim is a separate sample whose region has extent 1 there, so
//    a consumer squeezes that dim out of the sample and the batch stacks samples along a new
//    leading axis. (xbatcher's batch_dims={d: n} also fixes how many consecutive indices
//    form one batch; here batches are formed from the possibly shuffled sample order by
//    `batch_size` instead, which is what lets the shuffle mix them.)
//  * the time dim of a forecast window (see below): iterated over the valid anchors.
//  * every other dim is taken whole: one position, start 0, extent the whole dim.
// A sample is one point of the product of those positions. Sample ids number the grid
// row-major in `dims` order (the first dim varies slowest); xbatcher iterates its
// input_dims in dict insertion order instead, so only the order (not the set) can differ.
//
// ---- Forecast windows --------------------------------------------------------------------
// On `window.time_dim`, a sample is anchored at a time index t. Its inputs are the single
// steps t + o for o in `input_offsets` (in the order given, e.g. {-1, 0}), its targets the
// steps t + l for l in `target_leads` (e.g. {1, 6}); every step uses the sample's patch region
// on the other dims. An anchor is valid only if t itself and every t + o and t + l lie
// inside [0, size): anchors near the ends whose window would run off the axis are not
// generated (never clipped, never padded). The time dim cannot also be patched or a batch
// dim. Without a window there is one input region per sample (the patch) and no target.
//
// ---- Shuffles ---------------------------------------------------------------------------
// The order of an epoch is a pure function of (seed, epoch): the same pair gives the same
// order on every machine and every run, another epoch gives another order.
//  * kNone: grid order.
//  * kSample: a full pseudo-random permutation of all samples, computed per index by a
//    keyed Feistel network with cycle walking (a bijection on [0, N)), so it needs O(1)
//    memory and any position is computed in O(1) without materialising the epoch.
//  * kChunk: a block shuffle for chunked stores. Samples are grouped by the chunk they start
//    in: along each dim, floor(start / chunks[d]) (for the window's time dim, the chunk
//    holding the anchor t; a dim absent from `chunks` counts as one chunk). The groups are
//    permuted (Feistel again), cut into consecutive blocks of `buffer_size` groups, and the
//    samples of each block are emitted in a pseudo-random permutation of that block. So a
//    reader that keeps the chunks of the current block decoded (the cache footprint: the
//    chunks of `buffer_size` groups, plus their neighbours where windows or patches straddle
//    chunk borders, per variable) decodes each chunk once per epoch, while the order still
//    looks random: group order is uniform at random, and inside a block every sample is
//    equally likely at every place. What is lost against kSample: two samples of different
//    blocks never swap places, so a block is a run of about (epoch size * buffer_size /
//    number of groups) samples drawn from only `buffer_size` chunks. Larger buffer_size:
//    closer to kSample, more memory. When buffer_size >= number of groups it is kSample
//    (with another permutation).
//
// ---- Batches and ranks ------------------------------------------------------------------
// The epoch order (N samples) is split among `world_size` ranks into equal, contiguous,
// disjoint parts; each rank cuts its part into batches of `batch_size` in order.
// Contiguous (not torch's strided rank, rank+W, ...) keeps the chunk-aware blocks on few
// ranks, so each rank decodes mostly its own chunks.
//  * drop_last = false: nothing is lost. N is padded to P = ceil(N / W) * W by wrapping
//    around the epoch order (padding position N + i repeats order[i mod N]), as torch's
//    DistributedSampler does, so each rank gets P / W samples and equal lengths hold. The
//    P - N < W repeats are marked Sample::repeat and land at the end of the last rank(s).
//    Each rank's last batch may be partial (every rank's has the same size). Each sample is
//    therefore exactly once per epoch whenever W == 1 or W divides N; otherwise at least once,
//    with P - N repeats.
//  * drop_last = true: every batch is full and nothing repeats: the order is cut to
//    M = floor(N / (W * batch_size)) * W * batch_size samples; the N - M samples at the end
//    of the epoch order are dropped (other ones each epoch when shuffling; with kNone always
//    the last ones). Each kept sample is exactly once per epoch.
//
// ---- Resuming ---------------------------------------------------------------------------
// The Sampler also keeps a cursor (epoch, next batch) for plain iteration with next_batch().
// state() captures (seed, epoch, batch) and a fingerprint of the config; restore() on a
// Sampler built from the same config (any rank: the state carries no rank, so rank 0's
// checkpoint serves all) continues with exactly the batches an uninterrupted run gives.
//
// ---- Errors -----------------------------------------------------------------------------
// Every impossible config throws cubestream::Error(kInvalidArgument) from the constructor,
// with a message naming the valid dims where a name is unknown: world_size 0, rank >=
// world_size, batch_size 0, patch larger than its dim, overlap >= patch, a window that does
// not fit the time axis, drop_last with fewer samples than one batch per rank. An epoch plan
// never throws for a valid config except for out-of-range indices.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/array.hpp"  // Region

namespace cubestream {

struct SampleDim {
  std::string name;
  std::int64_t size = 0;
};

struct ForecastWindow {
  std::string time_dim;
  std::vector<std::int64_t> input_offsets{0};  // steps read as inputs, relative to the anchor
  std::vector<std::int64_t> target_leads;      // steps read as targets (may be empty)
};

enum class ShuffleMode { kNone, kSample, kChunk };

struct SamplerConfig {
  std::vector<SampleDim> dims;                    // the axes, in order
  std::map<std::string, std::int64_t> patch;      // xbatcher input_dims
  std::map<std::string, std::int64_t> overlap;    // xbatcher input_overlap (patched dims only)
  std::vector<std::string> batch_dims;            // iterated one index per sample
  std::optional<ForecastWindow> window;

  ShuffleMode shuffle = ShuffleMode::kNone;
  std::uint64_t seed = 0;
  std::map<std::string, std::int64_t> chunks;     // chunk length per dim, for kChunk
  std::int64_t buffer_size = 16;                  // groups per block, for kChunk

  std::int64_t batch_size = 1;
  bool drop_last = false;

  std::int64_t rank = 0;
  std::int64_t world_size = 1;
};

// One sample: where it sits in the grid. Turn it into reads with Sampler::input_regions and
// Sampler::target_regions.
struct Sample {
  std::int64_t id = 0;                 // row-major index in the grid, [0, num_samples())
  std::int64_t anchor = -1;            // time index t of the window's anchor; -1 without window
  std::vector<std::int64_t> start;     // start of the region per dim (the anchor on time)
  bool repeat = false;                 // a padding repeat (drop_last = false, W does not divide N)
  bool operator==(const Sample&) const = default;
};

// Where an iteration stands. Small and JSON-serialisable; see "Resuming" above.
struct SamplerState {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  std::int64_t batch = 0;              // batches of `epoch` already handed out on each rank
  std::int64_t world_size = 1;
  std::uint64_t fingerprint = 0;       // hash of the config (all but seed and rank)
  bool operator==(const SamplerState&) const = default;
};
nlohmann::json to_json(const SamplerState& state);
// Throws Error(kInvalidArgument) for a malformed document.
SamplerState sampler_state_from_json(const nlohmann::json& j);

namespace sample { class SampleGrid; class EpochOrder; }

// One epoch of one rank, random access. Immutable and cheap to copy; any number of threads may
// call its const methods at once (prefetching workers plan ahead with batch(i + k)).
class EpochPlan {
 public:
  std::int64_t epoch() const { return epoch_; }
  std::int64_t num_batches() const { return num_batches_; }
  std::int64_t len() const { return num_batches_; }
  std::int64_t num_samples() const { return per_rank_; }   // this rank's, repeats included
  std::int64_t batch_size(std::int64_t i) const;            // batch_size, or less for a partial last
  std::vector<Sample> batch(std::int64_t i) const;          // throws kOutOfRange outside [0, len())
  Sample sample(std::int64_t position) const;               // position in this rank's part

 private:
  friend class Sampler;
  std::shared_ptr<const sample::SampleGrid> grid_;
  std::shared_ptr<const sample::EpochOrder> order_;
  std::int64_t epoch_ = 0;
  std::int64_t per_rank_ = 0;
  std::int64_t first_ = 0;          // epoch position of this rank's first sample
  std::int64_t batch_size_ = 1;
  std::int64_t num_batches_ = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplerConfig config);   // validates everything; throws Error

  const SamplerConfig& config() const { return config_; }
  const std::vector<SampleDim>& dims() const { return config_.dims; }
  std::int64_t num_samples() const;                      // grid size N, all ranks together
  // Region starts the grid uses along `dim` (patch starts, batch indices, valid anchors, {0}).
  std::vector<std::int64_t> starts(const std::string& dim) const;
  Sample sample(std::int64_t id) const;                  // throws kOutOfRange
  // One Region per input offset (one for a sampler without window), and one per target lead.
  std::vector<Region> input_regions(const Sample& s) const;
  std::vector<Region> target_regions(const Sample& s) const;
  // The chunk-aware shuffle's groups (see above): how many, and which one a sample is in.
  std::int64_t num_chunk_groups() const;
  std::int64_t chunk_group(const Sample& s) const;

  // The plan of epoch `e` (>= 0) for this sampler's rank and current seed.
  EpochPlan epoch(std::int64_t e) const;

  // ---- the cursor ----
  // Next batch of the current epoch; at the end of an epoch returns nullopt once and moves the
  // cursor to the next epoch, so `while (auto b = s.next_batch())` runs exactly one epoch.
  std::optional<std::vector<Sample>> next_batch();
  void set_epoch(std::int64_t e);                        // start epoch e from its first batch
  SamplerState state() const;
  // Continue from `state`. Throws Error(kInvalidArgument) if it was taken with another config
  // (fingerprint or world_size differ) or points past the end of its epoch. Adopts its seed.
  void restore(const SamplerState& state);

 private:
  const EpochPlan& current_plan();
  SamplerConfig config_;
  std::shared_ptr<const sample::SampleGrid> grid_;
  std::uint64_t fingerprint_ = 0;
  std::uint64_t seed_ = 0;
  std::int64_t epoch_ = 0;
  std::int64_t batch_ = 0;
  std::optional<EpochPlan> plan_;   // cache of epoch(epoch_) for next_batch()
};

}  // namespace cubestream
