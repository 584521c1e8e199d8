// The loader's engine: a producer thread that plans, fetches, decodes and assembles batch
// after batch ahead of the consumer, within one memory bound. See include/cubestream/loader.hpp.
#include "cubestream/loader.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/thread_pool.hpp"
#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "pipeline/assemble.hpp"
#include "pipeline/batch_plan.hpp"
#include "pipeline/buffer_pool.hpp"
#include "pipeline/flight_queue.hpp"
#include "pipeline/gpu_stage.hpp"
#include "pipeline/host_decode_share.hpp"
#include "pipeline/memory_budget.hpp"
#include "pipeline/read_buffers.hpp"
#include "pipeline/readahead.hpp"
#include "pipeline/trace.hpp"
#include "pipeline/unit_cache.hpp"

namespace cubestream {

namespace {

constexpr std::uint64_t kDefaultMemoryLimit = std::uint64_t{4} << 30;
// Batches of the GPU decode path in flight at once (each with a staging slot): one fetching
// on the host, one copying, one decoding. Also bounded by prefetch and the memory limit.
constexpr std::size_t kGpuMaxInFlight = 3;
constexpr std::size_t kAlign = 256;

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorCode::kInvalidArgument, "loader: " + why); }

std::uint64_t default_memory_limit() {
  if (const char* env = std::getenv("CUBESTREAM_LOADER_MEMORY")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return v;
  }
  return kDefaultMemoryLimit;
}

// The sampler dims when the config leaves them out: the dims every selected variable has,
// static ones included (the time dim counts as shared when any main variable has it: static
// fields broadcast along it), minus dims with a label selection, in the axis order of the
// main variable with the most of them. So with "t2m" (time, lat, lon) and "temperature"
// (time, level, lat, lon) selected, level is a channel dim; with "temperature" alone every
// dim is a sample dim unless `select` names level (or the dims are given explicitly).
std::vector<SampleDim> infer_dims(const ConcatenatedTime& src, const SelectionConfig& sel,
                                  const std::optional<Dataset>& statics) {
  if (sel.variables.empty()) refuse("no variables selected");
  const std::string& time = src.time_dim();
  bool any_time = false;
  std::vector<std::vector<std::string>> all_dims;
  for (const auto& name : sel.variables) {
    if (!src.has_variable(name)) {
      std::string names;
      for (const auto& n : src.part(0).data_variable_names()) names += (names.empty() ? "" : ", ") + n;
      refuse("unknown variable \"" + name + "\"; the dataset has: " + names);
    }
    const auto& d = src.variable(name).dims;
    any_time = any_time || std::find(d.begin(), d.end(), time) != d.end();
    all_dims.push_back(d);
  }
  if (statics) {
    for (const auto& name : sel.static_variables) {
      if (statics->has_variable(name)) all_dims.push_back(statics->variable(name).dims);
    }
  }
  auto shared = [&](const std::string& dim) {
    if (sel.select.count(dim)) return false;
    if (dim == time && any_time) return true;
    for (const auto& d : all_dims) {
      if (std::find(d.begin(), d.end(), dim) == d.end()) return false;
    }
    return true;
  };
  std::vector<SampleDim> best;
  for (const auto& name : sel.variables) {
    std::vector<SampleDim> dims;
    for (const auto& dim : src.variable(name).dims) {
      if (shared(dim)) dims.push_back(SampleDim{dim, src.dims().at(dim)});
    }
    if (dims.size() > best.size()) best = std::move(dims);
  }
  if (best.empty()) refuse("the selected variables share no dimension to sample along");
  return best;
}

std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

struct Loader::Impl {
  struct Entry {
    enum Kind { kBatch, kEnd, kError } kind = kBatch;
    Batch batch;
    std::int64_t epoch = 0;
    std::exception_ptr error;
  };

  Impl(ConcatenatedTime source, LoaderConfig config, std::optional<Dataset> statics);
  ~Impl() {
    stop_producer();
    gpu.reset();
    if (copy_stream) cuda::destroy_stream(copy_stream, cfg.device_index);
  }

  // A batch of the GPU path between its launch and its finish (or an end-of-epoch marker
  // queued behind such batches: no flight).
  struct Pending {
    Entry entry;
    pipeline::GpuStage::FlightPtr flight;
    std::int64_t tb0 = 0;
  };
  using Flights = pipeline::FlightQueue<Pending>;

  void start_producer(std::int64_t epoch, std::int64_t batch);
  void setup_gpu_decode();
  void stop_producer();
  void produce(std::int64_t epoch, std::int64_t batch);
  bool take_prefetch_slot(Flights& flights, std::uint64_t& tick);
  void await_consumer_step(Flights& flights, std::uint64_t tick, std::int64_t index);
  std::uint64_t ready_batches() const;   // batches in `ready` (under mu)
  void publish(Entry&& e);
  Batch build(const EpochPlan& plan, std::int64_t index);
  double observe_share(std::int64_t cycle_start);
  bool host_batch_has_room();
  Pending launch_on_gpu(const EpochPlan& plan, std::int64_t index, pipeline::GpuStage::FlightPtr flight, double share,
                        Flights& flights, std::uint64_t tick);
  void finish_on_gpu(Pending& p);
  void finish_batch(Batch& b, std::int64_t tb0);
  // [n, steps, channels, sample dims...]: the shape of a batch tensor.
  std::vector<std::int64_t> tensor_shape(std::int64_t n, std::int64_t steps) const {
    std::vector<std::int64_t> shape{n, steps, selection.num_channels()};
    for (auto e : selection.sample_shape()) shape.push_back(e);
    return shape;
  }
  void run_task(const pipeline::UnitTask& task, void* in_ptr, void* tgt_ptr);
  bool choose_block_assembly(std::uint64_t cache_capacity) const;
  bool assemble_by_blocks(const pipeline::UnitTask& task, const pipeline::UnitSource& src,
                          const Array::EncodedUnit& enc, void* in_ptr, void* tgt_ptr, std::int64_t& ns_blocks);

