#include "zarr/gpu_read_pool.hpp"

#include "cuda/memory.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

namespace cubestream::zarr {

namespace {

struct DevicePool {
  std::vector<std::unique_ptr<GpuReadStaging>> idle;
  int live = 0;     // sets that exist: idle or leased
  int waiting = 0;  // callers waiting for one
};

struct Pools {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, DevicePool> by_device;
  GpuStagingLease::Factory factory;  // null: the CUDA device
  int factory_devices = 0;
};

// Never destroyed: a set freed after the CUDA runtime has shut down at exit would fail, and the
// process is ending anyway.
Pools& pools() {
  static Pools* p = new Pools;
  return *p;
}

}  // namespace

GpuStagingLease::GpuStagingLease(int device, std::unique_ptr<GpuReadStaging> set)
    : device_(device), set_(std::move(set)) {}

GpuStagingLease::GpuStagingLease(GpuStagingLease&& other) noexcept
    : device_(other.device_), set_(std::move(other.set_)) {}

std::optional<GpuStagingLease> GpuStagingLease::take(int device, bool wait) {
  Pools& p = pools();
  Factory factory;
  {
    std::unique_lock lock(p.mu);
    DevicePool& d = p.by_device[device];
    while (d.idle.empty() && d.live >= kMaxSets) {
      if (!wait) return std::nullopt;
      ++d.waiting;
      p.cv.wait(lock);
      --d.waiting;
    }
    if (!d.idle.empty()) {
      auto set = std::move(d.idle.back());
      d.idle.pop_back();
      return GpuStagingLease(device, std::move(set));
    }
    ++d.live;  // made below, outside the lock
    factory = p.factory;
  }
  try {
    if (factory) return GpuStagingLease(device, factory(device));
    return GpuStagingLease(device, std::make_unique<GpuReadStaging>(make_cuda_read_device(device), GpuReadConfig::from_env()));
  } catch (...) {
    std::lock_guard lock(p.mu);
    --p.by_device[device].live;
    p.cv.notify_all();
    throw;
  }
}

bool GpuStagingLease::warm(int device) {
  Pools& p = pools();
  std::lock_guard lock(p.mu);
  auto it = p.by_device.find(device);
  return it != p.by_device.end() && it->second.live > 0;
}

std::pair<std::size_t, std::size_t> GpuStagingLease::idle_bytes(int device) {
  Pools& p = pools();
  std::lock_guard lock(p.mu);
  std::pair<std::size_t, std::size_t> n{0, 0};
  for (const auto& [d, pool] : p.by_device) {
    if (device >= 0 && d != device) continue;
    for (const auto& s : pool.idle) {
      n.first += s->host_bytes();
      n.second += s->device_bytes();
    }
  }
  return n;
}

int GpuStagingLease::visible_devices() {
  {
    Pools& p = pools();
    std::lock_guard lock(p.mu);
    if (p.factory) return p.factory_devices;
  }
  return cuda::device_count();
}

int GpuStagingLease::current_device() {
  {
    Pools& p = pools();
    std::lock_guard lock(p.mu);
    if (p.factory) return 0;
  }
  return cuda::current_device();
}

GpuStagingLease::Factory GpuStagingLease::set_factory(Factory factory, int devices) {
  Pools& p = pools();
  std::vector<std::unique_ptr<GpuReadStaging>> idle;
  std::lock_guard lock(p.mu);
  for (auto& [device, d] : p.by_device) {
    d.live -= static_cast<int>(d.idle.size());
    for (auto& s : d.idle) idle.push_back(std::move(s));
    d.idle.clear();
  }
  std::swap(p.factory, factory);
  p.factory_devices = devices;
  return factory;  // (the idle sets are freed on return, after the lock)
}

void GpuStagingLease::discard() noexcept {
  if (!set_) return;
  set_.reset();
  Pools& p = pools();
  std::lock_guard lock(p.mu);
  --p.by_device[device_].live;
  p.cv.notify_all();
}

GpuStagingLease::~GpuStagingLease() {
  if (!set_) return;
  Pools& p = pools();
  std::unique_ptr<GpuReadStaging> spare;
  {
    std::lock_guard lock(p.mu);
    DevicePool& d = p.by_device[device_];
    // keep one set of the configured size idle (or hand it to a waiting read); free the rest,
    // and a set that grew for larger units
    if ((d.idle.empty() || d.waiting > 0) && !set_->oversized()) {
      d.idle.push_back(std::move(set_));
    } else {
      spare = std::move(set_);
      --d.live;
    }
    p.cv.notify_all();
  }
  // `spare` is freed here, outside the lock
}

}  // namespace cubestream::zarr
