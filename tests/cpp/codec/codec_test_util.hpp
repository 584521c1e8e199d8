// Helpers shared by the bytes->bytes codec tests: building codecs through the registry,
// bounded decoding with an overrun guard, expected errors, and test data that looks like what
// the library reads (smooth climate fields, quantised fields) besides random and repetitive
// bytes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"
#include "codec/registry.hpp"
#include "cubestream/error.hpp"

namespace cs_codec_test {

using cubestream::ByteView;
using cubestream::Error;
using cubestream::ErrorCode;
using cubestream::MutableByteView;
using cubestream::codec::BytesToBytesCodec;
using Buf = std::vector<std::uint8_t>;

// A bytes->bytes codec from its metadata name and configuration, through the registry.
inline std::shared_ptr<const BytesToBytesCodec> make_b2b(std::string_view name,
                                                         const nlohmann::json& cfg = nlohmann::json::object()) {
  auto c = std::dynamic_pointer_cast<const BytesToBytesCodec>(cubestream::codec::make_codec(name, cfg));
  if (!c) throw std::runtime_error("codec " + std::string(name) + " is not bytes->bytes");
  return c;
}

// Bytes placed after the output span to detect writes past it.
inline constexpr std::size_t kGuardBytes = 64;
inline constexpr std::uint8_t kGuardValue = 0xA5;

// Decodes into an output of exactly `out_size` bytes and returns what was written. Fails the
// test if the codec wrote past the span.
inline Buf decode(const BytesToBytesCodec& c, ByteView in, std::size_t out_size) {
  Buf storage(out_size + kGuardBytes, kGuardValue);
  const auto check_guard = [&] {
    for (std::size_t i = out_size; i < storage.size(); ++i) {
      if (storage[i] != kGuardValue) {
        ADD_FAILURE() << "decoder wrote past the end of its output (byte " << i - out_size << " after it)";
        break;
      }
    }
  };
  std::size_t n = 0;
  try {
    n = c.decode(in, MutableByteView(storage.data(), out_size));
  } catch (...) {
    check_guard();
    throw;
  }
  check_guard();
  EXPECT_LE(n, out_size);
  storage.resize(std::min(n, out_size));
  return storage;
}

// Runs `f` and checks that it throws cubestream::Error with `code`; returns the message.
template <class F>
std::string expect_error(ErrorCode code, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(cubestream::error_code_name(e.code()), cubestream::error_code_name(code)) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected cubestream::Error(" << cubestream::error_code_name(code)
                  << "), got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected cubestream::Error(" << cubestream::error_code_name(code) << "), nothing thrown";
  return {};
}

// Runs a decode that may fail on damaged input: only a cubestream::Error is acceptable.
template <class F>
void expect_ok_or_error(F&& f) {
  try {
    f();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "damaged input raised a non-cubestream exception: " << e.what();
  }
}

// ---- test data ---------------------------------------------------------------------------

inline Buf random_bytes(std::size_t n, std::uint32_t seed = 1) {
  std::mt19937 rng(seed);
  Buf b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng() >> 24);
  return b;
}

// Short repeated phrases with occasional changes: compresses very well.
inline Buf repetitive_bytes(std::size_t n, std::uint32_t seed = 2) {
  std::mt19937 rng(seed);
  static constexpr std::string_view kWords[] = {"air_temperature ", "2m ", "kelvin ", "era5 ", "0000"};
  Buf b;
  b.reserve(n);
  while (b.size() < n) {
    const auto w = kWords[rng() % 5];
    for (char ch : w) {
      if (b.size() == n) break;
      b.push_back(static_cast<std::uint8_t>(ch));
    }
  }
  return b;
}

template <class T>
Buf as_bytes(const std::vector<T>& v) {
  Buf b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A smooth 2-D temperature-like float32 field (kelvin) with a little noise: what reanalysis
// chunks look like. `n` values, row-major, roughly square.
inline std::vector<float> climate_field_f32(std::size_t n, std::uint32_t seed = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  const std::size_t cols = std::max<std::size_t>(1, static_cast<std::size_t>(std::sqrt(double(n))));
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double lat = (double(i / cols) / double(cols) - 0.5) * M_PI;
    const double lon = double(i % cols) / double(cols) * 2 * M_PI;
    v[i] = static_cast<float>(273.15 + 30 * std::cos(lat) + 5 * std::sin(3 * lon) * std::cos(lat) * std::cos(lat)) +
           noise(rng);
  }
  return v;
}

// The same field quantised to 0.01 K (as after a fixedscaleoffset/bitround step): long runs of
// identical low mantissa bits.
inline std::vector<float> quantised_field_f32(std::size_t n, std::uint32_t seed = 4) {
  auto v = climate_field_f32(n, seed);
  for (auto& x : v) x = std::round(x * 100.0f) / 100.0f;
  return v;
}

// Precipitation-like: mostly zeros with positive bursts.
inline std::vector<float> precip_field_f32(std::size_t n, std::uint32_t seed = 5) {
  std::mt19937 rng(seed);
  std::gamma_distribution<float> g(0.3f, 4.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = std::max(0.0f, std::round((g(rng) - 1.0f) * 10.0f) / 10.0f);
  return v;
}

// The kinds of data every compressor test runs over, by name.
struct DataKind {
  const char* name;
  Buf (*make)(std::size_t n);
};

inline Buf climate_bytes(std::size_t n) { return as_bytes(climate_field_f32((n + 3) / 4)); }
inline Buf quantised_bytes(std::size_t n) { return as_bytes(quantised_field_f32((n + 3) / 4)); }
inline Buf precip_bytes(std::size_t n) { return as_bytes(precip_field_f32((n + 3) / 4)); }
inline Buf random_n(std::size_t n) { return random_bytes(n); }
inline Buf repetitive_n(std::size_t n) { return repetitive_bytes(n); }

inline const DataKind kDataKinds[] = {
    {"climate_f32", climate_bytes}, {"quantised_f32", quantised_bytes}, {"precip_f32", precip_bytes},
    {"random", random_n},           {"repetitive", repetitive_n},
};

// A copy of `b` in its own allocation of exactly b.size() bytes (one byte for an empty b), so
// that the ASan build reports any read past the end of an input.
inline std::unique_ptr<std::uint8_t[]> exact_copy(const Buf& b) {
  std::unique_ptr<std::uint8_t[]> p(new std::uint8_t[b.empty() ? 1 : b.size()]);
  if (!b.empty()) std::memcpy(p.get(), b.data(), b.size());
  return p;
}

// ---- files -------------------------------------------------------------------------------

inline Buf read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return Buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::string codec_data_dir() { return std::string(CUBESTREAM_SOURCE_DIR) + "/tests/data/codec"; }

// b += x (written with resize + memcpy: GCC 12 warns falsely about vector::insert here).
inline void append(Buf& b, const Buf& x) {
  const std::size_t old = b.size();
  b.resize(old + x.size());
  if (!x.empty()) std::memcpy(b.data() + old, x.data(), x.size());
}

inline void put_le32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace cs_codec_test
