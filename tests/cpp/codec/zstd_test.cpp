// zstd codec: differential tests against libzstd's compressor (every level, with and without
// content size and checksum, streamed frames, concatenated and skippable frames) and
// damaged input.
#include <zdict.h>
#include <zstd.h>

#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

struct FrameOptions {
  int level = 3;
  bool content_size = true;
  bool checksum = false;
};

Buf zstd_compress(const Buf& src, FrameOptions o) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, o.level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, o.content_size ? 1 : 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, o.checksum ? 1 : 0);
  Buf dst(ZSTD_compressBound(src.size()));
  const std::size_t n = ZSTD_compress2(cctx, dst.data(), dst.size(), src.data(), src.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
  dst.resize(n);
  return dst;
}

// Streamed in pieces without a pledged size: the frame has no content size and several blocks.
Buf zstd_compress_streamed(const Buf& src, int level, std::size_t piece) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  Buf dst(ZSTD_compressBound(src.size()) + 1024);
  ZSTD_outBuffer out{dst.data(), dst.size(), 0};
  std::size_t pos = 0;
  do {
    const std::size_t take = std::min(piece, src.size() - pos);
    ZSTD_inBuffer in{src.data() + pos, take, 0};
    const bool last = pos + take == src.size();
    std::size_t r;
    do {
      r = ZSTD_compressStream2(cctx, &out, &in, last ? ZSTD_e_end : ZSTD_e_continue);
      if (ZSTD_isError(r)) throw std::runtime_error(ZSTD_getErrorName(r));
    } while (last ? r != 0 : in.pos < in.size);
    pos += take;
  } while (pos < src.size());
  ZSTD_freeCCtx(cctx);
  dst.resize(out.pos);
  return dst;
}

Buf skippable_frame(std::uint32_t magic_variant, const Buf& payload) {
  Buf f(8);
  put_le32(f.data(), 0x184D2A50u + (magic_variant & 15u));
  put_le32(f.data() + 4, static_cast<std::uint32_t>(payload.size()));
  append(f, payload);
  return f;
}

Buf concat(std::initializer_list<Buf> parts) {
  Buf b;
  for (const auto& p : parts) append(b, p);
  return b;
}

TEST(ZstdCodec, EveryLevelAndDataKindRoundTrips) {
  auto codec = make_b2b("zstd", {{"level", 3}, {"checksum", false}});
  std::vector<int> levels;
  for (int l = -5; l <= 19; ++l) levels.push_back(l);
  levels.push_back(22);
  int combo = 0;
  for (const auto& kind : kDataKinds) {
    for (int level : levels) {
      // smaller inputs for the slowest levels keep the suite fast
      const std::size_t n = level >= 17 ? 24 * 1024 + 3 : 96 * 1024 + 5;
      const Buf src = kind.make(n);
      const FrameOptions o{level, combo % 2 == 0, (combo / 2) % 2 == 0};
      ++combo;
      SCOPED_TRACE(std::string(kind.name) + " level " + std::to_string(level) + " content_size " +
                   std::to_string(o.content_size) + " checksum " + std::to_string(o.checksum));
      const Buf enc = zstd_compress(src, o);
      EXPECT_EQ(decode(*codec, enc, src.size()), src);
      // a larger output is fine: the codec reports how much it wrote
      EXPECT_EQ(decode(*codec, enc, src.size() + 100), src);
    }
  }
}

TEST(ZstdCodec, ContentSizeAndChecksumFlagCombinations) {
  auto codec = make_b2b("zstd");
  const Buf src = climate_bytes(200 * 1024);
  for (int cs = 0; cs < 2; ++cs) {
    for (int ck = 0; ck < 2; ++ck) {
      SCOPED_TRACE("content_size " + std::to_string(cs) + " checksum " + std::to_string(ck));
      const Buf enc = zstd_compress(src, {5, cs == 1, ck == 1});
      EXPECT_EQ(decode(*codec, enc, src.size()), src);
    }
  }
}

TEST(ZstdCodec, StreamedFrameWithoutContentSize) {
  auto codec = make_b2b("zstd");
  const Buf src = quantised_bytes(700 * 1024 + 11);  // several 128 KiB blocks
  const Buf enc = zstd_compress_streamed(src, 3, 50000);
  EXPECT_EQ(ZSTD_getFrameContentSize(enc.data(), enc.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  EXPECT_EQ(decode(*codec, enc, src.size()), src);
  // too small an output: the frame cannot say so up front, decoding must still stop
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, src.size() - 1); });
}

TEST(ZstdCodec, ConcatenatedAndSkippableFrames) {
  auto codec = make_b2b("zstd");
  const Buf a = climate_bytes(40000), b = random_bytes(3000), c = repetitive_bytes(100000);
  const Buf enc = concat({skippable_frame(0, random_bytes(17)), zstd_compress(a, {1, true, true}),
                          zstd_compress(b, {-3, false, false}), skippable_frame(15, {}),
                          zstd_compress_streamed(c, 9, 7000), skippable_frame(7, random_bytes(5))});
  const Buf want = concat({a, b, c});
  EXPECT_EQ(decode(*codec, enc, want.size()), want);
  expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, want.size() - 1); });
}

