// Broken stores: good fixture arrays (tests/fixtures/generated, see generate_all.sh) copied into
// a MemoryStore or a scratch directory and then damaged -- invalid JSON, missing and wrong-typed
// fields, unknown codecs and data types, truncated, corrupt and wrongly sized chunks, checksum
// mismatches, keys that would leave the store, regions out of bounds, output buffers of the
// wrong size. Every case must throw cubestream::Error with the right code and a what() that
// names the store and the key; none may crash. A last test truncates and flips bits of real
// chunks of every codec and only asks that nothing but cubestream::Error comes out.
// (Sharding cases live in sharding_test.cpp.)
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "cubestream/store.hpp"
#include "test_util_fixtures.hpp"

namespace cubestream {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using test::throws_error;

// A fixture array (and its group's metadata) loaded into a MemoryStore under the same keys.
struct Loaded {
  std::shared_ptr<MemoryStore> store;
  std::string path;     // the array's path in the store
  std::string meta_key; // ".zarray" or "zarr.json" key
  std::vector<std::string> chunk_keys;  // keys of the chunks present, sorted

  Bytes get(const std::string& key) const { return *store->get(key); }
  json meta() const {
    auto b = get(meta_key);
    return json::parse(b.begin(), b.end());
  }
  void set_meta(const json& j) const { store->set(meta_key, std::string_view(j.dump())); }
  void set_meta_text(const std::string& s) const { store->set(meta_key, std::string_view(s)); }
  Array open() const { return Array::open(store, path); }
  void read_all() const { (void)open().read_all(); }
};

bool fixtures_present(std::string* why) {
  return test::load_manifest("v2", why).has_value() && test::load_manifest("v3", why).has_value();
}

#define REQUIRE_FIXTURES()                                   \
  do {                                                       \
    std::string why_;                                        \
    ASSERT_TRUE(fixtures_present(&why_)) << why_;            \
  } while (0)

Loaded load(const std::string& version, const std::string& store_name, const std::string& path) {
  Loaded l;
  l.store = std::make_shared<MemoryStore>("bad-input-" + version);
  l.path = path;
  l.meta_key = join_key(path, version == "v2" ? ".zarray" : "zarr.json");
  fs::path root = test::fixture_dir() / version / store_name;
  fs::path dir = root / path;
  if (!fs::exists(dir)) throw std::runtime_error("fixture missing: " + dir.string() + "\n" + test::kHowToGenerate);
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file()) continue;
    std::string key = fs::relative(f.path(), root).generic_string();
    auto bytes = test::read_file(f.path());
    l.store->set(key, Bytes(bytes.begin(), bytes.end()));
    std::string name = f.path().filename().string();
    if (name != ".zarray" && name != ".zattrs" && name != "zarr.json") l.chunk_keys.push_back(key);
  }
  for (const char* m : {".zgroup", ".zattrs", "zarr.json", ".zmetadata"}) {
    if (fs::exists(root / m) && path.find('/') == std::string::npos) {
      auto bytes = test::read_file(root / m);
      l.store->set(m, Bytes(bytes.begin(), bytes.end()));
    }
  }
  std::sort(l.chunk_keys.begin(), l.chunk_keys.end());
  return l;
}

// ---- metadata -------------------------------------------------------------------------------

TEST(BadInput, V2InvalidJson) {
  REQUIRE_FIXTURES();
  auto l = load("v2", "compressors.zarr", "zstd_level3");
  for (std::string text : {"", "{", "{\"shape\": [30, 17],}", "[1, 2, 3]", "null", "\"x\"", "{\"zarr_format\": 2"}) {
    SCOPED_TRACE(text);
    l.set_meta_text(text);
    EXPECT_TRUE(throws_error([&] { l.open(); }, ErrorCode::kInvalidMetadata, {l.store->describe(), l.meta_key}));
  }
}

TEST(BadInput, V2MissingFields) {
  REQUIRE_FIXTURES();
  auto l = load("v2", "compressors.zarr", "zstd_level3");
  const json good = l.meta();
  // ("filters" may be absent: readers commonly take that as null)
  for (const char* field : {"shape", "chunks", "dtype", "zarr_format", "compressor", "fill_value", "order"}) {
    SCOPED_TRACE(field);
    json j = good;
    j.erase(field);
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kInvalidMetadata, {l.store->describe(), l.meta_key}));
  }
}