  LoaderConfig cfg;
  Sampler sampler;
  Selection selection;
  pipeline::BatchPlanner planner;
  pipeline::TraceRecorder trace;
  // Hints the next batches' units to the stores while a batch is fetched (readahead.hpp).
  // Declared after the planner and the trace it uses, so destroyed before them.
  std::unique_ptr<pipeline::Readahead> readahead;
  int threads = 1;
  std::size_t in_bytes = 0, tgt_bytes = 0, tgt_offset = 0, batch_bytes = 0;
  std::uint64_t task_reserve = 0;
  std::unique_ptr<pipeline::MemoryBudget> budget;
  std::unique_ptr<pipeline::UnitCache> cache;
  pipeline::ReadBuffers reads;   // run_task's encoded-unit buffers
  std::shared_ptr<pipeline::BufferPool> host_pool, device_pool;
  void* copy_stream = nullptr;
  std::unique_ptr<pipeline::GpuStage> gpu;   // GPU decode + assembly (device kCuda)
  // GPU path: which share of the GPU's units the fetch threads decode (producer thread only),
  // the last share used (for stats()), and the producer's clock for the adaptive share.
  std::optional<pipeline::HostDecodeShare> host_share;
  std::atomic<double> host_share_now{0.0};
  std::atomic<std::uint64_t> host_share_trials{0}, host_share_trials_kept{0};
  std::int64_t last_fetch_start = 0, last_fetch_ns = 0, last_wait_total = 0;
  std::int64_t last_step_total = 0;
  std::uint64_t last_steps = 0;
  // Whole batches on the host (GPU path, see produce()): whether their two pinned batch
  // buffers are charged and pinned yet (at the first such batch; where the memory limit has
  // no room for them, the share stops offering whole batches), and how long build() last
  // waited for a pinned buffer's previous copy (left out of the batch's host time).
  enum class HostBatchBuffers { kNotYet, kPinned, kRefused } host_batch_buffers = HostBatchBuffers::kNotYet;
  bool alternate_host_batches = false;   // CUBESTREAM_HOST_BATCHES=alternate (tests)
  // LoaderConfig::gpu_pacing (or CUBESTREAM_GPU_PACING) is kStep: a GPU-stage batch fetched
  // ahead waits for the consumer's next batch before its copies and decoders are enqueued
  // (see await_consumer_step()).
  bool pace_gpu_work = false;
  // Host decode of blosc units block by block straight into the batch (run_task), see
  // choose_block_assembly().
  bool block_assembly = false;
  std::int64_t last_buffer_wait_ns = 0;
  std::string decode_path = "cpu";

  // Producer state.
  std::thread producer;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Entry> ready;
  int slots_used = 0;        // batches being filled or ready, at most cfg.prefetch
  std::uint64_t consumer_ticks = 0;   // batches next() has handed out
  // The consumer's steps: from next() handing out a batch to its next call (0 after an
  // epoch's end or an error), summed with their count; the host decode share's pace.
  std::int64_t consumer_last_out = 0, consumer_step_ns = 0;
  std::uint64_t consumer_steps = 0;
  bool stopping = false;
  std::exception_ptr failed;
  // Consumer cursor: the next batch next() hands out.
  std::int64_t cur_epoch = 0, cur_batch = 0;

  // Statistics.
  std::atomic<std::uint64_t> st_batches{0}, st_samples{0}, st_units{0}, st_missing{0}, st_hits{0}, st_fetched{0},
      st_decoded{0}, st_delivered{0}, st_ready_max{0}, st_gpu_decoded{0}, st_gpu_fallback{0}, st_host_chosen{0},
      st_pinned_calls{0}, st_host_built{0}, st_block_assembled{0};
  std::atomic<std::int64_t> ns_fetch{0}, ns_decode{0}, ns_assemble{0}, ns_transfer{0}, ns_wait{0}, ns_pinned{0};
  // Consumer waits that began with the GPU through the consumer's own work (next()), never
  // reset: the host decode share's input.
  std::atomic<std::int64_t> ns_wait_starving{0};
  std::int64_t stats_origin = pipeline::now_ns();
};

// Look-ahead beyond a few batches only plans (and hints) work the disk cannot start yet, and
// planning runs on the producer's thread.
constexpr int kMaxReadaheadBatches = 64;

Loader::Impl::Impl(ConcatenatedTime source, LoaderConfig config, std::optional<Dataset> statics)
    : cfg([&] {
        if (config.sampler.dims.empty()) config.sampler.dims = infer_dims(source, config.selection, statics);
        if (config.sampler.shuffle == ShuffleMode::kChunk && config.sampler.chunks.empty() &&
            !config.selection.variables.empty() && source.has_variable(config.selection.variables.front())) {
          const Variable& v = source.variable(config.selection.variables.front());
          const auto& us = v.array.unit_shape();
          for (std::size_t a = 0; a < v.dims.size(); ++a) config.sampler.chunks[v.dims[a]] = us[a];
          for (auto it = config.sampler.chunks.begin(); it != config.sampler.chunks.end();) {
            const bool is_sample_dim = std::any_of(config.sampler.dims.begin(), config.sampler.dims.end(),
                                                   [&](const SampleDim& d) { return d.name == it->first; });
            it = is_sample_dim ? std::next(it) : config.sampler.chunks.erase(it);
          }
        }
        return std::move(config);
      }()),
      sampler(cfg.sampler),
      selection(std::move(source), cfg.selection, sampler.config(), std::move(statics)),
      planner(selection, sampler),
      trace(cfg.trace) {
  if (cfg.prefetch < 1) refuse("prefetch must be at least 1, not " + std::to_string(cfg.prefetch));
  if (cfg.readahead_batches < 0 || cfg.readahead_batches > kMaxReadaheadBatches) {
    refuse("readahead_batches must be in [0, " + std::to_string(kMaxReadaheadBatches) + "] (0: no readahead), not " +
           std::to_string(cfg.readahead_batches));
  }
  if (cfg.device == DeviceKind::kCuda) {
    const int n = cuda::device_count();
    if (cfg.device_index < 0 || cfg.device_index >= n) {
      refuse("device cuda:" + std::to_string(cfg.device_index) + " was asked for, but " +
             (n == 0 ? std::string("no CUDA device is usable (or this build has no CUDA)")
                     : std::to_string(n) + " device(s) are visible"));
    }
  }
  threads = cfg.threads > 0 ? std::min(cfg.threads, ThreadPool::kMaxThreads) : ThreadPool::default_threads();
  const std::size_t esize = cfg.dtype == OutputDType::kFloat32 ? 4 : 2;
  const auto bs = static_cast<std::size_t>(cfg.sampler.batch_size);
  in_bytes = static_cast<std::size_t>(selection.input_elements()) * esize * bs;
  tgt_bytes = static_cast<std::size_t>(selection.target_elements()) * esize * bs;
  tgt_offset = round_up(in_bytes);
  batch_bytes = tgt_offset + tgt_bytes;
  std::uint64_t max_unit = 0;
  for (const auto& s : planner.sources()) max_unit = std::max<std::uint64_t>(max_unit, s.array.unit_bytes());
  // A task holds one decoded unit and its encoded bytes, which for the codecs of Zarr are
  // at most the decoded size plus a small header per block (estimated generously).
  task_reserve = 2 * max_unit + max_unit / 64 + (64u << 10);
  const std::uint64_t limit = cfg.memory_limit ? cfg.memory_limit : default_memory_limit();
  const std::uint64_t buffers = static_cast<std::uint64_t>(cfg.prefetch + 1) * batch_bytes;
  const std::uint64_t tasks = static_cast<std::uint64_t>(threads) * task_reserve;
  if (buffers + tasks > limit) {
    refuse("memory_limit of " + std::to_string(limit) + " bytes is too small: " + std::to_string(cfg.prefetch + 1) +
           " batch buffers of " + std::to_string(batch_bytes) + " bytes (prefetch + 1) and " + std::to_string(threads) +
           " running tasks of up to " + std::to_string(task_reserve) + " bytes need " + std::to_string(buffers + tasks) +
           "; raise memory_limit, or lower prefetch, batch_size or threads");
  }
  budget = std::make_unique<pipeline::MemoryBudget>(limit);
  budget->force(buffers);  // the batch buffers' share, held for the loader's life
  cache = std::make_unique<pipeline::UnitCache>(limit - buffers - tasks);
  block_assembly = choose_block_assembly(limit - buffers - tasks);
  budget->set_reclaimer([this](std::uint64_t want) { return cache->evict(want); });
  if (cfg.device == DeviceKind::kCuda) {
    host_pool = pipeline::BufferPool::create(pipeline::MemoryKind::kPinned, batch_bytes, cfg.device_index, 2);
    device_pool = pipeline::BufferPool::create(pipeline::MemoryKind::kDevice, batch_bytes, cfg.device_index,
                                               static_cast<std::size_t>(cfg.prefetch) + 2);
    copy_stream = cuda::create_stream(cfg.device_index);
    setup_gpu_decode();
  } else {
    if (cfg.decode == DecodeBackend::kGpu) refuse("decode on the GPU needs device cuda");
    host_pool = pipeline::BufferPool::create(pipeline::MemoryKind::kHost, batch_bytes, 0, 1);
  }
  readahead = std::make_unique<pipeline::Readahead>(sampler, planner, cfg.readahead_batches, trace);
  start_producer(0, 0);
}

