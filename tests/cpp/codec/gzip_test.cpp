// gzip codec: differential tests against zlib's deflate with the gzip wrapper (every level,
// header fields, several members, zero padding) and damaged input.
#include <zlib.h>

#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

Buf gzip_member(const Buf& src, int level, const char* file_name = nullptr) {
  z_stream s{};
  if (deflateInit2(&s, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  gz_header h{};
  std::string name = file_name ? file_name : "";
  if (file_name) {
    h.name = reinterpret_cast<Bytef*>(name.data());
    h.hcrc = 1;  // header CRC too
    h.time = 1700000000;
    deflateSetHeader(&s, &h);
  }
  Buf dst(deflateBound(&s, src.size()) + 64 + name.size());
  s.next_in = const_cast<Bytef*>(src.data());
  s.avail_in = static_cast<uInt>(src.size());
  s.next_out = dst.data();
  s.avail_out = static_cast<uInt>(dst.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  dst.resize(s.total_out);
  deflateEnd(&s);
  return dst;
}

TEST(GzipCodec, EveryLevelAndDataKindRoundTrips) {
  auto codec = make_b2b("gzip", {{"level", 5}});
  for (const auto& kind : kDataKinds) {
    for (int level = 0; level <= 9; ++level) {
      const Buf src = kind.make(50 * 1024 + 3);
      SCOPED_TRACE(std::string(kind.name) + " level " + std::to_string(level));
      EXPECT_EQ(decode(*codec, gzip_member(src, level), src.size()), src);
    }
  }
}

TEST(GzipCodec, HeaderWithFileNameAndHeaderCrc) {
  auto codec = make_b2b("gzip");
  const Buf src = climate_bytes(20000);
  EXPECT_EQ(decode(*codec, gzip_member(src, 6, "t2m.bin"), src.size()), src);
}

TEST(GzipCodec, SeveralMembersAndZeroPadding) {
  auto codec = make_b2b("gzip");
  const Buf a = climate_bytes(30000), b = random_bytes(999), c = repetitive_bytes(5000);
  Buf enc = gzip_member(a, 1);
  const Buf mb = gzip_member(b, 9), mc = gzip_member(c, 6);
  enc.insert(enc.end(), mb.begin(), mb.end());
  enc.insert(enc.end(), 13, 0);  // padding between members, as Python's reader allows
  enc.insert(enc.end(), mc.begin(), mc.end());
  enc.insert(enc.end(), 5, 0);  // and after the last
  Buf want = a;
  want.insert(want.end(), b.begin(), b.end());
  want.insert(want.end(), c.begin(), c.end());
  EXPECT_EQ(decode(*codec, enc, want.size()), want);
  // the second member does not fit
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, a.size() + 10); });
}

TEST(GzipCodec, EmptyInputsAndOneByte) {
  auto codec = make_b2b("gzip");
  EXPECT_TRUE(decode(*codec, Buf{}, 0).empty());  // Python's gzip reads b"" as b""
  EXPECT_TRUE(decode(*codec, gzip_member({}, 6), 0).empty());
  EXPECT_EQ(decode(*codec, gzip_member({9}, 6), 1), Buf{9});
}

TEST(GzipCodec, TrailingGarbageIsCorrupt) {
  auto codec = make_b2b("gzip");
  const Buf src = random_bytes(300);
  Buf enc = gzip_member(src, 6);
  enc.insert(enc.end(), {0, 0, 'x'});
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, enc, src.size()); });
}

TEST(GzipCodec, OutputTooSmallIsSizeMismatch) {
  auto codec = make_b2b("gzip");
  const Buf src = repetitive_bytes(300000);
  const Buf enc = gzip_member(src, 9);
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, src.size() - 1); });
}

TEST(GzipCodec, TruncatedAndCorruptInput) {
  auto codec = make_b2b("gzip");
  const Buf src = climate_bytes(40000);
  const Buf enc = gzip_member(src, 6);
  for (std::size_t cut : {std::size_t{1}, std::size_t{9}, enc.size() / 2, enc.size() - 4, enc.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(enc.begin(), enc.begin() + cut), src.size()); });
  }
  Buf bad_crc = enc;
  bad_crc[bad_crc.size() - 8] ^= 0x01;  // CRC-32 in the trailer
  expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad_crc, src.size()); });
  Buf bad_len = enc;
  bad_len[bad_len.size() - 1] ^= 0x01;  // ISIZE in the trailer
  expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad_len, src.size()); });
  Buf bad_magic = enc;
  bad_magic[1] = 0x00;
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, bad_magic, src.size()); });
  std::mt19937 rng(12);
  for (int trial = 0; trial < 300; ++trial) {
    Buf bad = enc;
    bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    expect_ok_or_error([&] { decode(*codec, bad, src.size()); });
  }
}

TEST(GzipCodec, ConfigurationIsChecked) {
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("gzip", {{"level", 1.5}}); });
  // integral but beyond int64 (fuzz_metadata found the cast of 8.9e89 undefined)
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("gzip", {{"level", 8.9e89}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("gzip", {{"level", -1e19}}); });
  EXPECT_EQ(make_b2b("gzip", {{"level", 5.0}})->name(), "gzip");
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("gzip", nlohmann::json::array()); });
  EXPECT_EQ(make_b2b("gzip", {{"level", 5}})->name(), "gzip");
}

}  // namespace
}  // namespace cs_codec_test
