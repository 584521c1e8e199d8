// The numcodecs `adler32` codec: zlib's Adler-32 of the data as 4 little-endian bytes,
// prepended in numcodecs 0.11 (location "start" by default; newer numcodecs may write
// "location": "end"). Adler-32 of the empty string is 1.
#include <zlib.h>

#include "codec/bytes_to_bytes/checksum32.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

CodecPtr make_adler32_codec(const nlohmann::json& configuration) {
  static constexpr Checksum32Spec kSpec{"adler32", &zlib_checksum_in_pieces<adler32>, 1, ChecksumLocation::kStart};
  return make_checksum32_codec(kSpec, configuration);
}

}  // namespace cubestream::codec
