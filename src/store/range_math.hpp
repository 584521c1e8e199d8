// Resolving a ByteRange against the size of a value.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"

namespace cubestream::store_detail {

struct ResolvedRange {
  std::uint64_t offset;
  std::uint64_t length;
};

// Turns `range` into an absolute [offset, offset+length) inside a value of `size` bytes.
// A range reaching past the end is Error(kOutOfRange) with the store and key.
inline ResolvedRange resolve_range(ByteRange range, std::uint64_t size, std::string_view store,
                                   std::string_view key) {
  auto fail = [&](const std::string& why, std::uint64_t at) {
    return Error(ErrorCode::kOutOfRange, why + " (value is " + std::to_string(size) + " bytes)",
                 ErrorContext{std::string(store), std::string(key), at});
  };
  if (range.offset == std::numeric_limits<std::int64_t>::min()) throw fail("suffix length out of range", 0);
  if (range.offset < 0) {
    auto n = static_cast<std::uint64_t>(-range.offset);
    if (n > size) throw fail("suffix of " + std::to_string(n) + " bytes is longer than the value", 0);
    return {size - n, n};
  }
  auto off = static_cast<std::uint64_t>(range.offset);
  if (off > size) throw fail("range starts past the end", off);
  if (range.length < 0) return {off, size - off};
  auto len = static_cast<std::uint64_t>(range.length);
  if (len > size - off) throw fail("range of " + std::to_string(len) + " bytes runs past the end", off);
  return {off, len};
}

}  // namespace cubestream::store_detail
