// Factory functions of every codec, one per codec file, gathered in one place for the registry.
// Each takes the codec's `configuration` object (never null) and throws Error(kInvalidMetadata)
// or nlohmann::json::exception on malformed configuration.
#pragma once

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"

namespace cubestream::codec {

// array -> array
CodecPtr make_transpose_codec(const nlohmann::json& configuration);
// array -> bytes
CodecPtr make_bytes_codec(const nlohmann::json& configuration);
CodecPtr make_sharding_codec(const nlohmann::json& configuration);
// bytes -> bytes: compressors
CodecPtr make_zstd_codec(const nlohmann::json& configuration);
CodecPtr make_gzip_codec(const nlohmann::json& configuration);
CodecPtr make_zlib_codec(const nlohmann::json& configuration);
CodecPtr make_lz4_codec(const nlohmann::json& configuration);
CodecPtr make_blosc_codec(const nlohmann::json& configuration);
// bytes -> bytes: checksums
CodecPtr make_crc32c_codec(const nlohmann::json& configuration);
CodecPtr make_crc32_codec(const nlohmann::json& configuration);
CodecPtr make_adler32_codec(const nlohmann::json& configuration);
// bytes -> bytes: numcodecs filters
CodecPtr make_shuffle_codec(const nlohmann::json& configuration);
CodecPtr make_delta_codec(const nlohmann::json& configuration);
CodecPtr make_fixedscaleoffset_codec(const nlohmann::json& configuration);
CodecPtr make_bitround_codec(const nlohmann::json& configuration);
CodecPtr make_quantize_codec(const nlohmann::json& configuration);

}  // namespace cubestream::codec
