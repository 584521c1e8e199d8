// Reads the same Zarr arrays through an object store and through the local file store and
// expects identical bytes: the sharded v3 arrays TensorStore wrote (tests/data/tensorstore)
// and the consolidated v2 CMIP5 demo store (data/demo/cmip5_2005.zarr).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "cubestream/array.hpp"
#include "cubestream/group.hpp"
#include "cubestream/store.hpp"

namespace cubestream::test {

inline std::filesystem::path tensorstore_dir() {
  return std::filesystem::path(CUBESTREAM_SOURCE_DIR) / "tests" / "data" / "tensorstore";
}
inline std::filesystem::path cmip5_dir() {
  return std::filesystem::path(CUBESTREAM_SOURCE_DIR) / "data" / "demo" / "cmip5_2005.zarr";
}

// Copies the two fixture stores below `root` as tensorstore/ and cmip5_2005.zarr/.
inline void copy_fixture_stores(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  fs::copy(tensorstore_dir(), root / "tensorstore", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::copy(cmip5_dir(), root / "cmip5_2005.zarr", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

// Paths of the arrays of `store_name` ("sharded.zarr", "root_sharded.zarr") in the manifest.
inline std::vector<std::string> tensorstore_arrays(const std::string& store_name) {
  std::ifstream f(tensorstore_dir() / "manifest.json");
  auto m = nlohmann::json::parse(f);
  std::vector<std::string> out;
  for (const auto& a : m["arrays"])
    if (a["store"] == store_name) out.push_back(a["path"].get<std::string>());
  return out;
}

inline void expect_same_array(const std::shared_ptr<Store>& remote, const std::shared_ptr<Store>& local,
                              const std::string& path, int threads) {
  SCOPED_TRACE(remote->describe() + " array '" + path + "'");
  Array a = Array::open(remote, path);
  Array b = Array::open(local, path);
  ASSERT_EQ(a.shape(), b.shape());
  Bytes x = a.read_all(ReadOptions{threads});
  Bytes y = b.read_all(ReadOptions{1});
  ASSERT_EQ(x.size(), y.size());
  EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size())) << "bytes differ";
  // One region that cuts chunk edges, read in parallel.
  std::mt19937 rng(7);
  Region r;
  for (auto s : a.shape()) {
    std::int64_t st = s > 1 ? static_cast<std::int64_t>(rng() % static_cast<std::uint32_t>(s / 2 + 1)) : 0;
    r.start.push_back(st);
    r.shape.push_back(s - st);
  }
  const std::size_t n = static_cast<std::size_t>(r.num_elements()) * a.dtype().size;
  Bytes ra(n), rb(n);
  a.read(r, ra.data(), ra.size(), ReadOptions{threads});
  b.read(r, rb.data(), rb.size(), ReadOptions{1});
  EXPECT_EQ(0, std::memcmp(ra.data(), rb.data(), n)) << "region bytes differ";
}

// Every array of the fixture stores served below `base` (a store URL prefix such as
// "http://127.0.0.1:8080" or "s3://bucket"), through open_store(), against the local copies.
inline void expect_fixture_stores_match(const std::string& base, int threads) {
  for (const char* name : {"sharded.zarr", "root_sharded.zarr"}) {
    auto remote = open_store(base + "/tensorstore/" + name);
    auto local = open_store((tensorstore_dir() / name).string());
    auto paths = tensorstore_arrays(name);
    ASSERT_FALSE(paths.empty());
    for (const auto& p : paths) expect_same_array(remote, local, p, threads);
  }
  // Consolidated v2: the group's arrays come from .zmetadata, no listing needed.
  auto remote = open_store(base + "/cmip5_2005.zarr");
  auto local = open_store(cmip5_dir().string());
  Group g = Group::open(remote);
  EXPECT_TRUE(g.consolidated());
  auto paths = g.all_array_paths();
  EXPECT_EQ(paths, Group::open(local).all_array_paths());
  EXPECT_GE(paths.size(), 4u);
  for (const auto& p : paths) expect_same_array(remote, local, p, threads);
}

}  // namespace cubestream::test
