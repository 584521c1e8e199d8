// CF decoding of variable values: masking, _Unsigned, scale_factor / add_offset.
// Private to src/zarr; Dataset (dataset.cpp) is its user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubestream/array.hpp"
#include "cubestream/bytes.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/dtype.hpp"

namespace cubestream::zarr {

// Standard base64 (RFC 4648 alphabet, '+' and '/'), as Python's base64.standard_b64encode
// writes it. Padding '=' is optional; whitespace and any other character are refused.
// Returns nullopt for text that is not base64.
std::optional<Bytes> base64_decode(std::string_view text);

// IEEE 754 binary16 to double (exact: every half is a double).
double half_to_double(std::uint16_t h);

// The CF encoding of an array, from its metadata and attributes. Throws
// Error(kInvalidMetadata) (without context: the caller adds the store and key) for CF
// attributes of the wrong type.
//
// _FillValue comes from
//  - Zarr v2: the array's fill_value (xarray writes _FillValue there and masks with it);
//    a "_FillValue" attribute only when fill_value is null.
//  - Zarr v3: the "_FillValue" attribute. xarray (FillValueCoder) writes it for floats as
//    base64 of the value packed as a little-endian float64 (struct.pack("<d", v)), whatever
//    the float's size; we also accept the variable's own size (4 bytes for float32, 2 for
//    float16) little-endian, a JSON number, and "NaN" / "Infinity" / "-Infinity". Integers
//    and booleans are plain JSON. The array's own fill_value is not a CF mask in v3.
// missing_value: a number, one of the three strings above, or a list of them.
// Every missing value is brought into the stored type's domain the way numpy compares
// (a float64 fill of a float32 variable is rounded to float32; with _Unsigned an
// integer fill wraps into the reinterpreted type, as numpy's astype does).
CFEncoding cf_encoding_of(const ArrayMetadata& meta);

// The type values are read as once _Unsigned is applied (signed <-> unsigned of the same size).
DataType effective_dtype(const DataType& dt, const std::optional<bool>& is_unsigned);

// Decodes `count` elements of `dtype` (native byte order) in `raw` into `out` as float64 with
// `enc` applied. Datetime and timedelta counts convert as numbers, NaT (INT64_MIN) to NaN.
// Complex types throw Error(kUnsupported).
void cf_decode_values(const void* raw, const DataType& dtype, std::size_t count, const CFEncoding& enc, double* out);

}  // namespace cubestream::zarr
