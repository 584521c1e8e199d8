#include "pipeline/assemble_rows.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/float16_bits.hpp"
#include "cubestream/error.hpp"
#include "zarr/cf_decode.hpp"

namespace cubestream::pipeline {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();  // what masking writes

// Loads of element i of a stored row as float64, as cf_decode_values converts each type.
template <class T>
struct LoadAs {
  static constexpr std::size_t size = sizeof(T);
  static double get(const std::uint8_t* p, std::size_t i) {
    T t;
    std::memcpy(&t, p + i * sizeof(T), sizeof(T));
    return static_cast<double>(t);
  }
};

struct LoadBool {
  static constexpr std::size_t size = 1;
  static double get(const std::uint8_t* p, std::size_t i) { return p[i] ? 1.0 : 0.0; }
};

// datetime64 / timedelta64 counts; NaT (INT64_MIN) reads as NaN.
struct LoadTime {
  static constexpr std::size_t size = 8;
  static double get(const std::uint8_t* p, std::size_t i) {
    std::int64_t t;
    std::memcpy(&t, p + i * 8, 8);
    return t == std::numeric_limits<std::int64_t>::min() ? kNaN : static_cast<double>(t);
  }
};

// IEEE binary16 to float64 from the bits (zarr::half_to_double's values, without its ldexp
// calls): NaN of either sign becomes the default quiet NaN with the half's sign, as there.
struct LoadHalf {
  static constexpr std::size_t size = 2;
  static double get(const std::uint8_t* p, std::size_t i) {
    std::uint16_t h;
    std::memcpy(&h, p + i * 2, 2);
    const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    double mag;
    if (e == 0) mag = static_cast<double>(m) * 0x1p-24;  // zero and subnormals, exact
    else if (e == 31) mag = m ? kNaN : std::numeric_limits<double>::infinity();
    else mag = std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023 - 15) << 52 | static_cast<std::uint64_t>(m) << 42);
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(mag) | static_cast<std::uint64_t>(h & 0x8000u) << 48);
  }
};

struct StoreF32 {
  using T = float;
  static float put(float f) { return f; }
};
struct StoreBF16 {
  using T = std::uint16_t;
  static std::uint16_t put(float f) { return core::bfloat16_bits(f); }
};
struct StoreF16 {
  using T = std::uint16_t;
  // float16_bits' bits without its branches, so that the row loops vectorise: a 721 x 1440
  // float32 field to float16 in 0.40 ms with AVX-512 and 1.0 with AVX2, against 2.6 and 2.6
  // for the branching form (dev machine, one thread); SSE2 stays at ~2 ms.
  static std::uint16_t put(float f) { return core::float16_bits_branchless(f); }
};

// How a loop normalises: not at all (mean +0, std 1, where (v - 0) / 1 == v for every
// float64), by division, or by multiplication with 1/std with the check below.
enum class Norm { kNone, kDivide, kReciprocal };

// For the multiplying loops: whether q' = RN64(d * RN64(1/std)) might round to another
// float32 than the reference's q = RN64(d / std). With r = d / std exact and u = 2^-53,
// RN64(1/std) = (1/std)(1 + e1) and q' = r(1 + e1)(1 + e2) with |e1|, |e2| <= u (1/std and q'
// normal), and |q - r| <= u|r|, so |q' - q| <= (3u + u^2)|r| < 3.0001 u |q'| < 3.0001 ulp64(q').
// float32 rounding (to nearest, ties to even) only depends on which side of the nearest
// point halfway between two float32s a value lies (and, at the point, on the tie rule). For
// q' in the float32 normal range the halfway points of its binade are the float64s whose
// low 29 significand bits are 2^28; if q' is 4 or more float64 ulps from such a point, q lies
// strictly on the same side and both round alike. Flagged: low bits within 4 of 2^28, and
// 2^-153 <= |q'| < 2^-126 (float32 subnormals round at other bit positions). Below 2^-153
// both give a zero of the same sign; NaN (d's payload either way), infinities, zeros and
// overflow to float32 infinity agree without a check.
inline bool recip_needs_division(double q) {
  const std::uint64_t b = std::bit_cast<std::uint64_t>(q);
  const double a = std::fabs(q);
  return (((b + (4 - (std::uint64_t{1} << 28))) & 0x1FFFFFFFu) <= 8u) | ((a >= 0x1p-153) & (a < 0x1p-126));
}

