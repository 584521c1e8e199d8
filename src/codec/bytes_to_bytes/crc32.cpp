// The numcodecs `crc32` codec: zlib's CRC-32 (ISO-HDLC polynomial 0x04C11DB7, the one of gzip
// and PNG) of the data as 4 little-endian bytes, prepended in numcodecs 0.11 (location
// "start" by default; newer numcodecs may write "location": "end").
#include <zlib.h>

#include "codec/bytes_to_bytes/checksum32.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

// zlib's crc32 takes a 32-bit length: feed larger inputs in pieces.
std::uint32_t zlib_crc32(std::uint32_t prev, const std::uint8_t* p, std::size_t n) {
  uLong c = prev;
  while (n > 0) {
    const auto piece = static_cast<uInt>(n > 0x40000000u ? 0x40000000u : n);
    c = crc32(c, p, piece);
    p += piece;
    n -= piece;
  }
  return static_cast<std::uint32_t>(c);
}

}  // namespace

CodecPtr make_crc32_codec(const nlohmann::json& configuration) {
  static constexpr Checksum32Spec kSpec{"crc32", &zlib_crc32, 0, ChecksumLocation::kStart};
  return make_checksum32_codec(kSpec, configuration);
}

}  // namespace cubestream::codec
