// numpy's element conversions and type promotion, for the numcodecs filters (delta,
// fixedscaleoffset, quantize), shared by host and device.
//
// The filters are defined by what numpy does: `np.cumsum(enc, out=dec)`, `enc / scale + offset`,
// `arr.astype(dtype)`. Reproducing them bit for bit needs three pieces of numpy behaviour:
//  - promotion (np.promote_types) picks the dtype an operation computes in;
//  - casts between dtypes: integer -> integer wraps (keeps the low bits), float -> float rounds
//    to nearest-even, float -> integer truncates toward zero like a C cast (out-of-range values
//    are undefined in C; numpy on x86-64 yields what cvttsd2si yields, reproduced here),
//    anything -> bool is `!= 0`;
//  - float16 arithmetic: each operation rounds its exact result once to float16 (computing in
//    double and rounding once is exact-equivalent, since double has more than 2*11+2 bits).
// Element bytes are read and written in an explicit byte order, so the code does not depend on
// the host's order.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

enum class NumKind : std::uint8_t { kBool, kInt, kUInt, kFloat };

// A numeric numpy dtype: kind, size in bytes, and the byte order its bytes are stored in.
struct NumType {
  NumKind kind = NumKind::kFloat;
  std::uint8_t size = 8;
  bool big_endian = false;
};

CS_HD inline bool same_type(NumType a, NumType b) { return a.kind == b.kind && a.size == b.size; }

// ---- bytes <-> bit patterns -------------------------------------------------------------

CS_HD inline std::uint64_t load_bits(const std::uint8_t* p, int size, bool big_endian) {
  std::uint64_t v = 0;
  if (big_endian) {
    for (int i = 0; i < size; ++i) v = (v << 8) | p[i];
  } else {
    for (int i = size - 1; i >= 0; --i) v = (v << 8) | p[i];
  }
  return v;
}

CS_HD inline void store_bits(std::uint8_t* p, std::uint64_t v, int size, bool big_endian) {
  if (big_endian) {
    for (int i = size - 1; i >= 0; --i) {
      p[i] = static_cast<std::uint8_t>(v);
      v >>= 8;
    }
  } else {
    for (int i = 0; i < size; ++i) {
      p[i] = static_cast<std::uint8_t>(v);
      v >>= 8;
    }
  }
}

// ---- float16 ----------------------------------------------------------------------------