TEST(BadInput, V2WrongTypedFields) {
  REQUIRE_FIXTURES();
  auto l = load("v2", "compressors.zarr", "zstd_level3");
  const json good = l.meta();
  const std::vector<std::pair<std::string, json>> cases = {
      {"shape", "30,17"},
      {"shape", json::array({30, "17"})},
      {"shape", json::array({-30, 17})},
      {"shape", json::array({30.5, 17})},
      {"chunks", json::array({16})},          // rank differs from shape
      {"chunks", json::array({0, 16})},       // zero-sized chunk
      {"chunks", json::array({16, -1})},
      {"chunks", json::object()},
      {"dtype", 8},
      {"zarr_format", 3},
      {"zarr_format", "2"},
      {"order", "X"},
      {"order", 1},
      {"compressor", "zstd"},
      {"compressor", json::object({{"level", 3}})},  // no "id"
      {"filters", json::object()},
      {"filters", json::array({"delta"})},
      {"fill_value", "not a number"},
      {"fill_value", json::array({1, 2})},
      {"dimension_separator", "-"},
      {"dimension_separator", 1},
  };
  for (const auto& [field, value] : cases) {
    SCOPED_TRACE(field + " = " + value.dump());
    json j = good;
    j[field] = value;
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kInvalidMetadata, {l.store->describe(), l.meta_key}));
  }
}

TEST(BadInput, V2UnknownCodecAndDtype) {
  REQUIRE_FIXTURES();
  auto l = load("v2", "compressors.zarr", "zstd_level3");
  const json good = l.meta();
  {
    json j = good;
    j["compressor"] = {{"id", "no_such_codec"}, {"level", 1}};
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kUnsupported,
                             {l.store->describe(), l.meta_key, "no_such_codec"}));
  }
  {
    json j = good;
    j["filters"] = json::array({{{"id", "fancy_filter"}}});
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kUnsupported,
                             {l.store->describe(), l.meta_key, "fancy_filter"}));
  }
  for (std::string dt : {"<q8", "<f3", "|V8", "<U4", "|O", "float32"}) {
    SCOPED_TRACE(dt);
    json j = good;
    j["dtype"] = dt;
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kUnsupported, {l.store->describe(), l.meta_key}));
  }
}

TEST(BadInput, V3InvalidJsonAndMissingFields) {
  REQUIRE_FIXTURES();
  auto l = load("v3", "codecs.zarr", "zstd_level3");
  const json good = l.meta();
  for (std::string text : {"", "{", "[]", "{\"zarr_format\": 3,}"}) {
    SCOPED_TRACE(text);
    l.set_meta_text(text);
    EXPECT_TRUE(throws_error([&] { l.open(); }, ErrorCode::kInvalidMetadata, {l.store->describe(), l.meta_key}));
  }
  for (const char* field : {"shape", "data_type", "chunk_grid", "chunk_key_encoding", "codecs", "fill_value",
                            "zarr_format", "node_type"}) {
    SCOPED_TRACE(field);
    json j = good;
    j.erase(field);
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kInvalidMetadata, {l.store->describe(), l.meta_key}));
  }
}

