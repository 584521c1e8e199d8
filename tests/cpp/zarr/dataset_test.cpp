// Datasets: variables, dimensions and coordinates of a group, CF decoding of values (masking,
// scale/offset, _Unsigned, every dtype) and of times, on hand-written Zarr v2 and v3 stores in
// memory, then against xarray-written stores (tests/fixtures/generated/v2, see
// tests/fixtures/make_v2_fixtures.py) whose decoded values xarray itself produced.
//
// Byte strings of the hand-written stores are little-endian (the hosts we test on); the
// expected _FillValue strings of the v3 stores were produced as xarray's FillValueCoder
// writes them: /usr/bin/python3 -c 'import base64, struct;
//   print(base64.standard_b64encode(struct.pack("<d", -9999.0)).decode())'  ->  AAAAAICHw8A=
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "test_util_fixtures.hpp"
#include "zarr/cf_decode.hpp"
#include "zarr/fill_value.hpp"

namespace cubestream {
namespace {

using nlohmann::json;
using test::throws_error;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
Bytes raw(const std::vector<T>& v) {
  static_assert(native_byte_order() == ByteOrder::kLittle, "the hand-written chunks are little-endian");
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A Zarr v2 array without compressor: .zarray, .zattrs and the given chunks.
void v2_array(MemoryStore& s, const std::string& path, const std::string& dtype, std::vector<std::int64_t> shape,
              std::vector<std::int64_t> chunks, json fill, json attrs, std::vector<std::pair<std::string, Bytes>> data) {
  json z = {{"zarr_format", 2}, {"shape", shape}, {"chunks", chunks}, {"dtype", dtype}, {"compressor", nullptr},
            {"fill_value", fill}, {"filters", nullptr}, {"order", "C"}};
  s.set(path + "/.zarray", z.dump());
  s.set(path + "/.zattrs", attrs.dump());
  for (auto& [key, bytes] : data) s.set(path + "/" + key, std::move(bytes));
}

// A Zarr v3 array with the bytes codec (little-endian) only, one chunk.
void v3_array(MemoryStore& s, const std::string& path, const std::string& dtype, std::vector<std::int64_t> shape, json fill,
              json attrs, json dimension_names, Bytes chunk) {
  json z = {{"zarr_format", 3}, {"node_type", "array"}, {"shape", shape}, {"data_type", dtype},
            {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", shape}}}}},
            {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", fill},
            {"codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})},
            {"attributes", attrs}};
  if (!dimension_names.is_null()) z["dimension_names"] = dimension_names;
  s.set(path + "/zarr.json", z.dump());
  std::string key = path + "/c";
  for (std::size_t d = 0; d < shape.size(); ++d) key += "/0";
  s.set(key, std::move(chunk));
}

Region all_of(std::vector<std::int64_t> shape) { return Region{std::vector<std::int64_t>(shape.size(), 0), shape}; }

// Element-wise equality where NaN equals NaN.
::testing::AssertionResult same(const std::vector<double>& got, const std::vector<double>& want, double rel = 0) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return ::testing::AssertionFailure() << "[" << i << "] " << a << " != " << b;
      continue;
    }
    if (a == b) continue;
    if (std::fabs(a - b) > rel * std::max(std::fabs(a), std::fabs(b))) {
      return ::testing::AssertionFailure() << "[" << i << "] " << a << " != " << b << " (diff " << a - b << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- dimensions and coordinates ------------------------------------------------------------

// An ERA5-like v2 dataset, as xarray lays it out.
std::shared_ptr<MemoryStore> era_v2() {
  auto s = std::make_shared<MemoryStore>("era");
  s->set(".zgroup", R"({"zarr_format": 2})");
  s->set(".zattrs", json{{"title", "t"}, {"coordinates", "height"}}.dump());
  v2_array(*s, "time", "<i8", {2}, {2}, nullptr,
           {{"_ARRAY_DIMENSIONS", {"time"}}, {"units", "hours since 1990-01-01"}, {"calendar", "standard"}},
           {{"0", raw<std::int64_t>({0, 6})}});
  v2_array(*s, "lat", "<f8", {3}, {3}, "NaN", {{"_ARRAY_DIMENSIONS", {"lat"}}}, {{"0", raw<double>({-10, 0, 10})}});
  v2_array(*s, "lon", "<f4", {4}, {4}, "NaN", {{"_ARRAY_DIMENSIONS", {"lon"}}}, {{"0", raw<float>({0, 90, 180, 270})}});
  v2_array(*s, "area", "<f8", {3, 4}, {3, 4}, "NaN", {{"_ARRAY_DIMENSIONS", {"lat", "lon"}}},
           {{"0.0", raw<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})}});
  v2_array(*s, "height", "<f4", {}, {}, "NaN", {{"_ARRAY_DIMENSIONS", json::array()}}, {{"0", raw<float>({2})}});
  // Two chunks along time; the second is absent and reads as the fill value.
  v2_array(*s, "t2m", "<i2", {2, 3, 4}, {1, 3, 4}, -32767,
           {{"_ARRAY_DIMENSIONS", {"time", "lat", "lon"}}, {"scale_factor", 0.01}, {"add_offset", 273.15},
            {"missing_value", -1}, {"coordinates", "area"}, {"units", "K"}},
           {{"0.0.0", raw<std::int16_t>({-32767, 0, 100, -1, 32767, 1, 2, 3, 4, 5, 6, -32768})}});
  v2_array(*s, "raw", "|u1", {5}, {5}, nullptr, json::object(), {{"0", raw<std::uint8_t>({1, 2, 3, 4, 5})}});
  return s;
}

TEST(Dataset, VariablesDimsAndCoordinates) {
  Dataset ds = Dataset::open(era_v2());
  EXPECT_EQ(ds.attributes()["title"], "t");
  EXPECT_EQ(ds.variable_names(), (std::vector<std::string>{"area", "height", "lat", "lon", "raw", "t2m", "time"}));
  // Dimension coordinates (lat, lon, time) and auxiliary ones named by "coordinates"
  // attributes (area by t2m's, height by the group's), as xarray's decode_coords=True.
  EXPECT_EQ(ds.coordinate_names(), (std::vector<std::string>{"area", "height", "lat", "lon", "time"}));
  EXPECT_EQ(ds.data_variable_names(), (std::vector<std::string>{"raw", "t2m"}));
  EXPECT_TRUE(ds.variable("lat").is_dimension_coordinate);
  EXPECT_FALSE(ds.variable("area").is_dimension_coordinate);
  EXPECT_TRUE(ds.variable("area").is_coordinate);
  EXPECT_EQ(ds.variable("t2m").dims, (std::vector<std::string>{"time", "lat", "lon"}));
  EXPECT_TRUE(ds.variable("height").dims.empty());
  EXPECT_EQ(ds.variable("raw").dims, (std::vector<std::string>{"dim_0"}));  // no _ARRAY_DIMENSIONS
  EXPECT_EQ(ds.variable("t2m").attributes()["units"], "K");
  EXPECT_EQ(ds.dims(), (std::map<std::string, std::int64_t>{{"dim_0", 5}, {"lat", 3}, {"lon", 4}, {"time", 2}}));
  EXPECT_TRUE(ds.has_variable("lat"));
  EXPECT_FALSE(ds.has_variable("nope"));
  EXPECT_TRUE(throws_error([&] { ds.variable("nope"); }, ErrorCode::kNotFound, {"nope", "memory"}));
}

TEST(Dataset, OpensASubGroup) {
  auto s = std::make_shared<MemoryStore>("sub");
  s->set(".zgroup", R"({"zarr_format": 2})");
  s->set("g/.zgroup", R"({"zarr_format": 2})");
  v2_array(*s, "g/x", "<f4", {2}, {2}, "NaN", {{"_ARRAY_DIMENSIONS", {"x"}}}, {{"0", raw<float>({1, 2})}});
  v2_array(*s, "top", "<f4", {2}, {2}, "NaN", {{"_ARRAY_DIMENSIONS", {"x"}}}, {{"0", raw<float>({1, 2})}});
  Dataset ds = Dataset::open(s, "g");
  EXPECT_EQ(ds.variable_names(), (std::vector<std::string>{"x"}));
  EXPECT_EQ(ds.variable("x").name, "x");
  EXPECT_TRUE(same(ds.read_decoded("x", all_of({2})), {1, 2}));
}

TEST(Dataset, DimensionSizeConflictIsReported) {
  auto s = std::make_shared<MemoryStore>("conflict");
  s->set(".zgroup", R"({"zarr_format": 2})");
  v2_array(*s, "a", "<f4", {3}, {3}, nullptr, {{"_ARRAY_DIMENSIONS", {"x"}}}, {});
  v2_array(*s, "b", "<f4", {4}, {4}, nullptr, {{"_ARRAY_DIMENSIONS", {"x"}}}, {});
  Dataset ds = Dataset::open(s);  // opening works: each variable is readable on its own
  EXPECT_TRUE(throws_error([&] { ds.dims(); }, ErrorCode::kInvalidMetadata, {"\"x\"", "\"a\"", "\"b\"", "3", "4"}));
  EXPECT_TRUE(same(ds.read_decoded("b", all_of({4})), {0, 0, 0, 0}));  // no chunk, fill null: zeros
}

TEST(Dataset, MalformedArrayDimensionsIsRefused) {
  auto s = std::make_shared<MemoryStore>("baddims");
  s->set(".zgroup", R"({"zarr_format": 2})");
  v2_array(*s, "a", "<f4", {3, 2}, {3, 2}, nullptr, {{"_ARRAY_DIMENSIONS", {"x"}}}, {});
  EXPECT_TRUE(throws_error([&] { Dataset::open(s); }, ErrorCode::kInvalidMetadata, {"a/.zattrs", "_ARRAY_DIMENSIONS"}));
}

// ---- CF decoding, Zarr v2 ------------------------------------------------------------------

TEST(DatasetCF, Int16MaskScaleOffset) {
  Dataset ds = Dataset::open(era_v2());
  CFEncoding enc = ds.cf_encoding("t2m");
  // _FillValue from .zarray's fill_value (where xarray writes it in v2), missing_value from .zattrs.
  EXPECT_EQ(enc.missing_values, (std::vector<double>{-32767, -1}));
  EXPECT_EQ(enc.scale_factor, 0.01);
  EXPECT_EQ(enc.add_offset, 273.15);
  EXPECT_FALSE(enc.is_unsigned.has_value());
  auto f = [](double v) { return v * 0.01 + 273.15; };
  std::vector<double> want = {kNaN, f(0), f(100), kNaN, f(32767), f(1), f(2), f(3), f(4), f(5), f(6), f(-32768)};
  for (int i = 0; i < 12; ++i) want.push_back(kNaN);  // the absent chunk: all fill value
  EXPECT_TRUE(same(ds.read_decoded("t2m", all_of({2, 3, 4})), want));
  // A region across both chunks.
  auto part = ds.read_decoded("t2m", Region{{0, 1, 1}, {2, 2, 2}}, ReadOptions{1});
  EXPECT_TRUE(same(part, {f(1), f(2), f(5), f(6), kNaN, kNaN, kNaN, kNaN}));
  // No CF attributes: the values as they are.
  EXPECT_FALSE(ds.cf_encoding("raw").has_any());
  EXPECT_TRUE(same(ds.read_decoded("raw", Region{{1}, {3}}), {2, 3, 4}));
  EXPECT_TRUE(same(ds.read_decoded("height", Region{{}, {}}), {2}));
  EXPECT_TRUE(same(ds.read_decoded("t2m", Region{{0, 0, 0}, {0, 3, 4}}), {}));
}

TEST(DatasetCF, RegionErrors) {
  Dataset ds = Dataset::open(era_v2());
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("t2m", Region{{0, 0}, {1, 1}}); }, ErrorCode::kInvalidArgument, {"rank"}));
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("t2m", Region{{0, 0, 3}, {1, 1, 2}}); }, ErrorCode::kInvalidArgument, {"lon"}));
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("t2m", Region{{0, 0, 0}, {1, -1, 2}}); }, ErrorCode::kInvalidArgument));
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("nope", Region{}); }, ErrorCode::kNotFound));
}

