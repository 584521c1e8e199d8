// Conformance against stores written by implementations that are not ours.
//
// tests/fixtures/generate_all.sh writes Zarr v2 stores with zarr-python 2.13 + numcodecs 0.11 +
// xarray, and Zarr v3 stores with zarrita 0.7.5 + numcodecs.js, each with a manifest listing
// every array and a raw file of the values the writer was given (C order, native byte order,
// absent chunks = fill value). For every array we open it, check its metadata, read it whole
// (1 and 4 threads) and in ~150 seeded random regions (chunk-edge cuts, single elements, empty
// extents, single chunks), and compare bitwise (so NaN payloads and -0.0 count). Output
// buffers carry guard bytes on both sides: a read must write exactly its region.
//
// The fixture sets are listed here statically, so test names do not depend on whether the
// fixtures existed when the test binary was built; a missing manifest is a failure that says
// how to generate it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "cubestream/store.hpp"
#include "test_util_fixtures.hpp"

namespace cubestream {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct FixtureSet {
  const char* version;  // "v2" or "v3"
  const char* store;    // "compressors.zarr"
  bool optional;        // may legitimately be absent (needs an optional Debian package)
};

const FixtureSet kFixtureSets[] = {
    {"v2", "compressors.zarr", false}, {"v2", "filters.zarr", false},
    {"v2", "dtypes.zarr", false},      {"v2", "fill_values.zarr", false},
    {"v2", "shapes.zarr", false},      {"v2", "separators.zarr", false},
    {"v2", "hierarchy.zarr", false},   {"v2", "root_array.zarr", false},
    {"v2", "xarray_cf.zarr", false},   {"v2", "xarray_noleap.zarr", false},
    {"v2", "cmip5.zarr", true},  // libncarg-data
    {"v3", "codecs.zarr", false},      {"v3", "dtypes.zarr", false},
    {"v3", "fill_values.zarr", false}, {"v3", "keys.zarr", false},
    {"v3", "shapes.zarr", false},      {"v3", "hierarchy.zarr", false},
    {"v3", "root_array.zarr", false},
};

void PrintTo(const FixtureSet& f, std::ostream* os) { *os << f.version << "/" << f.store; }

// Manifests are loaded once per process.
const std::optional<json>& manifest(const std::string& version, std::string* why = nullptr) {
  static std::map<std::string, std::pair<std::optional<json>, std::string>> cache;
  auto it = cache.find(version);
  if (it == cache.end()) {
    std::string reason;
    auto m = test::load_manifest(version, &reason);
    it = cache.emplace(version, std::make_pair(std::move(m), reason)).first;
  }
  if (why) *why = it->second.second;
  return it->second.first;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (auto x : v) n *= x;
  return n;
}

std::string vec_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string region_str(const Region& r) { return "start " + vec_str(r.start) + " shape " + vec_str(r.shape); }

// The part `r` of a full C-order array `full` of `shape`, C order.
std::vector<std::uint8_t> sub_block(const std::vector<std::uint8_t>& full, const std::vector<std::int64_t>& shape,
                                    std::size_t elsize, const Region& r) {
  std::int64_t n = product(r.shape);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n) * elsize);
  if (n == 0) return out;
  const std::size_t rank = shape.size();
  if (rank == 0) {
    std::memcpy(out.data(), full.data(), elsize);
    return out;
  }
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * shape[d];
  std::vector<std::int64_t> idx(rank, 0);  // over r.shape, last dim copied as one row
  const std::size_t row = static_cast<std::size_t>(r.shape[rank - 1]) * elsize;
  std::size_t o = 0;
  for (;;) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < rank; ++d) flat += (r.start[d] + (d + 1 == rank ? 0 : idx[d])) * stride[d];
    std::memcpy(out.data() + o, full.data() + static_cast<std::size_t>(flat) * elsize, row);
    o += row;
    if (rank == 1) break;
    std::size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++idx[d] < r.shape[d]) break;
      idx[d] = 0;
      if (d == 0) return out;
    }
  }
  return out;
}

