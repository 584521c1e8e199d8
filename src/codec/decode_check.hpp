// One macro for every bounds check a decoder makes on its input.
//
// Decoders read lengths, offsets and counts out of untrusted bytes. Each such value is checked
// before it is used, through CS_DECODE_CHECK, which throws a cubestream::Error with the code
// (corrupt_data, size_mismatch, out_of_range, checksum_mismatch) and the byte offset inside
// the encoded stream where the bad value was found.
#pragma once

#include <cstdint>
#include <string>

#include "cubestream/error.hpp"

namespace cubestream::codec {

[[noreturn]] inline void throw_decode_error(ErrorCode code, const std::string& codec,
                                            const std::string& what, std::uint64_t offset) {
  throw Error(code, codec + ": " + what, ErrorContext{{}, {}, offset});
}

}  // namespace cubestream::codec

// CS_DECODE_CHECK(condition, code, codec_name, message, byte_offset)
#define CS_DECODE_CHECK(cond, code, codec_name, message, offset)                              \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      ::cubestream::codec::throw_decode_error(::cubestream::ErrorCode::code, (codec_name),    \
                                              (message), static_cast<std::uint64_t>(offset)); \
    }                                                                                         \
  } while (0)