// Chooses the decode path for a GPU loader (see DecodeBackend) and builds the GPU stage.
void Loader::Impl::setup_gpu_decode() {
  DecodeBackend want = cfg.decode;
  if (want == DecodeBackend::kAuto) {
    if (const char* env = std::getenv("CUBESTREAM_DECODE")) {
      const std::string v = env;
      if (v == "cpu") want = DecodeBackend::kCpu;
      else if (v == "gpu") want = DecodeBackend::kGpu;
    }
  }
  if (want == DecodeBackend::kCpu) return;
  std::string refusals;
  bool any_gpu = false;
  std::string host_decoded;
  for (const auto& src : planner.sources()) {
    if (auto why = pipeline::gpu_assemble_refusal(src, selection.sample_shape().size())) {
      refusals += (refusals.empty() ? "" : "; ") + src.description + ": " + *why;
      continue;
    }
    const pipeline::SourceRoute r = pipeline::route_of(src, /*gpu_zstd=*/true);
    if (r.route == pipeline::UnitRoute::kHostDecode) {
      if (want == DecodeBackend::kGpu) refusals += (refusals.empty() ? "" : "; ") + src.description + ": " + r.why;
      host_decoded += (host_decoded.empty() ? "" : ", ") + src.description;
    } else {
      any_gpu = true;
    }
  }
  if (!refusals.empty()) {
    if (want == DecodeBackend::kGpu) refuse("decode on the GPU was asked for, but " + refusals);
    return;  // kAuto: the CPU path serves everything
  }
  if (!any_gpu && want == DecodeBackend::kAuto) return;
  std::uint64_t cache = cfg.gpu_cache_bytes;
  if (cache == 0) {
    cache = std::uint64_t{2} << 30;
    if (const char* env = std::getenv("CUBESTREAM_GPU_CACHE")) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 10);
      if (end != env && *end == '\0') cache = v;
    }
  }
  double share = cfg.host_decode_share;
  if (const char* env = std::getenv("CUBESTREAM_HOST_DECODE_SHARE"); env && cfg.decode == DecodeBackend::kAuto) {
    const std::string v = env;
    char* end = nullptr;
    const double x = std::strtod(env, &end);
    if (v == "auto") share = -1;
    else if (end != env && *end == '\0' && x >= 0 && x <= 1) share = x;
    else refuse("CUBESTREAM_HOST_DECODE_SHARE must be auto or a number in [0, 1], not '" + v + "'");
  }
  if (want == DecodeBackend::kGpu) {
    // decode=gpu: the GPU decodes every unit it can; a host share contradicts that.
    if (share > 0) refuse("host_decode_share > 0 needs decode=auto (decode=gpu decodes everything on the GPU)");
    share = 0;
  }
  // Whole batches on the host while an adaptive share stands at 1 (see produce()).
  // CUBESTREAM_HOST_BATCHES=off: never; =alternate: every other batch whatever the share (for
  // tests: host-built and GPU-stage batches interleaved, sharing the device batch buffers).
  bool host_batches = share < 0 || std::isnan(share);
  if (const char* env = std::getenv("CUBESTREAM_HOST_BATCHES")) {
    const std::string v = env;
    if (v == "off") host_batches = false;
    else if (v == "alternate") alternate_host_batches = true;
    else if (v != "on") refuse("CUBESTREAM_HOST_BATCHES must be on, off or alternate, not '" + v + "'");
  }
  pace_gpu_work = cfg.gpu_pacing == GpuPacing::kStep;
  if (const char* env = std::getenv("CUBESTREAM_GPU_PACING")) {
    const std::string v = env;
    if (v == "step") pace_gpu_work = true;
    else if (v == "off") pace_gpu_work = false;
    else refuse("CUBESTREAM_GPU_PACING must be step or off, not '" + v + "'");
  }
  gpu = std::make_unique<pipeline::GpuStage>(planner, selection, cfg, *budget, cache, /*gpu_zstd=*/true,
                                             kGpuMaxInFlight);
  // Batches assembled on the GPU have no host batch buffers: the host memory of this path is
  // the pinned staging of the batches in flight, charged as the GPU stage allocates it.
  budget->release(static_cast<std::uint64_t>(cfg.prefetch + 1) * batch_bytes);
  host_share.emplace(share, host_batches);
  decode_path = host_decoded.empty() ? "gpu" : "gpu (host-decoded: " + host_decoded + ")";
}

void Loader::Impl::start_producer(std::int64_t epoch, std::int64_t batch) {
  cur_epoch = epoch;
  cur_batch = batch;
  last_fetch_start = 0;   // the producer's clock restarts with it
  readahead->reset();     // the sampler may have been restored (another seed, another path)
  producer = std::thread([this, epoch, batch] { produce(epoch, batch); });
}

void Loader::Impl::stop_producer() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  budget->cancel();
  if (producer.joinable()) producer.join();
  std::lock_guard<std::mutex> lock(mu);
  ready.clear();
  slots_used = 0;
  stopping = false;
  failed = nullptr;
  budget->reset_cancel();
}

// Hands an entry to the consumer (dropped when the producer is being stopped).
void Loader::Impl::publish(Entry&& e) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping) return;
    const bool is_batch = e.kind == Entry::kBatch;
    ready.push_back(std::move(e));
    if (is_batch) {
      const std::uint64_t depth = ready_batches();
      if (depth > st_ready_max) st_ready_max = depth;
      trace.counter("ready batches", static_cast<std::int64_t>(depth));
    }
  }
  cv.notify_all();
}

