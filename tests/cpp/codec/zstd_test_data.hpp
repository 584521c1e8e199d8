// Zstandard test material shared by the host tests of the shared decoder and the GPU batch
// tests: frames made by libzstd with the options Zarr writers use and the ones they do not
// (ultra levels, long-distance matching, no content size, checksums, several frames), and
// ERA5-like float32 fields.
#pragma once

#include <zdict.h>
#include <zstd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

namespace cs_zstd_test {

using Bytes = std::vector<std::uint8_t>;

struct ZstdOptions {
  int level = 3;
  bool content_size = true;
  bool checksum = false;
  bool long_distance = false;
  int window_log = 0;  // 0: the level's default
};

// One frame of `src` with libzstd's advanced API.
inline Bytes zstd_frame(const Bytes& src, const ZstdOptions& o) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, o.level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, o.content_size ? 1 : 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, o.checksum ? 1 : 0);
  if (o.long_distance) ZSTD_CCtx_setParameter(cctx, ZSTD_c_enableLongDistanceMatching, 1);
  if (o.window_log) ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, o.window_log);
  Bytes dst(ZSTD_compressBound(src.size()));
  const std::size_t n = ZSTD_compress2(cctx, dst.data(), dst.size(), src.data(), src.size());
  ZSTD_freeCCtx(cctx);
  if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
  dst.resize(n);
  return dst;
}

// What numcodecs, zarr-python and TensorStore write: plain ZSTD_compress (content size on,
// no checksum).
inline Bytes zstd_plain(const Bytes& src, int level) {
  Bytes dst(ZSTD_compressBound(src.size()));
  const std::size_t n = ZSTD_compress(dst.data(), dst.size(), src.data(), src.size(), level);
  if (ZSTD_isError(n)) throw std::runtime_error(ZSTD_getErrorName(n));
  dst.resize(n);
  return dst;
}

// A frame written through the streaming API in `piece`-byte steps without a pledged size:
// no content size, and blocks that end where the pieces end.
inline Bytes zstd_streamed(const Bytes& src, int level, std::size_t piece, bool checksum) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  Bytes dst(ZSTD_compressBound(src.size()) + 4096);
  ZSTD_outBuffer out{dst.data(), dst.size(), 0};
  std::size_t pos = 0;
  do {
    const std::size_t take = std::min(piece, src.size() - pos);
    ZSTD_inBuffer in{src.data() + pos, take, 0};
    const bool last = pos + take == src.size();
    std::size_t r;
    do {
      r = ZSTD_compressStream2(cctx, &out, &in, last ? ZSTD_e_end : ZSTD_e_flush);
      if (ZSTD_isError(r)) throw std::runtime_error(ZSTD_getErrorName(r));
    } while (last ? r != 0 : in.pos < in.size || r != 0);
    pos += take;
  } while (pos < src.size());
  ZSTD_freeCCtx(cctx);
  dst.resize(out.pos);
  return dst;
}

inline Bytes skippable(std::uint32_t variant, const Bytes& payload) {
  Bytes f(8);
  const std::uint32_t magic = 0x184D2A50u + (variant & 15u);
  const std::uint32_t size = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) {
    f[i] = static_cast<std::uint8_t>(magic >> (8 * i));
    f[4 + i] = static_cast<std::uint8_t>(size >> (8 * i));
  }
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

inline Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes b;
  for (const auto& p : parts) b.insert(b.end(), p.begin(), p.end());
  return b;
}

// libzstd's answer for `enc` decoded into exactly `size` bytes: ok + bytes, or not ok.
inline bool libzstd_decode(const Bytes& enc, std::size_t size, Bytes* out, const char** why = nullptr) {
  out->assign(size, 0);
  std::size_t pos = 0, written = 0;
  while (pos < enc.size()) {
    const std::size_t f = ZSTD_findFrameCompressedSize(enc.data() + pos, enc.size() - pos);
    if (ZSTD_isError(f)) {
      if (why) *why = ZSTD_getErrorName(f);
      return false;
    }
    const std::size_t n = ZSTD_decompress(out->data() + written, size - written, enc.data() + pos, f);
    if (ZSTD_isError(n)) {
      if (why) *why = ZSTD_getErrorName(n);
      return false;
    }
    written += n;
    pos += f;
  }
  if (why) *why = written == size ? "ok" : "decoded to another size";
  return written == size;
}

// An ERA5-like float32 field: `ny` x `nx` smooth large-scale structure (a meridional
// gradient, planetary waves, a moving front) plus small-scale noise, quantised to 16 bits
// over its range (as reanalysis archives pack values), stored as float32.
inline Bytes era5_like(std::size_t ny, std::size_t nx, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> v(ny * nx);
  const double phase = double(seed % 97) * 0.1;
  float lo = 1e30f, hi = -1e30f;
  for (std::size_t y = 0; y < ny; ++y) {
    const double lat = (double(y) / double(ny) - 0.5) * M_PI;
    for (std::size_t x = 0; x < nx; ++x) {
      const double lon = double(x) / double(nx) * 2 * M_PI;
      const double t = 250.0 + 45.0 * std::cos(lat) + 8.0 * std::sin(4 * lon + phase) * std::cos(lat) +
                       3.0 * std::tanh(5.0 * (lat - 0.3 * std::sin(lon + phase)));
      const float f = static_cast<float>(t) + noise(rng);
      v[y * nx + x] = f;
      lo = std::min(lo, f);
      hi = std::max(hi, f);
    }
  }
  const float scale = (hi - lo) / 65535.0f;
  for (auto& f : v) f = lo + std::round((f - lo) / scale) * scale;
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// `n` bytes of an ERA5-like field (rows of 1440 values, as a 0.25-degree grid).
inline Bytes era5_bytes(std::size_t n, std::uint32_t seed) {
  const std::size_t values = (n + 3) / 4;
  const std::size_t nx = 1440;
  Bytes b = era5_like((values + nx - 1) / nx, nx, seed);
  b.resize(n);
  return b;
}

}  // namespace cs_zstd_test
