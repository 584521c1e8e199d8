// numcodecs shuffle codec: byte unshuffle over the whole buffer (numcodecs-written files are
// in golden_test.cpp).
#include "codec/logic/byte_shuffle.hpp"
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

Buf shuffle_ref(const Buf& in, std::size_t es) {
  const std::size_t n = in.size() / es;
  Buf out(in.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < es; ++j) out[j * n + i] = in[i * es + j];
  return out;
}

TEST(ShuffleCodec, InvertsTheByteShuffle) {
  for (std::size_t es : {2, 3, 4, 5, 8, 16, 32}) {
    SCOPED_TRACE("elementsize " + std::to_string(es));
    auto codec = make_b2b("shuffle", {{"elementsize", es}});
    for (std::size_t n : {0, 1, 7, 1000, 65536}) {
      const Buf data = random_bytes(n * es, static_cast<std::uint32_t>(n + es));
      EXPECT_EQ(decode(*codec, shuffle_ref(data, es), data.size()), data);
    }
  }
  // default elementsize 4, and the numpy-like field through it
  const Buf field = climate_bytes(40000);
  EXPECT_EQ(decode(*make_b2b("shuffle"), shuffle_ref(field, 4), field.size()), field);
}

TEST(ShuffleCodec, ElementSizeOneOrZeroCopies) {
  const Buf data = random_bytes(33);
  EXPECT_EQ(decode(*make_b2b("shuffle", {{"elementsize", 1}}), data, 33), data);
  EXPECT_EQ(decode(*make_b2b("shuffle", {{"elementsize", 0}}), data, 40), data);
}

TEST(ShuffleCodec, Errors) {
  auto codec = make_b2b("shuffle", {{"elementsize", 4}});
  // numcodecs refuses buffers that are not whole elements
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, random_bytes(10), 10); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, random_bytes(16), 12); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("shuffle", {{"elementsize", "4"}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("shuffle", {{"elementsize", -1}}); });
}

TEST(ByteShuffleLogic, BlockLeftoverBytesAreCopied) {
  const Buf data = random_bytes(4 * 9 + 3, 8);
  Buf shuffled = shuffle_ref(Buf(data.begin(), data.begin() + 36), 4);
  shuffled.insert(shuffled.end(), data.begin() + 36, data.end());
  Buf out(data.size());
  cubestream::codec::logic::unshuffle_block(shuffled.data(), out.data(), out.size(), 4);
  EXPECT_EQ(out, data);
}

}  // namespace
}  // namespace cs_codec_test
