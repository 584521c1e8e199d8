// Looking up a codec by the name it carries in metadata.
//
// All codecs are listed in one explicit table (registry.cpp) rather than registering
// themselves from static initialisers, which a static library link would silently drop.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"

namespace cubestream::codec {

// Builds a codec from its metadata name and configuration object (may be null/empty).
//  - Zarr v3 names: "bytes", "transpose", "zstd", "gzip", "blosc", "crc32c", "sharding_indexed".
//  - numcodecs ids as Zarr v2 writes them ("zstd", "blosc", "lz4", "zlib", "gzip", "shuffle",
//    "delta", "fixedscaleoffset", "bitround", "quantize", "crc32", "crc32c", "adler32"), and the
//    same under "numcodecs.<id>" as they appear in Zarr v3 metadata.
// Throws Error(kUnsupported) naming the codec when it is unknown, and Error(kInvalidMetadata)
// when its configuration is malformed. `spec` is the decoded chunk the codec will see (some
// codecs check their configuration against it, e.g. transpose's order length).
CodecPtr make_codec(std::string_view name, const nlohmann::json& configuration);

// The names make_codec understands, for messages and documentation.
std::vector<std::string> known_codec_names();

}  // namespace cubestream::codec
