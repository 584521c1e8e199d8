// Region reads into host memory whose chunks are decoded on a GPU (ReadOptions::decode).
//
// The planned decode units are cut into waves of at most `wave_bytes` decoded bytes; each wave
// has a staging slot (compressed and decoded bytes on both sides, the batch's meta arrays) and
// goes through it as
//
//   fetch   (read's threads) every fetch of the wave into the slot's pinned compressed staging;
//   launch  on the slot's lane: the compressed bytes and meta to the device, the batched
//           decoder, the decoded bytes and the per-buffer statuses back to pinned staging;
//   place   (read's threads, once the lane is done) each decoded unit into its place in the
//           output; a unit whose status is not ok is decoded on the host from the compressed
//           bytes still in the slot, so errors and unsupported features are the host codec's.
//
// One parallel loop of the threads fetches wave i and places the oldest wave in flight, so the
// host's copies are one pass and the device has the time of several waves (slots - 2 of them)
// for its copies and decode before the wave is placed. A fetch whose bytes do not fit the slot
// (incompressible chunks) is decoded on the host at once. Units larger than a wave make waves of
// one unit each, in fewer slots (at least two), so that the staging stays near slots x
// wave_bytes; a set that grew past its configured size is freed after the read.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cubestream/array.hpp"
#include "zarr/array_impl.hpp"
#include "zarr/gpu_read_device.hpp"
#include "zarr/gpu_route.hpp"
#include "zarr/read_plan.hpp"

namespace cubestream::zarr {

// The defaults: on the H200 machine (16 cores) a whole-array zstd-3 read of 520 (1, 721, 1440)
// float32 chunks ran at 10.1-10.3 GB/s with waves of 64 MiB in 4 slots, 17.3 with 8, 14.2-14.9
// with 128 MiB in 4 and 17.6-18.5 with 128 MiB in 6 (docs/benchmarks.md): the GPU decoders
// take a wave of 16 chunks in over 10 ms, so the waves in flight, (slots - 1) x wave_bytes,
// set the rate until the host's copies do.
struct GpuReadConfig {
  std::size_t wave_bytes = std::size_t{64} << 20;  // decoded bytes of a wave (at least one unit)
  std::size_t slots = 8;                           // waves between fetch and placement, >= 2
  // Units a wave decodes at most. The zstd decoder's scratch takes 256 KiB a unit besides
  // ~2x the wave's bytes, per slot: 512 bounds that part at 128 MiB a slot (waves of small
  // chunks then hold fewer bytes: 32 MiB of 64 KiB chunks).
  std::size_t max_buffers = 512;
  // The defaults, overridden by CUBESTREAM_GPU_READ_WAVE_MB and CUBESTREAM_GPU_READ_SLOTS.
  static GpuReadConfig from_env();
};

// The staging slots of GPU reads on one device, reused read after read (pinning and mapping
// them costs more than decoding a wave). Grows to the largest unit and codec it has seen.
// Memory: per slot ~2.1 x wave_bytes pinned and as much on the device, plus the decoder's
// scratch (host_bytes() and device_bytes() say how much is held).
class GpuReadStaging {
 public:
  GpuReadStaging(std::unique_ptr<ReadDevice> device, GpuReadConfig config);
  ~GpuReadStaging();
  GpuReadStaging(const GpuReadStaging&) = delete;
  GpuReadStaging& operator=(const GpuReadStaging&) = delete;

  ReadDevice& device() { return *device_; }
  const GpuReadConfig& config() const { return config_; }

  struct Slot {
    std::uint8_t* h_comp = nullptr;     // pinned: the wave's compressed bytes
    std::uint8_t* d_comp = nullptr;
    std::size_t comp_cap = 0;
    std::atomic<std::size_t> comp_used{0};
    std::uint8_t* h_decoded = nullptr;  // pinned: the wave's decoded units
    std::uint8_t* d_decoded = nullptr;
    std::size_t decoded_cap = 0;
    std::uint8_t* h_meta = nullptr;     // src, src_bytes, dst, dst_bytes (8 bytes each a unit), statuses
    std::uint8_t* d_meta = nullptr;
    void* scratch = nullptr;
    std::size_t scratch_bytes = 0;
    void* lane = nullptr;
  };
  // Makes the first `slots` slots (2 .. slot_count()) hold waves of `decoded_cap` decoded
  // bytes in at most `units` units (<= config().max_buffers) decoded by `codec`.
  void prepare(std::size_t decoded_cap, std::size_t units, cuda::BatchCodec codec, std::size_t slots);
  // Whether a slot grew past config().wave_bytes (for a read of larger units).
  bool oversized() const;
  Slot& slot(std::size_t i) { return *slots_[i]; }
  std::size_t slot_count() const { return slots_.size(); }
  // Waits for every slot's lane, reporting nothing (a read that is unwinding).
  void drain() noexcept;

  std::size_t host_bytes() const;
  std::size_t device_bytes() const;

  // The meta arrays' layout inside h_meta / d_meta for config().max_buffers units.
  std::size_t meta_bytes() const;
  std::size_t status_offset() const;

 private:
  void free_slot(Slot& s) noexcept;
  std::unique_ptr<ReadDevice> device_;
  GpuReadConfig config_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

// Reads `region` (validated; `out` of its size) by `plan` with the units decoded on the
// staging's device by `route.codec` (route.route must be kGpuDecode). Adds to `stats`.
void read_on_device(const Array::Impl& a, const Region& region, const ReadPlan& plan, const ChainRoute& route,
                    std::uint8_t* out, const ForEach& for_each, GpuReadStaging& staging, ReadStats& stats);

}  // namespace cubestream::zarr