TEST(ZstdCodec, EmptyAndOneByte) {
  auto codec = make_b2b("zstd");
  EXPECT_TRUE(decode(*codec, Buf{}, 0).empty());  // no frames at all
  const Buf empty_frame = zstd_compress({}, {3, true, true});
  EXPECT_TRUE(decode(*codec, empty_frame, 0).empty());
  EXPECT_TRUE(decode(*codec, empty_frame, 10).empty());
  const Buf one{42};
  for (bool cs : {true, false}) {
    const Buf enc = zstd_compress(one, {3, cs, !cs});
    EXPECT_EQ(decode(*codec, enc, 1), one);
    expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, 0); });
  }
  // only skippable frames: decodes to nothing
  EXPECT_TRUE(decode(*codec, skippable_frame(3, random_bytes(9)), 0).empty());
}

TEST(ZstdCodec, DecodedSizeLargerThanOutputIsSizeMismatch) {
  auto codec = make_b2b("zstd");
  const Buf src = repetitive_bytes(1 << 20);
  const Buf enc = zstd_compress(src, {3, true, false});  // a few hundred bytes for 1 MiB
  auto msg = expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, 4096); });
  EXPECT_NE(msg.find("zstd"), std::string::npos);
}

TEST(ZstdCodec, TruncatedInputIsCorrupt) {
  auto codec = make_b2b("zstd");
  const Buf src = climate_bytes(50000);
  for (bool cs : {true, false}) {
    const Buf enc = zstd_compress(src, {3, cs, true});
    for (std::size_t cut : {std::size_t{1}, std::size_t{4}, std::size_t{7}, enc.size() / 2, enc.size() - 1}) {
      SCOPED_TRACE("cut at " + std::to_string(cut));
      const Buf part(enc.begin(), enc.begin() + cut);
      expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, part, src.size()); });
    }
  }
}

TEST(ZstdCodec, ChecksumMismatchIsDetected) {
  auto codec = make_b2b("zstd");
  const Buf src = climate_bytes(30000);
  Buf enc = zstd_compress(src, {3, true, true});
  enc.back() ^= 0x01;  // the last 4 bytes are the XXH64-based content checksum
  expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, enc, src.size()); });
}

TEST(ZstdCodec, CorruptedBytesNeverCrash) {
  auto codec = make_b2b("zstd");
  const Buf src = climate_bytes(20000);
  const Buf enc = zstd_compress(src, {3, true, true});
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    Buf bad = enc;
    const int flips = 1 + trial % 4;
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    expect_ok_or_error([&] { decode(*codec, bad, src.size()); });
  }
}

TEST(ZstdCodec, GarbageAfterFramesIsCorrupt) {
  auto codec = make_b2b("zstd");
  const Buf src = random_bytes(1000);
  Buf enc = zstd_compress(src, {3, true, false});
  enc.push_back(0x00);
  enc.push_back(0x01);
  expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, enc, src.size()); });
}

TEST(ZstdCodec, DictionaryFramesAreUnsupported) {
  auto codec = make_b2b("zstd");
  // a trained dictionary has an ID, which frames compressed with it record in their header
  Buf samples;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 200; ++i) {
    const Buf s = repetitive_bytes(600, 100 + i);
    append(samples, s);
    sizes.push_back(s.size());
  }
  Buf dict(2048);
  const std::size_t dn = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), sizes.data(),
                                               static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(dn)) GTEST_SKIP() << "could not train a dictionary: " << ZDICT_getErrorName(dn);
  dict.resize(dn);
  const Buf src = repetitive_bytes(10000, 9);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  Buf enc(ZSTD_compressBound(src.size()));
  const std::size_t n =
      ZSTD_compress_usingDict(cctx, enc.data(), enc.size(), src.data(), src.size(), dict.data(), dict.size(), 3);
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  enc.resize(n);
  ASSERT_NE(ZSTD_getDictID_fromFrame(enc.data(), enc.size()), 0u);
  expect_error(ErrorCode::kUnsupported, [&] { decode(*codec, enc, src.size()); });
}

TEST(ZstdCodec, ConfigurationForms) {
  EXPECT_EQ(make_b2b("zstd", {{"level", 0}, {"checksum", false}})->name(), "zstd");  // v3
  EXPECT_EQ(make_b2b("zstd", {{"id", "zstd"}, {"level", 1}})->name(), "zstd");       // numcodecs
  EXPECT_EQ(make_b2b("numcodecs.zstd", {{"level", 1}, {"future_key", 7}})->configuration()["level"], 1);
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("zstd", {{"level", "high"}}); });
  expect_error(ErrorCode::kInvalidMetadata, [] { make_b2b("zstd", {{"checksum", 1}}); });
  const auto c = make_b2b("zstd");
  EXPECT_FALSE(c->encoded_size({1000, true}).exact);
  EXPECT_GE(c->encoded_size({1000, true}).bytes, 1000u);
}

}  // namespace
}  // namespace cs_codec_test
