// lz4 codec (numcodecs "lz4": 4-byte little-endian size header + one LZ4 block):
// differential tests against liblz4's block compressors and damaged input.
#include <lz4.h>
#include <lz4hc.h>

#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

Buf numcodecs_lz4(const Buf& src, int hc_level = 0, int acceleration = 1) {
  Buf dst(4 + LZ4_compressBound(static_cast<int>(src.size())));
  put_le32(dst.data(), static_cast<std::uint32_t>(src.size()));
  const char* in = reinterpret_cast<const char*>(src.data());
  char* out = reinterpret_cast<char*>(dst.data() + 4);
  const int cap = static_cast<int>(dst.size() - 4);
  const int n = hc_level > 0 ? LZ4_compress_HC(in, out, static_cast<int>(src.size()), cap, hc_level)
                             : LZ4_compress_fast(in, out, static_cast<int>(src.size()), cap, acceleration);
  if (n <= 0) throw std::runtime_error("lz4 compression failed");
  dst.resize(4 + static_cast<std::size_t>(n));
  return dst;
}

TEST(Lz4Codec, DefaultFastAndHighCompressionRoundTrip) {
  auto codec = make_b2b("lz4", {{"id", "lz4"}, {"acceleration", 1}});
  for (const auto& kind : kDataKinds) {
    const Buf src = kind.make(150 * 1024 + 1);
    SCOPED_TRACE(kind.name);
    for (int accel : {1, 2, 9, 65537}) EXPECT_EQ(decode(*codec, numcodecs_lz4(src, 0, accel), src.size()), src);
    for (int level : {1, 3, 9, 12}) EXPECT_EQ(decode(*codec, numcodecs_lz4(src, level), src.size()), src);
  }
}

TEST(Lz4Codec, EmptyAndOneByte) {
  auto codec = make_b2b("lz4");
  EXPECT_TRUE(decode(*codec, numcodecs_lz4({}), 0).empty());
  EXPECT_TRUE(decode(*codec, numcodecs_lz4({}), 16).empty());
  EXPECT_EQ(decode(*codec, numcodecs_lz4({5}), 1), Buf{5});
}

TEST(Lz4Codec, SizeHeaderLargerThanOutputIsRejectedBeforeDecoding) {
  auto codec = make_b2b("lz4");
  const Buf src = repetitive_bytes(100000);
  const Buf enc = numcodecs_lz4(src);
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, src.size() - 1); });
  // a tiny chunk claiming 4 GiB: no allocation, no decoding
  Buf bomb = enc;
  put_le32(bomb.data(), 0xFFFFFFFFu);
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, bomb, src.size()); });
}

TEST(Lz4Codec, WrongSizeHeaderIsCorrupt) {
  auto codec = make_b2b("lz4");
  const Buf src = climate_bytes(10000);
  Buf enc = numcodecs_lz4(src);
  put_le32(enc.data(), static_cast<std::uint32_t>(src.size() - 1));  // block decodes to more
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, enc, src.size()); });
  put_le32(enc.data(), static_cast<std::uint32_t>(src.size() + 1));  // block decodes to less
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, enc, src.size() + 1); });
}

TEST(Lz4Codec, TruncatedAndCorruptInput) {
  auto codec = make_b2b("lz4");
  const Buf src = climate_bytes(30000);
  const Buf enc = numcodecs_lz4(src);
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}}) {
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(enc.begin(), enc.begin() + cut), src.size()); });
  }
  for (std::size_t cut : {std::size_t{4}, std::size_t{5}, enc.size() / 2, enc.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(enc.begin(), enc.begin() + cut), src.size()); });
  }
  std::mt19937 rng(13);
  for (int trial = 0; trial < 500; ++trial) {
    Buf bad = enc;
    bad[4 + rng() % (bad.size() - 4)] = static_cast<std::uint8_t>(rng());
    expect_ok_or_error([&] { decode(*codec, bad, src.size()); });
  }
}

TEST(Lz4Codec, ConfigurationIsChecked) {
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("lz4", {{"acceleration", "fast"}}); });
  const auto c = make_b2b("numcodecs.lz4", {{"acceleration", 1}});
  EXPECT_EQ(c->name(), "lz4");
  EXPECT_GE(c->encoded_size({1000, true}).bytes, 1004u);
}

}  // namespace
}  // namespace cs_codec_test