// A prefetch slot for the next batch (batches in flight and ready ones hold one each). While
// none is free and batches are in flight, the oldest is finished: that hands it over. False
// when the producer is being stopped.
// `tick`: the consumer's batch count when the slot was granted.
bool Loader::Impl::take_prefetch_slot(Flights& flights, std::uint64_t& tick) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu);
      if (stopping) return false;
      if (slots_used < cfg.prefetch) {
        ++slots_used;
        tick = consumer_ticks;
        return true;
      }
      if (flights.empty() || flights.broken()) {
        cv.wait(lock, [&] { return stopping || slots_used < cfg.prefetch; });
        continue;
      }
    }
    flights.retire_oldest();
  }
}

// Step pacing. Under DDP every rank's step ends in the same collectives, so GPU work that the
// loader slips into one rank's backward pass (its copies, decoders and, when the batch is
// finished, the assembly) delays all ranks; with the launch placed wherever the host's fetch
// happened to end, the ranks' delays land at different moments and add up (the 4-GPU runs of
// docs/benchmarks.md, session 24: decoding every unit on the GPU cost one GPU ~6 ms a step and
// each of four ~22 ms). Paced, a batch fetched ahead waits until the consumer takes its next
// batch after the one that freed this batch's slot (`tick`), i.e. until the next training step
// starts, so the enqueues, and the finish of the batches in flight that follows them in
// produce(), come at the same point of every rank's step. It never waits while no batch is
// ready, nor once the consumer has moved on: a consumer that would wait for data gets it
// unpaced. With no batch ready it first finishes the batches in flight whose GPU work is done
// (with prefetch 2 the one launched last is usually such a batch): they are the consumer's
// next batches, and the gate then waits behind them. With prefetch 3 a finished batch is
// normally ready already, so those finishes, and their assembly, come after the gate too.
// The clock is the consumer's calls to next(): that matches the GPU's timeline where the
// training loop waits for its step (as examples/train_unet.py does to time steps) and lags
// it where the loop runs ahead of its GPU.
void Loader::Impl::await_consumer_step(Flights& flights, std::uint64_t tick, std::int64_t index) {
  auto released = [&] { return stopping || consumer_ticks > tick || ready_batches() == 0; };
  bool finish_done_first = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping || consumer_ticks > tick) return;
    finish_done_first = ready_batches() == 0;
  }
  if (finish_done_first) flights.retire_done();   // publishing takes mu
  const std::int64_t t0 = pipeline::now_ns();
  bool waited = false;
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!released()) {
      waited = true;
      cv.wait(lock);
    }
  }
  if (waited && trace.enabled()) trace.record("gpu pacing wait", t0, pipeline::now_ns(), "batch " + std::to_string(index));
}

std::uint64_t Loader::Impl::ready_batches() const {
  std::uint64_t n = 0;
  for (const auto& r : ready) n += r.kind == Entry::kBatch;
  return n;
}

void Loader::Impl::produce(std::int64_t epoch, std::int64_t batch) {
  // GPU decode: batches are launched without waiting for the GPU and finished in order
  // (statuses checked, assembly queued) once their decode is done, or when their slot is
  // needed. The CPU path builds each batch completely and publishes it at once.
  Flights flights(Flights::Hooks{
      [this](Pending& p) { return !p.flight || gpu->done(*p.flight); },
      [this](Pending& p) {
        if (p.flight) finish_on_gpu(p);
      },
      [this](Pending&& p) { publish(std::move(p.entry)); }});
  try {
    for (;;) {
      const EpochPlan plan = readahead->epoch(epoch);
      for (; batch < plan.len(); ++batch) {
        std::uint64_t tick = 0;
        if (!take_prefetch_slot(flights, tick)) return;
        if (gpu) {
          const std::int64_t cycle_start = pipeline::now_ns();
          const double share = observe_share(cycle_start);
          const bool whole = alternate_host_batches ? batch % 2 == 1 : host_share->whole_batches_on_host();
          if (whole && host_batch_has_room()) {
            // The CPU path's batch (decode, assemble, one copy of the finished batch), handed
            // over in order behind the GPU batches in flight. At an adaptive share of 1 the
            // host decodes every unit anyway; assembling there too leaves the training GPU
            // only the batch's copy, on its own copy engine, where the GPU stage would copy
            // every decoded unit up (2-3x the batch's bytes for float32 chunks cut to bf16
            // patches) and run the assembly kernel beside the model. The build's host time
            // counts as the batch's fetch, so the share steps down, and batches go back to
            // the GPU stage, when that work sets the pace (HostDecodeShare::kWholeHigh).
            Pending p;
            const std::uint64_t units0 = st_units, missing0 = st_missing;
            p.entry.batch = build(plan, batch);
            p.entry.epoch = epoch;
            last_fetch_ns = pipeline::now_ns() - cycle_start - last_buffer_wait_ns;
            st_host_chosen += (st_units - units0) - (st_missing - missing0);
            flights.push(std::move(p));
          } else {
            pipeline::GpuStage::FlightPtr f;
            while (!(f = gpu->open())) {
              if (!flights.retire_oldest()) throw Error(ErrorCode::kInternal, "loader: no staging slot and no batch in flight");
            }
            flights.push(launch_on_gpu(plan, batch, std::move(f), share, flights, tick));
          }
          flights.retire_done();
        } else {
          Entry e;
          e.batch = build(plan, batch);
          e.epoch = epoch;
          publish(std::move(e));
        }
      }
      Entry end;
      end.kind = Entry::kEnd;
      end.epoch = epoch;
      if (flights.empty()) {
        publish(std::move(end));
      } else {
        Pending p;
        p.entry = std::move(end);
        flights.push(std::move(p));
        flights.retire_done();
      }
      ++epoch;
      batch = 0;
    }
  } catch (...) {
    std::exception_ptr error = std::current_exception();
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
    }
    // Batches launched before the failing one are handed over first, as an unpipelined
    // producer would have (unless the failure was one of theirs: the queue is then broken).
    try {
      flights.retire_all();
    } catch (...) {
      error = std::current_exception();
    }
    Entry err;
    err.kind = Entry::kError;
    err.error = error;
    publish(std::move(err));
  }
}

namespace {

// Charges a task's memory and releases what is left of it on every way out.
class Reservation {
 public:
  Reservation(pipeline::MemoryBudget& b, std::uint64_t bytes) : b_(b), held_(bytes) { b_.acquire(bytes); }
  ~Reservation() { b_.release(held_); }
  void add_forced(std::uint64_t bytes) {
    b_.force(bytes);
    held_ += bytes;
  }
  // Hands `bytes` of the charge over to an object that releases them itself.
  void hand_over(std::uint64_t bytes) { held_ -= std::min(held_, bytes); }

 private:
  pipeline::MemoryBudget& b_;
  std::uint64_t held_;
};

}  // namespace

