// Per-buffer statuses as the batch kernels update them in device memory: several warps (blosc
// units, LZ4 segments) may fail the same buffer, and the first failure must be the one kept.
#pragma once

#include "codec/logic/decode_status.hpp"

namespace cubestream::cuda::detail {

// Sets a buffer's status to `s` unless an earlier failure already set it (first one wins).
__device__ inline void fail_status(codec::logic::DecodeStatus* status, codec::logic::DecodeStatus s) {
  atomicCAS(reinterpret_cast<unsigned*>(status), static_cast<unsigned>(codec::logic::DecodeStatus::kOk),
            static_cast<unsigned>(s));
}

// A status other warps may be writing (read past the L1 cache).
__device__ inline codec::logic::DecodeStatus load_status(const codec::logic::DecodeStatus* status) {
  return static_cast<codec::logic::DecodeStatus>(*reinterpret_cast<const volatile unsigned*>(status));
}

}  // namespace cubestream::cuda::detail
