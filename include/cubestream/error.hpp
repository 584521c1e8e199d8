// The one error model of cubestream.
//
// Every failure the library reports is a cubestream::Error: a code that says what kind of
// thing went wrong, a message that says what exactly, and the context a user needs to find
// the culprit (the store, the key inside it, and a byte offset inside that key's value where
// one is known). The Python binding maps this type once to cubestream.CubestreamError.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cubestream {

enum class ErrorCode : int {
  kInvalidArgument = 1,   // caller passed something impossible (region out of bounds, bad size)
  kInvalidMetadata = 2,   // zarr.json / .zarray / .zmetadata is not valid JSON or misses fields
  kUnsupported = 3,       // a valid but unsupported feature: unknown codec, data type, extension
  kNotFound = 4,          // a key, array or group that must exist does not
  kCorruptData = 5,       // compressed or container bytes that cannot be decoded
  kChecksumMismatch = 6,  // crc32c / adler32 / xxhash stored in the data does not match
  kSizeMismatch = 7,      // data decoded to a different size than the metadata implies
  kOutOfRange = 8,        // an offset or length that points outside its container
  kIo = 9,                // the operating system refused a read (permissions, EIO, ...)
  kPathEscape = 10,       // a key or path that would leave the store root
  kCuda = 11,             // a CUDA runtime call failed
  kInternal = 12,         // a broken invariant inside cubestream (a bug: please report)
  kResourceExhausted = 13,  // memory or threads could not be had
  kCancelled = 14,        // work stopped on request (a loader shut down or restarted)
};

// Stable, lower-case name of a code ("corrupt_data"); used in messages and in Python.
std::string_view error_code_name(ErrorCode code);

// Where an error happened. Every field is optional; what() prints those that are set.
struct ErrorContext {
  std::string store;                     // e.g. "file:///data/era5.zarr"
  std::string key;                       // e.g. "t2m/c/0/0/0"
  std::optional<std::uint64_t> offset;   // byte offset inside the key's value
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, ErrorContext context = {});

  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const ErrorContext& context() const noexcept { return context_; }

  // Returns a copy with the missing context fields filled in from `outer`. Lower layers
  // (a codec) know the offset but not the key; upper layers (the array reader) know the key.
  Error with_context(const ErrorContext& outer) const;

 private:
  static std::string format(ErrorCode code, const std::string& message, const ErrorContext& ctx);
  ErrorCode code_;
  std::string message_;
  ErrorContext context_;
};

}  // namespace cubestream
