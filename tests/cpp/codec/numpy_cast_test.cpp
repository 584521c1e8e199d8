// The shared numpy conversion code (logic/numpy_cast.hpp): float16 conversions against an
// exhaustive reference, promotion against numpy's table, and casts.
#include <cmath>
#include <limits>

#include "codec/logic/numpy_cast.hpp"
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

namespace logic = cubestream::codec::logic;
using logic::NumKind;
using logic::NumType;

// Nearest float16 by search over all finite float16 values (ties to the even bit pattern).
std::uint16_t half_reference(double d) {
  if (std::isnan(d)) return 0x7E00;
  const std::uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  const double a = std::fabs(d);
  if (a >= 65520.0) return sign | 0x7C00;  // 65504 + half an ulp (16) rounds to infinity
  std::uint16_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const double v = logic::half_bits_to_double(static_cast<std::uint16_t>(h));
    const double err = std::fabs(v - a);
    if (err < best_err || (err == best_err && (h & 1u) == 0)) {
      best_err = err;
      best = static_cast<std::uint16_t>(h);
    }
  }
  return sign | best;
}

TEST(NumpyCast, HalfRoundTripsEveryValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const double d = logic::half_bits_to_double(b);
    if (std::isnan(d)) {
      EXPECT_TRUE(std::isnan(logic::half_bits_to_double(logic::double_to_half_bits(d))));
      continue;
    }
    ASSERT_EQ(logic::double_to_half_bits(d), b) << std::hex << h;
  }
  EXPECT_EQ(logic::half_bits_to_double(0x3C00), 1.0);
  EXPECT_EQ(logic::half_bits_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(logic::half_bits_to_double(0x7BFF), 65504.0);
}

TEST(NumpyCast, DoubleToHalfRoundsToNearestEven) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> ex(-28, 17);
  for (int i = 0; i < 1500; ++i) {
    const double d = std::ldexp(mant(rng), ex(rng));
    ASSERT_EQ(logic::double_to_half_bits(d), half_reference(d)) << d;
  }
  // exact midpoints: ties go to the even pattern
  for (std::uint16_t h : {0x0000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0x7BFE}) {
    const double lo = logic::half_bits_to_double(h), hi = logic::half_bits_to_double(h + 1);
    const double mid = (lo + hi) / 2;
    EXPECT_EQ(logic::double_to_half_bits(mid), (h & 1u) ? h + 1 : h) << std::hex << h;
  }
  EXPECT_EQ(logic::double_to_half_bits(65519.99), 0x7BFF);
  EXPECT_EQ(logic::double_to_half_bits(65520.0), 0x7C00);
  EXPECT_EQ(logic::double_to_half_bits(-1e300), 0xFC00);
  EXPECT_EQ(logic::double_to_half_bits(std::ldexp(1.0, -25)), 0x0000);  // tie with 0: even
  EXPECT_EQ(logic::double_to_half_bits(std::ldexp(1.5, -25)), 0x0001);
}

NumType t(char kind, int size) {
  const NumKind k = kind == 'b' ? NumKind::kBool : kind == 'i' ? NumKind::kInt : kind == 'u' ? NumKind::kUInt : NumKind::kFloat;
  return NumType{k, static_cast<std::uint8_t>(size), false};
}

TEST(NumpyCast, PromoteTypesMatchesNumpy) {
  struct Row {
    NumType a, b, want;
  };
  // np.promote_types results
  const Row rows[] = {
      {t('i', 1), t('u', 1), t('i', 2)}, {t('i', 2), t('u', 2), t('i', 4)}, {t('i', 4), t('u', 4), t('i', 8)},
      {t('i', 8), t('u', 8), t('f', 8)}, {t('i', 8), t('u', 4), t('i', 8)}, {t('u', 1), t('u', 4), t('u', 4)},
      {t('i', 1), t('f', 2), t('f', 2)}, {t('u', 1), t('f', 2), t('f', 2)}, {t('i', 2), t('f', 2), t('f', 4)},
      {t('i', 2), t('f', 4), t('f', 4)}, {t('i', 4), t('f', 4), t('f', 8)}, {t('u', 8), t('f', 2), t('f', 8)},
      {t('f', 2), t('f', 4), t('f', 4)}, {t('b', 1), t('i', 2), t('i', 2)}, {t('b', 1), t('b', 1), t('b', 1)},
  };
  for (const auto& r : rows) {
    for (const auto& [x, y] : {std::pair{r.a, r.b}, std::pair{r.b, r.a}}) {
      const NumType p = logic::promote_types(x, y);
      EXPECT_TRUE(logic::same_type(p, r.want)) << int(x.kind) << x.size << "+" << int(y.kind) << y.size;
    }
  }
}

TEST(NumpyCast, MinScalarTypeMatchesNumpy) {
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_int(255), t('u', 1)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_int(256), t('u', 2)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_int(-129), t('i', 2)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_int(2147483648ll), t('u', 4)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_int(-2147483649ll), t('i', 8)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_float(64999.0), t('f', 2)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_float(65000.0), t('f', 4)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_float(3.3e38), t('f', 4)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_float(3.4e38), t('f', 8)));
  EXPECT_TRUE(logic::same_type(logic::min_scalar_type_float(INFINITY), t('f', 2)));
}

TEST(NumpyCast, FloatToIntegerCasts) {
  // in range: truncation toward zero, then the target's width
  EXPECT_EQ(logic::double_to_int_bits(-2.7, t('i', 4)), 0xFFFFFFFEu);
  EXPECT_EQ(logic::double_to_int_bits(300.9, t('u', 1)), 44u);  // 300 wraps to 44
  EXPECT_EQ(logic::double_to_int_bits(-1.0, t('u', 2)), 0xFFFFu);
  EXPECT_EQ(logic::double_to_int_bits(1e19, t('u', 8)), 10000000000000000000ull);
  // out of range and NaN: x86's integer indefinite, truncated
  EXPECT_EQ(logic::double_to_int_bits(1e10, t('i', 4)), 0x80000000u);
  EXPECT_EQ(logic::double_to_int_bits(NAN, t('i', 8)), 0x8000000000000000ull);
  EXPECT_EQ(logic::double_to_int_bits(1e10, t('i', 2)), 0u);
  EXPECT_EQ(logic::double_to_int_bits(0.5, t('b', 1)), 1u);
  EXPECT_EQ(logic::double_to_int_bits(0.0, t('b', 1)), 0u);
}

TEST(NumpyCast, ConvertBitsBetweenTypes) {
  const NumType i2{NumKind::kInt, 2, true}, f4{NumKind::kFloat, 4, false};
  // big-endian -3 as int16 -> float32 -3.0
  const std::uint8_t be[2] = {0xFF, 0xFD};
  const std::uint64_t bits = logic::load_bits(be, 2, true);
  const std::uint64_t f = logic::convert_bits(bits, i2, f4);
  float v;
  const auto b32 = static_cast<std::uint32_t>(f);
  std::memcpy(&v, &b32, 4);
  EXPECT_EQ(v, -3.0f);
  std::uint8_t out[2];
  logic::store_bits(out, bits, 2, true);
  EXPECT_EQ(out[0], 0xFF);
  EXPECT_EQ(out[1], 0xFD);
}

}  // namespace
}  // namespace cs_codec_test
