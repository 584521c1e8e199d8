// liblz4, the oracle of the LZ4 decoder tests: a raw block compressed in fast mode at an
// acceleration or HC at a level above 0, and the reference decode of a block.
#pragma once

#include <lz4.h>
#include <lz4hc.h>

#include <stdexcept>

#include <gtest/gtest.h>

#include "codec_test_util.hpp"

namespace cs_codec_test {

inline Buf liblz4_block(const Buf& src, int hc_level = 0, int acceleration = 1) {
  Buf dst(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(src.size()))));
  static const char empty = 0;  // liblz4's HC path reads through a null pointer for empty input
  const char* in = src.empty() ? &empty : reinterpret_cast<const char*>(src.data());
  char* out = reinterpret_cast<char*>(dst.data());
  const int n = hc_level > 0
                    ? LZ4_compress_HC(in, out, static_cast<int>(src.size()), static_cast<int>(dst.size()), hc_level)
                    : LZ4_compress_fast(in, out, static_cast<int>(src.size()), static_cast<int>(dst.size()), acceleration);
  if (n <= 0) throw std::runtime_error("lz4 compression failed");
  dst.resize(static_cast<std::size_t>(n));
  return dst;
}

// liblz4's decode of a block that must give `size` bytes (a test failure where it refuses).
inline Buf liblz4_decode(const Buf& in, std::size_t size) {
  Buf ref(size);
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(ref.data()),
                                    static_cast<int>(in.size()), static_cast<int>(size));
  EXPECT_EQ(n, static_cast<int>(size)) << "liblz4 rejected the block";
  return ref;
}

}  // namespace cs_codec_test