// Bitwise comparison with a description of the first difference.
::testing::AssertionResult same_bytes(const std::vector<std::uint8_t>& want, const std::uint8_t* got,
                                      std::size_t got_size, std::size_t elsize, const Region& r,
                                      const std::vector<std::int64_t>& chunks) {
  if (want.size() != got_size) {
    return ::testing::AssertionFailure() << "size " << got_size << " instead of " << want.size();
  }
  std::size_t first = SIZE_MAX, count = 0;
  for (std::size_t e = 0; e * elsize < want.size(); ++e) {
    if (std::memcmp(want.data() + e * elsize, got + e * elsize, elsize) != 0) {
      if (first == SIZE_MAX) first = e;
      ++count;
    }
  }
  if (count == 0) return ::testing::AssertionSuccess();
  // n-d position of the first difference
  std::vector<std::int64_t> pos(r.shape.size());
  std::size_t rem = first;
  for (std::size_t d = r.shape.size(); d-- > 0;) {
    pos[d] = r.start[d] + static_cast<std::int64_t>(rem % static_cast<std::size_t>(r.shape[d]));
    rem /= static_cast<std::size_t>(r.shape[d]);
  }
  std::vector<std::int64_t> chunk(pos.size());
  for (std::size_t d = 0; d < pos.size() && d < chunks.size(); ++d) chunk[d] = chunks[d] ? pos[d] / chunks[d] : 0;
  return ::testing::AssertionFailure()
         << count << " of " << want.size() / elsize << " elements differ; first at array index " << vec_str(pos)
         << " (chunk " << vec_str(chunk) << "): expected " << test::hex(want.data() + first * elsize, elsize)
         << " got " << test::hex(got + first * elsize, elsize) << " (bytes in memory order)";
}

// Reads `r` into a buffer with guard bytes on both sides; checks the guards.
struct GuardedRead {
  static constexpr std::size_t kGuard = 64;
  std::vector<std::uint8_t> buf;
  ReadStats stats;
  const std::uint8_t* data() const { return buf.data() + kGuard; }
  std::size_t size() const { return buf.size() - 2 * kGuard; }
};

::testing::AssertionResult guarded_read(const Array& a, const Region& r, std::size_t elsize, int threads,
                                        GuardedRead* out) {
  std::size_t n = static_cast<std::size_t>(product(r.shape)) * elsize;
  out->buf.assign(n + 2 * GuardedRead::kGuard, 0xA5);
  ReadOptions opt;
  opt.threads = threads;
  try {
    out->stats = a.read(r, out->buf.data() + GuardedRead::kGuard, n, opt);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "read threw: " << e.what();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "read threw a non-cubestream exception: " << e.what();
  }
  for (std::size_t i = 0; i < GuardedRead::kGuard; ++i) {
    if (out->buf[i] != 0xA5 || out->buf[out->buf.size() - 1 - i] != 0xA5) {
      return ::testing::AssertionFailure() << "read wrote outside its output buffer";
    }
  }
  return ::testing::AssertionSuccess();
}