// Block assembly. A unit the host decodes whole is written to memory (4 MiB for a 721 x 1440
// float32 field), read back by the assembly and, mostly, dropped from the cache unused. A
// blosc unit's blocks are independent, so each is decoded into a per-thread buffer that
// stays in cache and converted into the batch from there (Array::decode_unit_blocks,
// assemble_piece_band). The unit then never enters the cache, so this is chosen where the
// cache rarely gives a unit back anyway: samples drawn in random order (ShuffleMode::kSample;
// in order or by chunk, a unit's next use is near) from data more than four times the
// cache's size (a unit's next use then mostly comes after its eviction). The data counted is what the sampler draws from: each selected channel's extent
// over the sampler's dims, in every time part (a level left out is not read). Static
// variables' units serve every batch, so they always go through the cache.
// CUBESTREAM_BLOCK_ASSEMBLY=on|off overrides the choice; a unit whose chain has no
// independent blocks or whose pieces are not contiguous rows is decoded whole either way.
// On the 16-core H100 machine this took the host's time per unit from 5.4 to 3.9 ms (U-Net
// store, docs/benchmarks.md, session 25). The block path still charges the budget for the
// decoded unit it does not build, for the task's duration: both charges are taken at once,
// as on the whole path, so that a task never waits for memory while holding some.
bool Loader::Impl::choose_block_assembly(std::uint64_t cache_capacity) const {
  if (const char* env = std::getenv("CUBESTREAM_BLOCK_ASSEMBLY")) {
    const std::string v = env;
    if (v == "on") return true;
    if (v == "off") return false;
    if (v != "auto") refuse("CUBESTREAM_BLOCK_ASSEMBLY must be auto, on or off, not '" + v + "'");
  }
  if (cfg.sampler.shuffle != ShuffleMode::kSample) return false;
  std::set<std::string> sample_dims;
  for (const auto& d : selection.sampler_dims()) sample_dims.insert(d.name);
  const ConcatenatedTime& source = selection.source();
  std::uint64_t data = 0;
  for (const Channel& ch : selection.channels()) {
    if (ch.from_static) continue;
    for (std::size_t p = 0; p < source.num_parts(); ++p) {
      const Variable& v = source.part(p).variable(ch.variable);
      std::uint64_t n = v.array.dtype().size;
      for (std::size_t d = 0; d < v.dims.size() && d < v.array.shape().size(); ++d) {
        if (sample_dims.count(v.dims[d])) n *= static_cast<std::uint64_t>(v.array.shape()[d]);
      }
      data += n;
    }
  }
  return data / 4 > cache_capacity;
}

// Decodes the fetched unit of `task` block by block into the batch; false (nothing written)
// where the unit's chain or a piece does not allow it. `ns_blocks`: time spent converting.
bool Loader::Impl::assemble_by_blocks(const pipeline::UnitTask& task, const pipeline::UnitSource& src,
                                      const Array::EncodedUnit& enc, void* in_ptr, void* tgt_ptr,
                                      std::int64_t& ns_blocks) {
  // Rows shorter than this would make the per-block walk over the piece's rows cost more
  // than the conversion it saves.
  constexpr std::int64_t kMinRun = 64;
  if (src.is_static) return false;
  for (const auto& pc : task.pieces) {
    if (!pipeline::piece_rows_contiguous(pc, kMinRun)) return false;
  }
  const auto& channels = selection.channels();
  const std::size_t esize = src.array.dtype().size;
  return src.array.decode_unit_blocks(enc, [&](std::size_t offset, const std::uint8_t* data, std::size_t bytes) {
    const std::int64_t t0 = pipeline::now_ns();
    for (const auto& pc : task.pieces) {
      pipeline::assemble_piece_band(pc, data, static_cast<std::int64_t>(offset / esize),
                                    static_cast<std::int64_t>(bytes / esize), src, channels[pc.channel].norm,
                                    cfg.selection.nan_fill, cfg.dtype, pc.tensor == 0 ? in_ptr : tgt_ptr);
    }
    ns_blocks += pipeline::now_ns() - t0;
  });
}

void Loader::Impl::run_task(const pipeline::UnitTask& task, void* in_ptr, void* tgt_ptr) {
  const pipeline::UnitSource& src = planner.sources()[task.source];
  const std::int64_t t0 = pipeline::now_ns();
  std::shared_ptr<const pipeline::DecodedUnit> unit = cache->find(task.cache_key);
  std::int64_t t2 = t0;
  if (unit) {
    ++st_hits;
  } else {
    const std::uint64_t ub = src.array.unit_bytes();
    const std::uint64_t enc_est = ub + ub / 64 + (64u << 10);
    Reservation res(*budget, enc_est + ub);
    // The buffer goes back to the pool on every way out, an error's included.
    struct Held {
      pipeline::ReadBuffers& pool;
      Array::EncodedUnit enc;
      ~Held() { pool.give(std::move(enc)); }
    } held{reads, reads.take()};
    Array::EncodedUnit& enc = held.enc;
    {
      pipeline::NvtxRange r("cubestream fetch");
      src.array.fetch_unit(task.unit, enc);
    }
    const std::int64_t t1 = pipeline::now_ns();
    if (enc.bytes.size() > enc_est) res.add_forced(enc.bytes.size() - enc_est);
    // What both ways of decoding count once the unit is decoded (decode_end), less the time
    // spent converting into the batch on the way (block assembly).
    auto count_unit = [&](std::int64_t decode_end, std::int64_t ns_converting, const char* stage) {
      ++st_units;
      st_fetched += enc.bytes_fetched;
      st_decoded += ub;
      ns_fetch += t1 - t0;
      ns_decode += decode_end - t1 - ns_converting;
      if (trace.enabled()) {
        trace.record("fetch", t0, t1, src.description + " " + enc.key);
        trace.record(stage, t1, decode_end, src.description);
      }
    };
    std::int64_t ns_blocks = 0;
    if (block_assembly && assemble_by_blocks(task, src, enc, in_ptr, tgt_ptr, ns_blocks)) {
      count_unit(pipeline::now_ns(), ns_blocks, "decode + assemble by blocks");
      ++st_block_assembled;
      ns_assemble += ns_blocks;
      return;
    }
    auto decoded = std::make_shared<pipeline::DecodedUnit>(*budget, ub);
    res.hand_over(ub);
    {
      pipeline::NvtxRange r("cubestream decode");
      src.array.decode_unit(enc, decoded->data(), decoded->size());
    }
    t2 = pipeline::now_ns();
    count_unit(t2, 0, "decode");
    if (enc.missing) ++st_missing;
    unit = std::move(decoded);
  }
  {
    pipeline::NvtxRange r("cubestream assemble");
    const auto& channels = selection.channels();
    for (const auto& pc : task.pieces) {
      assemble_piece(pc, unit->data(), src, channels[pc.channel].norm, cfg.selection.nan_fill, cfg.dtype,
                     pc.tensor == 0 ? in_ptr : tgt_ptr);
    }
  }
  const std::int64_t t3 = pipeline::now_ns();
  ns_assemble += t3 - t2;
  if (trace.enabled()) trace.record("assemble", t2, t3, src.description);
  cache->insert(task.cache_key, std::move(unit));
}

