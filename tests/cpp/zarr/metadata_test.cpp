// Metadata parsing: Zarr v3 zarr.json and Zarr v2 .zarray, fill values in every encoding,
// extension handling (must_understand), chunk keys, and the errors for malformed metadata.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "cubestream/error.hpp"
#include "zarr/fill_value.hpp"
#include "zarr/metadata.hpp"

namespace cubestream::zarr {
namespace {

using nlohmann::json;

json v3(json patch = json::object()) {
  json j = {{"zarr_format", 3},
            {"node_type", "array"},
            {"shape", {10, 20}},
            {"data_type", "float32"},
            {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {5, 5}}}}}},
            {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
            {"fill_value", "NaN"},
            {"codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})}};
  j.merge_patch(patch);
  return j;
}

json v2(json patch = json::object()) {
  json j = {{"zarr_format", 2}, {"shape", {10, 20}}, {"chunks", {5, 5}}, {"dtype", "<f4"},
            {"fill_value", "NaN"}, {"order", "C"}, {"compressor", nullptr}, {"filters", nullptr}};
  j.merge_patch(patch);
  return j;
}

template <class T>
T fill_as(const ArrayMetadata& m) {
  T v;
  std::memcpy(&v, m.fill_value.data(), sizeof(T));
  return v;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // no error: reported as a failure by the caller's EXPECT
}

TEST(MetadataV3, ParsesCoreFields) {
  auto p = parse_v3_array(v3({{"dimension_names", {"lat", nullptr}}, {"attributes", {{"units", "K"}}}}));
  EXPECT_EQ(p.meta.shape, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(p.meta.chunk_shape, (std::vector<std::int64_t>{5, 5}));
  EXPECT_EQ(p.meta.dtype, DataType::float_(4));
  EXPECT_TRUE(std::isnan(fill_as<float>(p.meta)));
  EXPECT_EQ(p.meta.dimension_names, (std::vector<std::string>{"lat", ""}));
  EXPECT_EQ(p.meta.attributes["units"], "K");
  EXPECT_EQ(chunk_key(p.meta, {1, 3}), "c/1/3");
}

TEST(MetadataV3, FillValueEncodings) {
  EXPECT_EQ(fill_as<float>(parse_v3_array(v3({{"fill_value", "Infinity"}})).meta), INFINITY);
  EXPECT_EQ(fill_as<float>(parse_v3_array(v3({{"fill_value", "-Infinity"}})).meta), -INFINITY);
  EXPECT_EQ(fill_as<std::uint32_t>(parse_v3_array(v3({{"fill_value", "0x7fc00001"}})).meta), 0x7fc00001u);
  EXPECT_EQ(fill_as<float>(parse_v3_array(v3({{"fill_value", 1.5}})).meta), 1.5f);
  auto f64 = parse_v3_array(v3({{"data_type", "float64"}, {"fill_value", "0x3ff0000000000000"}}));
  EXPECT_EQ(fill_as<double>(f64.meta), 1.0);
  auto f16 = parse_v3_array(v3({{"data_type", "float16"}, {"fill_value", -2.0}}));
  EXPECT_EQ(fill_as<std::uint16_t>(f16.meta), 0xC000);
  auto c64 = parse_v3_array(v3({{"data_type", "complex64"}, {"fill_value", {1.0, "NaN"}}}));
  float c[2];
  std::memcpy(c, c64.meta.fill_value.data(), 8);
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_TRUE(std::isnan(c[1]));
  EXPECT_EQ(fill_as<std::int16_t>(parse_v3_array(v3({{"data_type", "int16"}, {"fill_value", -32768}})).meta), -32768);
  EXPECT_EQ(fill_as<std::uint64_t>(parse_v3_array(v3({{"data_type", "uint64"}, {"fill_value", 18446744073709551615ull}})).meta),
            18446744073709551615ull);
  EXPECT_EQ(fill_as<std::uint8_t>(parse_v3_array(v3({{"data_type", "bool"}, {"fill_value", true}})).meta), 1);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"data_type", "int8"}, {"fill_value", 300}})); }), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"fill_value", "nan"}})); }), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"fill_value", "0x7fc0"}})); }), ErrorCode::kInvalidMetadata);
}

TEST(MetadataV3, HalfPrecisionConversionRoundsToNearestEven) {
  EXPECT_EQ(double_to_half(1.0), 0x3C00);
  EXPECT_EQ(double_to_half(65504.0), 0x7BFF);
  EXPECT_EQ(double_to_half(1e6), 0x7C00);
  EXPECT_EQ(double_to_half(5.960464477539063e-08), 0x0001);  // smallest subnormal
  EXPECT_EQ(double_to_half(1.0009765625), 0x3C01);
  EXPECT_EQ(double_to_half(1.00048828125), 0x3C00);  // a tie rounds to even
}

TEST(MetadataV3, ExtensionsAndUnknownFields) {
  // An extension that may be ignored is skipped; anything else unknown is refused.
  EXPECT_NO_THROW(parse_v3_array(v3({{"my_extension", {{"must_understand", false}, {"x", 1}}}})));
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"my_extension", {{"must_understand", true}}}})); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"surprise", 1}})); }), ErrorCode::kUnsupported);
  EXPECT_NO_THROW(parse_v3_array(v3({{"storage_transformers", json::array({{{"name", "x"}, {"must_understand", false}}})}})));
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"storage_transformers", json::array({{{"name", "x"}}})}})); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"chunk_grid", {{"name", "rectilinear"}}}})); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"data_type", "string"}})); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"codecs", json::array({{{"name", "snappy9"}}})}})); }), ErrorCode::kUnsupported);
}