// Seeded regions of every kind that matters for chunked reads.
std::vector<Region> regions_for(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& chunks,
                                std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) {  // inclusive
    return hi <= lo ? lo : std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::size_t rank = shape.size();
  std::vector<Region> out;
  bool empty_array = product(shape) == 0;
  for (int i = 0; i < count; ++i) {
    Region r{std::vector<std::int64_t>(rank), std::vector<std::int64_t>(rank)};
    int kind = empty_array ? 3 : i % 6;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t s = shape[d], c = std::max<std::int64_t>(chunks[d], 1);
      const std::int64_t grid = (s + c - 1) / c;
      switch (kind) {
        case 0: {  // anywhere, any extent >= 1
          r.start[d] = uni(0, s - 1);
          r.shape[d] = uni(1, s - r.start[d]);
          break;
        }
        case 1: {  // straddles a chunk boundary where there is one
          if (grid > 1) {
            std::int64_t b = uni(1, grid - 1) * c;
            r.start[d] = b - uni(1, std::min(c, b));
            r.shape[d] = (b - r.start[d]) + uni(1, std::min(c, s - b));
          } else {
            r.start[d] = uni(0, s - 1);
            r.shape[d] = uni(1, s - r.start[d]);
          }
          break;
        }
        case 2:  // one element
          r.start[d] = uni(0, s - 1);
          r.shape[d] = 1;
          break;
        case 3: {  // empty: this dimension or a later one has extent 0
          r.start[d] = uni(0, s);
          r.shape[d] = uni(0, s - r.start[d]);
          break;
        }
        case 4: {  // exactly one chunk (edge chunks included)
          std::int64_t k = uni(0, grid - 1);
          r.start[d] = k * c;
          r.shape[d] = std::min(c, s - k * c);
          break;
        }
        default: {  // a short run inside one chunk, or the whole extent
          if (uni(0, 3) == 0) {
            r.start[d] = 0;
            r.shape[d] = s;
          } else {
            std::int64_t k = uni(0, grid - 1);
            std::int64_t lo = k * c, hi = std::min(s, lo + c);
            r.start[d] = uni(lo, hi - 1);
            r.shape[d] = uni(1, hi - r.start[d]);
          }
        }
      }
    }
    if (kind == 3 && rank > 0 && product(r.shape) != 0) {
      std::size_t d = static_cast<std::size_t>(uni(0, static_cast<std::int64_t>(rank) - 1));
      r.start[d] = uni(0, shape[d]);
      r.shape[d] = 0;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::int64_t> to_i64(const json& j) {
  std::vector<std::int64_t> v;
  for (const auto& x : j) v.push_back(x.get<std::int64_t>());
  return v;
}

std::shared_ptr<Store> store_of(const std::string& version, const std::string& name) {
  return open_store((test::fixture_dir() / version / name).string());
}

// Everything we check about one array of a manifest.
void check_array(const std::string& version, const json& e, const std::shared_ptr<Store>& store) {
  const std::string path = e["path"];
  const auto shape = to_i64(e["shape"]);
  const auto chunks = to_i64(e["chunks"]);
  const std::string label = version + "/" + e["store"].get<std::string>() + ":" + (path.empty() ? "<root>" : path);
  SCOPED_TRACE(label);

  std::vector<std::uint8_t> expected;
  try {
    expected = test::read_file(test::fixture_dir() / version / e["expected"].get<std::string>());
  } catch (const std::exception& ex) {
    ADD_FAILURE() << ex.what() << "\n" << test::kHowToGenerate;
    return;
  }

  std::optional<Array> opened;
  try {
    opened = Array::open(store, path);
  } catch (const std::exception& ex) {
    ADD_FAILURE() << "Array::open failed: " << ex.what();
    return;
  }
  const Array& a = *opened;
  const auto& md = a.metadata();

  // ---- metadata ----
  EXPECT_EQ(md.zarr_format, version == "v2" ? 2 : 3);
  EXPECT_EQ(md.shape, shape);
  EXPECT_EQ(md.chunk_shape, chunks);
  EXPECT_EQ(a.dtype().numpy_str(), e["dtype"].get<std::string>());
  if (version == "v2") {
    EXPECT_EQ(md.fill_value_is_null, e["fill_value"].is_null());
  } else {
    std::vector<std::string> names;
    if (e.contains("dimension_names") && e["dimension_names"].is_array()) {
      for (const auto& n : e["dimension_names"]) names.push_back(n.is_null() ? "" : n.get<std::string>());
    }
    EXPECT_EQ(md.dimension_names, names);
  }
  EXPECT_EQ(md.fill_value.size(), a.dtype().size);
  const std::size_t elsize = a.dtype().size;
  if (static_cast<std::int64_t>(expected.size()) != product(shape) * static_cast<std::int64_t>(elsize)) {
    ADD_FAILURE() << "expected file has " << expected.size() << " bytes, not shape x dtype size ("
                  << a.dtype().numpy_str() << "); stale fixtures? " << test::kHowToGenerate;
    return;
  }

  // ---- chunk keys: exactly the chunks the manifest says are absent are absent ----
  std::set<std::string> missing;
  for (const auto& k : e["missing_chunks"]) missing.insert(join_key(path, k.get<std::string>()));
  std::vector<std::int64_t> grid(shape.size());
  std::int64_t nchunks = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    grid[d] = (shape[d] + chunks[d] - 1) / chunks[d];
    nchunks *= grid[d];
  }
  {
    std::vector<std::int64_t> idx(shape.size(), 0);
    std::set<std::string> seen_missing;
    for (std::int64_t n = 0; n < nchunks; ++n) {
      std::string key;
      try {
        key = a.chunk_key(idx);
      } catch (const std::exception& ex) {
        ADD_FAILURE() << "chunk_key(" << vec_str(idx) << ") threw: " << ex.what();
        break;
      }
      bool exists = store->exists(key);
      if (!exists) seen_missing.insert(key);
      EXPECT_EQ(exists, missing.count(key) == 0) << "chunk key " << key << " for index " << vec_str(idx);
      for (std::size_t d = shape.size(); d-- > 0;) {
        if (++idx[d] < grid[d]) break;
        idx[d] = 0;
      }
    }
    EXPECT_EQ(seen_missing, missing) << "chunk_key() names other keys than the writer used";
  }

  // ---- whole array ----
  Region whole{std::vector<std::int64_t>(shape.size(), 0), shape};
  try {
    ReadOptions one;
    one.threads = 1;
    Bytes all = a.read_all(one);
    EXPECT_TRUE(same_bytes(expected, all.data(), all.size(), elsize, whole, chunks)) << "read_all, 1 thread";
  } catch (const std::exception& ex) {
    ADD_FAILURE() << "read_all threw: " << ex.what();
    return;  // regions would only repeat the failure
  }
  for (int threads : {1, 4}) {
    GuardedRead g;
    auto ok = guarded_read(a, whole, elsize, threads, &g);
    EXPECT_TRUE(ok) << "whole array, " << threads << " threads";
    if (!ok) continue;
    EXPECT_TRUE(same_bytes(expected, g.data(), g.size(), elsize, whole, chunks)) << "whole array, " << threads
                                                                                 << " threads";
    EXPECT_EQ(g.stats.chunks_missing, missing.size()) << "ReadStats.chunks_missing, whole array";
    EXPECT_EQ(g.stats.chunks_read + g.stats.chunks_missing, static_cast<std::uint64_t>(nchunks))
        << "ReadStats: chunks read + missing != chunks in the grid";
  }

  // ---- regions ----
  int failures = 0;
  auto regions = regions_for(shape, chunks, fnv1a(label), shape.empty() ? 4 : 150);
  for (std::size_t i = 0; i < regions.size() && failures < 5; ++i) {
    const Region& r = regions[i];
    int threads = i % 3 == 0 ? 4 : 1;
    GuardedRead g;
    auto ok = guarded_read(a, r, elsize, threads, &g);
    if (ok) ok = same_bytes(sub_block(expected, shape, elsize, r), g.data(), g.size(), elsize, r, chunks);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "region " << region_str(r) << ", " << threads << " threads: " << ok.message();
    }
  }
  if (failures >= 5) ADD_FAILURE() << "stopped after 5 failing regions";
}

