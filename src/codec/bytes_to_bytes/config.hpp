// Reading the configuration objects of the bytes->bytes codecs.
//
// The same codec arrives with a Zarr v3 configuration or a numcodecs one (which may carry its
// "id"). Unknown keys are ignored, so that newer writers' extra options do not break reading;
// a known key with a value of the wrong type is malformed metadata. A JSON null counts as an
// absent key (some writers emit `"typesize": null`).
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cubestream/dtype.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec::config {

[[noreturn]] inline void fail(std::string_view codec, std::string_view key, std::string_view what) {
  throw Error(ErrorCode::kInvalidMetadata, "codec '" + std::string(codec) + "': configuration key '" +
                                               std::string(key) + "' " + std::string(what));
}

// Checks that the configuration is a JSON object (registry passes {} for a missing one).
inline void require_object(const nlohmann::json& cfg, std::string_view codec) {
  if (!cfg.is_object()) {
    throw Error(ErrorCode::kInvalidMetadata,
                "codec '" + std::string(codec) + "': configuration must be a JSON object, got " + cfg.dump());
  }
}

inline const nlohmann::json* find(const nlohmann::json& cfg, std::string_view key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return nullptr;
  return &*it;
}

// An integer; JSON numbers written as floats with an integral value are accepted.
inline std::optional<std::int64_t> get_int(const nlohmann::json& cfg, std::string_view codec,
                                           std::string_view key) {
  const nlohmann::json* v = find(cfg, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_float()) {
    // only in range may a double be cast to int64 (outside it the cast is undefined; NaN
    // fails both comparisons): [-2^63, 2^63)
    const double d = v->get<double>();
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
        d == static_cast<double>(static_cast<std::int64_t>(d)))
      return static_cast<std::int64_t>(d);
  }
  fail(codec, key, "must be an integer, got " + v->dump());
}

inline std::optional<std::string> get_string(const nlohmann::json& cfg, std::string_view codec,
                                             std::string_view key) {
  const nlohmann::json* v = find(cfg, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(codec, key, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

inline std::optional<bool> get_bool(const nlohmann::json& cfg, std::string_view codec,
                                    std::string_view key) {
  const nlohmann::json* v = find(cfg, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(codec, key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

// A number, remembering whether JSON wrote it as an integer (numcodecs' arithmetic depends on
// whether the Python scalar was an int or a float).
struct Number {
  double value = 0;
  bool is_integer = false;
  std::int64_t integer = 0;
};

inline std::optional<Number> get_number(const nlohmann::json& cfg, std::string_view codec,
                                        std::string_view key) {
  const nlohmann::json* v = find(cfg, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      fail(codec, key, "is too large");
    }
    const auto i = v->get<std::int64_t>();
    return Number{static_cast<double>(i), true, i};
  }
  if (v->is_number_float()) return Number{v->get<double>(), false, 0};
  fail(codec, key, "must be a number, got " + v->dump());
}

// A numpy dtype as numcodecs writes it ("<f8", "|u1", ">i2"); also accepted: numpy's short
// forms without byte order ("f4", native order) and names ("float32", "int16").
inline DataType get_numpy_dtype(const nlohmann::json& cfg, std::string_view codec,
                                std::string_view key, ByteOrder* order) {
  auto s = get_string(cfg, codec, key);
  if (!s) fail(codec, key, "is required");
  try {
    const std::string& str = *s;
    if (!str.empty() && (str[0] == '<' || str[0] == '>' || str[0] == '|' || str[0] == '='))
      return parse_numpy_dtype(str, order);
    if (str.size() >= 2 && std::isdigit(static_cast<unsigned char>(str[1])) &&
        std::string_view("biufc").find(str[0]) != std::string_view::npos)
      return parse_numpy_dtype("=" + str, order);
    DataType dt = parse_v3_data_type(str);
    if (order) *order = dt.size == 1 ? ByteOrder::kNotApplicable : native_byte_order();
    return dt;
  } catch (const Error& e) {
    throw Error(ErrorCode::kUnsupported,
                "codec '" + std::string(codec) + "': " + std::string(key) + ": " + e.message());
  }
}

}  // namespace cubestream::codec::config
