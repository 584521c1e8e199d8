// Helpers shared by the tests that use the generated conformance fixtures
// (tests/fixtures/generated, written by tests/fixtures/generate_all.sh): locating and loading
// the manifests, reading expected files, scratch directories, and checking cubestream errors.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cubestream/error.hpp"

namespace cubestream::test {

#ifndef CUBESTREAM_FIXTURE_DIR
#error "CUBESTREAM_FIXTURE_DIR must point to tests/fixtures/generated"
#endif

inline std::filesystem::path fixture_dir() { return std::filesystem::path(CUBESTREAM_FIXTURE_DIR); }

inline const char* kHowToGenerate =
    "the conformance fixtures are missing or stale: generate them with\n"
    "    tests/fixtures/generate_all.sh\n"
    "(needs /usr/bin/python3 with python3-zarr, python3-xarray, and node/npm; CI runs it before "
    "ctest)";

inline std::vector<std::uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& p, const void* data, std::size_t n) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}
inline void write_file(const std::filesystem::path& p, const std::string& s) { write_file(p, s.data(), s.size()); }
inline void write_file(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  write_file(p, b.data(), b.size());
}

// The manifest of "v2" or "v3", or nullopt (with the reason in `why`) when not generated.
inline std::optional<nlohmann::json> load_manifest(const std::string& version, std::string* why = nullptr) {
  auto p = fixture_dir() / version / "manifest.json";
  std::ifstream f(p);
  if (!f) {
    if (why) *why = "no " + p.string() + "\n" + kHowToGenerate;
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    if (why) *why = "cannot parse " + p.string() + ": " + e.what() + "\n" + kHowToGenerate;
    return std::nullopt;
  }
}

// A fresh scratch directory, removed with everything in it when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "cs_test") {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            (tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Copies a directory tree (a fixture store) to `dst`.
inline void copy_tree(const std::filesystem::path& src, const std::filesystem::path& dst) {
  std::filesystem::create_directories(dst);
  std::filesystem::copy(src, dst, std::filesystem::copy_options::recursive |
                                      std::filesystem::copy_options::overwrite_existing);
}

// Runs `fn` and checks that it throws cubestream::Error with `code` and a what() that contains
// every string in `needles` (e.g. the store's description and the offending key).
inline ::testing::AssertionResult throws_error(const std::function<void()>& fn, ErrorCode code,
                                               std::initializer_list<std::string> needles = {}) {
  try {
    fn();
  } catch (const Error& e) {
    std::string what = e.what();
    if (e.code() != code) {
      return ::testing::AssertionFailure()
             << "threw " << error_code_name(e.code()) << " instead of " << error_code_name(code)
             << ": " << what;
    }
    for (const auto& n : needles) {
      if (what.find(n) == std::string::npos) {
        return ::testing::AssertionFailure() << "what() lacks \"" << n << "\": " << what;
      }
    }
    return ::testing::AssertionSuccess() << what;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-cubestream exception: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw something that is not a std::exception";
  }
  return ::testing::AssertionFailure() << "did not throw (expected " << error_code_name(code) << ")";
}

inline std::string hex(const std::uint8_t* p, std::size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

}  // namespace cubestream::test
