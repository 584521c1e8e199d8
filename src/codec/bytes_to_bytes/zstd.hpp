// Zstandard frame decoding (and encoding, through libzstd), shared by the zstd codec and blosc's zstd streams.
#pragma once

#include <cstdint>
#include <string_view>

#include "cubestream/bytes.hpp"

namespace cubestream::codec {

// Decodes the Zstandard frames of `in` (any number, concatenated, including skippable frames
// and frames without a content size) into `out` and returns the bytes written. Throws
// Error(kSizeMismatch) if they decode to more than out.size(), kChecksumMismatch when a frame
// checksum fails, kUnsupported for frames that need a dictionary, kCorruptData otherwise.
// Error messages name `codec` and offsets are reported relative to `base_offset`.
std::size_t zstd_decode_frames(ByteView in, MutableByteView out, std::string_view codec,
                               std::uint64_t base_offset);

// Compresses `in` into one Zstandard frame with its content size in the frame header, at
// `level` (0: libzstd's default), with a content checksum when `checksum`.
Bytes zstd_encode_frame(ByteView in, int level, bool checksum);

}  // namespace cubestream::codec