Batch Loader::Impl::build(const EpochPlan& plan, std::int64_t index) {
  const std::int64_t tb0 = pipeline::now_ns();
  Batch b;
  b.epoch = plan.epoch();
  b.index = index;
  pipeline::Readahead::Planned planned = readahead->take(plan, index);
  b.samples = std::move(planned.samples);
  const auto n = static_cast<std::int64_t>(b.samples.size());
  const pipeline::BatchPlan bp = std::move(planned.plan);
  // The next batches' reads start now, beside this batch's (see readahead.hpp).
  readahead->fetch_starts(plan, index, bp, [this](const std::string& key) { return cache->contains(key); });
  const std::int64_t tb1 = pipeline::now_ns();
  if (trace.enabled()) {
    trace.record("plan", tb0, tb1, "epoch " + std::to_string(b.epoch) + " batch " + std::to_string(index));
  }

  ++st_host_built;
  pipeline::PoolBlock hb = host_pool->take();
  last_buffer_wait_ns = 0;
  if (hb.event_pending) {
    const std::int64_t w0 = pipeline::now_ns();
    cuda::event_synchronize(hb.event);  // its previous copy to the GPU has finished
    last_buffer_wait_ns = pipeline::now_ns() - w0;
    hb.event_pending = false;
  }
  std::shared_ptr<TensorStorage> host = host_pool->wrap(hb);
  auto* base = static_cast<std::uint8_t*>(hb.data);
  void* in_ptr = base;
  void* tgt_ptr = base + tgt_offset;

  ThreadPool& pool = ThreadPool::shared(threads);
  auto run = [&](std::size_t i) { run_task(bp.tasks[i], in_ptr, tgt_ptr); };
  if (threads <= 1 || bp.tasks.size() <= 1) {
    for (std::size_t i = 0; i < bp.tasks.size(); ++i) run(i);
  } else {
    pool.parallel_for(bp.tasks.size(), run);
  }

  const auto nt = static_cast<std::int64_t>(sampler.target_regions(b.samples.front()).size());
  const auto in_shape = tensor_shape(n, static_cast<std::int64_t>(sampler.input_regions(b.samples.front()).size()));
  const auto tgt_shape = tensor_shape(n, nt);

  auto make = [&](std::shared_ptr<TensorStorage> st, void* data, std::vector<std::int64_t> shape) {
    Tensor t;
    t.storage = std::move(st);
    t.data = data;
    t.shape = std::move(shape);
    t.dtype = cfg.dtype;
    t.device = t.storage->device;
    t.device_index = t.storage->device_index;
    return t;
  };
  const std::size_t esize = cfg.dtype == OutputDType::kFloat32 ? 4 : 2;
  const std::size_t used_in = static_cast<std::size_t>(n * selection.input_elements()) * esize;
  const std::size_t used_tgt = static_cast<std::size_t>(n * selection.target_elements()) * esize;
  if (cfg.device == DeviceKind::kCuda) {
    const std::int64_t tc0 = pipeline::now_ns();
    pipeline::NvtxRange r("cubestream transfer");
    pipeline::PoolBlock db = device_pool->take();
    if (db.event_pending) {
      // The consumer's last use of this buffer, on its stream: the copy waits on the GPU.
      cuda::stream_wait_event(copy_stream, db.event, cfg.device_index);
      db.event_pending = false;
    }
    std::shared_ptr<TensorStorage> dev = device_pool->wrap(db);
    auto* dbase = static_cast<std::uint8_t*>(db.data);
    cuda::copy_to_device_async(dbase, base, used_in, copy_stream, cfg.device_index);
    if (used_tgt) cuda::copy_to_device_async(dbase + tgt_offset, base + tgt_offset, used_tgt, copy_stream, cfg.device_index);
    void* ev = cuda::create_event(cfg.device_index);
    const int dev_index = cfg.device_index;
    b.ready_event = std::shared_ptr<void>(ev, [dev_index](void* e) { cuda::destroy_event(e, dev_index); });
    cuda::record_event(ev, copy_stream, cfg.device_index);
    dev->written = b.ready_event;
    // The staging buffer may be refilled once this copy is done.
    if (!host->block.event) host->block.event = cuda::create_event(cfg.device_index);
    cuda::record_event(host->block.event, copy_stream, cfg.device_index);
    host->block.event_pending = true;
    host.reset();
    b.inputs = make(dev, dbase, in_shape);
    if (nt > 0) b.targets = make(dev, dbase + tgt_offset, tgt_shape);
    const std::int64_t tc1 = pipeline::now_ns();
    ns_transfer += tc1 - tc0;
    if (trace.enabled()) trace.record("transfer (enqueue)", tc0, tc1);
  } else {
    b.inputs = make(host, in_ptr, in_shape);
    if (nt > 0) b.targets = make(host, tgt_ptr, tgt_shape);
  }

  finish_batch(b, tb0);
  return b;
}

// Time stamps of the samples and the batch's trace event.
void Loader::Impl::finish_batch(Batch& b, std::int64_t tb0) {
  // Each sample's time stamp: the anchor with a window, else the first step of its region.
  const auto& sdims = selection.sampler_dims();
  std::int64_t time_k = -1;
  for (std::size_t k = 0; k < sdims.size(); ++k)
    if (sdims[k].name == selection.source().time_dim()) time_k = static_cast<std::int64_t>(k);
  const auto& times = selection.source().times();
  for (const auto& s : b.samples) {
    std::int64_t t = s.anchor >= 0 ? s.anchor : (time_k >= 0 ? s.start[static_cast<std::size_t>(time_k)] : -1);
    if (t >= 0 && static_cast<std::size_t>(t) < times.size() && times[static_cast<std::size_t>(t)].unix_ns) {
      b.time_ns.push_back(times[static_cast<std::size_t>(t)].unix_ns);
    } else {
      b.time_ns.push_back(std::nullopt);
    }
  }
  if (trace.enabled()) trace.record("batch", tb0, pipeline::now_ns(), "batch " + std::to_string(b.index));
}

// The GPU path's host decode share for the next batch, after observing the last one: its host
// time (last_fetch_ns: the fetch, or the whole build of a batch built on the host), the cycle
// from its start to `cycle_start`, the consumer's starving wait meanwhile and its mean step
// over the batches it took meanwhile (see next()).
double Loader::Impl::observe_share(std::int64_t cycle_start) {
  const std::int64_t waited = ns_wait_starving.load();
  std::int64_t step_total = 0;
  std::uint64_t steps = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    step_total = consumer_step_ns;
    steps = consumer_steps;
  }
  const std::int64_t step = steps > last_steps
                                ? (step_total - last_step_total) / static_cast<std::int64_t>(steps - last_steps)
                                : 0;
  if (last_fetch_start) {
    host_share->observe(last_fetch_ns, cycle_start - last_fetch_start, waited - last_wait_total, step);
  }
  last_wait_total = waited;
  last_step_total = step_total;
  last_steps = steps;
  last_fetch_start = cycle_start;
  const double share = host_share->share();
  host_share_now = share;
  host_share_trials = static_cast<std::uint64_t>(host_share->trials());
  host_share_trials_kept = static_cast<std::uint64_t>(host_share->trials_kept());
  return share;
}

