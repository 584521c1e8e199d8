// Golden files written by numcodecs 0.11 (tests/data/codec/generate.py): for every numcodecs
// codec id, each encoded buffer must decode to exactly what numcodecs' own decode returned,
// using the configuration exactly as Zarr v2 stores it ("id" key included). The filters
// (delta, fixedscaleoffset, quantize) are lossy or type-converting, so this is where their
// numpy arithmetic is pinned down bit for bit.
#include "codec_test_util.hpp"

namespace cs_codec_test {
namespace {

struct GoldenCase {
  std::string codec_id;
  std::string name;
  nlohmann::json config;
  Buf encoded;
  Buf decoded;
};

std::vector<GoldenCase> load_cases(const std::string& codec_id) {
  const std::string dir = codec_data_dir() + "/" + codec_id;
  const Buf index = read_file(dir + "/cases.json");
  const auto cases = nlohmann::json::parse(index.begin(), index.end());
  std::vector<GoldenCase> out;
  for (const auto& c : cases) {
    out.push_back({codec_id, c.at("name").get<std::string>(), c.at("config"),
                   read_file(dir + "/" + c.at("encoded").get<std::string>()),
                   read_file(dir + "/" + c.at("decoded").get<std::string>())});
  }
  return out;
}

class NumcodecsGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(NumcodecsGolden, DecodesLikeNumcodecs) {
  const auto cases = load_cases(GetParam());
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c.codec_id + "/" + c.name + " " + c.config.dump());
    if (c.name.find("unsupported") != std::string::npos) {
      expect_error(ErrorCode::kUnsupported, [&] { decode(*make_b2b(c.codec_id, c.config), c.encoded, c.decoded.size()); });
      continue;
    }
    // the id as Zarr v2 writes it, and spelled the Zarr v3 way
    const std::string names[] = {c.codec_id, "numcodecs." + c.codec_id};
    for (const auto& name : names) {
      const auto codec = make_b2b(name, c.config);
      EXPECT_EQ(codec->name(), c.codec_id);
      const Buf got = decode(*codec, c.encoded, c.decoded.size());
      ASSERT_EQ(got.size(), c.decoded.size());
      if (got != c.decoded) {
        std::size_t i = 0;
        while (got[i] == c.decoded[i]) ++i;
        FAIL() << "first difference at byte " << i << ": got " << int(got[i]) << ", numcodecs " << int(c.decoded[i]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, NumcodecsGolden,
                         ::testing::Values("zlib", "gzip", "lz4", "zstd", "blosc", "crc32", "adler32", "shuffle",
                                           "delta", "fixedscaleoffset", "quantize", "bitround"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace cs_codec_test
