// A raw LZ4 block compressed by liblz4, the oracle of the LZ4 decoder tests: fast mode at an
// acceleration, or HC at a level above 0.
#pragma once

#include <lz4.h>
#include <lz4hc.h>

#include <stdexcept>

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

}  // namespace cs_codec_test
