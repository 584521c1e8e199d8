// Host side of the per-buffer DecodeStatus (codec/logic/decode_status.hpp): the ErrorCode a
// status becomes when a host wrapper turns it into a cubestream::Error.
#pragma once

#include "codec/logic/decode_status.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec {

inline ErrorCode decode_status_error_code(logic::DecodeStatus s) {
  switch (s) {
    case logic::DecodeStatus::kOk: return ErrorCode::kInternal;  // not an error: a caller bug
    case logic::DecodeStatus::kCorrupt: return ErrorCode::kCorruptData;
    case logic::DecodeStatus::kWrongSize: return ErrorCode::kSizeMismatch;
    case logic::DecodeStatus::kUnsupported: return ErrorCode::kUnsupported;
    case logic::DecodeStatus::kDictionary: return ErrorCode::kUnsupported;
    case logic::DecodeStatus::kChecksumMismatch: return ErrorCode::kChecksumMismatch;
    case logic::DecodeStatus::kSkipped: return ErrorCode::kInternal;  // never the final answer
  }
  return ErrorCode::kInternal;
}

}  // namespace cubestream::codec
