// numcodecs quantize codec: decoding is enc.astype(dtype) between float types (numcodecs-
// written files are in golden_test.cpp).
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

TEST(QuantizeCodec, CastsBetweenFloatTypes) {
  const std::vector<float> f = {0.125f, -3.5f, 1e30f, 273.15f};
  auto widen = make_b2b("quantize", {{"digits", 2}, {"dtype", "<f8"}, {"astype", "<f4"}});
  const Buf got = decode(*widen, as_bytes(f), 32);
  std::vector<double> d(4);
  std::memcpy(d.data(), got.data(), 32);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d[i], double(f[i]));
  auto narrow = make_b2b("quantize", {{"digits", 2}, {"dtype", "<f4"}, {"astype", "<f8"}});
  const std::vector<double> src = {0.1, 1e300, -2.5};
  const Buf n = decode(*narrow, as_bytes(src), 12);
  std::vector<float> back(3);
  std::memcpy(back.data(), n.data(), 12);
  EXPECT_EQ(back[0], 0.1f);
  EXPECT_TRUE(std::isinf(back[1]));
  EXPECT_EQ(back[2], -2.5f);
  // equal types: a copy
  auto same = make_b2b("quantize", {{"digits", 1}, {"dtype", "<f4"}});
  EXPECT_EQ(decode(*same, as_bytes(f), 16), as_bytes(f));
}

TEST(QuantizeCodec, Errors) {
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("quantize", {{"digits", 1}, {"dtype", "<i4"}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("quantize", {{"digits", "1"}, {"dtype", "<f4"}}); });
  auto codec = make_b2b("quantize", {{"digits", 1}, {"dtype", "<f8"}, {"astype", "<f4"}});
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(6), 100); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, Buf(8), 15); });
}

}  // namespace
}  // namespace cs_codec_test
