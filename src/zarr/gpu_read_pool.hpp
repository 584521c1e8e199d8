// The staging sets of GPU reads on the CUDA devices, kept from read to read: pinning and
// mapping a set's memory costs more than the reads of a few waves, so a process pays it once.
// At most kMaxSets exist for a device at a time (reads beyond that decode on the host, or wait
// with ReadOptions::decode = kGpu), and at most one is kept idle; the rest are freed when
// given back.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "zarr/gpu_read.hpp"

namespace cubestream::zarr {

class GpuStagingLease {
 public:
  static constexpr int kMaxSets = 2;

  GpuStagingLease(GpuStagingLease&& other) noexcept;
  GpuStagingLease& operator=(GpuStagingLease&&) = delete;
  ~GpuStagingLease();  // gives the set back

  GpuReadStaging& operator*() const { return *set_; }
  GpuReadStaging* operator->() const { return set_.get(); }
  // Frees the set instead of giving it back (its device failed mid-read).
  void discard() noexcept;

  // A staging set of CUDA device `device`: an idle one, or a new one (GpuReadConfig::from_env)
  // while fewer than kMaxSets exist; when all are in use, with `wait` the first given back,
  // else nullopt. Throws what making a set throws: Error(kUnsupported) without a CUDA build or
  // the device, Error(kCuda) when the runtime refuses memory.
  static std::optional<GpuStagingLease> take(int device, bool wait);

  // Whether a set exists for `device` (a read has paid for the CUDA runtime's start and the
  // pinning of a set in this process).
  static bool warm(int device);
  // The memory the idle sets of `device` (every device for -1) hold: {pinned host bytes,
  // device bytes}.
  static std::pair<std::size_t, std::size_t> idle_bytes(int device);
  // The devices sets can be made for (cuda::device_count(), or the factory's), and the device
  // of the calling thread (-1 for none; 0 with a factory).
  static int visible_devices();
  static int current_device();

  // Where new sets come from: null (the default) makes them on the CUDA device; tests set a
  // host model of a device (zarr/gpu_read_device.hpp), which then counts as `devices` visible
  // devices. Frees the idle sets of the factory before; call it while no set is leased.
  // Returns the factory it replaces.
  using Factory = std::function<std::unique_ptr<GpuReadStaging>(int device)>;
  static Factory set_factory(Factory factory, int devices = 1);

 private:
  GpuStagingLease(int device, std::unique_ptr<GpuReadStaging> set);
  int device_;
  std::unique_ptr<GpuReadStaging> set_;
};

}  // namespace cubestream::zarr