// A one-variable v2 dataset "v" with the given dtype, fill value, attributes and values.
Dataset one_v2(const std::string& dtype, json fill, json attrs, Bytes values, std::int64_t n) {
  auto s = std::make_shared<MemoryStore>("one");
  s->set(".zgroup", R"({"zarr_format": 2})");
  attrs["_ARRAY_DIMENSIONS"] = {"x"};
  v2_array(*s, "v", dtype, {n}, {n}, fill, attrs, {{"0", std::move(values)}});
  return Dataset::open(s);
}

TEST(DatasetCF, Float32NaNFillChangesNothing) {
  Dataset ds = one_v2("<f4", "NaN", json::object(), raw<float>({1.5f, NAN, -2.f, 0.f}), 4);
  CFEncoding enc = ds.cf_encoding("v");
  ASSERT_EQ(enc.missing_values.size(), 1u);
  EXPECT_TRUE(std::isnan(enc.missing_values[0]));
  EXPECT_TRUE(same(ds.read_decoded("v", all_of({4})), {1.5, kNaN, -2, 0}));
}

TEST(DatasetCF, Float32MissingValueIsComparedAsFloat32) {
  // 1e20 is not a float32; the data holds float32(1e20) = 1.0000000200408773e20, which numpy
  // (and so xarray) finds equal to the attribute by rounding it to float32 first.
  Dataset ds = one_v2("<f4", nullptr, {{"missing_value", 1e20}}, raw<float>({1e20f, 3.f}), 2);
  EXPECT_EQ(ds.cf_encoding("v").missing_values, (std::vector<double>{1.0000000200408773e20}));
  EXPECT_TRUE(same(ds.read_decoded("v", all_of({2})), {kNaN, 3}));
}