TEST(MetadataV3, MalformedFields) {
  for (json patch : {json{{"shape", "big"}}, json{{"shape", {-1, 2}}}, json{{"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {0, 5}}}}}}},
                     json{{"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {5}}}}}}},
                     json{{"zarr_format", 2}}, json{{"node_type", "group"}}, json{{"codecs", "bytes"}},
                     json{{"codecs", json::array()}}, json{{"dimension_names", {"a"}}}, json{{"attributes", 3}},
                     json{{"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "-"}}}}}},
                     json{{"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {4000000000ll, 4000000000ll}}}}}}}}) {
    EXPECT_EQ(code_of([&] { parse_v3_array(v3(patch)); }), ErrorCode::kInvalidMetadata) << patch.dump();
  }
  json missing = v3();
  missing.erase("fill_value");
  EXPECT_EQ(code_of([&] { parse_v3_array(missing); }), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of([] { parse_json_text(ByteView(reinterpret_cast<const std::uint8_t*>("{\"a\":"), 5), "x/zarr.json"); }),
            ErrorCode::kInvalidMetadata);
}

TEST(MetadataV3, RefusesChunksAndShardsTooLargeToHold) {
  // A hostile zarr.json must fail at open, not at allocation or in an overflowing product.
  EXPECT_EQ(code_of([] {
              parse_v3_array(v3({{"data_type", "uint8"}, {"shape", {10}},
                                 {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {1ll << 40}}}}}}}));
            }),
            ErrorCode::kInvalidMetadata);
  json sharded = v3({{"data_type", "uint8"}, {"shape", {10}},
                     {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {1ll << 30}}}}}}});
  sharded["codecs"] = json::array({{{"name", "sharding_indexed"},
                                    {"configuration", {{"chunk_shape", {1}}, {"codecs", json::array({{{"name", "bytes"}}})},
                                                       {"index_codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})}}}}});
  EXPECT_EQ(code_of([&] { parse_v3_array(sharded); }), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of([] { parse_v3_array(v3({{"codecs", json::array({{{"name", "transpose"}, {"configuration", {{"order", {4294967296ll, 1}}}}}, {{"name", "bytes"}}})}})); }),
            ErrorCode::kInvalidMetadata);
}

TEST(MetadataV3, ChunkKeyEncodings) {
  auto dot = parse_v3_array(v3({{"chunk_key_encoding", {{"name", "v2"}, {"configuration", {{"separator", "."}}}}}}));
  EXPECT_EQ(chunk_key(dot.meta, {1, 2}), "1.2");
  auto slash = parse_v3_array(v3({{"chunk_key_encoding", {{"name", "v2"}, {"configuration", {{"separator", "/"}}}}}}));
  EXPECT_EQ(chunk_key(slash.meta, {1, 2}), "1/2");
  auto dflt_dot = parse_v3_array(v3({{"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "."}}}}}}));
  EXPECT_EQ(chunk_key(dflt_dot.meta, {1, 2}), "c.1.2");
  auto scalar = parse_v3_array(v3({{"shape", json::array()}, {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", json::array()}}}}}}));
  EXPECT_EQ(chunk_key(scalar.meta, {}), "c");
}

TEST(MetadataV2, DtypesOrdersAndFilters) {
  ByteOrder bo;
  EXPECT_EQ(parse_numpy_dtype(">i2", &bo), DataType::int_(2));
  EXPECT_EQ(bo, ByteOrder::kBig);
  EXPECT_EQ(parse_numpy_dtype("|b1", &bo), DataType::boolean());
  auto dt = parse_numpy_dtype("<M8[ns]", &bo);
  EXPECT_EQ(dt.kind, DTypeKind::kDateTime);
  EXPECT_EQ(dt.time_unit, "ns");
  EXPECT_EQ(parse_numpy_dtype("<m8[10s]", &bo).time_unit, "10s");
  EXPECT_EQ(parse_numpy_dtype("<c16", &bo).swap_unit(), 8u);
  for (const char* bad : {"<U10", "|S4", "|O", "<f1", "<i3", "<M8[xx]", "f4", "<c4"}) {
    EXPECT_EQ(code_of([&] { parse_numpy_dtype(bad, &bo); }), ErrorCode::kUnsupported) << bad;
  }
  json with_null = v2({{"order", "F"}, {"dtype", ">f8"}, {"dimension_separator", "/"}});
  with_null["fill_value"] = nullptr;  // (a merge patch would delete a null-valued key)
  auto p = parse_v2_array(with_null, json{{"_ARRAY_DIMENSIONS", {"lat", "lon"}}});
  EXPECT_TRUE(p.meta.fill_value_is_null);
  EXPECT_EQ(p.meta.dimension_names, (std::vector<std::string>{"lat", "lon"}));
  EXPECT_EQ(chunk_key(p.meta, {1, 2}), "1/2");
  ASSERT_EQ(p.meta.codecs.size(), 2u);
  EXPECT_EQ(p.meta.codecs[0]["name"], "transpose");
  EXPECT_EQ(p.meta.codecs[1]["configuration"]["endian"], "big");
  EXPECT_EQ(chunk_key(parse_v2_array(v2(), json::object()).meta, {3, 4}), "3.4");
  EXPECT_EQ(code_of([] { parse_v2_array(v2({{"compressor", {{"id", "snappy"}}}}), json::object()); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { parse_v2_array(v2({{"order", "K"}}), json::object()); }), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code_of([] { parse_v2_array(v2({{"dtype", json::array({{"a", "<f4"}})}}), json::object()); }), ErrorCode::kUnsupported);
}

TEST(MetadataV2, UnsupportedCodecIsNamed) {
  try {
    parse_v2_array(v2({{"compressor", {{"id", "lzma"}}}}), json::object());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("lzma"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cubestream::zarr
