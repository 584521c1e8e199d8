// The loader's GPU-native decode and assemble stage (device = kCuda, decode on the GPU).
//
// A batch goes through four named steps, so that several batches are in flight at once:
//   open    takes a staging slot (pinned host + device staging, meta buffers, events);
//   fetch   (host threads) looks every unit up in the device unit cache and fetches the
//           others straight into the slot's pinned staging arena: compressed bytes of units
//           whose codec the GPU decodes (blosc, lz4, zstd after `bytes`), decoded bytes of
//           the rest (decoded on the host, as are missing units: their fill value) and of
//           the share of GPU-decodable units the host takes over (host_decode_share.hpp);
//   launch  enqueues, without waiting, the copies to the GPU (copy stream: compressed bytes
//           into the slot's device staging, in runs; raw and host-decoded units straight into
//           their device units, so their bytes cross PCIe once and are not copied again on
//           the device), fresh device units and the batched decoders (decode stream, after
//           the compressed bytes' event), and the copy of the decoders' statuses back;
//   finish  waits for that batch's statuses only (its event), decodes on the host what the
//           GPU left as kUnsupported (same bytes: the fallback rule), turns other statuses
//           into errors, and enqueues the fused assembly kernel (cuda/assemble) on the
//           assemble stream, after the decode's event and the output buffer's event; the
//           batch's ready event is recorded there.
// Copies, decodes and assemblies of consecutive batches overlap on their streams; nothing
// synchronises the device or a whole stream on the way. A slot is reused only after its
// last batch's GPU work is done (its event), so the memory in use is the slots' arenas
// (bounded by the loader's MemoryBudget, see StagingSlots) plus the device units of the
// batches in flight. Decoded units stay in a bounded LRU cache in device memory
// (gpu_cache_bytes) from launch on, so the next batch in flight can use them; a unit freed
// is freed stream-ordered on the assemble stream, after every kernel that read it. A batch
// dropped before its finish (stop, error) takes its units back out of the cache: their
// statuses were never checked.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cubestream/bytes.hpp"
#include "cubestream/loader.hpp"
#include "cuda/assemble/assemble.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "pipeline/batch_plan.hpp"
#include "pipeline/memory_budget.hpp"
#include "pipeline/read_buffers.hpp"
#include "pipeline/staging_arena.hpp"
#include "zarr/gpu_route.hpp"

namespace cubestream {
class ThreadPool;
}

namespace cubestream::pipeline {

// How one source's units reach the GPU (kHostDecode: decoded on the host, the decoded unit
// copied to the GPU); the chain's part of the decision is zarr::chain_route's.
using zarr::UnitRoute;
using SourceRoute = zarr::ChainRoute;

// The route of a source's units: GPU decode needs a chain of `bytes` (little-endian or
// one-byte elements) and at most one of blosc / lz4 / zstd, possibly inside sharding.
// `gpu_zstd` false sends zstd units to the host decoder (the loader passes true: the
// block-parallel GPU Zstandard decoder outruns libzstd on 16 cores, 1.4-2.4x on the H100).
SourceRoute route_of(const UnitSource& source, bool gpu_zstd);

// Whether the assemble kernel can take a source (element type, at most 4 missing values,
// at most 8 layout dims); nullopt if it can, else the reason.
std::optional<std::string> gpu_assemble_refusal(const UnitSource& source, std::size_t layout_dims);

struct GpuStageStats {
  std::uint64_t units = 0, missing = 0, hits = 0, bytes_fetched = 0, bytes_decoded = 0;
  std::uint64_t gpu_decoded = 0, host_decoded = 0, fallbacks = 0;
  std::uint64_t host_chosen = 0;  // GPU-decodable units the fetch threads decoded (host_share)
  std::uint64_t pinned_calls = 0;  // pinned staging allocations and frees since the last fetch/launch
  std::int64_t ns_pinned = 0;      // and their time
  // ns_decode: host decoding plus the time finish() waited for the GPU's statuses.
  std::int64_t ns_fetch = 0, ns_decode = 0, ns_assemble = 0;
};

class GpuStage {
 public:
  // max_in_flight: staging slots at most (batches between open() and finish()).
  GpuStage(const BatchPlanner& planner, const Selection& selection, const LoaderConfig& config, MemoryBudget& budget,
           std::uint64_t cache_bytes, bool gpu_zstd, std::size_t max_in_flight);
  ~GpuStage();
  GpuStage(const GpuStage&) = delete;
  GpuStage& operator=(const GpuStage&) = delete;

  // One batch between open() and finish(). Dropping it unfinished abandons it (see above).
  struct Flight;
  struct FlightDeleter {
    void operator()(Flight* f) const noexcept;
  };
  using FlightPtr = std::unique_ptr<Flight, FlightDeleter>;

