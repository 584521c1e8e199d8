// CF decoding of values: the encoding read from metadata and attributes, and the conversion
// of a region's stored values to float64 (mask, then scale and offset, as xarray's
// CFMaskCoder and CFScaleOffsetCoder do).
#include "zarr/cf_decode.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "cubestream/error.hpp"
#include "zarr/fill_value.hpp"

namespace cubestream::zarr {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void bad_attr(const std::string& name, const nlohmann::json& v, const std::string& why) {
  throw Error(ErrorCode::kInvalidMetadata, "CF attribute \"" + name + "\" = " + v.dump() + ": " + why);
}

// Loads a little-endian value of type T from p (stored forms are little-endian; the host may
// not be).
template <class T>
T load_le(const std::uint8_t* p) {
  std::uint8_t b[sizeof(T)];
  if constexpr (native_byte_order() == ByteOrder::kLittle) {
    std::memcpy(b, p, sizeof(T));
  } else {
    for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = p[sizeof(T) - 1 - i];
  }
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// One element of `dt` in native byte order (metadata fill values are kept that way) as a
// double. Little-endian variant for the base64 attribute form below.
double element_to_double(const std::uint8_t* p, const DataType& dt, bool little_endian_input) {
  auto get = [&](auto tag) {
    using T = decltype(tag);
    if (little_endian_input) return load_le<T>(p);
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (dt.kind) {
    case DTypeKind::kBool:
      return *p ? 1.0 : 0.0;
    case DTypeKind::kInt:
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta:
      switch (dt.size) {
        case 1: return static_cast<double>(get(std::int8_t{}));
        case 2: return static_cast<double>(get(std::int16_t{}));
        case 4: return static_cast<double>(get(std::int32_t{}));
        case 8: {
          const std::int64_t v = get(std::int64_t{});
          if (dt.kind != DTypeKind::kInt && v == std::numeric_limits<std::int64_t>::min()) return kNaN;  // NaT
          return static_cast<double>(v);
        }
      }
      break;
    case DTypeKind::kUInt:
      switch (dt.size) {
        case 1: return static_cast<double>(get(std::uint8_t{}));
        case 2: return static_cast<double>(get(std::uint16_t{}));
        case 4: return static_cast<double>(get(std::uint32_t{}));
        case 8: return static_cast<double>(get(std::uint64_t{}));
      }
      break;
    case DTypeKind::kFloat:
      switch (dt.size) {
        case 2: return half_to_double(get(std::uint16_t{}));
        case 4: return static_cast<double>(get(float{}));
        case 8: return get(double{});
      }
      break;
    case DTypeKind::kComplex:
      break;
  }
  throw Error(ErrorCode::kUnsupported, "CF decoding of " + dt.name() + " values is not supported");
}

// A CF attribute value that is one number: JSON numbers and booleans, and the spellings
// zarr uses for non-finite floats.
std::optional<double> json_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN" || s == "nan") return kNaN;
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

// scale_factor / add_offset: a number, or a list of exactly one (netCDF attributes are arrays).
std::optional<double> scalar_attr(const nlohmann::json& attrs, const char* name) {
  auto it = attrs.find(name);
  if (it == attrs.end() || it->is_null()) return std::nullopt;
  const nlohmann::json& v = it->is_array() && it->size() == 1 ? (*it)[0] : *it;
  auto d = json_number(v);
  if (!d || v.is_boolean()) bad_attr(name, *it, "expected a number");
  return d;
}

// Zarr v3 "_FillValue" attribute as xarray's FillValueCoder writes it.
std::optional<double> v3_fill_attr(const nlohmann::json& v, const DataType& dt) {
  if (v.is_null()) return std::nullopt;
  if (auto d = json_number(v)) return d;
  if (!v.is_string()) bad_attr("_FillValue", v, "expected a number, a boolean or a base64 string");
  auto bytes = base64_decode(v.get_ref<const std::string&>());
  if (!bytes) bad_attr("_FillValue", v, "a string that is neither NaN/Infinity nor base64");
  // xarray packs float fill values as little-endian float64 whatever the variable's size.
  if (dt.kind == DTypeKind::kFloat && bytes->size() == 8) return load_le<double>(bytes->data());
  // Otherwise the raw little-endian bytes of one value of the variable's type.
  if (bytes->size() == dt.size && dt.kind != DTypeKind::kComplex) return element_to_double(bytes->data(), dt, true);
  bad_attr("_FillValue", v, "base64 of " + std::to_string(bytes->size()) + " bytes does not hold one " + dt.name() +
                                " value" + (dt.kind == DTypeKind::kFloat ? " (nor a float64)" : ""));
}


// Brings a missing value of the stored type `stored` into the domain of the values compared
// with it (type `eff`): what numpy does when xarray compares data == fill.
double to_domain(double v, const DataType& stored, const DataType& eff) {
  if (std::isnan(v)) return v;
  const double span = std::ldexp(1.0, 8 * stored.size);
  if (stored.kind != eff.kind && std::floor(v) == v) {
    // _Unsigned: numpy's astype wraps the integer into the reinterpreted type.
    if (eff.kind == DTypeKind::kUInt && v < 0 && v >= -span / 2) return v + span;
    if (eff.kind == DTypeKind::kInt && v >= span / 2 && v < span) return v - span;
  }
  if (eff.kind == DTypeKind::kFloat) {
    // Comparing float32 data with a Python float rounds the float to float32 first.
    if (eff.size == 4) return static_cast<double>(static_cast<float>(v));
    if (eff.size == 2) return half_to_double(double_to_half(v));
  }
  return v;
}

// Decoding plan: the compared missing values (NaN ones dropped: they never compare equal,
// and NaN stays NaN) and the affine map.
struct Plan {
  std::vector<double> missing;
  double scale = 1, offset = 0;
  bool affine = false;
};

template <class T, class Load>
void convert(const std::uint8_t* raw, std::size_t count, const Plan& p, double* out, Load load) {
  const std::size_t nm = p.missing.size();
  for (std::size_t i = 0; i < count; ++i) {
    T t;
    std::memcpy(&t, raw + i * sizeof(T), sizeof(T));
    double v = load(t);
    bool masked = false;
    for (std::size_t k = 0; k < nm; ++k) masked |= v == p.missing[k];
    if (masked) v = kNaN;
    else if (p.affine) v = v * p.scale + p.offset;
    out[i] = v;
  }
}

}  // namespace

DataType effective_dtype(const DataType& dt, const std::optional<bool>& is_unsigned) {
  DataType e = dt;
  if (is_unsigned) {
    if (*is_unsigned && dt.kind == DTypeKind::kInt) e.kind = DTypeKind::kUInt;
    else if (!*is_unsigned && dt.kind == DTypeKind::kUInt) e.kind = DTypeKind::kInt;
  }
  return e;
}

std::optional<Bytes> base64_decode(std::string_view text) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::size_t n = text.size();
  if (n % 4 == 0) {
    // Padding: at most two '=' at the end of a padded text.
    if (n > 0 && text[n - 1] == '=') --n;
    if (n > 0 && text[n - 1] == '=' && n % 4 == 3) --n;
  }
  if (n % 4 == 1) return std::nullopt;  // 6 bits cannot end a byte
  Bytes out;
  out.reserve(n / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int v = value_of(text[i]);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  return out;
}

double half_to_double(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(static_cast<double>(mant), -24);                    // zero, subnormal
  else if (exp == 31) v = mant ? kNaN : std::numeric_limits<double>::infinity();   // inf, nan
  else v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);                // 1.mant * 2^(exp-15)
  return (h & 0x8000) ? -v : v;
}

CFEncoding cf_encoding_of(const ArrayMetadata& meta) {
  const nlohmann::json& attrs = meta.attributes;
  const DataType& dt = meta.dtype;
  CFEncoding enc;
  if (dt.kind == DTypeKind::kComplex) {
    throw Error(ErrorCode::kUnsupported, "CF decoding of " + dt.name() + " variables is not supported");
  }
  if (auto it = attrs.find("_Unsigned"); it != attrs.end() && !it->is_null()) {
    if (it->is_boolean()) enc.is_unsigned = it->get<bool>();
    else if (*it == "true" || *it == "True") enc.is_unsigned = true;
    else if (*it == "false" || *it == "False") enc.is_unsigned = false;
    else bad_attr("_Unsigned", *it, "expected \"true\" or \"false\"");
  }

  std::vector<double> fills;
  auto fill_attr = attrs.find("_FillValue");
  if (meta.zarr_format == 2) {
    if (!meta.fill_value_is_null) {
      fills.push_back(element_to_double(meta.fill_value.data(), dt, false));
    } else if (fill_attr != attrs.end() && !fill_attr->is_null()) {
      auto d = json_number(*fill_attr);
      if (!d) bad_attr("_FillValue", *fill_attr, "expected a number");
      fills.push_back(*d);
    }
  } else if (fill_attr != attrs.end()) {
    if (auto d = v3_fill_attr(*fill_attr, dt)) fills.push_back(*d);
  }
  if (auto it = attrs.find("missing_value"); it != attrs.end() && !it->is_null()) {
    auto add = [&](const nlohmann::json& v) {
      auto d = json_number(v);
      if (!d) bad_attr("missing_value", *it, "expected numbers");
      fills.push_back(*d);
    };
    if (it->is_array()) {
      for (const auto& v : *it) add(v);
    } else {
      add(*it);
    }
  }
  const DataType eff = effective_dtype(dt, enc.is_unsigned);
  for (double f : fills) {
    const double d = to_domain(f, dt, eff);
    bool dup = false;
    for (double m : enc.missing_values) dup |= m == d || (std::isnan(m) && std::isnan(d));
    if (!dup) enc.missing_values.push_back(d);  // _FillValue == missing_value is the usual case
  }
  enc.scale_factor = scalar_attr(attrs, "scale_factor");
  enc.add_offset = scalar_attr(attrs, "add_offset");
  return enc;
}

void cf_decode_values(const void* raw_ptr, const DataType& dtype, std::size_t count, const CFEncoding& enc, double* out) {
  const auto* raw = static_cast<const std::uint8_t*>(raw_ptr);
  Plan p;
  for (double m : enc.missing_values)
    if (!std::isnan(m)) p.missing.push_back(m);
  p.affine = enc.scale_factor || enc.add_offset;
  p.scale = enc.scale_factor.value_or(1.0);
  p.offset = enc.add_offset.value_or(0.0);
  const DataType eff = effective_dtype(dtype, enc.is_unsigned);
  auto as_double = [](auto t) { return static_cast<double>(t); };
  switch (eff.kind) {
    case DTypeKind::kBool:
      return convert<std::uint8_t>(raw, count, p, out, [](std::uint8_t b) { return b ? 1.0 : 0.0; });
    case DTypeKind::kInt:
      switch (eff.size) {
        case 1: return convert<std::int8_t>(raw, count, p, out, as_double);
        case 2: return convert<std::int16_t>(raw, count, p, out, as_double);
        case 4: return convert<std::int32_t>(raw, count, p, out, as_double);
        case 8: return convert<std::int64_t>(raw, count, p, out, as_double);
      }
      break;
    case DTypeKind::kUInt:
      switch (eff.size) {
        case 1: return convert<std::uint8_t>(raw, count, p, out, as_double);
        case 2: return convert<std::uint16_t>(raw, count, p, out, as_double);
        case 4: return convert<std::uint32_t>(raw, count, p, out, as_double);
        case 8: return convert<std::uint64_t>(raw, count, p, out, as_double);
      }
      break;
    case DTypeKind::kFloat:
      switch (eff.size) {
        case 2: return convert<std::uint16_t>(raw, count, p, out, [](std::uint16_t h) { return half_to_double(h); });
        case 4: return convert<float>(raw, count, p, out, as_double);
        case 8: return convert<double>(raw, count, p, out, as_double);
      }
      break;
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta:
      if (eff.size == 8) {
        return convert<std::int64_t>(raw, count, p, out, [](std::int64_t v) {
          return v == std::numeric_limits<std::int64_t>::min() ? kNaN : static_cast<double>(v);  // NaT
        });
      }
      break;
    case DTypeKind::kComplex:
      break;
  }
  throw Error(ErrorCode::kUnsupported, "CF decoding of " + dtype.name() + " values is not supported");
}

}  // namespace cubestream::zarr