TEST(DatasetCF, Float32FillAndMissingValueListAndOneElementScale) {
  Dataset ds = one_v2("<f4", -9999.0, {{"missing_value", {-1, -2}}, {"scale_factor", {2.0}}},
                      raw<float>({-9999.f, -1.f, -2.f, 4.f}), 4);
  EXPECT_EQ(ds.cf_encoding("v").missing_values, (std::vector<double>{-9999, -1, -2}));
  EXPECT_TRUE(same(ds.read_decoded("v", all_of({4})), {kNaN, kNaN, kNaN, 8}));
}

TEST(DatasetCF, Float16) {
  // Half bits: 1.0, -2.5, 65504 (largest), 2^-24 (smallest subnormal), -1.5 (the fill), +inf, NaN.
  Dataset ds = one_v2("<f2", -1.5, json::object(),
                      raw<std::uint16_t>({0x3c00, 0xc100, 0x7bff, 0x0001, 0xbe00, 0x7c00, 0x7e00}), 7);
  EXPECT_TRUE(same(ds.read_decoded("v", all_of({7})),
                   {1.0, -2.5, 65504, std::ldexp(1.0, -24), kNaN, std::numeric_limits<double>::infinity(), kNaN}));
}

TEST(DatasetCF, HalfToDoubleRoundTripsEveryHalf) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const double d = zarr::half_to_double(static_cast<std::uint16_t>(h));
    if (std::isnan(d)) {
      ASSERT_EQ(h & 0x7c00u, 0x7c00u);
      ASSERT_NE(h & 0x3ffu, 0u);
      continue;
    }
    ASSERT_EQ(zarr::double_to_half(d), h) << h;
  }
  EXPECT_TRUE(std::signbit(zarr::half_to_double(0x8000)));
  EXPECT_EQ(zarr::half_to_double(0x0400), std::ldexp(1.0, -14));  // smallest normal
}

