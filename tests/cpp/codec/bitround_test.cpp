// numcodecs bitround codec: the encoded data are already floats, decoding is a copy.
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

TEST(BitroundCodec, DecodingCopies) {
  auto codec = make_b2b("bitround", {{"keepbits", 7}});
  const Buf data = quantised_bytes(4000);
  EXPECT_EQ(decode(*codec, data, data.size()), data);
  EXPECT_EQ(decode(*codec, data, data.size() + 8), data);
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, data, data.size() - 1); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("bitround", {{"keepbits", -1}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("bitround", {{"keepbits", "7"}}); });
  EXPECT_EQ(make_b2b("numcodecs.bitround", {{"keepbits", 3}})->encoded_size({100, true}).bytes, 100u);
}

}  // namespace
}  // namespace cs_codec_test
