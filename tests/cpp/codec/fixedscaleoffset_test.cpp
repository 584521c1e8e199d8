// numcodecs fixedscaleoffset codec: (enc / scale + offset).astype(dtype) with numpy's choice
// of precision (numcodecs-written files, including cases where that choice shows, are in
// golden_test.cpp).
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

TEST(FixedScaleOffsetCodec, DocumentationExample) {
  // numcodecs' docstring: linspace(1000, 1001, 10) with offset 1000, scale 10, astype u1
  auto codec = make_b2b("fixedscaleoffset", {{"offset", 1000}, {"scale", 10}, {"dtype", "<f8"}, {"astype", "|u1"}});
  const Buf enc{0, 1, 2, 3, 4, 6, 7, 8, 9, 10};
  const Buf got = decode(*codec, enc, 80);
  std::vector<double> v(10);
  std::memcpy(v.data(), got.data(), 80);
  const double want[] = {1000.0, 1000.1, 1000.2, 1000.3, 1000.4, 1000.6, 1000.7, 1000.8, 1000.9, 1001.0};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(v[i], double(enc[i]) / 10.0 + 1000.0) << i;
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(v[i], want[i], 1e-9);
}

TEST(FixedScaleOffsetCodec, FloatToIntegerTruncatesLikeACast) {
  auto codec = make_b2b("fixedscaleoffset", {{"offset", 0.5}, {"scale", 2}, {"dtype", "<i4"}, {"astype", "<i2"}});
  std::vector<std::int16_t> enc = {-5, -1, 0, 3};  // -2.5+0.5=-2.0, -0.5+0.5=0, 0.5, 2.0
  const Buf got = decode(*codec, as_bytes(enc), 16);
  std::vector<std::int32_t> v(4);
  std::memcpy(v.data(), got.data(), 16);
  EXPECT_EQ(v, (std::vector<std::int32_t>{-2, 0, 0, 2}));
}

TEST(FixedScaleOffsetCodec, Errors) {
  const nlohmann::json ok = {{"offset", 0}, {"scale", 1}, {"dtype", "<f4"}, {"astype", "<i2"}};
  auto codec = make_b2b("fixedscaleoffset", ok);
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(3), 100); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, Buf(4), 7); });
  for (const char* key : {"offset", "scale", "dtype"}) {
    auto missing = ok;
    missing.erase(key);
    expect_error(ErrorCode::kInvalidMetadata, [&] { make_b2b("fixedscaleoffset", missing); });
  }
  auto text_scale = ok;
  text_scale["scale"] = "10";
  expect_error(ErrorCode::kInvalidMetadata, [&] { make_b2b("fixedscaleoffset", text_scale); });
  auto zero_scale = ok;
  zero_scale["scale"] = 0;
  expect_error(ErrorCode::kInvalidMetadata, [&] { make_b2b("fixedscaleoffset", zero_scale); });
}

}  // namespace
}  // namespace cs_codec_test