TEST(BadInput, V3WrongTypedFields) {
  REQUIRE_FIXTURES();
  auto l = load("v3", "codecs.zarr", "zstd_level3");  // float64 [30,17], chunks [16,16]
  const json good = l.meta();
  const json bytes_le = {{"name", "bytes"}, {"configuration", {{"endian", "little"}}}};
  std::vector<std::pair<std::string, std::function<void(json&)>>> cases = {
      {"shape string", [](json& j) { j["shape"] = "30"; }},
      {"shape negative", [](json& j) { j["shape"] = {-1, 17}; }},
      {"zarr_format 2", [](json& j) { j["zarr_format"] = 2; }},
      {"node_type number", [](json& j) { j["node_type"] = 1; }},
      {"chunk_shape rank", [](json& j) { j["chunk_grid"]["configuration"]["chunk_shape"] = {16}; }},
      {"chunk_shape zero", [](json& j) { j["chunk_grid"]["configuration"]["chunk_shape"] = {0, 16}; }},
      {"chunk_grid no configuration", [](json& j) { j["chunk_grid"].erase("configuration"); }},
      {"data_type number", [](json& j) { j["data_type"] = 8; }},
      {"fill_value string", [](json& j) { j["fill_value"] = "warm"; }},
      {"fill_value hex too short", [](json& j) { j["fill_value"] = "0x7ff8"; }},
      {"fill_value object", [](json& j) { j["fill_value"] = json::object(); }},
      {"codecs object", [](json& j) { j["codecs"] = json::object(); }},
      {"codecs empty", [](json& j) { j["codecs"] = json::array(); }},
      {"codecs no array->bytes", [](json& j) { j["codecs"] = {{{"name", "zstd"}, {"configuration", {{"level", 1}}}}}; }},
      {"codecs two array->bytes", [&](json& j) { j["codecs"] = {bytes_le, bytes_le}; }},
      {"codecs bytes->bytes before bytes",
       [&](json& j) { j["codecs"] = {{{"name", "zstd"}, {"configuration", {{"level", 1}}}}, bytes_le}; }},
      {"codec without name", [&](json& j) { j["codecs"] = {{{"configuration", {{"endian", "little"}}}}}; }},
      {"bytes endian bogus", [](json& j) { j["codecs"] = {{{"name", "bytes"}, {"configuration", {{"endian", "middle"}}}}}; }},
      {"transpose order repeats",
       [&](json& j) { j["codecs"] = {{{"name", "transpose"}, {"configuration", {{"order", {0, 0}}}}}, bytes_le}; }},
      {"transpose order rank",
       [&](json& j) { j["codecs"] = {{{"name", "transpose"}, {"configuration", {{"order", {0, 1, 2}}}}}, bytes_le}; }},
      {"zstd level string",
       [&](json& j) { j["codecs"] = {bytes_le, {{"name", "zstd"}, {"configuration", {{"level", "high"}}}}}; }},
      {"chunk_key_encoding separator",
       [](json& j) { j["chunk_key_encoding"] = {{"name", "default"}, {"configuration", {{"separator", "-"}}}}; }},
      {"dimension_names rank", [](json& j) { j["dimension_names"] = {"x"}; }},
      {"dimension_names type", [](json& j) { j["dimension_names"] = {1, 2}; }},
  };
  for (const auto& [name, mutate] : cases) {
    SCOPED_TRACE(name);
    json j = good;
    mutate(j);
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kInvalidMetadata, {l.store->describe(), l.meta_key}));
  }
  // a group's zarr.json where an array is asked for
  json j = good;
  j = {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", json::object()}};
  l.set_meta(j);
  EXPECT_TRUE(throws_error([&] { l.open(); }, ErrorCode::kNotFound, {l.store->describe(), l.meta_key}));
}

TEST(BadInput, V3UnknownCodecDtypeAndExtensions) {
  REQUIRE_FIXTURES();
  auto l = load("v3", "codecs.zarr", "zstd_level3");
  const json good = l.meta();
  const json bytes_le = {{"name", "bytes"}, {"configuration", {{"endian", "little"}}}};
  std::vector<std::pair<std::string, std::function<void(json&)>>> cases = {
      {"unknown codec", [&](json& j) { j["codecs"] = {bytes_le, {{"name", "no_such_codec"}}}; }},
      {"unknown data type", [](json& j) { j["data_type"] = "float128"; }},
      {"unknown chunk grid", [](json& j) { j["chunk_grid"]["name"] = "irregular"; }},
      {"unknown chunk key encoding", [](json& j) { j["chunk_key_encoding"] = {{"name", "fancy"}}; }},
      {"storage transformer", [](json& j) { j["storage_transformers"] = {{{"name", "t"}}}; }},
      {"must_understand extension", [](json& j) { j["ext"] = {{"must_understand", true}}; }},
  };
  for (const auto& [name, mutate] : cases) {
    SCOPED_TRACE(name);
    json j = good;
    mutate(j);
    l.set_meta(j);
    EXPECT_TRUE(throws_error([&] { l.read_all(); }, ErrorCode::kUnsupported, {l.store->describe(), l.meta_key}));
  }
}

