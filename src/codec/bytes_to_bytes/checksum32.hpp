// The layout shared by the 4-byte checksum codecs (crc32c, crc32, adler32): the payload with
// its checksum, a little-endian u32, either before it ("start", numcodecs 0.11's Checksum32
// codecs crc32 and adler32) or after it ("end", the Zarr v3 crc32c codec and numcodecs'
// crc32c). The configuration key "location" ("start" or "end") overrides the default, as in
// newer numcodecs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"

namespace cubestream::codec {

enum class ChecksumLocation { kStart, kEnd };

// Continues a finished checksum `prev` over `n` bytes (crc32/crc32c start from 0, adler32
// from 1, as zlib's functions do).
using Checksum32Fn = std::uint32_t (*)(std::uint32_t prev, const std::uint8_t* p, std::size_t n);

struct Checksum32Spec {
  const char* name;             // codec id, used in messages
  Checksum32Fn fn;
  std::uint32_t initial;        // checksum of the empty string
  ChecksumLocation default_location;
};

// Adapts a zlib checksum function (crc32, adler32), whose length argument is 32 bits wide, to
// Checksum32Fn by feeding larger inputs in pieces.
template <unsigned long (*ZlibFn)(unsigned long, const unsigned char*, unsigned int)>
std::uint32_t zlib_checksum_in_pieces(std::uint32_t prev, const std::uint8_t* p, std::size_t n) {
  unsigned long c = prev;
  while (n > 0) {
    const auto piece = static_cast<unsigned int>(n > 0x40000000u ? 0x40000000u : n);
    c = ZlibFn(c, p, piece);
    p += piece;
    n -= piece;
  }
  return static_cast<std::uint32_t>(c);
}

// Builds the codec, reading "location" from the configuration.
CodecPtr make_checksum32_codec(const Checksum32Spec& spec, const nlohmann::json& configuration);

}  // namespace cubestream::codec