CS_HD inline double half_bits_to_double(std::uint16_t h) {
  const std::uint64_t sign = static_cast<std::uint64_t>(h >> 15) << 63;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint64_t mant = h & 0x3FFu;
  std::uint64_t bits;
  if (exp == 0) {
    // zero or subnormal: mant * 2^-24, exact in double
    const double v = static_cast<double>(mant) * 5.9604644775390625e-08;
    return (h >> 15) ? -v : v;
  } else if (exp == 31) {
    bits = sign | (0x7FFull << 52) | (mant << 42);  // inf (mant 0) or NaN (payload kept)
  } else {
    bits = sign | (static_cast<std::uint64_t>(exp - 15 + 1023) << 52) | (mant << 42);
  }
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

// Rounds `m` right by `shift` bits to nearest, ties to even.
CS_HD inline std::uint64_t round_shift_rne(std::uint64_t m, int shift) {
  const std::uint64_t q = m >> shift;
  const std::uint64_t rem = m & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  return (rem > half || (rem == half && (q & 1u))) ? q + 1 : q;
}

// double -> float16, correctly rounded (nearest-even), as numpy's npy_double_to_half.
CS_HD inline std::uint16_t double_to_half_bits(double d) {
  std::uint64_t b;
  memcpy(&b, &d, sizeof b);
  const auto sign = static_cast<std::uint16_t>((b >> 48) & 0x8000u);
  const std::uint64_t mag = b & 0x7FFFFFFFFFFFFFFFull;
  if (mag >= 0x7FF0000000000000ull) {
    if (mag == 0x7FF0000000000000ull) return sign | 0x7C00u;
    const auto payload = static_cast<std::uint16_t>((mag >> 42) & 0x3FFu);
    return sign | 0x7C00u | (payload ? payload : 0x200u);  // stays a NaN
  }
  const int exp = static_cast<int>(mag >> 52) - 1023;
  const std::uint64_t m = (mag & 0xFFFFFFFFFFFFFull) | (std::uint64_t{1} << 52);
  if (exp > 15) return sign | 0x7C00u;  // beyond float16's range: infinity
  if (exp >= -14) {
    // normal float16: keep 11 significant bits; a carry out of the mantissa correctly bumps
    // the exponent (and 0x7C00, infinity, on overflow)
    const std::uint64_t q = round_shift_rne(m, 42);
    const std::uint64_t r = (static_cast<std::uint64_t>(exp + 15) << 10) + (q - 0x400u);
    return sign | static_cast<std::uint16_t>(r > 0x7C00u ? 0x7C00u : r);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: rounds to zero
  // subnormal float16: units of 2^-24 (a carry to 0x400 is the smallest normal, correctly)
  return sign | static_cast<std::uint16_t>(round_shift_rne(m, 28 - exp));
}

// ---- values of a NumType ----------------------------------------------------------------

CS_HD inline double bits_to_double(std::uint64_t bits, NumType t) {
  switch (t.kind) {
    case NumKind::kBool: return (bits & 0xFFu) ? 1.0 : 0.0;
    case NumKind::kInt: {
      const int shift = 64 - 8 * t.size;
      return static_cast<double>(static_cast<std::int64_t>(bits << shift) >> shift);
    }
    case NumKind::kUInt: return static_cast<double>(bits);
    case NumKind::kFloat:
      if (t.size == 2) return half_bits_to_double(static_cast<std::uint16_t>(bits));
      if (t.size == 4) {
        const auto b32 = static_cast<std::uint32_t>(bits);
        float f;
        memcpy(&f, &b32, sizeof f);
        return f;
      }
      {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
      }
  }
  return 0.0;
}

// An integer-kind value as a 64-bit two's-complement pattern (sign- or zero-extended).
CS_HD inline std::uint64_t bits_to_u64(std::uint64_t bits, NumType t) {
  if (t.kind == NumKind::kBool) return (bits & 0xFFu) ? 1u : 0u;
  if (t.kind == NumKind::kInt && t.size < 8) {
    const int shift = 64 - 8 * t.size;
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(bits << shift) >> shift);
  }
  return bits;
}

CS_HD inline std::uint64_t truncate_bits(std::uint64_t v, int size) {
  return size >= 8 ? v : v & ((std::uint64_t{1} << (8 * size)) - 1);
}

// Rounds a double to the precision of a float type (the result of one operation in it).
CS_HD inline double round_to_float_type(double v, int size) {
  if (size == 8) return v;
  if (size == 4) return static_cast<double>(static_cast<float>(v));
  return half_bits_to_double(double_to_half_bits(v));
}

// float -> integer as a C cast compiled for x86-64 (what numpy's cast loops do): truncation
// toward zero; byte, short and int targets go through a 32-bit conversion, the others through
// a 64-bit one, whose out-of-range (and NaN) result is the "integer indefinite" 0x80...0.
CS_HD inline std::uint64_t double_to_int_bits(double v, NumType t) {
  if (t.kind == NumKind::kBool) return v != 0.0 ? 1u : 0u;
  if (t.kind == NumKind::kUInt && t.size == 8 && v >= 9223372036854775808.0 &&
      v < 18446744073709551616.0) {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v - 9223372036854775808.0)) ^
           (std::uint64_t{1} << 63);
  }
  const bool via32 = t.size <= 2 || (t.kind == NumKind::kInt && t.size == 4);
  std::int64_t r;
  if (via32) {
    r = (v >= -2147483648.0 && v < 2147483648.0) ? static_cast<std::int32_t>(v)
                                                  : std::int32_t{-2147483647 - 1};
  } else {
    r = (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
            ? static_cast<std::int64_t>(v)
            : static_cast<std::int64_t>(std::uint64_t{1} << 63);
  }
  return truncate_bits(static_cast<std::uint64_t>(r), t.size);
}