TEST(DatasetCF, BoolAndIntegerTypes) {
  EXPECT_TRUE(same(one_v2("|b1", nullptr, json::object(), raw<std::uint8_t>({1, 0, 1}), 3).read_decoded("v", all_of({3})),
                   {1, 0, 1}));
  EXPECT_TRUE(same(one_v2("|i1", -128, json::object(), raw<std::int8_t>({-128, -1, 127}), 3).read_decoded("v", all_of({3})),
                   {kNaN, -1, 127}));
  EXPECT_TRUE(same(one_v2(">i4", nullptr, {{"add_offset", 0.5}}, Bytes{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 7}, 2)
                       .read_decoded("v", all_of({2})),
                   {-1.5, 7.5}));  // big-endian storage
  EXPECT_TRUE(same(one_v2("<i8", nullptr, json::object(), raw<std::int64_t>({-(std::int64_t{1} << 53), 5}), 2)
                       .read_decoded("v", all_of({2})),
                   {-9007199254740992.0, 5}));
  EXPECT_TRUE(same(one_v2("<u2", 65535, json::object(), raw<std::uint16_t>({65535, 65534}), 2).read_decoded("v", all_of({2})),
                   {kNaN, 65534}));
  EXPECT_TRUE(same(one_v2("<u8", nullptr, json::object(), raw<std::uint64_t>({~std::uint64_t{0}, 1}), 2)
                       .read_decoded("v", all_of({2})),
                   {18446744073709551615.0, 1}));
  EXPECT_TRUE(same(one_v2("<u4", 7, {{"scale_factor", 0.5}, {"add_offset", -1}}, raw<std::uint32_t>({7, 4000000000u}), 2)
                       .read_decoded("v", all_of({2})),
                   {kNaN, 1999999999}));
}

