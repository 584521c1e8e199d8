// Stage timing for the loader: a Chrome / Perfetto trace of every stage run (when asked for)
// and NVTX ranges of the same names when CUDA is compiled in, so Nsight Systems shows the
// loader's threads beside the training kernels.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cubestream::pipeline {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class TraceRecorder {
 public:
  // Events beyond this many are counted but not kept (a long run stays bounded in memory).
  static constexpr std::size_t kMaxEvents = 1 << 20;

  explicit TraceRecorder(bool enabled) : enabled_(enabled), origin_ns_(now_ns()) {}
  bool enabled() const { return enabled_; }
  // A complete event ("ph":"X") on the calling thread.
  void record(const char* name, std::int64_t start_ns, std::int64_t end_ns, std::string detail = {});
  // A counter sample ("ph":"C"), e.g. the ready-queue depth.
  void counter(const char* name, std::int64_t value);
  nlohmann::json to_json() const;
  void clear();

 private:
  struct Event {
    const char* name;
    char phase;
    std::int64_t ts_ns, dur_ns;
    std::uint32_t tid;
    std::string detail;
  };
  const bool enabled_;
  const std::int64_t origin_ns_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::uint64_t dropped_ = 0;
};

// Marks a stage on the calling thread: an NVTX range (CUDA builds) for its lifetime.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace cubestream::pipeline
