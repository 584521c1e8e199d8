// The numcodecs checksum codecs crc32 and adler32 (zlib's checksums, 4 little-endian bytes,
// prepended by default as numcodecs 0.11 does, or appended with "location": "end").
// numcodecs-written files are checked by golden_test.cpp.
#include <zlib.h>

#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

struct Variant {
  const char* name;
  std::uint32_t (*sum)(const Buf&);
};

std::uint32_t zcrc(const Buf& b) { return static_cast<std::uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size()))); }
std::uint32_t zadler(const Buf& b) {
  return static_cast<std::uint32_t>(adler32(1, b.data(), static_cast<uInt>(b.size())));
}

constexpr Variant kVariants[] = {{"crc32", zcrc}, {"adler32", zadler}};

Buf frame(const Buf& payload, std::uint32_t sum, bool at_start) {
  Buf b(payload.size() + 4);
  const std::size_t sum_at = at_start ? 0 : payload.size();
  put_le32(b.data() + sum_at, sum);
  std::copy(payload.begin(), payload.end(), b.begin() + (at_start ? 4 : 0));
  return b;
}

TEST(Checksum32Codecs, PrependedByDefaultAppendedWhenConfigured) {
  for (const auto& v : kVariants) {
    SCOPED_TRACE(v.name);
    for (std::size_t n : {0, 1, 4, 999, 100000}) {
      const Buf payload = climate_bytes(n);
      const std::uint32_t sum = v.sum(payload);
      EXPECT_EQ(decode(*make_b2b(v.name, {{"id", v.name}}), frame(payload, sum, true), payload.size()), payload);
      EXPECT_EQ(decode(*make_b2b(std::string("numcodecs.") + v.name, {{"location", "end"}}),
                       frame(payload, sum, false), payload.size()),
                payload);
    }
  }
}

TEST(Checksum32Codecs, Errors) {
  for (const auto& v : kVariants) {
    SCOPED_TRACE(v.name);
    auto codec = make_b2b(v.name);
    const Buf payload = random_bytes(300);
    Buf enc = frame(payload, v.sum(payload), true);
    Buf bad = enc;
    bad[100] ^= 1;
    expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad, payload.size()); });
    Buf bad_sum = enc;
    bad_sum[0] ^= 1;
    expect_error(ErrorCode::kChecksumMismatch, [&] { decode(*codec, bad_sum, payload.size()); });
    expect_error(ErrorCode::kCorruptData, [&] { decode(*codec, Buf{0, 0}, 10); });
    expect_error(ErrorCode::kSizeMismatch, [&] { decode(*codec, enc, payload.size() - 1); });
    expect_error(ErrorCode::kInvalidMetadata, [&] { make_b2b(v.name, {{"location", "both"}}); });
    EXPECT_EQ(codec->encoded_size({10, true}).bytes, 14u);
  }
}

}  // namespace
}  // namespace cs_codec_test
