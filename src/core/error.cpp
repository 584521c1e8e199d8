#include "cubestream/error.hpp"

namespace cubestream {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kInvalidMetadata: return "invalid_metadata";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kCorruptData: return "corrupt_data";
    case ErrorCode::kChecksumMismatch: return "checksum_mismatch";
    case ErrorCode::kSizeMismatch: return "size_mismatch";
    case ErrorCode::kOutOfRange: return "out_of_range";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kPathEscape: return "path_escape";
    case ErrorCode::kCuda: return "cuda";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "unknown";
}

Error::Error(ErrorCode code, std::string message, ErrorContext context)
    : std::runtime_error(format(code, message, context)),
      code_(code),
      message_(std::move(message)),
      context_(std::move(context)) {}

std::string Error::format(ErrorCode code, const std::string& message, const ErrorContext& ctx) {
  std::string out = "[";
  out += error_code_name(code);
  out += "] ";
  out += message;
  if (!ctx.store.empty()) out += " (store: " + ctx.store;
  if (!ctx.key.empty()) out += (ctx.store.empty() ? " (key: " : ", key: ") + ctx.key;
  if (ctx.offset) {
    out += (ctx.store.empty() && ctx.key.empty()) ? " (byte offset: " : ", byte offset: ";
    out += std::to_string(*ctx.offset);
  }
  if (!ctx.store.empty() || !ctx.key.empty() || ctx.offset) out += ")";
  return out;
}

Error Error::with_context(const ErrorContext& outer) const {
  ErrorContext merged = context_;
  if (merged.store.empty()) merged.store = outer.store;
  if (merged.key.empty()) merged.key = outer.key;
  if (!merged.offset) merged.offset = outer.offset;
  return Error(code_, message_, std::move(merged));
}

}  // namespace cubestream
