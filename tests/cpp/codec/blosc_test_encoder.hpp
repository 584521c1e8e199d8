// A c-blosc 1.x container writer for tests, built on liblz4 and libzstd: it makes blosc
// buffers on machines without libblosc (the GPU machine has none), with every layout choice
// explicit: typesize, block size, byte/bit shuffle, split or not, lz4/lz4hc/zstd streams,
// raw-stored streams, memcpyed buffers. blosc_test_encoder_test.cpp checks its output against
// libblosc's decoder where libblosc exists, so the tests that use it test the real format.
#pragma once

#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace cs_codec_test {

struct BloscEncodeOptions {
  std::size_t typesize = 4;
  std::size_t blocksize = 16384;
  int shuffle = 1;              // 0 none, 1 byte, 2 bit
  bool split = true;            // store full blocks as typesize streams (when c-blosc would)
  int compressor = 1;           // blosc compressor format: 1 lz4, 4 zstd
  int level = 1;                // lz4: <= 0 fast, > 0 HC level; zstd: its level
  bool memcpyed = false;        // store the data raw after the header
};

namespace blosc_encoder_detail {

// b += [p, p + n) (resize + memcpy: GCC 12 warns falsely about vector::insert here).
inline void append(std::vector<std::uint8_t>& b, const std::uint8_t* p, std::size_t n) {
  const std::size_t at = b.size();
  b.resize(at + n);
  if (n != 0) std::memcpy(b.data() + at, p, n);
}

inline void put32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

inline void shuffle_bytes(const std::uint8_t* in, std::uint8_t* out, std::size_t size, std::size_t ts) {
  const std::size_t n = size / ts;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < ts; ++j) out[j * n + i] = in[i * ts + j];
  std::memcpy(out + n * ts, in + n * ts, size - n * ts);
}

// c-blosc 1.x bit shuffle of a block: only when the element count is a multiple of 8.
inline void shuffle_bits(const std::uint8_t* in, std::uint8_t* out, std::size_t size, std::size_t ts) {
  const std::size_t n = size / ts;
  if (n % 8 != 0) {
    std::memcpy(out, in, size);
    return;
  }
  const std::size_t row = n / 8;
  std::memset(out, 0, n * ts);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < ts; ++j)
      for (std::size_t k = 0; k < 8; ++k)
        if ((in[i * ts + j] >> k) & 1u) out[(8 * j + k) * row + i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  std::memcpy(out + n * ts, in + n * ts, size - n * ts);
}

inline std::vector<std::uint8_t> compress_stream(const std::uint8_t* in, std::size_t size, const BloscEncodeOptions& o) {
  std::vector<std::uint8_t> out;
  if (o.compressor == 4) {
    out.resize(ZSTD_compressBound(size));
    const std::size_t n = ZSTD_compress(out.data(), out.size(), in, size, o.level);
    if (ZSTD_isError(n)) throw std::runtime_error("ZSTD_compress failed");
    out.resize(n);
    return out;
  }
  out.resize(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(size))));
  const char* s = reinterpret_cast<const char*>(in);
  char* d = reinterpret_cast<char*>(out.data());
  const int n = o.level > 0 ? LZ4_compress_HC(s, d, static_cast<int>(size), static_cast<int>(out.size()), o.level)
                            : LZ4_compress_fast(s, d, static_cast<int>(size), static_cast<int>(out.size()), 1);
  if (n <= 0) throw std::runtime_error("LZ4 compression failed");
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace blosc_encoder_detail

// Encodes `data` as one c-blosc 1.x buffer.
inline std::vector<std::uint8_t> blosc_test_encode(const std::vector<std::uint8_t>& data, const BloscEncodeOptions& o) {
  namespace d = blosc_encoder_detail;
  const std::size_t nbytes = data.size();
  const std::size_t ts = o.typesize;
  std::vector<std::uint8_t> b(16);
  b[0] = 2;
  b[1] = 1;
  std::uint8_t flags = static_cast<std::uint8_t>(o.compressor << 5);
  if (o.shuffle == 1) flags |= 0x01;
  if (o.shuffle == 2) flags |= 0x04;
  b[3] = static_cast<std::uint8_t>(ts);
  d::put32(b, 4, static_cast<std::uint32_t>(nbytes));
  if (o.memcpyed || nbytes == 0) {
    b[2] = static_cast<std::uint8_t>(flags | 0x02);
    d::put32(b, 8, static_cast<std::uint32_t>(nbytes));
    d::put32(b, 12, static_cast<std::uint32_t>(nbytes + 16));
    d::append(b, data.data(), data.size());
    return b;
  }
  // c-blosc never writes a block size above nbytes (and its decoder refuses one)
  const std::size_t bs = std::min(o.blocksize, nbytes);
  const std::size_t nblocks = (nbytes + bs - 1) / bs;
  // the split decision of blosc_format.hpp; don't-split is recorded when a block is not split
  const bool can_split = ts <= 16 && bs / ts >= 128 && bs % ts == 0;
  const bool split = o.split && can_split;
  if (!split) flags |= 0x10;
  b[2] = flags;
  d::put32(b, 8, static_cast<std::uint32_t>(bs));
  b.resize(16 + 4 * nblocks);
  std::vector<std::uint8_t> filtered(bs);
  for (std::size_t j = 0; j < nblocks; ++j) {
    const std::size_t size = std::min(bs, nbytes - j * bs);
    const bool leftover = size != bs;
    const std::uint8_t* block = data.data() + j * bs;
    if (o.shuffle == 1 && ts > 1) {
      d::shuffle_bytes(block, filtered.data(), size, ts);
    } else if (o.shuffle == 2 && size >= ts) {
      d::shuffle_bits(block, filtered.data(), size, ts);
    } else {
      std::memcpy(filtered.data(), block, size);
    }
    d::put32(b, 16 + 4 * j, static_cast<std::uint32_t>(b.size()));
    const std::size_t streams = split && !leftover ? ts : 1;
    const std::size_t sbytes = size / streams;
    for (std::size_t s = 0; s < streams; ++s) {
      const std::uint8_t* in = filtered.data() + s * sbytes;
      std::vector<std::uint8_t> c = d::compress_stream(in, sbytes, o);
      const bool raw = c.size() >= sbytes;  // c-blosc stores a stream raw when it does not shrink
      const std::size_t at = b.size();
      b.resize(at + 4);
      d::put32(b, at, static_cast<std::uint32_t>(raw ? sbytes : c.size()));
      if (raw) {
        d::append(b, in, sbytes);
      } else {
        d::append(b, c.data(), c.size());
      }
    }
  }
  d::put32(b, 12, static_cast<std::uint32_t>(b.size()));
  return b;
}

}  // namespace cs_codec_test