// The fused loop. Every step runs for every element; absent CF steps are identities through
// their constants (see the header). The reference skips the affine map for masked values
// (NaN either way); here the masked NaN goes through it, which keeps its bits (a quiet NaN
// operand is the result of * and +, IEEE 754 6.2.3, as the reference's own (NaN - mean) / std
// relies on) and keeps the loop free of branches: with the select after the map, GCC moves
// the map into a branch for the unmasked elements and cannot vectorise that (with
// -ftrapping-math it may not execute floating-point operations the source made conditional).
// The flag is accumulated as a 64-bit integer, which every vector level reduces. CF = false
// leaves the masking and the affine map out (float variables without either: their
// constants would make both identities anyway).
template <class Load, class Store, Norm N, bool CF>
[[gnu::always_inline]] inline bool row_body(const std::uint8_t* src, std::size_t n, void* dst, const RowConstants& k) {
  const double m0 = k.missing[0], m1 = k.missing[1], m2 = k.missing[2], m3 = k.missing[3];
  const double scale = k.scale, offset = k.offset, mean = k.mean, sd = k.std, inv = k.inv_std;
  const float fill = k.fill;
  const bool has_fill = k.has_fill;
  auto* out = static_cast<typename Store::T*>(dst);
  std::uint64_t redo = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double v = Load::get(src, i);
    if constexpr (CF) {
      const bool masked = (v == m0) | (v == m1) | (v == m2) | (v == m3);
      v = masked ? kNaN : v;
      v = v * scale + offset;
    }
    if constexpr (N == Norm::kDivide) v = (v - mean) / sd;
    if constexpr (N == Norm::kReciprocal) {
      v = (v - mean) * inv;
      redo |= recip_needs_division(v) ? 1u : 0u;
    }
    float f = static_cast<float>(v);
    f = (has_fill & (f != f)) ? fill : f;
    out[i] = Store::put(f);
  }
  return redo != 0;
}

