#include "pipeline/trace.hpp"

#if defined(CUBESTREAM_WITH_CUDA) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define CS_HAVE_NVTX 1
#else
#define CS_HAVE_NVTX 0
#endif

namespace cubestream::pipeline {

namespace {

// Small, stable thread numbers for the trace viewer's rows.
std::uint32_t thread_number() {
  static std::atomic<std::uint32_t> next{1};
  thread_local std::uint32_t id = next++;
  return id;
}

}  // namespace

void TraceRecorder::record(const char* name, std::int64_t start_ns, std::int64_t end_ns, std::string detail) {
  if (!enabled_) return;
  const std::uint32_t tid = thread_number();
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= kMaxEvents) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{name, 'X', start_ns - origin_ns_, end_ns - start_ns, tid, std::move(detail)});
}

void TraceRecorder::counter(const char* name, std::int64_t value) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= kMaxEvents) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{name, 'C', now_ns() - origin_ns_, value, 0, {}});
}

nlohmann::json TraceRecorder::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const Event& e : events_) {
    nlohmann::json j = {{"name", e.name}, {"ph", std::string(1, e.phase)}, {"pid", 1}, {"tid", e.tid},
                        {"ts", static_cast<double>(e.ts_ns) / 1e3}};
    if (e.phase == 'X') {
      j["dur"] = static_cast<double>(e.dur_ns) / 1e3;
      j["cat"] = "cubestream";
      if (!e.detail.empty()) j["args"] = {{"what", e.detail}};
    } else {
      j["args"] = {{"value", e.dur_ns}};
    }
    events.push_back(std::move(j));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"},
          {"otherData", {{"producer", "cubestream loader"}, {"events_dropped", dropped_}}}};
}

void TraceRecorder::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
  dropped_ = 0;
}

#if CS_HAVE_NVTX
NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() {}
#endif

}  // namespace cubestream::pipeline
