// The `crc32c` codec (Zarr v3 core codec; numcodecs "crc32c"): CRC-32C (Castagnoli) of the
// data as 4 little-endian bytes appended to it (location "end" by default).
#include "codec/bytes_to_bytes/checksum32.hpp"
#include "codec/bytes_to_bytes/crc32c_host.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

CodecPtr make_crc32c_codec(const nlohmann::json& configuration) {
  static constexpr Checksum32Spec kSpec{"crc32c", &crc32c, 0, ChecksumLocation::kEnd};
  return make_checksum32_codec(kSpec, configuration);
}

}  // namespace cubestream::codec