class Conformance : public ::testing::TestWithParam<FixtureSet> {};

TEST_P(Conformance, ReadsEveryArray) {
  const auto& p = GetParam();
  std::string why;
  const auto& m = manifest(p.version, &why);
  ASSERT_TRUE(m.has_value()) << why;
  std::shared_ptr<Store> store;
  int n = 0;
  for (const auto& e : (*m)["arrays"]) {
    if (e["store"] != p.store) continue;
    if (!store) {
      try {
        store = store_of(p.version, p.store);
      } catch (const std::exception& ex) {
        FAIL() << "open_store(" << p.store << ") threw: " << ex.what();
      }
    }
    check_array(p.version, e, store);
    ++n;
  }
  if (n == 0) {
    if (p.optional) GTEST_SKIP() << p.store << " was not generated (optional input missing)";
    FAIL() << "no arrays of " << p.store << " in the " << p.version << " manifest; " << test::kHowToGenerate;
  }
}

// Groups: attributes, children, and arrays opened through the group (consolidated metadata
// for the v2 stores that have it) read the same as opened directly.
TEST_P(Conformance, Groups) {
  const auto& p = GetParam();
  std::string why;
  const auto& m = manifest(p.version, &why);
  ASSERT_TRUE(m.has_value()) << why;
  auto store = store_of(p.version, p.store);
  bool any = false;
  for (const auto& g : (*m)["groups"]) {
    if (g["store"] != p.store) continue;
    any = true;
    const std::string path = g["path"];
    SCOPED_TRACE(std::string(p.version) + "/" + p.store + " group '" + path + "'");
    try {
      Group grp = Group::open(store, path);
      EXPECT_EQ(grp.zarr_format(), std::string(p.version) == "v2" ? 2 : 3);
      EXPECT_EQ(grp.attributes(), g["attributes"]);
      EXPECT_EQ(grp.array_names(), g["arrays"].get<std::vector<std::string>>());
      EXPECT_EQ(grp.group_names(), g["groups"].get<std::vector<std::string>>());
      if (path.empty()) EXPECT_EQ(grp.consolidated(), g["consolidated"].get<bool>());
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "group threw: " << ex.what();
    }
  }
  if (!any) return;  // a store whose root is an array
  // every array of the store, through the root group
  std::set<std::string> want_paths;
  try {
    Group root = Group::open(store, "");
    for (const auto& e : (*m)["arrays"]) {
      if (e["store"] != p.store) continue;
      const std::string path = e["path"];
      want_paths.insert(path);
      SCOPED_TRACE("via group: " + path);
      auto expected = test::read_file(test::fixture_dir() / p.version / e["expected"].get<std::string>());
      try {
        Array a = root.open_array(path);
        ReadOptions one;
        one.threads = 1;
        Bytes all = a.read_all(one);
        Region whole{std::vector<std::int64_t>(a.rank(), 0), a.shape()};
        EXPECT_TRUE(same_bytes(expected, all.data(), all.size(), a.dtype().size, whole, a.metadata().chunk_shape));
      } catch (const std::exception& ex) {
        ADD_FAILURE() << "open_array/read through the group threw: " << ex.what();
      }
    }
    auto paths = root.all_array_paths();
    EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()), want_paths) << "all_array_paths()";
  } catch (const std::exception& ex) {
    ADD_FAILURE() << "root group threw: " << ex.what();
  }
}

