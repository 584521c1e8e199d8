// The numpy dtypes of the numcodecs filters (delta, fixedscaleoffset, quantize), read from a
// configuration key into the form the shared conversion code (logic/numpy_cast.hpp) uses.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/decode_check.hpp"
#include "codec/logic/numpy_cast.hpp"

namespace cubestream::codec {

// Reads `key` (e.g. "<f8", "|u1", ">i2") as a bool, integer or float dtype with its byte
// order. Complex and datetime types throw Error(kUnsupported).
inline logic::NumType filter_dtype(const nlohmann::json& cfg, std::string_view codec,
                                   std::string_view key) {
  ByteOrder order = ByteOrder::kNotApplicable;
  const DataType dt = config::get_numpy_dtype(cfg, codec, key, &order);
  logic::NumType t;
  switch (dt.kind) {
    case DTypeKind::kBool: t.kind = logic::NumKind::kBool; break;
    case DTypeKind::kInt: t.kind = logic::NumKind::kInt; break;
    case DTypeKind::kUInt: t.kind = logic::NumKind::kUInt; break;
    case DTypeKind::kFloat: t.kind = logic::NumKind::kFloat; break;
    default:
      throw Error(ErrorCode::kUnsupported, "codec '" + std::string(codec) + "': " + std::string(key) +
                                               " " + dt.name() + " is not supported (bool, integer and float only)");
  }
  t.size = dt.size;
  t.big_endian = order == ByteOrder::kBig;
  return t;
}

// The dtype in numpy's notation, for messages and configuration().
inline std::string numpy_str(logic::NumType t) {
  char kind = 'f';
  switch (t.kind) {
    case logic::NumKind::kBool: kind = 'b'; break;
    case logic::NumKind::kInt: kind = 'i'; break;
    case logic::NumKind::kUInt: kind = 'u'; break;
    case logic::NumKind::kFloat: kind = 'f'; break;
  }
  const char order = t.size == 1 ? '|' : t.big_endian ? '>' : '<';
  return std::string(1, order) + kind + std::to_string(t.size);
}

// The number of elements an element-wise filter decodes: `in` must hold whole `astype`
// elements, and as many `dtype` elements must fit in `out_bytes` (no decompression bombs).
inline std::size_t filter_element_count(std::string_view codec, std::size_t in_bytes, std::size_t out_bytes,
                                        logic::NumType astype, logic::NumType dtype) {
  const std::string name(codec);
  CS_DECODE_CHECK(in_bytes % astype.size == 0, kCorruptData, name,
                  std::to_string(in_bytes) + " bytes are not a whole number of " + numpy_str(astype) + " elements", 0);
  const std::size_t n = in_bytes / astype.size;
  CS_DECODE_CHECK(n * dtype.size <= out_bytes, kSizeMismatch, name,
                  std::to_string(n) + " elements do not fit the " + std::to_string(out_bytes) + " bytes expected", 0);
  return n;
}

}  // namespace cubestream::codec
