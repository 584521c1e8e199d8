// The loader's GPU-native decode and assemble stage (device = kCuda, decode on the GPU).
//
// For one planned batch:
//   1. units already in the device unit cache are used as they are;
//   2. the others are fetched by the host threads; the compressed bytes of units whose
//      codec the GPU decodes (blosc, lz4, zstd after the `bytes` codec) are staged in pinned
//      memory, units of other codecs are decoded on the host and staged decoded;
//   3. one copy moves the staging area to the GPU; the batched decoders (cuda/decode) decode
//      straight into fresh device unit buffers; a buffer the GPU leaves as kUnsupported is
//      decoded on the host instead and copied over (same bytes: the fallback rule);
//   4. one kernel assembles every piece of the batch from the device units into the device
//      batch tensors, fused with CF decoding, normalisation, NaN fill and the output dtype
//      (cuda/assemble), so no decoded data of a GPU-decoded unit crosses PCIe.
// Everything runs on the loader's copy stream; the host waits once per batch, for the
// decoders' statuses. Decoded units stay in a bounded LRU cache in device memory
// (gpu_cache_bytes); an evicted unit is freed stream-ordered, after the kernels that read it.
#pragma once

#include <cstdint>
#include <list>
#include <map>
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

namespace cubestream {
class ThreadPool;
}

namespace cubestream::pipeline {

// How one source's units reach the GPU.
enum class UnitRoute : std::uint8_t {
  kGpuDecode,   // compressed bytes to the GPU, batched decode there
  kRaw,         // stored uncompressed: the bytes are the unit
  kHostDecode,  // decoded on the host, the decoded unit copied to the GPU
};

struct SourceRoute {
  UnitRoute route = UnitRoute::kHostDecode;
  cuda::BatchCodec codec = cuda::BatchCodec::kBlosc;
  std::string codec_config;   // the bytes->bytes codec's JSON (for the host fallback's messages)
  std::string why;            // why it is not decoded on the GPU (kHostDecode)
};

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
  std::int64_t ns_fetch = 0, ns_decode = 0, ns_assemble = 0;
};

class GpuStage {
 public:
  GpuStage(const BatchPlanner& planner, const Selection& selection, const LoaderConfig& config, void* stream,
           MemoryBudget& budget, std::uint64_t cache_bytes, bool gpu_zstd);
  ~GpuStage();
  GpuStage(const GpuStage&) = delete;
  GpuStage& operator=(const GpuStage&) = delete;

  // Decodes and assembles `plan` into the device tensors (inputs, targets; targets may be
  // null without targets). Enqueued on the stream; returns once everything is enqueued.
  void run(const BatchPlan& plan, void* d_inputs, void* d_targets, ThreadPool& pool, int threads,
           GpuStageStats& stats);

  const std::vector<SourceRoute>& routes() const { return routes_; }

 private:
  struct DeviceUnit;
  std::shared_ptr<DeviceUnit> cache_find(const std::string& key);
  void cache_insert(const std::string& key, std::shared_ptr<DeviceUnit> unit);
  void* device_scratch(std::size_t bytes, void*& buf, std::size_t& cap);
  std::uint8_t* pinned(std::size_t bytes, void*& buf, std::size_t& cap);

  const BatchPlanner& planner_;
  const Selection& selection_;
  const LoaderConfig& cfg_;
  void* stream_;
  int device_;
  MemoryBudget& budget_;
  std::vector<SourceRoute> routes_;
  // Device unit cache (LRU, most recent first).
  const std::uint64_t cache_capacity_;
  std::uint64_t cache_bytes_ = 0;
  using Lru = std::list<std::pair<std::string, std::shared_ptr<DeviceUnit>>>;
  Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  // Grow-only buffers reused batch after batch.
  void* host_stage_ = nullptr;  std::size_t host_stage_cap_ = 0;
  void* dev_stage_ = nullptr;   std::size_t dev_stage_cap_ = 0;
  void* host_meta_ = nullptr;   std::size_t host_meta_cap_ = 0;
  void* dev_meta_ = nullptr;    std::size_t dev_meta_cap_ = 0;
  void* scratch_ = nullptr;     std::size_t scratch_cap_ = 0;
  std::uint64_t pinned_charged_ = 0;
};

}  // namespace cubestream::pipeline
