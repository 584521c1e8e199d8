// float32 -> bfloat16 / float16 (round to nearest even) against known bit patterns (float16
// ones from numpy: np.float32(x).astype(np.float16).view(np.uint16)), and against the
// compiler's _Float16 conversion over a sweep of float32 bit patterns where it has one; and
// decode_normalise (CF decoding + normalisation + NaN fill).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "cubestream/error.hpp"
#include "cubestream/selection.hpp"

namespace cubestream {
namespace {

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

TEST(SelectionConvert, BFloat16KnownPatterns) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bfloat16(from_bits(0x40490FDB)), 0x4049);  // pi: rounds down
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3DCCCCCD)), 0x3DCD);  // 0.1f: rounds up
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F818000)), 0x3F82);  // tie, odd goes up
  EXPECT_EQ(float_to_bfloat16(from_bits(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7F80);  // overflow: inf
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bfloat16(from_bits(0x000116C2)), 0x0001);  // float32 subnormal
  EXPECT_EQ(float_to_bfloat16(from_bits(0x7FC00000)), 0x7FC0);  // quiet NaN
  EXPECT_EQ(float_to_bfloat16(from_bits(0x7F800001)), 0x7FC0);  // signalling NaN: quieted, not inf
  EXPECT_EQ(float_to_bfloat16(from_bits(0xFFFFFFFF)), 0xFFFF);  // NaN never rounds to inf
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xC049), from_bits(0xC0490000));
  // Every bfloat16 survives the round trip.
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bfloat16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), b) << std::hex << b;
  }
}

TEST(SelectionConvert, Float16KnownPatterns) {
  struct Case { float x; std::uint16_t h; };
  const Case cases[] = {
      {1.0f, 0x3C00}, {65504.f, 0x7BFF}, {65520.f, 0x7C00}, {65519.f, 0x7BFF},
      {std::ldexp(1.f, -24), 0x0001}, {std::ldexp(1.f, -25), 0x0000}, {3 * std::ldexp(1.f, -26), 0x0001},
      {std::ldexp(1.f, -14), 0x0400}, {0.1f, 0x2E66}, {-2.f, 0xC000}, {1.f / 3, 0x3555},
      {1 + std::ldexp(1.f, -11), 0x3C00}, {1 + 3 * std::ldexp(1.f, -11), 0x3C02},
      {(0x3FF + 0.5f) * std::ldexp(1.f, -24), 0x0400}, {1e-8f, 0x0000}, {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7C00}, {-1e10f, 0xFC00},
  };
  for (const auto& c : cases) EXPECT_EQ(float_to_float16(c.x), c.h) << c.x;
  EXPECT_EQ(float_to_float16(std::nanf("")), 0x7E00);
  EXPECT_TRUE(std::isnan(float16_to_float(float_to_float16(from_bits(0x7F800001)))));
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.f, -24));
  EXPECT_EQ(float16_to_float(0x7BFF), 65504.f);
  EXPECT_EQ(float16_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = float16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_float16(f), b) << std::hex << b;
  }
  std::vector<float> in = {1.f, 0.1f}, bf_in = {1.f, 2.f};
  std::vector<std::uint16_t> out(2);
  float_to_float16(in.data(), out.data(), 2);
  EXPECT_EQ(out, (std::vector<std::uint16_t>{0x3C00, 0x2E66}));
  float_to_bfloat16(bf_in.data(), out.data(), 2);
  EXPECT_EQ(out, (std::vector<std::uint16_t>{0x3F80, 0x4000}));
}

#if defined(__FLT16_MAX__)
TEST(SelectionConvert, Float16MatchesCompilerConversion) {
  std::mt19937 rng(7);
  auto check = [](std::uint32_t bits) {
    const float f = from_bits(bits);
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t want;
    std::memcpy(&want, &h, 2);
    if (std::isnan(f)) return ::testing::AssertionResult(std::isnan(float16_to_float(float_to_float16(f))));
    if (float_to_float16(f) != want) return ::testing::AssertionFailure() << std::hex << bits << " -> " << float_to_float16(f) << " want " << want;
    return ::testing::AssertionSuccess();
  };
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4099) ASSERT_TRUE(check(static_cast<std::uint32_t>(b)));
  // Around every half: the halfway points and their neighbours.
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const std::uint32_t mid = std::bit_cast<std::uint32_t>((float16_to_float(h) + float16_to_float(h + 1)) / 2);
    for (std::uint32_t d : {0u, 1u}) {
      ASSERT_TRUE(check(mid + d));
      ASSERT_TRUE(check(mid - d));
      ASSERT_TRUE(check((mid + d) | 0x80000000u));
    }
  }
  for (int i = 0; i < 200000; ++i) ASSERT_TRUE(check(rng()));
}
#endif

TEST(SelectionConvert, DecodeNormalise) {
  // int16 with _FillValue -32767, missing_value -1, scale 0.5, offset 10; normalised (x-12)/2.
  const std::int16_t raw[] = {-32767, -1, 0, 4, 32767};
  CFEncoding enc;
  enc.missing_values = {-32767, -1};
  enc.scale_factor = 0.5;
  enc.add_offset = 10;
  float out[5];
  decode_normalise(raw, DataType::int_(2), 5, enc, {12, 2}, std::nullopt, out);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], -1.f);
  EXPECT_EQ(out[3], 0.f);
  EXPECT_EQ(out[4], static_cast<float>((32767 * 0.5 + 10 - 12) / 2));
  decode_normalise(raw, DataType::int_(2), 5, enc, {12, 2}, -5.f, out);
  EXPECT_EQ(out[0], -5.f);
  EXPECT_EQ(out[1], -5.f);
  // _Unsigned: int16 -1 read as 65535.
  CFEncoding uns;
  uns.is_unsigned = true;
  decode_normalise(raw, DataType::int_(2), 5, uns, {}, std::nullopt, out);
  EXPECT_EQ(out[1], 65535.f);
  EXPECT_EQ(out[0], 32769.f);
  // float32 NaN stored: kept or filled.
  const float f[] = {1.5f, NAN};
  decode_normalise(f, DataType::float_(4), 2, {}, {}, std::nullopt, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_TRUE(std::isnan(out[1]));
  decode_normalise(f, DataType::float_(4), 2, {}, {}, 0.f, out);
  EXPECT_EQ(out[1], 0.f);
  const double cplx[2] = {1, 2};
  EXPECT_THROW(decode_normalise(cplx, DataType{DTypeKind::kComplex, 16, {}}, 1, {}, {}, std::nullopt, out), Error);
}

}  // namespace
}  // namespace cubestream
