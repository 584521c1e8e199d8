#include "cubestream/dtype.hpp"

#include <cctype>

#include "cubestream/error.hpp"

namespace cubestream {

std::string DataType::name() const {
  switch (kind) {
    case DTypeKind::kBool: return "bool";
    case DTypeKind::kInt: return "int" + std::to_string(size * 8);
    case DTypeKind::kUInt: return "uint" + std::to_string(size * 8);
    case DTypeKind::kFloat: return "float" + std::to_string(size * 8);
    case DTypeKind::kComplex: return "complex" + std::to_string(size * 8);
    case DTypeKind::kDateTime: return "datetime64[" + time_unit + "]";
    case DTypeKind::kTimeDelta: return "timedelta64[" + time_unit + "]";
  }
  return "?";
}

std::string DataType::numpy_str(ByteOrder order) const {
  char bo = order == ByteOrder::kBig ? '>' : '<';
  if (size == 1 && kind != DTypeKind::kDateTime && kind != DTypeKind::kTimeDelta) bo = '|';
  switch (kind) {
    case DTypeKind::kBool: return "|b1";
    case DTypeKind::kInt: return std::string(1, bo) + "i" + std::to_string(size);
    case DTypeKind::kUInt: return std::string(1, bo) + "u" + std::to_string(size);
    case DTypeKind::kFloat: return std::string(1, bo) + "f" + std::to_string(size);
    case DTypeKind::kComplex: return std::string(1, bo) + "c" + std::to_string(size);
    case DTypeKind::kDateTime: return std::string(1, bo) + "M8[" + time_unit + "]";
    case DTypeKind::kTimeDelta: return std::string(1, bo) + "m8[" + time_unit + "]";
  }
  return "?";
}

DataType parse_v3_data_type(std::string_view name) {
  struct Entry {
    std::string_view name;
    DTypeKind kind;
    int size;
  };
  static constexpr Entry kTypes[] = {
      {"bool", DTypeKind::kBool, 1},        {"int8", DTypeKind::kInt, 1},
      {"int16", DTypeKind::kInt, 2},        {"int32", DTypeKind::kInt, 4},
      {"int64", DTypeKind::kInt, 8},        {"uint8", DTypeKind::kUInt, 1},
      {"uint16", DTypeKind::kUInt, 2},      {"uint32", DTypeKind::kUInt, 4},
      {"uint64", DTypeKind::kUInt, 8},      {"float16", DTypeKind::kFloat, 2},
      {"float32", DTypeKind::kFloat, 4},    {"float64", DTypeKind::kFloat, 8},
      {"complex64", DTypeKind::kComplex, 8}, {"complex128", DTypeKind::kComplex, 16},
  };
  for (const auto& e : kTypes) {
    if (e.name == name) return DataType{e.kind, static_cast<std::uint8_t>(e.size), {}};
  }
  throw Error(ErrorCode::kUnsupported, "unsupported Zarr v3 data_type '" + std::string(name) + "'");
}

namespace {

// A numpy time unit: an optional positive multiplier followed by one of the unit codes.
bool valid_time_unit(std::string_view unit) {
  static constexpr std::string_view kUnits[] = {"Y", "M", "W", "D", "h", "m", "s",
                                                "ms", "us", "ns", "ps", "fs", "as"};
  std::size_t i = 0;
  while (i < unit.size() && std::isdigit(static_cast<unsigned char>(unit[i]))) ++i;
  if (i > 0 && unit[0] == '0') return false;
  std::string_view code = unit.substr(i);
  for (auto u : kUnits)
    if (u == code) return true;
  return false;
}

}  // namespace

DataType parse_numpy_dtype(std::string_view str, ByteOrder* order) {
  auto fail = [&](const char* why) {
    return Error(ErrorCode::kUnsupported,
                 "unsupported Zarr v2 dtype '" + std::string(str) + "': " + why);
  };
  if (str.size() < 3) throw fail("too short");
  char bo = str[0];
  if (bo != '<' && bo != '>' && bo != '|' && bo != '=') throw fail("no byte-order character");
  char code = str[1];
  std::string_view rest = str.substr(2);
  ByteOrder stored = bo == '>' ? ByteOrder::kBig : bo == '<' ? ByteOrder::kLittle
                     : bo == '=' ? native_byte_order() : ByteOrder::kNotApplicable;
  DataType dt;
  if (code == 'M' || code == 'm') {
    // "<M8[ns]": an 8-byte count with a unit in brackets
    if (rest.size() < 4 || rest[0] != '8' || rest[1] != '[' || rest.back() != ']')
      throw fail("datetime64/timedelta64 must look like M8[unit]");
    std::string_view unit = rest.substr(2, rest.size() - 3);
    if (!valid_time_unit(unit)) throw fail("unknown time unit");
    dt.kind = code == 'M' ? DTypeKind::kDateTime : DTypeKind::kTimeDelta;
    dt.size = 8;
    dt.time_unit = std::string(unit);
  } else {
    int size = 0;
    for (char c : rest) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || size > 64) throw fail("bad size");
      size = size * 10 + (c - '0');
    }
    switch (code) {
      case 'b': dt.kind = DTypeKind::kBool; if (size != 1) throw fail("bool must be 1 byte"); break;
      case 'i': dt.kind = DTypeKind::kInt; break;
      case 'u': dt.kind = DTypeKind::kUInt; break;
      case 'f': dt.kind = DTypeKind::kFloat; if (size == 1) throw fail("no 1-byte float"); break;
      case 'c': dt.kind = DTypeKind::kComplex; if (size != 8 && size != 16) throw fail("complex must be c8 or c16"); break;
      default: throw fail("only b, i, u, f, c, M and m kinds are supported");
    }
    if (size != 1 && size != 2 && size != 4 && size != 8 && size != 16) throw fail("bad size");
    if (dt.kind != DTypeKind::kComplex && size == 16) throw fail("16-byte scalars are unsupported");
    dt.size = static_cast<std::uint8_t>(size);
  }
  if (dt.size > 1 && stored == ByteOrder::kNotApplicable) throw fail("multi-byte type needs '<' or '>'");
  if (order) *order = dt.size == 1 ? ByteOrder::kNotApplicable : stored;
  return dt;
}

}  // namespace cubestream
