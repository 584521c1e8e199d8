// crc32c codec and the shared CRC-32C code: RFC 3720 test vectors, hardware vs portable
// paths, and the 4-byte trailer layout of the Zarr v3 crc32c codec.
#include "codec/bytes_to_bytes/crc32c_host.hpp"
#include "codec/logic/crc32c.hpp"
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

using cubestream::codec::crc32c;
using cubestream::codec::crc32c_portable;

std::uint32_t crc_both(const Buf& b) {
  const std::uint32_t fast = crc32c(0, b.data(), b.size());
  EXPECT_EQ(fast, crc32c_portable(0, b.data(), b.size()));
  return fast;
}

TEST(Crc32c, Rfc3720TestVectors) {
  // RFC 3720 appendix B.4
  EXPECT_EQ(crc_both(Buf(32, 0x00)), 0x8A9136AAu);
  EXPECT_EQ(crc_both(Buf(32, 0xFF)), 0x62A8AB43u);
  Buf inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<std::uint8_t>(i);
    dec[i] = static_cast<std::uint8_t>(31 - i);
  }
  EXPECT_EQ(crc_both(inc), 0x46DD794Eu);
  EXPECT_EQ(crc_both(dec), 0x113FDB5Cu);
  const Buf iscsi_read = {0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                          0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                          0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                          0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(crc_both(iscsi_read), 0xD9963A56u);
  const std::string check = "123456789";
  EXPECT_EQ(crc_both(Buf(check.begin(), check.end())), 0xE3069283u);
  EXPECT_EQ(crc_both(Buf{}), 0u);
}

TEST(Crc32c, PathsAgreeOnEveryLengthAndAlignment) {
  const Buf data = random_bytes(4096 + 64, 99);
  for (std::size_t off = 0; off < 9; ++off) {
    for (std::size_t len : {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1000, 4096}) {
      const std::uint32_t a = crc32c(0, data.data() + off, len);
      ASSERT_EQ(a, crc32c_portable(0, data.data() + off, len)) << "offset " << off << " length " << len;
    }
  }
  std::printf("crc32c uses %s\n", cubestream::codec::crc32c_uses_hardware() ? "SSE4.2" : "the portable tables");
}

TEST(Crc32c, ExtendingEqualsOneShot) {
  const Buf data = climate_bytes(100000);
  const std::uint32_t whole = crc32c(0, data.data(), data.size());
  for (std::size_t split : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, data.size()}) {
    const std::uint32_t first = crc32c(0, data.data(), split);
    EXPECT_EQ(crc32c(first, data.data() + split, data.size() - split), whole);
    EXPECT_EQ(crc32c_portable(crc32c_portable(0, data.data(), split), data.data() + split, data.size() - split),
              whole);
  }
}

TEST(Crc32c, TablesAreBuiltAtCompileTime) {
  constexpr auto tab = cubestream::codec::logic::make_crc32c_tables();
  static_assert(tab.t[0][1] == 0xF26B8303u, "CRC-32C table entry for byte 1");
  EXPECT_EQ(tab.t[0][0], 0u);
}

Buf with_trailer(const Buf& payload) {
  Buf b = payload;
  b.resize(payload.size() + 4);
  put_le32(b.data() + payload.size(), crc32c(0, payload.data(), payload.size()));
  return b;
}

TEST(Crc32cCodec, AppendedChecksumIsVerifiedAndStripped) {
  auto codec = make_b2b("crc32c");
  for (std::size_t n : {0, 1, 5, 1000, 65537}) {
    const Buf payload = climate_bytes(n);
    const Buf enc = with_trailer(payload);
    EXPECT_EQ(decode(*codec, enc, payload.size()), payload);
    EXPECT_EQ(decode(*codec, enc, payload.size() + 3), payload);
  }
  EXPECT_EQ(codec->encoded_size({100, true}).bytes, 104u);
  EXPECT_TRUE(codec->encoded_size({100, true}).exact);
  EXPECT_FALSE(codec->encoded_size({100, false}).exact);
}

TEST(Crc32cCodec, ChecksumAtTheStartWhenConfigured) {
  auto codec = make_b2b("numcodecs.crc32c", {{"location", "start"}});
  const Buf payload = random_bytes(777);
  Buf enc(4);
  put_le32(enc.data(), crc32c(0, payload.data(), payload.size()));
  enc.insert(enc.end(), payload.begin(), payload.end());
  EXPECT_EQ(decode(*codec, enc, payload.size()), payload);
  expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*make_b2b("crc32c"), enc, payload.size()); });
}

TEST(Crc32cCodec, Errors) {
  auto codec = make_b2b("crc32c");
  const Buf payload = random_bytes(1000);
  Buf enc = with_trailer(payload);
  Buf bad = enc;
  bad[500] ^= 0x10;
  const std::string msg = expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad, payload.size()); });
  EXPECT_NE(msg.find("byte offset: 1000"), std::string::npos) << msg;
  Buf bad_sum = enc;
  bad_sum.back() ^= 0x80;
  expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad_sum, payload.size()); });
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf{1, 2, 3}, 10); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, payload.size() - 1); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("crc32c", {{"location", "middle"}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("crc32c", {{"location", 0}}); });
}

}  // namespace
}  // namespace cs_codec_test
