#include "zarr/fill_value.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "cubestream/error.hpp"

namespace cubestream::zarr {

std::uint16_t double_to_half(double v) {
  float f = static_cast<float>(v);
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / nan
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);                           // overflow -> inf
  if (e <= 0) {                                                                              // subnormal or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    std::uint32_t shift = static_cast<std::uint32_t>(14 - e);
    std::uint32_t half = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<std::uint16_t>(half);
}

namespace {

[[noreturn]] void bad(const nlohmann::json& v, const DataType& dt, const std::string& why) {
  throw Error(ErrorCode::kInvalidMetadata, "fill_value " + v.dump() + " is not valid for " + dt.name() + ": " + why);
}

// Writes one float of `size` bytes (2, 4 or 8) parsed from v into out.
void put_float(const nlohmann::json& v, const DataType& dt, int size, bool allow_hex, std::uint8_t* out) {
  double d = 0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "NaN") d = std::numeric_limits<double>::quiet_NaN();
    else if (s == "Infinity") d = std::numeric_limits<double>::infinity();
    else if (s == "-Infinity") d = -std::numeric_limits<double>::infinity();
    else if (allow_hex && s.size() == 2 + 2 * static_cast<std::size_t>(size) && s[0] == '0' && s[1] == 'x') {
      // Raw bits, most significant byte first.
      std::uint64_t bits = 0;
      for (std::size_t i = 2; i < s.size(); ++i) {
        char c = s[i];
        int nib = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (nib < 0) bad(v, dt, "bad hex digit");
        bits = (bits << 4) | static_cast<std::uint64_t>(nib);
      }
      if (size == 2) { auto b = static_cast<std::uint16_t>(bits); std::memcpy(out, &b, 2); }
      else if (size == 4) { auto b = static_cast<std::uint32_t>(bits); std::memcpy(out, &b, 4); }
      else std::memcpy(out, &bits, 8);
      return;
    } else {
      bad(v, dt, "expected a number, \"NaN\", \"Infinity\", \"-Infinity\"" + std::string(allow_hex ? " or \"0x...\" raw bits" : ""));
    }
  } else {
    bad(v, dt, "expected a number or string");
  }
  if (size == 2) { auto h = double_to_half(d); std::memcpy(out, &h, 2); }
  else if (size == 4) { auto f = static_cast<float>(d); std::memcpy(out, &f, 4); }
  else std::memcpy(out, &d, 8);
}

Bytes parse(const nlohmann::json& v, const DataType& dt, bool allow_hex) {
  Bytes out(dt.size, 0);
  switch (dt.kind) {
    case DTypeKind::kBool:
      if (v.is_boolean()) out[0] = v.get<bool>() ? 1 : 0;
      else if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1)) out[0] = static_cast<std::uint8_t>(v.get<std::int64_t>());
      else bad(v, dt, "expected true or false");
      break;
    case DTypeKind::kInt:
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta: {
      std::int64_t i = 0;
      if (v.is_number_integer()) i = v.get<std::int64_t>();
      else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::abs(v.get<double>()) < 9.2e18) i = static_cast<std::int64_t>(v.get<double>());
      else if (dt.kind != DTypeKind::kInt && v.is_string() && v.get<std::string>() == "NaT") i = std::numeric_limits<std::int64_t>::min();
      else bad(v, dt, "expected an integer");
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) bad(v, dt, "out of range");
      if (dt.size < 8) {
        std::int64_t lim = std::int64_t{1} << (dt.size * 8 - 1);
        if (i < -lim || i >= lim) bad(v, dt, "out of range");
      }
      std::memcpy(out.data(), &i, dt.size);  // little-endian host: low bytes first
      break;
    }
    case DTypeKind::kUInt: {
      std::uint64_t u = 0;
      if (v.is_number_unsigned()) u = v.get<std::uint64_t>();
      else if (v.is_number_integer() && v.get<std::int64_t>() >= 0) u = static_cast<std::uint64_t>(v.get<std::int64_t>());
      else if (v.is_number_float() && v.get<double>() >= 0 && std::floor(v.get<double>()) == v.get<double>() && v.get<double>() < 1.8e19) u = static_cast<std::uint64_t>(v.get<double>());
      else bad(v, dt, "expected a non-negative integer");
      if (dt.size < 8 && u >= (std::uint64_t{1} << (dt.size * 8))) bad(v, dt, "out of range");
      std::memcpy(out.data(), &u, dt.size);
      break;
    }
    case DTypeKind::kFloat:
      put_float(v, dt, dt.size, allow_hex, out.data());
      break;
    case DTypeKind::kComplex:
      if (!v.is_array() || v.size() != 2) bad(v, dt, "expected [real, imag]");
      put_float(v[0], dt, dt.size / 2, allow_hex, out.data());
      put_float(v[1], dt, dt.size / 2, allow_hex, out.data() + dt.size / 2);
      break;
  }
  return out;
}

}  // namespace

Bytes parse_fill_value_v3(const nlohmann::json& v, const DataType& dtype) {
  if (v.is_null()) bad(v, dtype, "Zarr v3 requires a fill_value");
  return parse(v, dtype, true);
}

Bytes parse_fill_value_v2(const nlohmann::json& v, const DataType& dtype, bool* is_null) {
  *is_null = v.is_null();
  if (v.is_null()) return Bytes(dtype.size, 0);
  return parse(v, dtype, false);
}

}  // namespace cubestream::zarr