TEST(DatasetCF, UnsignedAttribute) {
  // netCDF-3 style: bytes stored signed, meant unsigned; the fill value -1 means 255.
  Dataset u = one_v2("|i1", -1, {{"_Unsigned", "true"}}, raw<std::int8_t>({-1, 0, 127, -128, -2}), 5);
  EXPECT_EQ(u.cf_encoding("v").is_unsigned, true);
  EXPECT_EQ(u.cf_encoding("v").missing_values, (std::vector<double>{255}));
  EXPECT_TRUE(same(u.read_decoded("v", all_of({5})), {kNaN, 0, 127, 128, 254}));
  // The other way round, with missing_value 65535 meaning -1.
  Dataset s = one_v2("<u2", nullptr, {{"_Unsigned", "false"}, {"missing_value", 65535}}, raw<std::uint16_t>({65535, 1, 32768}), 3);
  EXPECT_TRUE(same(s.read_decoded("v", all_of({3})), {kNaN, 1, -32768}));
  // On a float variable it changes nothing (xarray ignores it there too).
  EXPECT_TRUE(same(one_v2("<f4", nullptr, {{"_Unsigned", "true"}}, raw<float>({-1.f}), 1).read_decoded("v", all_of({1})), {-1}));
}

TEST(DatasetCF, ComplexIsUnsupported) {
  Dataset ds = one_v2("<c8", nullptr, json::object(), raw<float>({1, 2}), 1);
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("v", all_of({1})); }, ErrorCode::kUnsupported, {"complex64"}));
  EXPECT_TRUE(throws_error([&] { ds.cf_encoding("v"); }, ErrorCode::kUnsupported));
}

TEST(DatasetCF, MalformedAttributesNameTheirKey) {
  Dataset ds = one_v2("<f4", nullptr, {{"scale_factor", "0.01"}}, raw<float>({1}), 1);
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("v", all_of({1})); }, ErrorCode::kInvalidMetadata, {"scale_factor", "v/.zattrs"}));
  Dataset m = one_v2("<f4", nullptr, {{"missing_value", "N/A"}}, raw<float>({1}), 1);
  EXPECT_TRUE(throws_error([&] { m.cf_encoding("v"); }, ErrorCode::kInvalidMetadata, {"missing_value"}));
  Dataset u = one_v2("|i1", nullptr, {{"_Unsigned", "maybe"}}, raw<std::int8_t>({1}), 1);
  EXPECT_TRUE(throws_error([&] { u.cf_encoding("v"); }, ErrorCode::kInvalidMetadata, {"_Unsigned"}));
}

TEST(DatasetCF, V2FillValueAttributeUsedOnlyWithoutArrayFill) {
  // Some writers put _FillValue in .zattrs; xarray uses it only when the array's fill_value is null.
  Dataset a = one_v2("<i2", nullptr, {{"_FillValue", -5}}, raw<std::int16_t>({-5, 0}), 2);
  EXPECT_TRUE(same(a.read_decoded("v", all_of({2})), {kNaN, 0}));
  Dataset b = one_v2("<i2", 0, {{"_FillValue", -5}}, raw<std::int16_t>({-5, 0}), 2);
  EXPECT_TRUE(same(b.read_decoded("v", all_of({2})), {-5, kNaN}));
}

// ---- CF decoding, Zarr v3 ------------------------------------------------------------------

std::shared_ptr<MemoryStore> v3_store() {
  auto s = std::make_shared<MemoryStore>("v3");
  s->set("zarr.json", json{{"zarr_format", 3}, {"node_type", "group"}, {"attributes", {{"source", "xarray"}}}}.dump());
  // xarray's float _FillValue: base64 of the value as little-endian float64. The array's own
  // fill_value (0 here) is no CF mask in v3.
  v3_array(*s, "sst", "float32", {2, 2}, 0, {{"_FillValue", "AAAAAICHw8A="}, {"units", "K"}}, {"y", "x"},
           raw<float>({-9999.f, 0.f, 1.5f, 2.f}));
  // The variable's own size (4 bytes, float32): -9999 again.
  v3_array(*s, "sst4", "float32", {2, 2}, 0, {{"_FillValue", "ADwcxg=="}}, {"y", "x"}, raw<float>({-9999.f, 0.f, 1.5f, 2.f}));
  // NaN, float64.
  v3_array(*s, "lat", "float64", {2}, "NaN", {{"_FillValue", "AAAAAAAA+H8="}}, {"y"}, raw<double>({-1, NAN}));
  v3_array(*s, "x", "float64", {2}, "NaN", {{"_FillValue", "NaN"}}, {"x"}, raw<double>({0, 1}));
  // Integers: plain JSON.
  v3_array(*s, "t2m", "int16", {2, 2}, 0, {{"_FillValue", -32767}, {"scale_factor", 0.5}, {"add_offset", 100}}, {"y", "x"},
           raw<std::int16_t>({-32767, 0, 2, -2}));
  // An unnamed dimension.
  v3_array(*s, "anon", "uint8", {2, 3}, 0, json::object(), {"y", nullptr}, raw<std::uint8_t>({1, 2, 3, 4, 5, 6}));
  v3_array(*s, "time", "int64", {2}, 0, {{"units", "days since 2000-01-01"}, {"calendar", "360_day"}}, {"time"},
           raw<std::int64_t>({0, 30}));
  return s;
}