std::string fixture_name(const ::testing::TestParamInfo<FixtureSet>& info) {
  std::string s = std::string(info.param.version) + "_" + info.param.store;
  s = s.substr(0, s.size() - 5);  // ".zarr"
  for (auto& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Conformance, ::testing::ValuesIn(kFixtureSets), fixture_name);

// A manifest that is missing is a failure (CI generates the fixtures before ctest).
class ConformanceManifest : public ::testing::TestWithParam<const char*> {};

TEST_P(ConformanceManifest, ExistsAndIsCoveredByTheTests) {
  std::string why;
  const auto& m = manifest(GetParam(), &why);
  ASSERT_TRUE(m.has_value()) << why;
  EXPECT_EQ((*m)["format"], 1);
  std::set<std::string> listed;
  for (const auto& f : kFixtureSets) {
    if (std::string(f.version) == GetParam()) listed.insert(f.store);
  }
  std::set<std::string> in_manifest;
  for (const auto& e : (*m)["arrays"]) in_manifest.insert(e["store"].get<std::string>());
  for (const auto& s : in_manifest) {
    EXPECT_TRUE(listed.count(s)) << "store " << s << " of the manifest is not in kFixtureSets: add it";
  }
  EXPECT_GE((*m)["arrays"].size(), 100u);
}

// Stores with codecs or data types cubestream does not implement are refused, by name.
TEST_P(ConformanceManifest, RefusesUnsupported) {
  std::string why;
  const auto& m = manifest(GetParam(), &why);
  ASSERT_TRUE(m.has_value()) << why;
  for (const auto& u : (*m)["unsupported"]) {
    const std::string store_name = u["store"], path = u["path"];
    SCOPED_TRACE(std::string(GetParam()) + "/" + store_name + ":" + path + " (" + u["why"].get<std::string>() + ")");
    auto store = store_of(GetParam(), store_name);
    EXPECT_TRUE(test::throws_error(
        [&] {
          Array a = Array::open(store, path);
          (void)a.read_all();
        },
        ErrorCode::kUnsupported, {store->describe(), path}));
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConformanceManifest, ::testing::Values("v2", "v3"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace cubestream