TEST(BadInput, MissingArrayIsNotFound) {
  REQUIRE_FIXTURES();
  auto l = load("v3", "codecs.zarr", "zstd_level3");
  EXPECT_TRUE(throws_error([&] { Array::open(l.store, "no_such_array"); }, ErrorCode::kNotFound,
                           {l.store->describe(), "no_such_array"}));
}

// ---- chunks ---------------------------------------------------------------------------------

// The first chunk key of an array and what() needles for it.
void expect_chunk_error(const Loaded& l, const std::string& key, const Bytes& value, ErrorCode code,
                        std::optional<ErrorCode> or_code = std::nullopt) {
  SCOPED_TRACE("chunk replaced by " + std::to_string(value.size()) + " bytes: " +
               test::hex(value.data(), std::min<std::size_t>(value.size(), 16)) + (value.size() > 16 ? "..." : ""));
  Bytes saved = l.get(key);
  l.store->set(key, value);
  auto r = throws_error([&] { l.read_all(); }, code, {l.store->describe(), key});
  if (!r && or_code) r = throws_error([&] { l.read_all(); }, *or_code, {l.store->describe(), key});
  EXPECT_TRUE(r);
  // a region that touches only that chunk fails the same way; one that avoids it still reads
  l.store->set(key, saved);
  EXPECT_NO_THROW(l.read_all());
}

Bytes truncated(const Bytes& b, std::size_t n) { return Bytes(b.begin(), b.begin() + std::min(n, b.size())); }

