// numcodecs delta codec: running sums in numpy's promoted type (numcodecs-written files, the
// main check, are in golden_test.cpp); configuration and size handling here.
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

template <class T>
Buf le_bytes(std::initializer_list<T> v) {
  return as_bytes(std::vector<T>(v));
}

TEST(DeltaCodec, IntegerSumsWrapLikeNumpy) {
  // i2 stored as i1 differences: 100, +50, +50, -7 -> 100, 150, 200, 193 (sum in int16)
  auto codec = make_b2b("delta", {{"dtype", "<i2"}, {"astype", "|i1"}});
  const Buf enc = le_bytes<std::int8_t>({100, 50, 50, -7});
  EXPECT_EQ(decode(*codec, enc, 8), le_bytes<std::int16_t>({100, 150, 200, 193}));
  // i1 from i2 differences wraps at 8 bits: 1000 -> -24
  auto narrow = make_b2b("delta", {{"dtype", "|i1"}, {"astype", "<i2"}});
  EXPECT_EQ(decode(*narrow, le_bytes<std::int16_t>({1000, 1, 1}), 3), le_bytes<std::int8_t>({-24, -23, -22}));
}

TEST(DeltaCodec, ByteOrdersAreHonoured) {
  auto codec = make_b2b("delta", {{"dtype", ">i4"}, {"astype", "<i2"}});
  const Buf enc = le_bytes<std::int16_t>({1, 2, 3});
  EXPECT_EQ(decode(*codec, enc, 12), (Buf{0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 6}));
}

TEST(DeltaCodec, AcceptsNumpyNamesAndShortForms) {
  const Buf enc = le_bytes<float>({1.5f, 1.0f, -0.5f});
  const Buf want = le_bytes<float>({1.5f, 2.5f, 2.0f});
  EXPECT_EQ(decode(*make_b2b("delta", {{"dtype", "float32"}}), enc, 12), want);
  EXPECT_EQ(decode(*make_b2b("delta", {{"dtype", "f4"}}), enc, 12), want);
  EXPECT_EQ(decode(*make_b2b("numcodecs.delta", {{"dtype", "<f4"}, {"astype", "<f4"}}), enc, 12), want);
}

TEST(DeltaCodec, Errors) {
  auto codec = make_b2b("delta", {{"dtype", "<i4"}, {"astype", "<i2"}});
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(5), 100); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, Buf(8), 15); });
  EXPECT_EQ(codec->encoded_size({400, true}).bytes, 200u);
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("delta", nlohmann::json::object()); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("delta", {{"dtype", 4}}); });
  expect_error(ErrorCode::kUnsupported, [] { make_b2b("delta", {{"dtype", "<c8"}}); });
  expect_error(ErrorCode::kUnsupported, [] { make_b2b("delta", {{"dtype", "<M8[ns]"}}); });
  expect_error(ErrorCode::kUnsupported, [] { make_b2b("delta", {{"dtype", "|S4"}}); });
}

}  // namespace
}  // namespace cs_codec_test
