// The streaming loader: shuffled, normalised training batches out of Zarr datacubes, assembled
// by a C++ pipeline that runs ahead of the consumer.
//
//   cubestream::LoaderConfig cfg;
//   cfg.selection.variables = {"2m_temperature", "temperature"};
//   cfg.selection.select = {{"level", {500, 850}}};
//   cfg.sampler.window = cubestream::ForecastWindow{"time", {0}, {1}};
//   cfg.sampler.batch_size = 16;
//   cfg.sampler.shuffle = cubestream::ShuffleMode::kChunk;
//   cubestream::Loader loader(cubestream::ConcatenatedTime(years), cfg);
//   while (auto batch = loader.next()) train(batch->inputs, batch->targets);  // one epoch
//
// ---- What a batch holds ------------------------------------------------------------------
// inputs:  [batch, input steps, channels, d_1, ..., d_k]   (Selection's sample layout with a
// targets: [batch, target steps, channels, d_1, ..., d_k]   leading batch axis; no targets
//                                                          without a forecast window)
// in the configured dtype (float32, bfloat16 or float16), C order, plus for every sample its
// place: grid id, anchor time index, region start per sampler dim, the anchor's time stamp,
// and whether it is a padding repeat (see sampler.hpp). Values equal, bit for bit, what
// Selection::read gives for the same sample, converted to the output dtype.
//
// ---- The pipeline ------------------------------------------------------------------------
// One producer thread plans batch after batch of the epoch (Sampler), and for each batch:
//   fetch   the encoded bytes of every decode unit (chunk or inner chunk) the batch touches
//           and that the decoded-chunk cache does not hold;
//   decode  them (the seam where a GPU decoder plugs in: Array::decode_unit today);
//   assemble every unit's part of every sample, step and channel into the batch buffer,
//           with CF decoding, normalisation, NaN fill and the output dtype;
//   hand over: on the CPU the buffer is the batch; with device = kCuda the buffer is pinned
//           host memory, copied to the GPU on the loader's own CUDA stream, and the batch
//           carries an event that the consumer's stream waits on (Batch::wait_on /
//           DLPack's stream argument), so nothing synchronises the whole device.
// Fetch, decode and assemble of one unit run as one task on a pool of `threads` threads; a
// batch's tasks run in parallel. The loader keeps up to `prefetch` batches ready ahead of the
// consumer, across epoch ends too. With decode on the GPU (see DecodeBackend) a batch's units
// are fetched by the threads, then copied, decoded and assembled on the GPU on the loader's
// own streams, ordered by events; the producer fetches the next batches meanwhile, so up to
// 3 batches (at most `prefetch`) are in flight, and it checks a batch's decode statuses before
// handing it over, in order.
//
// Decoded units go into a bounded LRU cache, so a unit shared by several samples of a batch,
// or by later batches (the chunk-aware shuffle is built for this), is fetched and decoded
// once while it stays cached. Units of the batch being assembled are never decoded twice:
// tasks are per unique unit.
//
// Block assembly: where the cache would rarely give a unit back (samples in random order,
// ShuffleMode::kSample, from data more than four times the cache, counting the selected
// channels over the sampler's dims), a blosc unit of a non-static variable that the host
// decodes is not kept whole: each of its blocks is decoded into a small per-thread buffer and
// converted into the batch from there, which saves writing the unit to memory and reading it
// back (a quarter of the host's time per unit on the H100 machines). Such units are not
// cached. CUBESTREAM_BLOCK_ASSEMBLY=on|off|auto overrides the choice; units of other codec
// chains, and pieces whose rows are not contiguous runs of 64 or more elements in the unit,
// are decoded whole either way. The batches are the same bit for bit.
//
// ---- Memory --------------------------------------------------------------------------------
// `memory_limit` bounds the host memory the loader holds at once: batch buffers it is filling
// or holding ready (prefetch of them), the encoded and decoded units of running tasks, and the
// cache, which gets whatever the rest leaves and is evicted first when a task needs room.
// When the limit is reached, tasks wait (back-pressure) instead of allocating. The
// constructor refuses (Error kInvalidArgument) a limit that cannot hold `prefetch` batch
// buffers plus one task per thread. Batches handed to the consumer are the consumer's memory:
// they go back to the loader's buffer pool when the consumer drops them. Device memory (kCuda)
// is `prefetch` + 2 batch buffers, reused.
//
// With decode on the GPU, batches are assembled in device memory, so no host batch buffers
// are held; the host memory is then the pinned staging areas of the batches in flight (up to
// 3, each about one batch's encoded bytes): one is always kept, another only while it fits
// under the limit, so a tight limit means fewer batches in flight. Device memory adds, per
// batch in flight, a device copy of its staging area and its freshly decoded units, plus the
// decoded-unit cache (gpu_cache_bytes).
//
// ---- Epochs, ranks and resuming ------------------------------------------------------------
// next() returns the batches of the current epoch in order, then nullopt once, and moves on
// to the next epoch (as Sampler::next_batch). set_epoch(e) and load_state() drop whatever was
// prefetched and restart there, except set_epoch(e) at the start of epoch e (nothing of it
// handed out yet, no error pending), which keeps the batches already prepared: they are the
// ones a restart would prepare. state() describes the batches handed out (not the ones
// prefetched), so restoring it continues with exactly the batches an uninterrupted run gives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/dataset.hpp"
#include "cubestream/sampler.hpp"
#include "cubestream/selection.hpp"

