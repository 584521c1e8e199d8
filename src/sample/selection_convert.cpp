// Per-element conversions of the sample buffer: CF decoding + normalisation + NaN fill into
// float32, and float32 -> bfloat16 / float16 with round-to-nearest-even.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/float16_bits.hpp"
#include "cubestream/error.hpp"
#include "cubestream/selection.hpp"
#include "zarr/cf_decode.hpp"

namespace cubestream {

void decode_normalise(const void* raw, const DataType& dtype, std::size_t count, const CFEncoding& enc,
                      const Normalisation& norm, std::optional<float> nan_fill, float* out) {
  if (dtype.kind == DTypeKind::kComplex) {
    throw Error(ErrorCode::kUnsupported, "cannot read a " + dtype.name() + " variable into a sample buffer");
  }
  const auto* p = static_cast<const unsigned char*>(raw);
  // The common case of reanalysis data, float32 without CF encoding, in one pass the compiler
  // vectorises: the same float64 arithmetic as below, without the intermediate buffer.
  // (A NaN _FillValue, the usual one of float variables, masks nothing.)
  const bool masks = std::any_of(enc.missing_values.begin(), enc.missing_values.end(),
                                 [](double m) { return !std::isnan(m); });
  if (dtype.kind == DTypeKind::kFloat && dtype.size == 4 && !masks && !enc.scale_factor && !enc.add_offset &&
      !enc.is_unsigned) {
    const double mean = norm.mean, sd = norm.std;
    for (std::size_t i = 0; i < count; ++i) {
      float x;
      std::memcpy(&x, p + i * 4, 4);
      out[i] = static_cast<float>((static_cast<double>(x) - mean) / sd);
    }
    if (nan_fill) {
      for (std::size_t i = 0; i < count; ++i)
        if (std::isnan(out[i])) out[i] = *nan_fill;
    }
    return;
  }
  // CF decoding is the dataset layer's (masking with values rounded to the stored type as
  // numpy does, _Unsigned, scale, offset); here only normalisation and the NaN policy are
  // added, in blocks so that the float64 intermediate stays in cache.
  constexpr std::size_t kBlock = 4096;
  double tmp[kBlock];
  for (std::size_t done = 0; done < count; done += kBlock) {
    const std::size_t n = std::min(kBlock, count - done);
    zarr::cf_decode_values(p + done * dtype.size, dtype, n, enc, tmp);
    for (std::size_t i = 0; i < n; ++i) {
      float f = static_cast<float>((tmp[i] - norm.mean) / norm.std);
      if (nan_fill && std::isnan(f)) f = *nan_fill;
      out[done + i] = f;
    }
  }
}

std::uint16_t float_to_bfloat16(float x) { return core::bfloat16_bits(x); }

std::uint16_t float_to_float16(float x) { return core::float16_bits(x); }

float bfloat16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

float float16_to_float(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

void float_to_bfloat16(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bfloat16(in[i]);
}
void float_to_float16(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_float16(in[i]);
}

}  // namespace cubestream
