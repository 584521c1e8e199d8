// Element data types of Zarr arrays.
//
// One DataType describes an element as it lives in memory after reading: its kind, its size
// in bytes, and (for datetime64/timedelta64) its time unit. Byte order is a property of the
// *stored* representation, not of the value in memory: values handed to the caller are always
// in the host's native byte order. Zarr v2 carries the stored order in the dtype string
// ("<f4", ">i2"); Zarr v3 carries it in the `bytes` codec's `endian`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cubestream {

enum class DTypeKind : std::uint8_t {
  kBool,
  kInt,
  kUInt,
  kFloat,
  kComplex,
  kDateTime,   // numpy datetime64: int64 count of `time_unit` since 1970-01-01T00:00:00
  kTimeDelta,  // numpy timedelta64: int64 count of `time_unit`
};

enum class ByteOrder : std::uint8_t { kLittle, kBig, kNotApplicable };

constexpr ByteOrder native_byte_order() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return ByteOrder::kBig;
#else
  return ByteOrder::kLittle;
#endif
}

struct DataType {
  DTypeKind kind = DTypeKind::kFloat;
  std::uint8_t size = 4;       // bytes per element (complex64: 8; complex128: 16)
  std::string time_unit;       // "ns", "s", "D", "10ms", ... for kDateTime/kTimeDelta; else ""

  bool operator==(const DataType&) const = default;

  // Bytes swapped as one unit when the stored byte order differs from the host's: the
  // element size, except complex numbers, whose real and imaginary parts swap separately.
  std::size_t swap_unit() const { return kind == DTypeKind::kComplex ? size / 2 : size; }

  // Zarr v3 core name ("float32", "int16", "complex64", "bool"); datetime types use the
  // numpy form "datetime64[ns]" since they are not v3 core types.
  std::string name() const;
  // numpy dtype string in the given byte order ("<f4", "|b1", "<M8[ns]").
  std::string numpy_str(ByteOrder order = native_byte_order()) const;

  static DataType boolean() { return {DTypeKind::kBool, 1, {}}; }
  static DataType int_(int bytes) { return {DTypeKind::kInt, static_cast<std::uint8_t>(bytes), {}}; }
  static DataType uint_(int bytes) { return {DTypeKind::kUInt, static_cast<std::uint8_t>(bytes), {}}; }
  static DataType float_(int bytes) { return {DTypeKind::kFloat, static_cast<std::uint8_t>(bytes), {}}; }
};

// Parses a Zarr v3 data_type name ("float32", "uint8", "complex128", "bool"). Throws
// Error(kUnsupported) for names it does not know, naming the type.
DataType parse_v3_data_type(std::string_view name);

// Parses a numpy dtype string as Zarr v2 stores it ("<f4", ">i8", "|u1", "<M8[ns]",
// "<m8[s]", "<c16", "|b1"); returns the type and the stored byte order through `order`.
// Structured, string and object dtypes throw Error(kUnsupported).
DataType parse_numpy_dtype(std::string_view str, ByteOrder* order);

}  // namespace cubestream