// The loop per instruction set level. The body is inlined into each; the helpers it calls
// (loads, casts) carry no target attribute, so any copy of them the compiler keeps out of
// line is base-level code, safe everywhere.
template <class Load, class Store, Norm N, bool CF>
bool row_base(const std::uint8_t* src, std::size_t n, void* dst, const RowConstants& k) {
  return row_body<Load, Store, N, CF>(src, n, dst, k);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CS_ROW_WIDE 1
// No "fma": -ffp-contract=off (CMakeLists.txt) already forbids contraction, and without the
// instructions there is nothing to contract into even where the flag is lost.
#define CS_TARGET_AVX2 [[gnu::target("avx2")]]
#if defined(__clang__)
#define CS_TARGET_AVX512 [[gnu::target("avx512f,avx512vl,avx512bw,avx512dq")]]
#else
// GCC keeps 256-bit vectors for AVX-512 unless told otherwise.
#define CS_TARGET_AVX512 [[gnu::target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")]]
#endif

template <class Load, class Store, Norm N, bool CF>
CS_TARGET_AVX2 bool row_avx2(const std::uint8_t* src, std::size_t n, void* dst, const RowConstants& k) {
  return row_body<Load, Store, N, CF>(src, n, dst, k);
}

template <class Load, class Store, Norm N, bool CF>
CS_TARGET_AVX512 bool row_avx512(const std::uint8_t* src, std::size_t n, void* dst, const RowConstants& k) {
  return row_body<Load, Store, N, CF>(src, n, dst, k);
}
#else
#define CS_ROW_WIDE 0
#endif

// The loop for one level and normalisation mode. AVX-512 multiplies (its division is the
// slowest part of the loop there: ~1.5x); the other levels divide, as fast as multiplying
// and checking on them.
template <class Load, class Store, bool CF>
RowFn pick_loop(RowIsa isa, Norm n) {
#if CS_ROW_WIDE
  if (isa == RowIsa::kAvx512) {
    if (n == Norm::kNone) return row_avx512<Load, Store, Norm::kNone, CF>;
    if (n == Norm::kReciprocal) return row_avx512<Load, Store, Norm::kReciprocal, CF>;
    isa = RowIsa::kAvx2;  // division wanted (std too small or large for the reciprocal)
  }
  if (isa == RowIsa::kAvx2) {
    return n == Norm::kNone ? row_avx2<Load, Store, Norm::kNone, CF> : row_avx2<Load, Store, Norm::kDivide, CF>;
  }
#endif
  return n == Norm::kNone ? row_base<Load, Store, Norm::kNone, CF> : row_base<Load, Store, Norm::kDivide, CF>;
}

template <class Load, bool CF = true>
RowFn pick_store(OutputDType out, RowIsa isa, Norm n) {
  switch (out) {
    case OutputDType::kFloat32: return pick_loop<Load, StoreF32, CF>(isa, n);
    case OutputDType::kBFloat16: return pick_loop<Load, StoreBF16, CF>(isa, n);
    case OutputDType::kFloat16: return pick_loop<Load, StoreF16, CF>(isa, n);
  }
  return nullptr;
}

// The loop for the effective element type (after _Unsigned), or null for types CF decoding
// refuses (the caller's fallback then throws decode_normalise's error).
RowFn pick_for(const DataType& eff, OutputDType out, RowIsa isa, Norm n, bool cf) {
  switch (eff.kind) {
    case DTypeKind::kBool: return pick_store<LoadBool>(out, isa, n);
    case DTypeKind::kInt:
      switch (eff.size) {
        case 1: return pick_store<LoadAs<std::int8_t>>(out, isa, n);
        case 2: return pick_store<LoadAs<std::int16_t>>(out, isa, n);
        case 4: return pick_store<LoadAs<std::int32_t>>(out, isa, n);
        case 8: return pick_store<LoadAs<std::int64_t>>(out, isa, n);
      }
      break;
    case DTypeKind::kUInt:
      switch (eff.size) {
        case 1: return pick_store<LoadAs<std::uint8_t>>(out, isa, n);
        case 2: return pick_store<LoadAs<std::uint16_t>>(out, isa, n);
        case 4: return pick_store<LoadAs<std::uint32_t>>(out, isa, n);
        case 8: return pick_store<LoadAs<std::uint64_t>>(out, isa, n);
      }
      break;
    case DTypeKind::kFloat:
      switch (eff.size) {
        case 2: return pick_store<LoadHalf>(out, isa, n);
        case 4: return cf ? pick_store<LoadAs<float>>(out, isa, n) : pick_store<LoadAs<float>, false>(out, isa, n);
        case 8: return cf ? pick_store<LoadAs<double>>(out, isa, n) : pick_store<LoadAs<double>, false>(out, isa, n);
      }
      break;
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta:
      if (eff.size == 8) return pick_store<LoadTime>(out, isa, n);
      break;
    case DTypeKind::kComplex:
      break;
  }
  return nullptr;
}

}  // namespace

const std::vector<RowIsa>& supported_row_isas() {
  static const std::vector<RowIsa> isas = [] {
    std::vector<RowIsa> v = {RowIsa::kBase};
#if CS_ROW_WIDE
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) v.push_back(RowIsa::kAvx2);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
      v.push_back(RowIsa::kAvx512);
    }
#endif
    return v;
  }();
  return isas;
}

