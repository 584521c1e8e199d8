// Parsing fill_value from Zarr v2 and v3 metadata into one element's bytes (native order).
#pragma once

#include <nlohmann/json.hpp>

#include "cubestream/bytes.hpp"
#include "cubestream/dtype.hpp"

namespace cubestream::zarr {

// Zarr v3 (spec "fill_value"): booleans; integers; floats as numbers, "NaN", "Infinity",
// "-Infinity" or "0x..." raw bits (big-endian hex of the IEEE representation); complex as
// [real, imag] pairs of the float forms. Throws Error(kInvalidMetadata) otherwise.
Bytes parse_fill_value_v3(const nlohmann::json& v, const DataType& dtype);

// Zarr v2: as v3 minus the hex form, plus null (returned as zeros with *is_null = true).
Bytes parse_fill_value_v2(const nlohmann::json& v, const DataType& dtype, bool* is_null);

// IEEE 754 binary16 from a double, rounding to nearest even (for float16 fill values).
std::uint16_t double_to_half(double v);

}  // namespace cubestream::zarr