// A double (already of the source precision) stored as type `t`.
CS_HD inline std::uint64_t double_to_bits(double v, NumType t) {
  if (t.kind != NumKind::kFloat) return double_to_int_bits(v, t);
  if (t.size == 2) return double_to_half_bits(v);
  if (t.size == 4) {
    const float f = static_cast<float>(v);
    std::uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
  }
  std::uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

// An integer value (64-bit pattern of a signed or unsigned source) stored as type `t`.
CS_HD inline std::uint64_t int_to_bits(std::uint64_t v, bool source_signed, NumType t) {
  switch (t.kind) {
    case NumKind::kBool: return v != 0 ? 1u : 0u;
    case NumKind::kInt:
    case NumKind::kUInt: return truncate_bits(v, t.size);
    case NumKind::kFloat:
      if (t.size == 4) {
        // direct conversion: one rounding, as numpy's (float)integer
        const float f = source_signed ? static_cast<float>(static_cast<std::int64_t>(v))
                                      : static_cast<float>(v);
        std::uint32_t b;
        memcpy(&b, &f, sizeof b);
        return b;
      }
      return double_to_bits(source_signed ? static_cast<double>(static_cast<std::int64_t>(v))
                                          : static_cast<double>(v),
                            t);
  }
  return 0;
}

// Converts one element of type `from` (bit pattern) to type `to`, as ndarray.astype does.
CS_HD inline std::uint64_t convert_bits(std::uint64_t bits, NumType from, NumType to) {
  if (from.kind == NumKind::kFloat) return double_to_bits(bits_to_double(bits, from), to);
  return int_to_bits(bits_to_u64(bits, from), from.kind == NumKind::kInt, to);
}

// ---- promotion ----------------------------------------------------------------------------

// np.promote_types for bool, integer and float dtypes (byte order of the result: native).
CS_HD inline NumType promote_types(NumType a, NumType b) {
  if (a.kind == NumKind::kBool) return NumType{b.kind, b.size, false};
  if (b.kind == NumKind::kBool) return NumType{a.kind, a.size, false};
  const bool af = a.kind == NumKind::kFloat, bf = b.kind == NumKind::kFloat;
  if (af || bf) {
    // an integer of n bytes needs the float type that holds its values: 1 -> f2, 2 -> f4, else f8
    auto need = [](NumType t) -> int {
      if (t.kind == NumKind::kFloat) return t.size;
      return t.size == 1 ? 2 : t.size == 2 ? 4 : 8;
    };
    const int s = need(a) > need(b) ? need(a) : need(b);
    return NumType{NumKind::kFloat, static_cast<std::uint8_t>(s), false};
  }
  if (a.kind == b.kind) {
    return NumType{a.kind, a.size > b.size ? a.size : b.size, false};
  }
  const NumType s = a.kind == NumKind::kInt ? a : b;  // signed
  const NumType u = a.kind == NumKind::kInt ? b : a;  // unsigned
  if (u.size < s.size) return NumType{NumKind::kInt, s.size, false};
  if (u.size < 8) return NumType{NumKind::kInt, static_cast<std::uint8_t>(u.size * 2), false};
  return NumType{NumKind::kFloat, 8, false};
}

// np.min_scalar_type of a Python int (numpy 1.x value-based casting of scalar operands).
CS_HD inline NumType min_scalar_type_int(std::int64_t v) {
  if (v >= 0) {
    const std::uint8_t s = v <= 0xFF ? 1 : v <= 0xFFFF ? 2 : v <= 0xFFFFFFFFll ? 4 : 8;
    return NumType{NumKind::kUInt, s, false};
  }
  const std::uint8_t s = v >= -128 ? 1 : v >= -32768 ? 2 : v >= -2147483648ll ? 4 : 8;
  return NumType{NumKind::kInt, s, false};
}

// np.min_scalar_type of a Python float: numpy's own thresholds (65000 and 3.4e38, not the
// types' exact maxima); infinities and NaN count as float16.
CS_HD inline NumType min_scalar_type_float(double v) {
  const bool finite = v - v == 0.0;
  if (!finite || (v > -65000.0 && v < 65000.0)) return NumType{NumKind::kFloat, 2, false};
  if (v > -3.4e38 && v < 3.4e38) return NumType{NumKind::kFloat, 4, false};
  return NumType{NumKind::kFloat, 8, false};
}

}  // namespace cubestream::codec::logic
