// The numcodecs `crc32` codec: zlib's CRC-32 (ISO-HDLC polynomial 0x04C11DB7, the one of gzip
// and PNG) of the data as 4 little-endian bytes, prepended in numcodecs 0.11 (location
// "start" by default; newer numcodecs may write "location": "end").
#include <zlib.h>

#include "codec/bytes_to_bytes/checksum32.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

CodecPtr make_crc32_codec(const nlohmann::json& configuration) {
  static constexpr Checksum32Spec kSpec{"crc32", &zlib_checksum_in_pieces<crc32>, 0, ChecksumLocation::kStart};
  return make_checksum32_codec(kSpec, configuration);
}

}  // namespace cubestream::codec