RowConverter::RowConverter(const DataType& dtype, const CFEncoding& enc, const Normalisation& norm,
                           std::optional<float> nan_fill, OutputDType out)
    : RowConverter(dtype, enc, norm, nan_fill, out, supported_row_isas().back()) {}

RowConverter::RowConverter(const DataType& dtype, const CFEncoding& enc, const Normalisation& norm,
                           std::optional<float> nan_fill, OutputDType out, RowIsa isa)
    : in_size_(dtype.size),
      out_size_(out == OutputDType::kFloat32 ? 4 : 2),
      out_(out),
      dtype_(&dtype),
      enc_(&enc),
      norm_(norm),
      nan_fill_(nan_fill) {
  int nm = 0;
  bool fused = true;
  for (double& m : k_.missing) m = kNaN;
  for (double m : enc.missing_values) {
    if (std::isnan(m)) continue;  // masks nothing
    if (nm == kRowMaxMissing) {
      fused = false;
      break;
    }
    k_.missing[nm++] = m;
  }
  // The reference applies v * scale + offset (defaults 1 and +0) only when either attribute
  // is present; otherwise the constants stay the identity ones.
  if (enc.scale_factor || enc.add_offset) {
    k_.scale = enc.scale_factor.value_or(1.0);
    k_.offset = enc.add_offset.value_or(0.0);
  }
  // A NaN scale or offset would put its own NaN into masked values, not the reference's.
  if (std::isnan(k_.scale) || std::isnan(k_.offset)) fused = false;
  k_.mean = norm.mean;
  k_.std = norm.std;
  k_.inv_std = 1.0 / norm.std;
  k_.has_fill = nan_fill.has_value();
  k_.fill = nan_fill.value_or(0.0f);
  // mean -0 is not the identity: -0 - -0 == +0.
  const bool identity_norm = norm.mean == 0.0 && !std::signbit(norm.mean) && norm.std == 1.0;
  // The reciprocal's bound needs 1/std and std normal with room to spare.
  const bool recip_ok = std::fabs(norm.std) >= 0x1p-1000 && std::fabs(norm.std) <= 0x1p1000;
  const Norm n = identity_norm ? Norm::kNone : isa == RowIsa::kAvx512 && recip_ok ? Norm::kReciprocal : Norm::kDivide;
  if (fused) {
    const DataType eff = zarr::effective_dtype(dtype, enc.is_unsigned);
    const bool cf = nm > 0 || enc.scale_factor || enc.add_offset;
    fn_ = pick_for(eff, out, isa, n, cf);
    if (n == Norm::kReciprocal) exact_ = pick_for(eff, out, RowIsa::kAvx2, Norm::kDivide, cf);
  }
  if (!fn_ && dtype.kind == DTypeKind::kComplex) {
    throw Error(ErrorCode::kUnsupported, "cannot read a " + dtype.name() + " variable into a sample buffer");
  }
}

void RowConverter::convert(const std::uint8_t* src, std::size_t n, void* dst) const {
  if (fn_) {
    if (fn_(src, n, dst, k_)) exact_(src, n, dst, k_);  // rare: see recip_needs_division
    return;
  }
  // More missing values than the fused loop compares (or a type it refuses: decode_normalise
  // throws): the reference conversion in blocks, then the cast.
  constexpr std::size_t kBlock = 4096;
  float vals[kBlock];
  for (std::size_t done = 0; done < n;) {
    const std::size_t m = std::min(kBlock, n - done);
    float* f = out_ == OutputDType::kFloat32 ? static_cast<float*>(dst) + done : vals;
    decode_normalise(src + done * in_size_, *dtype_, m, *enc_, norm_, nan_fill_, f);
    if (out_ == OutputDType::kBFloat16) float_to_bfloat16(vals, static_cast<std::uint16_t*>(dst) + done, m);
    if (out_ == OutputDType::kFloat16) float_to_float16(vals, static_cast<std::uint16_t*>(dst) + done, m);
    done += m;
  }
}

}  // namespace cubestream::pipeline