TEST(BadInput, TruncatedChunks) {
  REQUIRE_FIXTURES();
  struct Case {
    const char* version;
    const char* store;
    const char* path;
  };
  for (const Case& c : {Case{"v2", "compressors.zarr", "zstd_level3"}, Case{"v2", "compressors.zarr", "lz4_acc1"},
                        Case{"v2", "compressors.zarr", "zlib_level6"}, Case{"v2", "compressors.zarr", "gzip_level6"},
                        Case{"v2", "compressors.zarr", "blosc_zstd_shuffle_c5_i4_bs0"},
                        Case{"v3", "codecs.zarr", "zstd_level3"}, Case{"v3", "codecs.zarr", "gzip_level6"}}) {
    SCOPED_TRACE(std::string(c.version) + "/" + c.store + ":" + c.path);
    Loaded l;
    try {
      l = load(c.version, c.store, c.path);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    const std::string key = l.chunk_keys.front();
    Bytes good = l.get(key);
    ASSERT_GT(good.size(), 16u);
    expect_chunk_error(l, key, truncated(good, good.size() / 2), ErrorCode::kCorruptData);
    expect_chunk_error(l, key, truncated(good, 3), ErrorCode::kCorruptData);
    // an empty value: not a stream of this codec, or a stream that decodes to nothing
    expect_chunk_error(l, key, Bytes{}, ErrorCode::kCorruptData, ErrorCode::kSizeMismatch);
  }
}

TEST(BadInput, UncompressedChunkOfWrongSize) {
  REQUIRE_FIXTURES();
  // v2, compressor null: the chunk is the raw array (10x10 float64 = 800 bytes)
  auto l = load("v2", "compressors.zarr", "none");
  const std::string key = l.chunk_keys.front();
  Bytes good = l.get(key);
  ASSERT_EQ(good.size(), 800u);
  expect_chunk_error(l, key, truncated(good, 799), ErrorCode::kSizeMismatch);
  Bytes longer = good;
  longer.push_back(0);
  expect_chunk_error(l, key, longer, ErrorCode::kSizeMismatch);
  // v3, bytes codec only
  auto l3 = load("v3", "codecs.zarr", "bytes_little_float64");
  const std::string key3 = l3.chunk_keys.front();
  Bytes good3 = l3.get(key3);
  expect_chunk_error(l3, key3, truncated(good3, good3.size() - 8), ErrorCode::kSizeMismatch);
  Bytes longer3 = good3;
  longer3.insert(longer3.end(), 8, 0);
  expect_chunk_error(l3, key3, longer3, ErrorCode::kSizeMismatch);
}

Bytes zstd_compress(const std::vector<std::uint8_t>& raw) {
  Bytes out(ZSTD_compressBound(raw.size()));
  std::size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
  out.resize(n);
  return out;
}

TEST(BadInput, CompressedChunkDecodesToWrongSize) {
  REQUIRE_FIXTURES();
  // zstd_level3: float64 chunks of 16x16 = 2048 bytes
  for (const char* version : {"v2", "v3"}) {
    SCOPED_TRACE(version);
    auto l = load(version, std::string(version) == "v2" ? "compressors.zarr" : "codecs.zarr", "zstd_level3");
    const std::string key = l.chunk_keys.front();
    expect_chunk_error(l, key, zstd_compress(std::vector<std::uint8_t>(2040, 7)), ErrorCode::kSizeMismatch);
    expect_chunk_error(l, key, zstd_compress(std::vector<std::uint8_t>(2056, 7)), ErrorCode::kSizeMismatch);
    expect_chunk_error(l, key, zstd_compress(std::vector<std::uint8_t>(1 << 20, 7)), ErrorCode::kSizeMismatch);
    expect_chunk_error(l, key, zstd_compress({}), ErrorCode::kSizeMismatch);
  }
  // numcodecs LZ4 carries the decoded size in a 4-byte header: claim more than the chunk holds
  auto l = load("v2", "compressors.zarr", "lz4_acc1");  // int32 16x16 = 1024 bytes
  const std::string key = l.chunk_keys.front();
  Bytes b = l.get(key);
  b[0] = 0x00;
  b[1] = 0x08;  // 2048
  b[2] = 0;
  b[3] = 0;
  expect_chunk_error(l, key, b, ErrorCode::kSizeMismatch);
}

TEST(BadInput, CorruptChunkBytes) {
  REQUIRE_FIXTURES();
  {  // zstd: not a zstd frame
    auto l = load("v2", "compressors.zarr", "zstd_level3");
    const auto key = l.chunk_keys.front();
    Bytes b = l.get(key);
    b[0] ^= 0xff;
    expect_chunk_error(l, key, b, ErrorCode::kCorruptData);
    expect_chunk_error(l, key, Bytes(100, 0xAB), ErrorCode::kCorruptData);
  }
  {  // blosc: header fields that contradict each other or the buffer
    auto l = load("v2", "compressors.zarr", "blosc_zstd_shuffle_c5_i4_bs0");
    const auto key = l.chunk_keys.front();
    Bytes b = l.get(key);
    Bytes bad_cbytes = b;
    bad_cbytes[12] = 0xff;  // cbytes (bytes 12..15) larger than the buffer
    bad_cbytes[13] = 0xff;
    expect_chunk_error(l, key, bad_cbytes, ErrorCode::kCorruptData);
    Bytes zero_typesize = b;
    zero_typesize[3] = 0;
    expect_chunk_error(l, key, zero_typesize, ErrorCode::kCorruptData);
    Bytes zero_blocksize = b;
    for (int i = 8; i < 12; ++i) zero_blocksize[i] = 0;
    expect_chunk_error(l, key, zero_blocksize, ErrorCode::kCorruptData);
    Bytes garbage_body = b;
    for (std::size_t i = 16; i < garbage_body.size(); ++i) garbage_body[i] = 0xAB;
    // garbage block offsets point outside the chunk: out_of_range says exactly that
    expect_chunk_error(l, key, garbage_body, ErrorCode::kCorruptData, ErrorCode::kOutOfRange);
    // an unknown container version is "valid but unsupported" (a future blosc)
    Bytes version = b;
    version[0] = 0x7f;
    expect_chunk_error(l, key, version, ErrorCode::kUnsupported, ErrorCode::kCorruptData);
  }
  {  // lz4 (numcodecs framing): garbage after a correct size header
    auto l = load("v2", "compressors.zarr", "lz4_acc1");
    const auto key = l.chunk_keys.front();
    Bytes b = l.get(key);
    for (std::size_t i = 4; i < b.size(); ++i) b[i] = 0xff;
    expect_chunk_error(l, key, b, ErrorCode::kCorruptData);
  }
  {  // gzip: bad magic; intact data with a wrong CRC-32 in the trailer
    auto l = load("v2", "compressors.zarr", "gzip_level6");
    const auto key = l.chunk_keys.front();
    Bytes b = l.get(key);
    Bytes magic = b;
    magic[0] = 0;
    expect_chunk_error(l, key, magic, ErrorCode::kCorruptData);
    Bytes crc = b;
    crc[crc.size() - 8] ^= 0x01;
    expect_chunk_error(l, key, crc, ErrorCode::kChecksumMismatch);
  }
  {  // zlib: wrong Adler-32 in the trailer
    auto l = load("v2", "compressors.zarr", "zlib_level6");
    const auto key = l.chunk_keys.front();
    Bytes b = l.get(key);
    b[b.size() - 1] ^= 0x01;
    expect_chunk_error(l, key, b, ErrorCode::kChecksumMismatch);
  }
}

TEST(BadInput, ChecksumMismatch) {
  REQUIRE_FIXTURES();
  struct Case {
    const char* version;
    const char* store;
    const char* path;
    bool checksum_first;  // numcodecs puts the checksum before the data, crc32c after
  };
  for (const Case& c : {Case{"v2", "filters.zarr", "crc32_compressor", true},
                        Case{"v2", "filters.zarr", "adler32_compressor", true},
                        Case{"v3", "codecs.zarr", "crc32c_only", false},
                        Case{"v3", "codecs.zarr", "zstd_crc32c", false}}) {
    SCOPED_TRACE(std::string(c.version) + "/" + c.path);
    auto l = load(c.version, c.store, c.path);
    const auto key = l.chunk_keys.front();
    Bytes b = l.get(key);
    Bytes data_flip = b;
    data_flip[c.checksum_first ? 4 + (b.size() - 4) / 2 : (b.size() - 4) / 2] ^= 0x10;
    expect_chunk_error(l, key, data_flip, ErrorCode::kChecksumMismatch);
    Bytes sum_flip = b;
    sum_flip[c.checksum_first ? 0 : b.size() - 1] ^= 0x80;
    expect_chunk_error(l, key, sum_flip, ErrorCode::kChecksumMismatch);
  }
  // shorter than the checksum itself
  auto l = load("v3", "codecs.zarr", "crc32c_only");
  expect_chunk_error(l, l.chunk_keys.front(), Bytes{1, 2}, ErrorCode::kCorruptData);
}

// ---- keys that would leave the store -------------------------------------------------------

TEST(BadInput, PathEscape) {
  REQUIRE_FIXTURES();
  auto l = load("v3", "codecs.zarr", "zstd_level3");
  for (std::string p : {"../zstd_level3", "zstd_level3/../../x", "/etc", "a/./b", "a\\b", "a//b"}) {
    SCOPED_TRACE(p);
    EXPECT_TRUE(throws_error([&] { Array::open(l.store, p); }, ErrorCode::kPathEscape, {l.store->describe()}));
  }
  // the same through a file store copied from the fixtures
  test::TempDir tmp("cs_bad_input");
  test::copy_tree(test::fixture_dir() / "v2" / "compressors.zarr" / "zstd_level3", tmp.path() / "store" / "arr");
  auto fstore = open_store((tmp.path() / "store").string());
  EXPECT_NO_THROW((void)Array::open(fstore, "arr").read_all());
  for (std::string p : {"../store/arr", "arr/../../store/arr", "/arr"}) {
    SCOPED_TRACE(p);
    EXPECT_TRUE(throws_error([&] { Array::open(fstore, p); }, ErrorCode::kPathEscape, {fstore->describe()}));
  }
}

TEST(BadInput, ConsolidatedMetadataWithEscapingKey) {
  REQUIRE_FIXTURES();
  // hierarchy.zarr has .zmetadata; make it list an array outside the store root
  auto store = std::make_shared<MemoryStore>("bad-consolidated");
  fs::path root = test::fixture_dir() / "v2" / "hierarchy.zarr";
  auto zm = test::read_file(root / ".zmetadata");
  json j = json::parse(zm.begin(), zm.end());
  j["metadata"]["../evil/.zarray"] = j["metadata"]["top/.zarray"];
  for (const char* k : {".zgroup", ".zattrs"}) {
    auto b = test::read_file(root / k);
    store->set(k, Bytes(b.begin(), b.end()));
  }
  store->set(".zmetadata", std::string_view(j.dump()));
  try {
    Group g = Group::open(store, "");
    EXPECT_TRUE(throws_error([&] { (void)g.open_array("../evil"); }, ErrorCode::kPathEscape, {store->describe()}))
        << "an array path from .zmetadata must be validated when the array is opened";
    // and certainly no chunk is fetched through it
    EXPECT_TRUE(throws_error([&] { (void)g.open_array("../evil").read_all(); }, ErrorCode::kPathEscape,
                             {store->describe()}));
    // listing may skip or refuse the bad entry, but must not hand it out as a child
    try {
      auto names = g.array_names();
      for (const auto& n : names) EXPECT_EQ(n.find(".."), std::string::npos) << n;
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kPathEscape || e.code() == ErrorCode::kInvalidMetadata) << e.what();
    }
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kPathEscape || e.code() == ErrorCode::kInvalidMetadata) << e.what();
  }
}