  // A batch with a staging slot of its own, or null when every slot is busy and no other
  // fits the memory bound: finish the oldest batch in flight and ask again.
  FlightPtr open();
  // host_share: the fraction of the batch's GPU-decodable units that the fetch threads decode
  // themselves (HostDecodeShare::picks chooses which); they reach the GPU decoded.
  // room_for_decoded: make the slot's arena hold every unit of the batch decoded before
  // fetching, where the memory limit has room (an adaptive share moves batch by batch; growing
  // the pinned arena as it rises would pin memory in the middle of training).
  void fetch(Flight& f, BatchPlan plan, ThreadPool& pool, int threads, double host_share, bool room_for_decoded,
             GpuStageStats& stats);
  void launch(Flight& f, GpuStageStats& stats);
  // Whether finish() would not wait for the GPU.
  bool done(const Flight& f) const;
  // Assembles into the device tensors (targets null without targets), ordered after
  // `buffer_free` (an event, or null) on the assemble stream; records `ready` after it.
  void finish(Flight& f, void* d_inputs, void* d_targets, void* buffer_free, void* ready, GpuStageStats& stats);

  const std::vector<SourceRoute>& routes() const { return routes_; }
  // Whether the device unit cache holds `key`, without counting as a use. Like every call
  // above, from the thread that drives the stage (the loader's producer).
  bool cached(const std::string& key) const { return index_.count(key) != 0; }

 private:
  struct DeviceUnit;
  struct SlotGpu;
  struct Staged;
  std::shared_ptr<DeviceUnit> cache_find(const std::string& key);
  void cache_insert(const std::string& key, std::shared_ptr<DeviceUnit> unit);
  void cache_forget(const std::string& key, const DeviceUnit* unit);
  void abandon(Flight& f) noexcept;
  void fetch_unit(Flight& f, std::size_t j, std::int64_t& ns_fetch, std::int64_t& ns_decode);
  void check_statuses(Flight& f, GpuStageStats& stats);
  void enqueue_assembly(Flight& f, void* d_inputs, void* d_targets);
  void grow_device(void*& buf, std::size_t& cap, std::size_t bytes, void* stream);
  std::uint8_t* grow_pinned(void*& buf, std::size_t& cap, std::size_t bytes);
  void* pinned_alloc(std::size_t bytes);
  void pinned_free(void* p) noexcept;
  void take_pinned_counts(GpuStageStats& st);

  const BatchPlanner& planner_;
  const Selection& selection_;
  const LoaderConfig& cfg_;
  int device_;
  MemoryBudget& budget_;
  std::vector<SourceRoute> routes_;
  bool host_routes_ = false;  // some source's units are decoded on the host (UnitRoute::kHostDecode)
  void* copy_stream_ = nullptr;      // host-to-device copies of the staging areas
  void* decode_stream_ = nullptr;    // device units, batched decoders, statuses back
  void* assemble_stream_ = nullptr;  // fallback copies, assembly, unit frees
  // The stage's stream-ordered device memory (units, staging, scratch): a pool of its own
  // that keeps what a batch frees for the next (cuda::create_device_pool), destroyed with the
  // stage; null: the device's default pool (CUBESTREAM_GPU_POOL=default, for A/B runs).
  void* device_pool_ = nullptr;
  // Raw and host-decoded units reach the GPU in one batched copy per batch
  // (cuda::copy_batch_to_device_async); false: one copy each (CUBESTREAM_GPU_COPY=per-unit).
  bool batched_unit_copies_ = true;
  // Pinned allocations and frees not yet reported (take_pinned_counts). Declared before
  // slots_: the arenas' destructors free through pinned_free, which counts here.
  std::atomic<std::uint64_t> pinned_calls_{0};
  std::atomic<std::int64_t> ns_pinned_{0};
  StagingSlots slots_;
  std::vector<std::unique_ptr<SlotGpu>> slot_gpu_;
  // The run's first batch sizes every slot (see fetch and launch): the arena and meta sizes
  // it chose, which slots' later first batches reuse; 0 until then.
  bool staging_planned_ = false;
  std::size_t staging_room_ = 0;
  std::size_t meta_room_ = 0;
  void ensure_slot_gpu(std::size_t slots);
  // Device unit cache (LRU, most recent first).
  const std::uint64_t cache_capacity_;
  std::uint64_t cache_bytes_ = 0;
  using Lru = std::list<std::pair<std::string, std::shared_ptr<DeviceUnit>>>;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  // Decoder scratch, shared: decodes run one after another on the decode stream.
  void* scratch_ = nullptr;
  std::size_t scratch_cap_ = 0;
  // Read buffers of the fetch threads, reused unit after unit.
  ReadBuffers reads_;   // the fetch threads' encoded-unit buffers
};

}  // namespace cubestream::pipeline
