// Group discovery: listing, Zarr v2 consolidated .zmetadata, Zarr v3 inline consolidated
// metadata, and reading an array that was opened from consolidated metadata alone.
#include <gtest/gtest.h>

#include <cstring>

#include "cubestream/error.hpp"
#include "cubestream/group.hpp"

namespace cubestream {
namespace {

using nlohmann::json;

json v3_array(std::vector<std::int64_t> shape) {
  return {{"zarr_format", 3}, {"node_type", "array"}, {"shape", shape}, {"data_type", "int32"},
          {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", shape}}}}},
          {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", 7},
          {"codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})},
          {"attributes", {{"long_name", "x"}}}};
}

TEST(GroupV3, ListsByStoreAndByInlineConsolidatedMetadata) {
  auto s = std::make_shared<MemoryStore>("g3");
  s->set("zarr.json", json{{"zarr_format", 3}, {"node_type", "group"}, {"attributes", {{"title", "t"}}}}.dump());
  s->set("a/zarr.json", v3_array({3}).dump());
  s->set("sub/zarr.json", json{{"zarr_format", 3}, {"node_type", "group"}}.dump());
  s->set("sub/b/zarr.json", v3_array({2}).dump());
  Group g = Group::open(s);
  EXPECT_FALSE(g.consolidated());
  EXPECT_EQ(g.attributes()["title"], "t");
  EXPECT_EQ(g.array_names(), (std::vector<std::string>{"a"}));
  EXPECT_EQ(g.group_names(), (std::vector<std::string>{"sub"}));
  EXPECT_EQ(g.all_array_paths(), (std::vector<std::string>{"a", "sub/b"}));

  // The same hierarchy known only through consolidated metadata: the store holds no child
  // metadata at all, so anything found must come from the root document.
  auto c = std::make_shared<MemoryStore>("g3c");
  json root = {{"zarr_format", 3}, {"node_type", "group"},
               {"consolidated_metadata", {{"kind", "inline"}, {"must_understand", false},
                                          {"metadata", {{"a", v3_array({3})},
                                                        {"sub", {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", {{"k", 1}}}}},
                                                        {"sub/b", v3_array({2})}}}}}};
  c->set("zarr.json", root.dump());
  Bytes chunk(8);
  std::int32_t vals[2] = {11, -4};
  std::memcpy(chunk.data(), vals, 8);
  c->set("sub/b/c/0", chunk);
  Group gc = Group::open(c);
  EXPECT_TRUE(gc.consolidated());
  EXPECT_EQ(gc.all_array_paths(), (std::vector<std::string>{"a", "sub/b"}));
  EXPECT_EQ(gc.open_group("sub").attributes()["k"], 1);
  Array b = gc.open_group("sub").open_array("b");
  auto data = b.read_all({});
  std::int32_t got[2];
  std::memcpy(got, data.data(), 8);
  EXPECT_EQ(got[0], 11);
  EXPECT_EQ(got[1], -4);
  auto a = gc.open_array("a").read_all({});  // no chunk stored: the fill value 7
  std::int32_t f;
  std::memcpy(&f, a.data(), 4);
  EXPECT_EQ(f, 7);
}

TEST(GroupV2, ConsolidatedZmetadata) {
  auto s = std::make_shared<MemoryStore>("g2");
  json zarray = {{"zarr_format", 2}, {"shape", {2}}, {"chunks", {2}}, {"dtype", "<i2"}, {"fill_value", 0},
                 {"order", "C"}, {"compressor", nullptr}, {"filters", nullptr}};
  json zm = {{"zarr_consolidated_format", 1},
             {"metadata", {{".zgroup", {{"zarr_format", 2}}}, {".zattrs", {{"title", "v2"}}},
                           {"x/.zarray", zarray}, {"x/.zattrs", {{"_ARRAY_DIMENSIONS", {"n"}}}},
                           {"grp/.zgroup", {{"zarr_format", 2}}}, {"grp/y/.zarray", zarray}}}};
  s->set(".zgroup", json{{"zarr_format", 2}}.dump());
  s->set(".zmetadata", zm.dump());
  Group g = Group::open(s);
  EXPECT_TRUE(g.consolidated());
  EXPECT_EQ(g.array_names(), (std::vector<std::string>{"x"}));
  EXPECT_EQ(g.group_names(), (std::vector<std::string>{"grp"}));
  EXPECT_EQ(g.open_array("x").metadata().dimension_names, (std::vector<std::string>{"n"}));
  EXPECT_EQ(g.all_array_paths(), (std::vector<std::string>{"grp/y", "x"}));
}

TEST(GroupErrors, MissingAndMalformed) {
  auto s = std::make_shared<MemoryStore>("bad");
  try {
    Group::open(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  s->set("zarr.json", std::string_view("{not json"));
  try {
    Group::open(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidMetadata);
    EXPECT_EQ(e.context().key, "zarr.json");
    EXPECT_EQ(e.context().store, "memory://bad");
  }
}

}  // namespace
}  // namespace cubestream
