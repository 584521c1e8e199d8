// Sharded Zarr v3 stores written by TensorStore (tests/fixtures/tensorstore/make_sharded.py,
// run on the GPU machine where TensorStore is installed; committed under tests/data/tensorstore).
// Every array is read whole and in random regions that cut shard and inner-chunk edges, and
// compared bitwise with the values TensorStore was given.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "cubestream/array.hpp"
#include "cubestream/group.hpp"
#include "cubestream/store.hpp"

namespace cubestream {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDir = fs::path(CUBESTREAM_SOURCE_DIR) / "tests" / "data" / "tensorstore";

json load_manifest() {
  std::ifstream f(kDir / "manifest.json");
  return json::parse(f);
}

std::vector<std::uint8_t> load_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
}

TEST(TensorStoreSharded, ManifestCoversTheRequiredLayouts) {
  json m = load_manifest();
  ASSERT_GE(m["arrays"].size(), 20u);
  EXPECT_TRUE(m["failed"].empty()) << m["failed"].dump();
  std::set<std::string> paths;
  for (const auto& a : m["arrays"]) paths.insert(a["path"].get<std::string>());
  for (const char* p : {"f4_end_zstd", "f4_start_be_zstd", "i2_end_blosc_lz4_shuffle", "f4_transpose_zstd_crc32c",
                        "f4_nested_sharding", "f4_transpose_then_sharding", "f4_all_missing"})
    EXPECT_TRUE(paths.count(p)) << p;
}

TEST(TensorStoreSharded, EveryArrayMatchesWhatTensorStoreWrote) {
  json m = load_manifest();
  std::mt19937 rng(2026);
  for (const auto& entry : m["arrays"]) {
    const std::string path = entry["path"];
    SCOPED_TRACE(entry["store"].get<std::string>() + "/" + path);
    auto store = open_store((kDir / entry["store"].get<std::string>()).string());
    Array a = Array::open(store, path);
    const auto shape = entry["shape"].get<std::vector<std::int64_t>>();
    ASSERT_EQ(a.shape(), shape);
    const std::size_t elem = a.dtype().size;
    auto expected = load_bytes(kDir / entry["expected"].get<std::string>());
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    ASSERT_EQ(expected.size(), static_cast<std::size_t>(n) * elem);
    auto all = a.read_all(ReadOptions{3});
    ASSERT_EQ(0, std::memcmp(all.data(), expected.data(), expected.size()));
    const std::size_t rank = shape.size();
    for (int i = 0; i < 60; ++i) {
      Region r;
      for (std::size_t d = 0; d < rank; ++d) {
        std::int64_t s = rng() % (shape[d] + 1);
        r.start.push_back(s);
        r.shape.push_back(rng() % (shape[d] - s + 1));
      }
      Bytes out(static_cast<std::size_t>(r.num_elements()) * elem);
      a.read(r, out.data(), out.size(), ReadOptions{1 + i % 3});
      // Compare element by element against the expected array.
      std::vector<std::int64_t> idx(rank, 0);
      for (std::int64_t k = 0; k < r.num_elements(); ++k) {
        std::int64_t rem = k, off = 0;
        for (std::size_t d = rank; d-- > 0;) {
          idx[d] = rem % r.shape[d] + r.start[d];
          rem /= r.shape[d];
        }
        for (std::size_t d = 0; d < rank; ++d) off = off * shape[d] + idx[d];
        ASSERT_EQ(0, std::memcmp(out.data() + k * elem, expected.data() + off * elem, elem)) << "region " << i << " element " << k;
      }
    }
  }
}

TEST(TensorStoreSharded, GroupListsTheArrays) {
  Group g = Group::open(open_store((kDir / "sharded.zarr").string()));
  EXPECT_GE(g.array_names().size(), 20u);
}

}  // namespace
}  // namespace cubestream
