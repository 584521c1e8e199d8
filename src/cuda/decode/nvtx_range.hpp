// One NVTX range per batched entry point, so that Nsight Systems shows each batch call (and
// what it enqueued) by name. NVTX v3 is header-only and costs nothing without a profiler.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace cubestream::cuda::detail {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace cubestream::cuda::detail