// Whether the next batch can be built whole on the host as far as memory goes. Its tasks
// charge their units to the memory limit and wait for room (Reservation), while on this path
// the GPU stage's pinned staging may hold most of the limit for the loader's life: build only
// where the running tasks' share fits beside what is held, the host cache aside (the budget
// reclaims it). The first time, the two pinned batch buffers are charged and pinned (one is
// filled while the other's copy runs; the pool hands out the longest idle one); where the
// limit has no room for them, whole batches are off for good.
bool Loader::Impl::host_batch_has_room() {
  if (host_batch_buffers == HostBatchBuffers::kRefused) return false;
  if (host_batch_buffers == HostBatchBuffers::kNotYet) {
    constexpr int kHostBatchBuffers = 2;
    if (!budget->try_acquire(kHostBatchBuffers * static_cast<std::uint64_t>(batch_bytes))) {
      host_batch_buffers = HostBatchBuffers::kRefused;
      host_share->disable_whole_batches();
      return false;
    }
    pipeline::PoolBlock blocks[kHostBatchBuffers];
    for (auto& b : blocks) b = host_pool->take();
    for (auto& b : blocks) host_pool->give_back(b);
    host_batch_buffers = HostBatchBuffers::kPinned;
  }
  const std::uint64_t used = budget->in_use(), cached = cache->bytes();
  const std::uint64_t tasks = static_cast<std::uint64_t>(threads) * task_reserve;
  return used - std::min(used, cached) + tasks <= budget->limit();
}

// The GPU-native path, first half: plan, fetch into the flight's staging slot, launch the
// copy and the decoders. Returns without waiting for the GPU.
Loader::Impl::Pending Loader::Impl::launch_on_gpu(const EpochPlan& plan, std::int64_t index,
                                                  pipeline::GpuStage::FlightPtr flight, double share,
                                                  Flights& flights, std::uint64_t tick) {
  Pending p;
  p.tb0 = pipeline::now_ns();
  p.flight = std::move(flight);
  Batch& b = p.entry.batch;
  b.epoch = plan.epoch();
  b.index = index;
  pipeline::Readahead::Planned planned = readahead->take(plan, index);
  b.samples = std::move(planned.samples);
  p.entry.epoch = plan.epoch();
  pipeline::BatchPlan bp = std::move(planned.plan);
  // The next batches' reads start now, beside this batch's (see readahead.hpp); units in the
  // device cache (batches launched before this one included) need no reads.
  readahead->fetch_starts(plan, index, bp, [this](const std::string& key) { return gpu->cached(key); });
  const std::int64_t t1 = pipeline::now_ns();
  if (trace.enabled()) {
    trace.record("plan", p.tb0, t1, "epoch " + std::to_string(b.epoch) + " batch " + std::to_string(index));
  }
  pipeline::GpuStageStats gs;
  {
    pipeline::NvtxRange r("cubestream gpu fetch");
    // Staging sized for decoded units wherever the host may decode some (an adaptive share
    // may rise at any batch): see GpuStage::fetch.
    gpu->fetch(*p.flight, std::move(bp), ThreadPool::shared(threads), threads, share,
               host_share->adaptive() || share > 0, gs);
  }
  const std::int64_t t_fetched = pipeline::now_ns();
  last_fetch_ns = t_fetched - t1;
  if (pace_gpu_work) await_consumer_step(flights, tick, index);
  const std::int64_t t2 = pipeline::now_ns();
  {
    pipeline::NvtxRange r("cubestream gpu launch");
    gpu->launch(*p.flight, gs);
  }
  const std::int64_t t3 = pipeline::now_ns();
  if (trace.enabled()) {
    trace.record("gpu fetch", t1, t_fetched, "batch " + std::to_string(index));
    trace.record("gpu launch (enqueue)", t2, t3, "batch " + std::to_string(index));
  }
  st_units += gs.units;
  st_missing += gs.missing;
  st_hits += gs.hits;
  st_fetched += gs.bytes_fetched;
  st_decoded += gs.bytes_decoded;
  ns_fetch += gs.ns_fetch;
  ns_decode += gs.ns_decode;
  st_host_chosen += gs.host_chosen;
  st_pinned_calls += gs.pinned_calls;
  ns_pinned += gs.ns_pinned;
  return p;
}

// Second half, in launch order: the statuses checked, the assembly queued into a device
// batch buffer, the batch's ready event recorded after it.
void Loader::Impl::finish_on_gpu(Pending& p) {
  const std::int64_t t0 = pipeline::now_ns();
  Batch& b = p.entry.batch;
  const auto n = static_cast<std::int64_t>(b.samples.size());
  pipeline::PoolBlock db = device_pool->take();
  // The consumer's last use of a recycled buffer: the assembly waits for it on the GPU.
  void* buffer_free = db.event_pending ? db.event : nullptr;
  db.event_pending = false;
  std::shared_ptr<TensorStorage> dev = device_pool->wrap(db);
  auto* dbase = static_cast<std::uint8_t*>(dev->block.data);
  const auto nt = static_cast<std::int64_t>(sampler.target_regions(b.samples.front()).size());
  void* ev = cuda::create_event(cfg.device_index);
  const int dev_index = cfg.device_index;
  b.ready_event = std::shared_ptr<void>(ev, [dev_index](void* e) { cuda::destroy_event(e, dev_index); });
  pipeline::GpuStageStats gs;
  {
    pipeline::NvtxRange r("cubestream gpu finish");
    gpu->finish(*p.flight, dbase, nt > 0 ? dbase + tgt_offset : nullptr, buffer_free, ev, gs);
  }
  dev->written = b.ready_event;
  p.flight.reset();
  st_gpu_decoded += gs.gpu_decoded;
  st_gpu_fallback += gs.fallbacks;
  ns_decode += gs.ns_decode;
  ns_assemble += gs.ns_assemble;
  if (trace.enabled()) trace.record("gpu finish (wait + enqueue)", t0, pipeline::now_ns(), "batch " + std::to_string(b.index));
  auto make = [&](void* data, std::int64_t steps) {
    Tensor t;
    t.storage = dev;
    t.data = data;
    t.shape = tensor_shape(n, steps);
    t.dtype = cfg.dtype;
    t.device = DeviceKind::kCuda;
    t.device_index = cfg.device_index;
    return t;
  };
  b.inputs = make(dbase, static_cast<std::int64_t>(sampler.input_regions(b.samples.front()).size()));
  if (nt > 0) b.targets = make(dbase + tgt_offset, nt);
  finish_batch(b, p.tb0);
}

// ---- the public face ------------------------------------------------------------------------

Loader::Loader(ConcatenatedTime source, LoaderConfig config, std::optional<Dataset> statics)
    : impl_(std::make_unique<Impl>(std::move(source), std::move(config), std::move(statics))) {}

Loader::~Loader() = default;

const LoaderConfig& Loader::config() const { return impl_->cfg; }
const Sampler& Loader::sampler() const { return impl_->sampler; }
const Selection& Loader::selection() const { return impl_->selection; }
std::vector<std::string> Loader::channel_names() const { return impl_->selection.channel_names(); }
std::int64_t Loader::len() const { return impl_->sampler.epoch(0).len(); }

std::int64_t Loader::epoch() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cur_epoch;
}

