// zlib codec (numcodecs "zlib"): differential tests against zlib's deflate at every level and
// with small windows, trailing bytes, and damaged input.
#include <zlib.h>

#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

Buf deflate_zlib(const Buf& src, int level, int window_bits = 15, int strategy = Z_DEFAULT_STRATEGY) {
  z_stream s{};
  if (deflateInit2(&s, level, Z_DEFLATED, window_bits, 8, strategy) != Z_OK) throw std::runtime_error("deflateInit2");
  Buf dst(deflateBound(&s, src.size()) + 16);
  s.next_in = const_cast<Bytef*>(src.data());
  s.avail_in = static_cast<uInt>(src.size());
  s.next_out = dst.data();
  s.avail_out = static_cast<uInt>(dst.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  dst.resize(s.total_out);
  deflateEnd(&s);
  return dst;
}

TEST(ZlibCodec, EveryLevelAndDataKindRoundTrips) {
  auto codec = make_b2b("zlib", {{"id", "zlib"}, {"level", 1}});
  for (const auto& kind : kDataKinds) {
    for (int level = 0; level <= 9; ++level) {
      const Buf src = kind.make(60 * 1024 + 7);
      SCOPED_TRACE(std::string(kind.name) + " level " + std::to_string(level));
      EXPECT_EQ(decode(*codec, deflate_zlib(src, level), src.size()), src);
    }
  }
}

TEST(ZlibCodec, SmallWindowsAndStrategies) {
  auto codec = make_b2b("zlib");
  const Buf src = climate_bytes(100000);
  for (int wbits : {9, 12, 15}) {
    for (int strategy : {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED}) {
      SCOPED_TRACE("wbits " + std::to_string(wbits) + " strategy " + std::to_string(strategy));
      EXPECT_EQ(decode(*codec, deflate_zlib(src, 6, wbits, strategy), src.size()), src);
    }
  }
}

TEST(ZlibCodec, EmptyAndOneByte) {
  auto codec = make_b2b("zlib");
  EXPECT_TRUE(decode(*codec, deflate_zlib({}, 6), 0).empty());
  EXPECT_EQ(decode(*codec, deflate_zlib({7}, 6), 1), Buf{7});
  // an empty input is not a zlib stream (Python's zlib.decompress refuses it too)
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf{}, 10); });
}

TEST(ZlibCodec, TrailingBytesAreIgnoredLikePython) {
  auto codec = make_b2b("zlib");
  const Buf src = random_bytes(500);
  Buf enc = deflate_zlib(src, 6);
  enc.insert(enc.end(), {'j', 'u', 'n', 'k'});
  EXPECT_EQ(decode(*codec, enc, src.size()), src);
}

TEST(ZlibCodec, OutputTooSmallIsSizeMismatch) {
  auto codec = make_b2b("zlib");
  const Buf src = repetitive_bytes(1 << 20);
  const Buf enc = deflate_zlib(src, 9);
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, src.size() - 1); });
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, 0); });
}

TEST(ZlibCodec, TruncatedAndCorruptInput) {
  auto codec = make_b2b("zlib");
  const Buf src = climate_bytes(40000);
  const Buf enc = deflate_zlib(src, 6);
  for (std::size_t cut : {std::size_t{1}, std::size_t{2}, enc.size() / 3, enc.size() - 1}) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf(enc.begin(), enc.begin() + cut), src.size()); });
  }
  Buf bad_check = enc;
  bad_check.back() ^= 0xFF;  // Adler-32 trailer
  expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad_check, src.size()); });
  Buf bad_header = enc;
  bad_header[0] = 0x00;
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, bad_header, src.size()); });
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    Buf bad = enc;
    bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    expect_ok_or_error([&] { decode(*codec, bad, src.size()); });
  }
}

TEST(ZlibCodec, ConfigurationIsChecked) {
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("zlib", {{"level", "9"}}); });
  EXPECT_EQ(make_b2b("numcodecs.zlib", {{"level", 9}, {"extra", true}})->name(), "zlib");
}

}  // namespace
}  // namespace cs_codec_test