namespace cubestream {

enum class OutputDType { kFloat32, kBFloat16, kFloat16 };
enum class DeviceKind { kCpu, kCuda };
// DecodeBackend (declared in cubestream/array.hpp, since array reads take it too) for a
// Loader: where chunks are decoded when the batches go to a GPU (device = kCuda):
//  kAuto: on the GPU for every variable whose codec the GPU decoders take (blosc, lz4, zstd
//         after `bytes`), on the host for the others; assembly then runs on the GPU too.
//  kGpu:  like kAuto, but a variable the GPU path cannot take is refused at construction.
//  kCpu:  decode and assemble on the host, copy the finished batch (the CPU-decode path).
// Both paths give the same bits. With device = kCpu only kCpu / kAuto are valid.

// When the GPU decode path enqueues a batch's GPU work (LoaderConfig::gpu_pacing).
enum class GpuPacing { kOff, kStep };

struct LoaderConfig {
  // The sampler's dims may be left empty: the loader then takes the dims shared by every
  // selected variable (static ones included; time counts as shared, static fields
  // broadcast along it) that have no label selection, in the axis order of the main
  // variable with the most of them, with their sizes. The other dims are channel dims: with
  // "t2m" (time, lat, lon) and "temperature" (time, level, lat, lon), level is a channel dim. Its chunks (for kChunk shuffles) are
  // filled from the first variable's decode units when left empty.
  SamplerConfig sampler;
  SelectionConfig selection;
  OutputDType dtype = OutputDType::kFloat32;
  DeviceKind device = DeviceKind::kCpu;
  int device_index = 0;
  // Worker threads for fetch, decode and assemble. 0: CUBESTREAM_THREADS, else all cores.
  int threads = 0;
  // Batches assembled ahead of the consumer (>= 1).
  int prefetch = 2;
  // Host memory bound in bytes (see above). 0: CUBESTREAM_LOADER_MEMORY, else 4 GiB.
  std::uint64_t memory_limit = 0;
  // Record a trace of every stage (trace_json()); costs a little time per task.
  bool trace = false;
  // Decode backend (see DecodeBackend); kAuto may be overridden by CUBESTREAM_DECODE=cpu|gpu.
  DecodeBackend decode = DecodeBackend::kAuto;
  // GPU decode path (decode kAuto): the fraction of the units the GPU could decode that the
  // fetch threads decode instead (they then travel decoded; assembly stays on the GPU), so
  // that idle host cores take work off a GPU that also trains. In [0, 1]: that share; below
  // 0 (the default): adaptive, moved per batch so that the host's fetch work fills about
  // 55-80% of the producer's pace (its cycle, or the consumer's step where that is longer),
  // and only down while the consumer waits for batches more than half of it (see
  // pipeline/host_decode_share.hpp). While the adaptive share stands at 1 the host decodes
  // everything, and batches are then built whole on the host (assembled there and copied
  // finished, as with kCpu), which leaves the training GPU only one copy a batch. The
  // adaptive share starts with a trial of a few such batches, kept while the host builds
  // them within 95% of the pace, else it starts from 0; it tries them again after resting
  // below them for 100 batches. CUBESTREAM_HOST_BATCHES=off keeps batches on the GPU stage
  // (no trials; the share starts from 0).
  // CUBESTREAM_HOST_DECODE_SHARE=auto|x overrides it. decode kGpu allows only 0 (or below).
  double host_decode_share = -1;
  // GPU decode path: pace the GPU stage to the consumer's steps. Off (the default): a batch's
  // copies and decoders are enqueued as soon as the host has fetched it. kStep: a batch
  // fetched ahead waits until the consumer takes its next batch (unless none is ready for the
  // consumer), so the loader's GPU work starts where the training step starts. Under DDP the
  // ranks' steps meet in collectives, and unpaced GPU work, landing at a different point of
  // each rank's step, delays all of them (docs/benchmarks.md, session 24). The clock is the
  // consumer's calls to next(): it matches the GPU's timeline where the training loop waits
  // for its step's end. With prefetch >= 3 the assembly of the batches in flight is paced too;
  // with 2 it comes when the host has fetched the next batch (the consumer needs it sooner);
  // with 1 nothing is held. Ignored on the CPU path. CUBESTREAM_GPU_PACING=off|step overrides it.
  GpuPacing gpu_pacing = GpuPacing::kOff;
  // Device memory for decoded units kept between batches (GPU decode only).
  // 0: CUBESTREAM_GPU_CACHE, else 2 GiB.
  std::uint64_t gpu_cache_bytes = 0;
  // Readahead: when a batch's fetch starts, the stores are told (Store::will_need) which
  // decode units the next `readahead_batches` batches will fetch and no cache holds, from a
  // thread of the loader's own. The local file store then has the kernel read them into the
  // page cache while this batch's fetch runs, so the disk's queue does not drain at the tail
  // of each batch (its slowest reads) and between batches. 0: no hints; at most 64.
  int readahead_batches = 1;
};

// A batch tensor's storage. Host memory (pinned when the loader feeds a GPU) or device memory.
struct TensorStorage;

// One tensor of a batch: a view into storage that lives as long as any copy of this object.
struct Tensor {
  std::shared_ptr<TensorStorage> storage;
  void* data = nullptr;
  std::vector<std::int64_t> shape;
  OutputDType dtype = OutputDType::kFloat32;
  DeviceKind device = DeviceKind::kCpu;
  int device_index = 0;
  std::size_t element_size() const { return dtype == OutputDType::kFloat32 ? 4 : 2; }
  std::int64_t num_elements() const;
  std::size_t num_bytes() const { return static_cast<std::size_t>(num_elements()) * element_size(); }
};

struct Batch {
  std::int64_t epoch = 0;
  std::int64_t index = 0;              // batch index within the epoch on this rank
  Tensor inputs;
  std::optional<Tensor> targets;
  std::vector<Sample> samples;         // id, anchor, start per sampler dim, repeat
  // Nanoseconds since 1970-01-01 of each sample's anchor time (or, without a window, of the
  // first time step of its region); nullopt where the dataset has no decodable standard-
  // calendar time coordinate there.
  std::vector<std::optional<std::int64_t>> time_ns;
  // Makes work on `stream` (a cudaStream_t; 0 for the legacy default stream) wait until the
  // batch is on the GPU. No-op for CPU batches. Does not block the host. The stream must
  // outlive the batch's tensors: their buffers return to the loader's pool ordered after the
  // work queued on it.
  void wait_on(void* stream) const;
  // Blocks the calling thread until the batch is on the GPU (tests and simple consumers).
  void synchronize() const;
  std::shared_ptr<void> ready_event;   // the CUDA event of the copy (kCuda only)
};

// Counters and times of the pipeline since construction (or reset_stats()).
struct LoaderStats {
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  std::uint64_t units_fetched = 0;       // decode units fetched and decoded
  std::uint64_t units_missing = 0;       // of those, absent ones (fill value)
  std::uint64_t cache_hits = 0;          // units served from the decoded-unit cache
  std::uint64_t bytes_fetched = 0;       // encoded bytes read from stores
  std::uint64_t bytes_decoded = 0;       // decoded unit bytes
  std::uint64_t bytes_delivered = 0;     // batch bytes handed to the consumer
  // Busy time summed over threads, per stage, in seconds.
  double fetch_s = 0, decode_s = 0, assemble_s = 0, transfer_s = 0;
  double consumer_wait_s = 0;            // time next() waited for a batch
  double wall_s = 0;                     // since construction or reset
  std::uint64_t ready_queue_max = 0;     // most batches ready at once
  std::uint64_t memory_peak = 0;         // most host bytes held at once (see Memory)
  std::uint64_t memory_limit = 0;
  std::uint64_t cache_bytes = 0;         // held by the cache now
  std::uint64_t units_gpu_decoded = 0;   // units decoded by the GPU decoders
  std::uint64_t units_gpu_fallback = 0;  // units the GPU left to the host decoder
  std::uint64_t units_host_decoded = 0;  // GPU path: units decoded on the host, the share's
                                         // picks and every unit of batches built on the host
  double host_decode_share = 0;          // the share used for the last batch (1 on the CPU path)
  // Batches decoded and assembled whole by the host, counted when built (prefetched ones
  // too): every batch on the CPU path; on the GPU path those built while the adaptive share
  // stood at 1 (see host_decode_share).
  std::uint64_t batches_built_on_host = 0;
  // GPU path, adaptive share: trials of whole batches on the host started and those that kept
  // them (see host_decode_share), counted since the loader was made (reset_stats keeps them).
  std::uint64_t host_share_trials = 0, host_share_trials_kept = 0;
  // Host-decoded units assembled block by block straight into the batch, never whole in
  // memory and not cached (block assembly, see the top of this file).
  std::uint64_t units_block_assembled = 0;
  std::uint64_t units_hinted = 0;        // units whose reads were hinted ahead to their store
                                         // (LoaderConfig::readahead_batches)
  // GPU path: pinned staging buffers allocated or freed (arenas growing, meta buffers), and
  // the time those calls took. Pinning hundreds of MB takes a while and contends with other
  // threads' CUDA calls, so a loader that keeps doing it slows training: after the first
  // batches these should stay at 0.
  std::uint64_t staging_pinned_calls = 0;
  double staging_pinned_s = 0;
  std::string decode_path;               // "cpu", or "gpu" with the host-decoded variables named
  nlohmann::json to_json() const;
};

class Loader {
 public:
  // Validates everything (sampler, selection, memory, device); every bad config is an
  // Error(kInvalidArgument) from here, never from next(). Starts the producer thread.
  Loader(ConcatenatedTime source, LoaderConfig config, std::optional<Dataset> statics = std::nullopt);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  const LoaderConfig& config() const;
  const Sampler& sampler() const;
  const Selection& selection() const;
  std::vector<std::string> channel_names() const;
  // Shapes of a full batch's tensors (the last batch of an epoch may have fewer samples).
  std::vector<std::int64_t> input_shape() const;
  std::vector<std::int64_t> target_shape() const;   // empty without targets
  std::int64_t len() const;                          // batches per epoch on this rank
  std::int64_t epoch() const;                        // epoch of the next batch

  // The next batch, or nullopt at the end of an epoch (once; the following call starts the
  // next epoch). Read errors of a batch are thrown here, with the store, key and offset.
  std::optional<Batch> next();
  void set_epoch(std::int64_t epoch);
  SamplerState state() const;
  void load_state(const SamplerState& state);

  LoaderStats stats() const;
  void reset_stats();
  // Chrome / Perfetto trace ("traceEvents") of the recorded stages; empty unless
  // config.trace. Load it in ui.perfetto.dev or chrome://tracing.
  nlohmann::json trace_json() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cubestream
