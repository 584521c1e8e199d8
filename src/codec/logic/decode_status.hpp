// The per-buffer outcome of a decoder written for both the host and the GPU.
//
// Device code cannot throw, so every CS_HD decoder (LZ4 blocks, blosc, Zstandard, the byte
// filters) reports through this status; batched GPU entry points write one per buffer into
// device memory, and the host wrappers turn a status other than kOk into a cubestream::Error
// (decode_status_error_code maps each to the ErrorCode used there).
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

enum class DecodeStatus : std::uint32_t {
  kOk = 0,
  kCorrupt = 1,            // the input breaks the format (bad header, table, offset, length)
  kWrongSize = 2,          // well-formed, but decodes to another size than the caller expects
  kUnsupported = 3,        // a valid feature this decoder does not handle (the CPU path does)
  kDictionary = 4,         // a Zstandard frame that needs a dictionary (none is ever given)
  kChecksumMismatch = 5,   // a content checksum did not match the decoded bytes
  kSkipped = 6,            // not attempted by this decoder (routed elsewhere, e.g. to the CPU)
};

CS_HD inline const char* decode_status_name(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::kOk: return "ok";
    case DecodeStatus::kCorrupt: return "corrupt";
    case DecodeStatus::kWrongSize: return "wrong size";
    case DecodeStatus::kUnsupported: return "unsupported feature";
    case DecodeStatus::kDictionary: return "needs a dictionary";
    case DecodeStatus::kChecksumMismatch: return "checksum mismatch";
    case DecodeStatus::kSkipped: return "skipped";
  }
  return "unknown status";
}

}  // namespace cubestream::codec::logic
