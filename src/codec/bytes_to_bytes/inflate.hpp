// DEFLATE decoding through zlib's inflate, shared by the zlib and gzip codecs and by blosc's
// zlib streams.
#pragma once

#include <cstdint>
#include <string_view>

#include "cubestream/bytes.hpp"

namespace cubestream::codec {

enum class InflateContainer {
  kZlib,  // RFC 1950: 2-byte header, deflate data, Adler-32 trailer
  kGzip,  // RFC 1952: one or more members (header, deflate data, CRC-32 and size trailer)
};

// Decodes `in` into `out` and returns the bytes written; never writes past out.size().
//  - kZlib: one stream; bytes after its end are ignored (as Python's zlib.decompress does).
//  - kGzip: members decode one after another; zero bytes between or after members are padding
//    (as Python's gzip module allows); an empty input decodes to nothing.
// Throws Error(kSizeMismatch) when the data decodes to more than out.size(),
// kChecksumMismatch when a trailer's checksum or length disagrees, kCorruptData otherwise.
std::size_t inflate_decode(ByteView in, MutableByteView out, InflateContainer container,
                           std::string_view codec, std::uint64_t base_offset);

// Compresses `in` with zlib's deflate at `level` (-1: zlib's default, 6) into one zlib stream
// (what Python's zlib.compress writes) or one gzip member (what Python's gzip.compress writes:
// RFC 1952 header with mtime 0, deflate data, CRC-32 and size trailer).
Bytes deflate_encode(ByteView in, InflateContainer container, int level);

}  // namespace cubestream::codec