std::vector<std::int64_t> Loader::input_shape() const {
  const auto& s = impl_->sampler;
  return impl_->tensor_shape(s.config().batch_size, static_cast<std::int64_t>(s.input_regions(s.sample(0)).size()));
}

std::vector<std::int64_t> Loader::target_shape() const {
  const auto& s = impl_->sampler;
  const auto nt = static_cast<std::int64_t>(s.target_regions(s.sample(0)).size());
  if (nt == 0) return {};
  return impl_->tensor_shape(s.config().batch_size, nt);
}

std::optional<Batch> Loader::next() {
  Impl& m = *impl_;
  // Whether this wait can mean the GPU is short of data: not while work the consumer queued
  // before its latest release still runs (a training loop ahead of its GPU waits here for
  // batches the busy GPU has not decoded yet; that wait must not pull the host decode share
  // down, see HostDecodeShare). One event query per batch.
  const bool gpu_caught_up = !m.gpu || m.device_pool->consumer_caught_up();
  const std::int64_t t0 = pipeline::now_ns();
  Impl::Entry e;
  {
    std::unique_lock<std::mutex> lock(m.mu);
    if (m.failed) std::rethrow_exception(m.failed);
    if (m.consumer_last_out) {
      m.consumer_step_ns += t0 - m.consumer_last_out;
      ++m.consumer_steps;
    }
    m.cv.wait(lock, [&] { return !m.ready.empty(); });
    e = std::move(m.ready.front());
    m.ready.pop_front();
    m.consumer_last_out = e.kind == Impl::Entry::kBatch ? pipeline::now_ns() : 0;
    if (e.kind == Impl::Entry::kBatch) {
      --m.slots_used;
      ++m.consumer_ticks;
    }
    if (e.kind == Impl::Entry::kError) m.failed = e.error;
    if (e.kind == Impl::Entry::kEnd) {
      m.cur_epoch = e.epoch + 1;
      m.cur_batch = 0;
    }
    if (e.kind == Impl::Entry::kBatch) {
      m.cur_epoch = e.batch.epoch;
      m.cur_batch = e.batch.index + 1;
    }
  }
  m.cv.notify_all();
  const std::int64_t t1 = pipeline::now_ns();
  m.ns_wait += t1 - t0;
  if (gpu_caught_up) m.ns_wait_starving += t1 - t0;
  if (m.trace.enabled()) m.trace.record("consumer wait", t0, t1);
  if (e.kind == Impl::Entry::kError) std::rethrow_exception(e.error);
  if (e.kind == Impl::Entry::kEnd) return std::nullopt;
  ++m.st_batches;
  m.st_samples += e.batch.samples.size();
  m.st_delivered += e.batch.inputs.num_bytes() + (e.batch.targets ? e.batch.targets->num_bytes() : 0);
  return std::move(e.batch);
}

void Loader::set_epoch(std::int64_t epoch) {
  if (epoch < 0) refuse("epoch must be >= 0, not " + std::to_string(epoch));
  {
    // Already at the start of that epoch (the usual loop calls set_epoch(e) right after epoch
    // e-1 ended, and the producer prefetches across epoch ends): what is prepared is exactly
    // what a restart would prepare again, so keep it. An error, delivered or waiting, still
    // restarts: a transient failure gets its retry.
    std::lock_guard<std::mutex> lock(impl_->mu);
    bool error_waiting = impl_->failed != nullptr;
    for (const auto& e : impl_->ready) error_waiting = error_waiting || e.kind == Impl::Entry::kError;
    if (!error_waiting && impl_->cur_epoch == epoch && impl_->cur_batch == 0) return;
  }
  impl_->stop_producer();
  impl_->start_producer(epoch, 0);
}

SamplerState Loader::state() const {
  SamplerState s = impl_->sampler.state();
  std::lock_guard<std::mutex> lock(impl_->mu);
  s.epoch = impl_->cur_epoch;
  s.batch = impl_->cur_batch;
  return s;
}

void Loader::load_state(const SamplerState& state) {
  // Validate on a copy first, so a refused state leaves the loader running as it was.
  Sampler probe = impl_->sampler;
  probe.restore(state);
  impl_->stop_producer();
  impl_->sampler.restore(state);
  impl_->start_producer(state.epoch, state.batch);
}

LoaderStats Loader::stats() const {
  const Impl& m = *impl_;
  LoaderStats s;
  s.batches = m.st_batches;
  s.samples = m.st_samples;
  s.units_fetched = m.st_units;
  s.units_missing = m.st_missing;
  s.cache_hits = m.st_hits;
  s.bytes_fetched = m.st_fetched;
  s.bytes_decoded = m.st_decoded;
  s.bytes_delivered = m.st_delivered;
  s.fetch_s = static_cast<double>(m.ns_fetch.load()) / 1e9;
  s.decode_s = static_cast<double>(m.ns_decode.load()) / 1e9;
  s.assemble_s = static_cast<double>(m.ns_assemble.load()) / 1e9;
  s.transfer_s = static_cast<double>(m.ns_transfer.load()) / 1e9;
  s.consumer_wait_s = static_cast<double>(m.ns_wait.load()) / 1e9;
  s.wall_s = static_cast<double>(pipeline::now_ns() - m.stats_origin) / 1e9;
  s.ready_queue_max = m.st_ready_max;
  s.memory_peak = m.budget->peak();
  s.memory_limit = m.budget->limit();
  s.cache_bytes = m.cache->bytes();
  s.units_gpu_decoded = m.st_gpu_decoded;
  s.units_gpu_fallback = m.st_gpu_fallback;
  s.units_host_decoded = m.st_host_chosen;
  s.host_decode_share = m.gpu ? m.host_share_now.load() : 1.0;
  s.host_share_trials = m.host_share_trials;
  s.host_share_trials_kept = m.host_share_trials_kept;
  s.batches_built_on_host = m.st_host_built;
  s.staging_pinned_calls = m.st_pinned_calls;
  s.staging_pinned_s = static_cast<double>(m.ns_pinned.load()) / 1e9;
  s.decode_path = m.decode_path;
  s.units_hinted = m.readahead->hinted();
  s.units_block_assembled = m.st_block_assembled;
  return s;
}

void Loader::reset_stats() {
  Impl& m = *impl_;
  for (auto* c : {&m.st_batches, &m.st_samples, &m.st_units, &m.st_missing, &m.st_hits, &m.st_fetched, &m.st_decoded,
                  &m.st_delivered, &m.st_ready_max, &m.st_gpu_decoded, &m.st_gpu_fallback, &m.st_host_chosen, &m.st_pinned_calls,
                  &m.st_host_built, &m.st_block_assembled})
    *c = 0;
  for (auto* c : {&m.ns_fetch, &m.ns_decode, &m.ns_assemble, &m.ns_transfer, &m.ns_wait, &m.ns_pinned}) *c = 0;
  m.stats_origin = pipeline::now_ns();
  m.readahead->reset_count();
  m.budget->reset_peak();
  m.trace.clear();
}

nlohmann::json Loader::trace_json() const { return impl_->trace.to_json(); }

}  // namespace cubestream