// ---- the caller's mistakes -----------------------------------------------------------------

TEST(BadInput, RegionOutOfBounds) {
  REQUIRE_FIXTURES();
  auto l = load("v2", "compressors.zarr", "zstd_level3");  // float64 [30, 17]
  Array a = l.open();
  std::vector<double> buf(30 * 17 + 16);
  const std::vector<Region> bad = {
      {{0, 0}, {31, 17}}, {{0, 0}, {30, 18}},  {{30, 0}, {1, 1}},  {{-1, 0}, {1, 1}},
      {{0, 0}, {-1, 1}},  {{29, 16}, {2, 1}},  {{0}, {30}},        {{0, 0, 0}, {1, 1, 1}},
      {{0, 0}, {1}},      {{INT64_MAX, 0}, {1, 1}}, {{1, 0}, {INT64_MAX, 1}},
  };
  for (const auto& r : bad) {
    SCOPED_TRACE(::testing::PrintToString(r.start) + " " + ::testing::PrintToString(r.shape));
    std::size_t n = 1;
    for (auto s : r.shape) n *= static_cast<std::size_t>(std::max<std::int64_t>(0, std::min<std::int64_t>(s, 64)));
    EXPECT_TRUE(throws_error([&] { a.read(r, buf.data(), std::min(n, buf.size()) * 8); },
                             ErrorCode::kInvalidArgument, {l.store->describe(), "zstd_level3"}));
  }
}

