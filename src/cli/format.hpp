// Text formatting shared by the CLI's reports.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cubestream/array.hpp"

namespace cubestream::cli {

inline std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return fixed(b, u == 0 ? 0 : (b < 10 ? 2 : 1)) + " " + units[u];
}

inline std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// The fill value as a number, for reports.
inline std::string fill_text(const ArrayMetadata& m) {
  if (m.fill_value_is_null) return "null";
  const auto* p = m.fill_value.data();
  auto as = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (m.dtype.kind) {
    case DTypeKind::kBool: return p[0] ? "true" : "false";
    case DTypeKind::kInt:
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta:
      switch (m.dtype.size) {
        case 1: return std::to_string(as(std::int8_t{}));
        case 2: return std::to_string(as(std::int16_t{}));
        case 4: return std::to_string(as(std::int32_t{}));
        default: return std::to_string(as(std::int64_t{}));
      }
    case DTypeKind::kUInt:
      switch (m.dtype.size) {
        case 1: return std::to_string(as(std::uint8_t{}));
        case 2: return std::to_string(as(std::uint16_t{}));
        case 4: return std::to_string(as(std::uint32_t{}));
        default: return std::to_string(as(std::uint64_t{}));
      }
    case DTypeKind::kFloat:
      if (m.dtype.size == 4) return fixed(as(float{}), 6);
      if (m.dtype.size == 8) return std::to_string(as(double{}));
      return "(float16)";
    case DTypeKind::kComplex: return "(complex)";
  }
  return "?";
}

}  // namespace cubestream::cli
