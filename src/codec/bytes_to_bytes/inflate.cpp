// The inflate loop: the output span is filled in place; once it is full, a one-byte probe
// buffer tells whether the stream holds more (a size mismatch) or ends there. zlib's 32-bit
// counters are fed in pieces so inputs and outputs beyond 4 GiB work too.
#include "codec/bytes_to_bytes/inflate.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include <zlib.h>

#include "codec/decode_check.hpp"

namespace cubestream::codec {

namespace {

struct InflateStream {
  z_stream s{};
  bool live = false;
  ~InflateStream() {
    if (live) inflateEnd(&s);
  }
};

}  // namespace

std::size_t inflate_decode(ByteView in, MutableByteView out, InflateContainer container,
                           std::string_view codec_name, std::uint64_t base_offset) {
  const std::string codec(codec_name);
  const bool gzip = container == InflateContainer::kGzip;
  if (gzip && in.empty()) return 0;

  InflateStream st;
  // windowBits 15 = the largest window; +16 selects the gzip wrapper only.
  if (inflateInit2(&st.s, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) {
    throw Error(ErrorCode::kInternal, codec + ": cannot initialise zlib's inflate");
  }
  st.live = true;

  std::size_t in_pos = 0, out_pos = 0;
  std::uint8_t probe = 0;  // once `out` is full: one byte to detect data beyond it
  for (;;) {
    const std::size_t in_avail = std::min<std::size_t>(in.size() - in_pos, UINT_MAX);
    const bool probing = out_pos == out.size();
    const std::size_t out_room = probing ? 1 : std::min<std::size_t>(out.size() - out_pos, UINT_MAX);
    st.s.next_in = const_cast<Bytef*>(in.data() + in_pos);
    st.s.avail_in = static_cast<uInt>(in_avail);
    st.s.next_out = probing ? &probe : out.data() + out_pos;
    st.s.avail_out = static_cast<uInt>(out_room);

    const int ret = inflate(&st.s, Z_NO_FLUSH);
    const std::size_t consumed = in_avail - st.s.avail_in;
    const std::size_t produced = out_room - st.s.avail_out;
    in_pos += consumed;
    CS_DECODE_CHECK(!(probing && produced > 0), kSizeMismatch, codec,
                    "data decodes to more than the " + std::to_string(out.size()) + " bytes expected",
                    base_offset + in_pos);
    if (!probing) out_pos += produced;

    if (ret == Z_STREAM_END) {
      if (!gzip) break;
      // gzip: another member may follow, possibly after zero padding
      while (in_pos < in.size() && in[in_pos] == 0) ++in_pos;
      if (in_pos == in.size()) break;
      CS_DECODE_CHECK(in.size() - in_pos >= 2 && in[in_pos] == 0x1F && in[in_pos + 1] == 0x8B,
                      kCorruptData, codec, "trailing bytes after the last gzip member",
                      base_offset + in_pos);
      inflateReset(&st.s);
      continue;
    }
    if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT) {
      const std::string msg = ret == Z_NEED_DICT ? "stream needs a preset dictionary"
                              : st.s.msg         ? st.s.msg
                                                 : "invalid deflate data";
      // zlib's own words for a trailer that disagrees with the data
      const bool check = msg == "incorrect data check" || msg == "incorrect length check";
      throw_decode_error(check ? ErrorCode::kChecksumMismatch : ErrorCode::kCorruptData, codec,
                         (gzip ? "gzip: " : "zlib: ") + msg, base_offset + in_pos);
    }
    if (ret == Z_MEM_ERROR) throw Error(ErrorCode::kInternal, codec + ": zlib is out of memory");
    if (ret != Z_OK && ret != Z_BUF_ERROR) {
      throw Error(ErrorCode::kInternal, codec + ": zlib inflate returned " + std::to_string(ret));
    }
    if (consumed == 0 && produced == 0) {
      // No progress: the input ended before the stream did.
      throw_decode_error(ErrorCode::kCorruptData, codec,
                         std::string(gzip ? "gzip" : "zlib") + " stream is truncated",
                         base_offset + in_pos);
    }
  }
  return out_pos;
}

Bytes deflate_encode(ByteView in, InflateContainer container, int level) {
  if (level < -1 || level > 9) throw Error(ErrorCode::kInvalidArgument, "deflate level must be -1..9, got " + std::to_string(level));
  z_stream zs{};
  // windowBits 15 writes a zlib wrapper, 15 + 16 a gzip wrapper (zlib manual, deflateInit2).
  const int window_bits = container == InflateContainer::kGzip ? 15 + 16 : 15;
  if (deflateInit2(&zs, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error(ErrorCode::kResourceExhausted, "zlib: deflateInit2 failed");
  struct End {
    z_stream* z;
    ~End() { deflateEnd(z); }
  } end{&zs};
  // deflateBound covers the zlib wrapper; a gzip wrapper is 12 bytes longer (18 vs 6).
  Bytes out(deflateBound(&zs, static_cast<uLong>(in.size())) + 12);
  std::size_t in_pos = 0;
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size(), UINT32_MAX));
  int rc = Z_OK;
  do {
    // avail_in is 32 bits wide: feed larger inputs in pieces.
    const std::size_t piece = std::min<std::size_t>(in.size() - in_pos, 1u << 30);
    zs.next_in = const_cast<Bytef*>(in.data() + in_pos);
    zs.avail_in = static_cast<uInt>(piece);
    in_pos += piece;
    const bool last = in_pos == in.size();
    rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_STREAM_ERROR || (!last && zs.avail_in != 0))
      throw Error(ErrorCode::kInternal, "zlib: deflate did not consume its input");
  } while (in_pos < in.size());
  if (rc != Z_STREAM_END) throw Error(ErrorCode::kInternal, "zlib: deflate did not finish the stream");
  out.resize(zs.total_out);
  return out;
}

}  // namespace cubestream::codec
