// One conformance suite that every Store implementation passes: whole gets, byte ranges,
// suffixes, out-of-range errors, batched ranges, listing, and refusal of unsafe keys.
// The local stores are instantiated here; the object stores in http_store_test.cpp and
// s3_store_test.cpp, against real servers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <unistd.h>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "store/store_conformance.hpp"

namespace cubestream {
namespace {

std::string temp_dir() {
  static int n = 0;
  auto p = std::filesystem::temp_directory_path() / ("cs_store_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

std::vector<StoreFactory> factories() {
  return {
      {"memory",
       [](const auto& values) {
         auto s = std::make_shared<MemoryStore>("conformance");
         for (const auto& [k, v] : values) s->set(k, std::string_view(v));
         return std::shared_ptr<Store>(s);
       }},
      {"file",
       [](const auto& values) {
         std::string root = temp_dir();
         for (const auto& [k, v] : values) {
           auto p = std::filesystem::path(root) / k;
           std::filesystem::create_directories(p.parent_path());
           std::ofstream(p, std::ios::binary) << v;
         }
         return open_file_store(root);
       }},
  };
}

std::string as_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

TEST_P(StoreConformance, GetWholeAndMissing) {
  CS_MAKE_STORE(s, {{"a/b/c", "hello world"}, {"top", ""}, {"x/.zarray", "{}"}});
  EXPECT_EQ(as_string(*s->get("a/b/c")), "hello world");
  EXPECT_EQ(as_string(*s->get("top")), "");
  EXPECT_FALSE(s->get("a/b/missing").has_value());
  EXPECT_FALSE(s->get("nope/nope").has_value());
  EXPECT_EQ(*s->size("a/b/c"), 11u);
  EXPECT_FALSE(s->size("a/b").has_value()) << "a prefix is not a value";
  EXPECT_TRUE(s->exists("x/.zarray"));
}

TEST_P(StoreConformance, ByteRanges) {
  std::string v(10000, '\0');
  std::mt19937 rng(1);
  for (auto& c : v) c = static_cast<char>(rng());
  CS_MAKE_STORE(s, {{"k", v}});
  EXPECT_EQ(as_string(*s->get_range("k", {0, 10})), v.substr(0, 10));
  EXPECT_EQ(as_string(*s->get_range("k", {9990, 10})), v.substr(9990));
  EXPECT_EQ(as_string(*s->get_range("k", {5000, -1})), v.substr(5000));
  EXPECT_EQ(as_string(*s->get_range("k", ByteRange::suffix(16))), v.substr(10000 - 16));
  EXPECT_EQ(as_string(*s->get_range("k", {10000, 0})), "");
  EXPECT_FALSE(s->get_range("missing", {0, 1}).has_value());
  for (ByteRange bad : {ByteRange{9999, 2}, ByteRange{10001, -1}, ByteRange::suffix(10001)}) {
    try {
      s->get_range("k", bad);
      FAIL() << "range " << bad.offset << "+" << bad.length << " must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
      EXPECT_EQ(e.context().key, "k");
      EXPECT_NE(std::string(e.what()).find(s->describe()), std::string::npos);
    }
  }
  // Batched ranges, out of order, overlapping and adjacent (the file store coalesces them).
  std::vector<ByteRange> ranges = {{100, 50}, {0, 10}, {140, 30}, {9000, 1000}, {10, 5}, {5000, 0}};
  auto parts = s->get_ranges("k", ranges);
  ASSERT_TRUE(parts.has_value());
  ASSERT_EQ(parts->size(), ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i)
    EXPECT_EQ(as_string((*parts)[i]), v.substr(ranges[i].offset, ranges[i].length)) << "range " << i;
  EXPECT_FALSE(s->get_ranges("missing", ranges).has_value());
}

TEST_P(StoreConformance, ListDir) {
  CS_MAKE_STORE(s, {{"zarr.json", "{}"}, {"t2m/zarr.json", "{}"}, {"t2m/c/0/0", "x"}, {"z/zarr.json", "{}"}});
  if (!GetParam().lists) {
    try {
      s->list_dir("t2m");
      FAIL() << "a store without listing must say so";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find(s->describe()), std::string::npos);
    }
    return;
  }
  EXPECT_EQ(s->list_dir(""), (std::vector<std::string>{"t2m", "z", "zarr.json"}));
  EXPECT_EQ(s->list_dir("t2m"), (std::vector<std::string>{"c", "zarr.json"}));
  EXPECT_EQ(s->list_dir("t2m/c"), (std::vector<std::string>{"0"}));
  EXPECT_TRUE(s->list_dir("absent").empty());
}

TEST_P(StoreConformance, RefusesKeysThatEscapeTheRoot) {
  CS_MAKE_STORE(s, {{"a", "1"}});
  for (const char* key : {"../etc/passwd", "/etc/passwd", "a/../../x", "a/./b", "a//b", "", "a\\b", "..", "a/.."}) {
    try {
      s->get(key);
      FAIL() << "key '" << key << "' must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPathEscape) << key;
    }
  }
  EXPECT_THROW(s->get(std::string("a\0b", 3)), Error);
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreConformance, ::testing::ValuesIn(factories()),
                         [](const auto& info) { return info.param.name; });

TEST(OpenStore, RejectsUnknownSchemesAndMissingDirectories) {
  try {
    open_store("gopher://x/y");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
  try {
    open_store("/definitely/not/here.zarr");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

}  // namespace
}  // namespace cubestream