TEST(BadInput, OutputBufferOfWrongSize) {
  REQUIRE_FIXTURES();
  auto l = load("v2", "compressors.zarr", "zstd_level3");  // float64 [30, 17]
  Array a = l.open();
  std::vector<double> buf(30 * 17 + 1);
  Region r{{2, 3}, {4, 5}};  // 20 elements = 160 bytes
  for (std::size_t bytes : {0ul, 8ul, 159ul, 161ul, 168ul, 30ul * 17 * 8}) {
    SCOPED_TRACE(bytes);
    EXPECT_TRUE(throws_error([&] { a.read(r, buf.data(), bytes); }, ErrorCode::kInvalidArgument,
                             {l.store->describe(), "zstd_level3"}));
  }
  EXPECT_NO_THROW(a.read(r, buf.data(), 160));
  // A null output pointer: run in a child process so that a crash fails only this check.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        int rc = 1;
        try {
          a.read(r, nullptr, 160);
        } catch (const Error& e) {
          rc = e.code() == ErrorCode::kInvalidArgument ? 0 : 2;
        } catch (...) {
          rc = 3;
        }
        std::_Exit(rc);
      },
      ::testing::ExitedWithCode(0), "")
      << "read(region, nullptr, n) must throw invalid_argument (exit 1: no throw, 2: other code, 3: other "
         "exception, signal: crash)";
}

// ---- never crash ----------------------------------------------------------------------------