TEST(DatasetV3, DimensionNames) {
  Dataset ds = Dataset::open(v3_store());
  EXPECT_EQ(ds.attributes()["source"], "xarray");
  EXPECT_EQ(ds.variable("sst").dims, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(ds.variable("anon").dims, (std::vector<std::string>{"y", "dim_1"}));
  EXPECT_EQ(ds.coordinate_names(), (std::vector<std::string>{"time", "x"}));
  EXPECT_EQ(ds.dims(), (std::map<std::string, std::int64_t>{{"dim_1", 3}, {"time", 2}, {"x", 2}, {"y", 2}}));
}

TEST(DatasetV3, Base64FillValues) {
  Dataset ds = Dataset::open(v3_store());
  EXPECT_EQ(ds.cf_encoding("sst").missing_values, (std::vector<double>{-9999}));
  EXPECT_TRUE(same(ds.read_decoded("sst", all_of({2, 2})), {kNaN, 0, 1.5, 2}));
  EXPECT_TRUE(same(ds.read_decoded("sst4", all_of({2, 2})), {kNaN, 0, 1.5, 2}));
  auto lat = ds.cf_encoding("lat");
  ASSERT_EQ(lat.missing_values.size(), 1u);
  EXPECT_TRUE(std::isnan(lat.missing_values[0]));
  EXPECT_TRUE(same(ds.read_decoded("lat", all_of({2})), {-1, kNaN}));
  EXPECT_TRUE(same(ds.read_decoded("x", all_of({2})), {0, 1}));
  EXPECT_TRUE(same(ds.read_decoded("t2m", all_of({2, 2})), {kNaN, 100, 101, 99}));
  EXPECT_FALSE(ds.cf_encoding("anon").has_any());
  auto t = ds.decode_time("time");
  EXPECT_EQ(t[1].iso(), "2000-02-01T00:00:00");
  EXPECT_FALSE(t[1].unix_ns.has_value());
}

TEST(DatasetV3, BadBase64FillValueIsRefused) {
  auto s = v3_store();
  v3_array(*s, "bad", "float32", {1}, 0, {{"_FillValue", "@@@@"}}, {"x1"}, raw<float>({0}));
  v3_array(*s, "short", "float64", {1}, 0, {{"_FillValue", "AAAA"}}, {"x1"}, raw<double>({0}));
  Dataset ds = Dataset::open(s);
  EXPECT_TRUE(throws_error([&] { ds.cf_encoding("bad"); }, ErrorCode::kInvalidMetadata, {"_FillValue", "bad/zarr.json"}));
  EXPECT_TRUE(throws_error([&] { ds.read_decoded("short", all_of({1})); }, ErrorCode::kInvalidMetadata, {"3 bytes"}));
}

TEST(Base64, DecodesStandardAlphabet) {
  auto str = [](std::string_view t) {
    auto b = zarr::base64_decode(t);
    return b ? std::optional<std::string>(std::string(b->begin(), b->end())) : std::nullopt;
  };
  EXPECT_EQ(str(""), "");
  EXPECT_EQ(str("YQ=="), "a");
  EXPECT_EQ(str("YWI="), "ab");
  EXPECT_EQ(str("YWJj"), "abc");
  EXPECT_EQ(str("YWI"), "ab");  // padding optional
  EXPECT_EQ(str("+//+"), std::string("\xfb\xff\xfe"));
  EXPECT_EQ(str("Y"), std::nullopt);
  EXPECT_EQ(str("Y==="), std::nullopt);
  EXPECT_EQ(str("YQ="), std::nullopt);
  EXPECT_EQ(str("YQ==YQ=="), std::nullopt);
  EXPECT_EQ(str("Y Q=="), std::nullopt);
  EXPECT_EQ(str("YQ-_"), std::nullopt);  // URL-safe alphabet is not xarray's
  auto d = zarr::base64_decode("AAAAAICHw8A=");
  ASSERT_TRUE(d && d->size() == 8);
  double v;
  std::memcpy(&v, d->data(), 8);
  EXPECT_EQ(v, -9999.0);
}

// ---- times through the dataset ----------------------------------------------------------------

TEST(DatasetTime, DecodesTimeCoordinates) {
  Dataset ds = Dataset::open(era_v2());
  auto t = ds.decode_time("time");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].iso(), "1990-01-01T00:00:00");
  EXPECT_EQ(t[1].iso(), "1990-01-01T06:00:00");
  EXPECT_EQ(t[1].unix_ns, 631173600000000000);  // np.datetime64("1990-01-01T06:00", "ns")
  EXPECT_TRUE(throws_error([&] { ds.decode_time("lat"); }, ErrorCode::kInvalidMetadata, {"units", "lat/.zattrs"}));
}

TEST(DatasetTime, IntegerCountsAreExactAndMasked) {
  // 1700000000000000001 ns is past 2^53: it must not go through a double.
  Dataset ns = one_v2("<i8", nullptr, {{"units", "nanoseconds since 1970-01-01"}},
                      raw<std::int64_t>({1700000000000000001, std::numeric_limits<std::int64_t>::min()}), 2);
  auto t = ns.decode_time("v");
  EXPECT_EQ(t[0].unix_ns, 1700000000000000001);
  EXPECT_EQ(t[0].iso(), "2023-11-14T22:13:20.000000001");
  EXPECT_FALSE(t[1].missing);  // INT64_MIN is only NaT in datetime64 arrays
  EXPECT_FALSE(t[1].unix_ns.has_value());  // 1677-09-21T00:12:43.145224192 is NaT's bit pattern
  Dataset m = one_v2("<i4", -999, {{"units", "days since 2000-01-01"}, {"calendar", "noleap"}}, raw<std::int32_t>({-999, 59}), 2);
  auto tm = m.decode_time("v");
  EXPECT_TRUE(tm[0].missing);
  EXPECT_EQ(tm[1].iso(), "2000-03-01T00:00:00");
}

TEST(DatasetTime, FloatTimesWithNaNAndScale) {
  Dataset ds = one_v2("<f8", "NaN", {{"units", "days since 1850-01-01"}, {"calendar", "proleptic_gregorian"}},
                      raw<double>({56978.5, NAN}), 2);
  auto t = ds.decode_time("v");
  EXPECT_EQ(t[0].unix_ns, 1136116800000000000);  // 2006-01-01T12:00 (cftime / numpy)
  EXPECT_TRUE(t[1].missing);
  Dataset sc = one_v2("<i2", nullptr, {{"units", "hours since 2000-01-01"}, {"scale_factor", 0.5}}, raw<std::int16_t>({3}), 1);
  EXPECT_EQ(sc.decode_time("v")[0].iso(), "2000-01-01T01:30:00");
  Dataset bad = one_v2("<f8", nullptr, {{"units", "days since 2000-01-01"}, {"calendar", "mayan"}}, raw<double>({0}), 1);
  EXPECT_TRUE(throws_error([&] { bad.decode_time("v"); }, ErrorCode::kUnsupported, {"mayan", "v/.zattrs"}));
}

TEST(DatasetTime, Datetime64Arrays) {
  // numpy: np.array(["2000-01-01T00:00:00", "NaT", "1969-12-31T23:59:59"], "M8[s]").view("i8")
  Dataset ds = one_v2("<M8[s]", nullptr, json::object(),
                      raw<std::int64_t>({946684800, std::numeric_limits<std::int64_t>::min(), -1}), 3);
  EXPECT_TRUE(same(ds.read_decoded("v", all_of({3})), {946684800, kNaN, -1}));
  auto t = ds.decode_time("v");
  EXPECT_EQ(t[0].iso(), "2000-01-01T00:00:00");
  EXPECT_EQ(t[0].unix_ns, 946684800000000000);
  EXPECT_TRUE(t[1].missing);
  EXPECT_EQ(t[2].iso(), "1969-12-31T23:59:59");
}

// ---- xarray-written stores ------------------------------------------------------------------

// Values of an expected file, stored with numpy dtype `dtype`, as float64.
std::vector<double> load_as_double(const std::filesystem::path& p, const std::string& dtype) {
  auto b = test::read_file(p);
  std::vector<double> out;
  auto take = [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i + sizeof(T) <= b.size(); i += sizeof(T)) {
      T v;
      std::memcpy(&v, b.data() + i, sizeof(T));
      out.push_back(static_cast<double>(v));
    }
  };
  const std::string t = dtype.substr(1);
  if (t == "f8") take(double{});
  else if (t == "f4") take(float{});
  else if (t == "i8") take(std::int64_t{});
  else if (t == "i4") take(std::int32_t{});
  else if (t == "i2") take(std::int16_t{});
  else if (t == "i1") take(std::int8_t{});
  else if (t == "u8") take(std::uint64_t{});
  else if (t == "u4") take(std::uint32_t{});
  else if (t == "u2") take(std::uint16_t{});
  else if (t == "u1" || t == "b1") take(std::uint8_t{});
  else ADD_FAILURE() << "unhandled expected dtype " << dtype;
  return out;
}