// Truncates and flips bits in real chunks of every codec: reads may succeed (a flipped bit in
// stored data is not always detectable) but may only fail with cubestream::Error.
TEST(BadInput, TruncationsAndBitFlipsNeverCrash) {
  REQUIRE_FIXTURES();
  struct Case {
    const char* version;
    const char* store;
    const char* path;
  };
  const std::vector<Case> cases = {
      {"v2", "compressors.zarr", "blosc_lz4_noshuffle_c0_i1_bs0"},
      {"v2", "compressors.zarr", "blosc_lz4_shuffle_c1_i2_bs0"},
      {"v2", "compressors.zarr", "blosc_lz4hc_bitshuffle_c0_c8_bs256"},
      {"v2", "compressors.zarr", "blosc_zstd_shuffle_c5_i4_bs0"},
      {"v2", "compressors.zarr", "blosc_zlib_noshuffle_c3_i1_bs0"},
      {"v2", "compressors.zarr", "blosc_blosclz_bitshuffle_c3_c8_bs256"},
      {"v2", "compressors.zarr", "blosc_zstd_bitshuffle_c9_f2_bs256"},
      {"v2", "compressors.zarr", "blosc_lz4_bitshuffle_c5_f4_bs256"},
      {"v2", "compressors.zarr", "blosc_incompressible"},
      {"v2", "compressors.zarr", "blosc_zstd_bitshuffle_f8_large"},
      {"v2", "compressors.zarr", "blosc_zstd_noshuffle_c1_c16_bs0"},
      {"v2", "compressors.zarr", "blosc_autoshuffle_u1"},
      {"v2", "compressors.zarr", "zstd_level22"},
      {"v2", "compressors.zarr", "lz4_acc1"},
      {"v2", "compressors.zarr", "zlib_level1"},
      {"v2", "compressors.zarr", "gzip_level9"},
      {"v2", "filters.zarr", "chain_delta_shuffle_zstd"},
      {"v2", "filters.zarr", "fixedscaleoffset_f8_u1"},
      {"v2", "filters.zarr", "quantize_f4_d1"},
      {"v2", "filters.zarr", "adler32_filter_blosc"},
      {"v2", "dtypes.zarr", "be_c16"},
      {"v3", "codecs.zarr", "transpose_big_endian_blosc_crc32c"},
      {"v3", "codecs.zarr", "crc32c_gzip"},
      {"v3", "codecs.zarr", "transpose_4d_3120"},
      {"v3", "codecs.zarr", "numcodecs_shuffle"},
      {"v3", "codecs.zarr", "blosc_native_lz4"},
      {"v3", "codecs.zarr", "numcodecs_lz4"},
  };
  std::mt19937_64 rng(12345);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.version) + "/" + c.store + ":" + c.path);
    Loaded l;
    try {
      l = load(c.version, c.store, c.path);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    Array a = [&] {
      try {
        return l.open();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "cannot open the good array: " << e.what();
        throw;
      }
    }();
    const std::string key = l.chunk_keys.front();
    const Bytes good = l.get(key);
    std::vector<Bytes> variants;
    // every length up to 64 bytes (headers), then 32 lengths spread over the rest
    for (std::size_t n = 0; n < std::min<std::size_t>(good.size(), 65); ++n) variants.push_back(truncated(good, n));
    for (std::size_t k = 1; k <= 32; ++k) {
      std::size_t n = 65 + (good.size() > 65 ? (good.size() - 65) * k / 33 : 0);
      if (n < good.size()) variants.push_back(truncated(good, n));
    }
    for (int i = 0; i < 150; ++i) {
      Bytes b = good;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      variants.push_back(std::move(b));
    }
    {  // header bytes set to extremes
      Bytes b = good;
      for (std::size_t i = 0; i < std::min<std::size_t>(16, b.size()); ++i) b[i] = 0xff;
      variants.push_back(b);
      Bytes z = good;
      for (std::size_t i = 0; i < std::min<std::size_t>(16, z.size()); ++i) z[i] = 0;
      variants.push_back(z);
    }
    Bytes extended = good;
    extended.insert(extended.end(), 100, 0x5a);
    variants.push_back(extended);

    Bytes out(static_cast<std::size_t>(a.metadata().dtype.size) *
              static_cast<std::size_t>(std::max<std::int64_t>(1, [&] {
                std::int64_t n = 1;
                for (auto s : a.shape()) n *= s;
                return n;
              }())));
    Region whole{std::vector<std::int64_t>(a.rank(), 0), a.shape()};
    int i = 0;
    for (const auto& v : variants) {
      l.store->set(key, v);
      try {
        a.read(whole, out.data(), out.size(), ReadOptions{1 + (i++ % 2) * 3});
      } catch (const Error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find(key), std::string::npos) << "what() does not name the chunk: " << what;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "non-cubestream exception for a " << v.size() << "-byte variant: " << e.what();
      }
    }
    l.store->set(key, good);
  }
}

}  // namespace
}  // namespace cubestream