TEST(DatasetXarray, MatchesWhatXarrayDecodes) {
  std::string why;
  auto manifest = test::load_manifest("v2", &why);
  if (!manifest) GTEST_SKIP() << why;
  if (!manifest->contains("datasets") || (*manifest)["datasets"].empty()) GTEST_SKIP() << "no xarray datasets in the v2 manifest";
  const auto dir = test::fixture_dir() / "v2";
  int checked = 0;
  for (const auto& d : (*manifest)["datasets"]) {
    const std::string store = d["store"];
    SCOPED_TRACE(store);
    Dataset ds = Dataset::open(open_store((dir / store).string()));
    std::map<std::string, std::int64_t> dims;
    for (auto it = d["dims"].begin(); it != d["dims"].end(); ++it) dims[it.key()] = it.value();
    EXPECT_EQ(ds.dims(), dims);
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(ds.coordinate_names(), sorted(d["coords"].get<std::vector<std::string>>()));
    EXPECT_EQ(ds.data_variable_names(), sorted(d["data_vars"].get<std::vector<std::string>>()));
    for (auto it = d["attrs"].begin(); it != d["attrs"].end(); ++it) EXPECT_EQ(ds.attributes().value(it.key(), json()), it.value()) << it.key();
    for (auto it = d["variables"].begin(); it != d["variables"].end(); ++it) {
      const std::string name = it.key();
      const json& v = it.value();
      SCOPED_TRACE(name);
      ASSERT_TRUE(ds.has_variable(name));
      const Variable& var = ds.variable(name);
      EXPECT_EQ(var.dims, v["dims"].get<std::vector<std::string>>());
      const json& enc = v["cf_encoding"];
      const CFEncoding cf = ds.cf_encoding(name);
      if (enc.contains("scale_factor")) EXPECT_EQ(cf.scale_factor, enc["scale_factor"].get<double>());
      else EXPECT_FALSE(cf.scale_factor);
      if (enc.contains("add_offset")) EXPECT_EQ(cf.add_offset, enc["add_offset"].get<double>());
      else EXPECT_FALSE(cf.add_offset);
      EXPECT_EQ(!cf.missing_values.empty(), enc.contains("_FillValue") || enc.contains("missing_value"));
      if (v.contains("decoded_fields")) {
        // Non-standard calendar: cftime's (year, month, day, hour, minute, second).
        auto t = ds.decode_time(name);
        const auto& f = v["decoded_fields"];
        ASSERT_EQ(t.size(), f.size());
        for (std::size_t i = 0; i < t.size(); ++i) {
          EXPECT_EQ((std::vector<int>{t[i].year, t[i].month, t[i].day, t[i].hour, t[i].minute, static_cast<int>(t[i].second)}),
                    f[i].get<std::vector<int>>());
          EXPECT_EQ(t[i].iso(), v["decoded_iso"][i].get<std::string>());
        }
        ++checked;
        continue;
      }
      if (!v.contains("decoded")) continue;
      const json& dec = v["decoded"];
      const auto file = dir / dec["file"].get<std::string>();
      if (dec["meaning"].get<std::string>().find("nanoseconds") != std::string::npos) {
        // datetime64[ns] as xarray decodes it; INT64_MIN is NaT.
        auto bytes = test::read_file(file);
        auto t = ds.decode_time(name);
        ASSERT_EQ(t.size() * 8, bytes.size());
        for (std::size_t i = 0; i < t.size(); ++i) {
          std::int64_t want;
          std::memcpy(&want, bytes.data() + 8 * i, 8);
          if (want == std::numeric_limits<std::int64_t>::min()) {
            EXPECT_TRUE(t[i].missing) << i;
          } else {
            EXPECT_EQ(t[i].unix_ns, want) << i;
          }
        }
        ++checked;
        continue;
      }
      // xarray decodes small types in float32 and so rounds to float32 (6e-8 relative) where we
      // compute in float64: allow a few float32 roundings.
      const std::vector<double> want = load_as_double(file, dec["dtype"].get<std::string>());
      const auto got = ds.read_decoded(name, all_of(var.array.shape()));
      EXPECT_TRUE(same(got, want, 1e-6));
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace cubestream
