// Decoder of BloscLZ, blosc's built-in LZ77 compressor (header compressor format 0, format
// version 1), shared by host and device. BloscLZ descends from FastLZ level 1.
//
// Stream: a sequence of instructions, each starting with a control byte `ctrl`. The first
// control byte is special: its top 3 bits are a format marker and only `ctrl & 31` counts,
// so the stream always begins with a literal run.
//  - ctrl < 32: literal run. The next ctrl + 1 bytes (1..32) are copied to the output.
//  - ctrl >= 32: match. L = ctrl >> 5 (1..7), H = ctrl & 31.
//      If L == 7 the length continues in extra bytes: add each byte, stopping after the first
//      one that is not 255. Then one byte `code` follows.
//      Length = (L - 1 + extra) + 3. Distance = H * 256 + code + 1 (1..8191), except that
//      H == 31 with code == 255 escapes to a far match: a 16-bit big-endian value `far`
//      follows and distance = far + 8191 + 1.
//      The match copies `length` bytes starting `distance` bytes back, byte by byte, so it may
//      overlap what it writes (distance 1 repeats the last byte).
// The stream ends when the input is exhausted after an instruction. Nothing records the
// decoded size: the blosc container knows it, and a decoded size that differs is corrupt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

enum class BlosclzStatus : std::uint8_t {
  kOk,
  kTruncated,     // an instruction needs more input bytes than there are
  kOutputFull,    // an instruction would write past the output capacity
  kBadDistance,   // a match reaches back before the start of the output
};

struct BlosclzResult {
  BlosclzStatus status = BlosclzStatus::kOk;
  std::size_t produced = 0;      // output bytes written
  std::size_t input_offset = 0;  // where the failing instruction starts (on error)
};

inline constexpr std::size_t kBlosclzMaxDistance = 8191;

CS_HD inline BlosclzResult blosclz_decode(const std::uint8_t* in, std::size_t in_size,
                                          std::uint8_t* out, std::size_t out_cap) {
  BlosclzResult r;
  if (in_size == 0) return r;
  std::size_t ip = 0, op = 0;
  std::size_t ctrl = in[ip++] & 31u;
  for (;;) {
    const std::size_t start = ip - 1;
    if (ctrl >= 32) {
      std::size_t len = (ctrl >> 5) - 1;
      const std::size_t high = (ctrl & 31u) << 8;
      if (len == 6) {
        std::uint8_t more;
        do {
          if (ip >= in_size) return BlosclzResult{BlosclzStatus::kTruncated, op, start};
          more = in[ip++];
          len += more;
        } while (more == 255);
      }
      if (ip >= in_size) return BlosclzResult{BlosclzStatus::kTruncated, op, start};
      const std::uint8_t code = in[ip++];
      std::size_t distance = high + code + 1;
      if (code == 255 && high == (31u << 8)) {
        if (in_size - ip < 2) return BlosclzResult{BlosclzStatus::kTruncated, op, start};
        distance = ((static_cast<std::size_t>(in[ip]) << 8) | in[ip + 1]) + kBlosclzMaxDistance + 1;
        ip += 2;
      }
      len += 3;
      if (distance > op) return BlosclzResult{BlosclzStatus::kBadDistance, op, start};
      if (len > out_cap - op) return BlosclzResult{BlosclzStatus::kOutputFull, op, start};
      std::uint8_t* d = out + op;
      const std::uint8_t* s = d - distance;
      if (distance == 1) {
        memset(d, *s, len);
      } else if (distance >= len) {
        memcpy(d, s, len);
      } else {
        // Overlapping: the copy repeats the last `distance` bytes. Chunks of `distance` (at
        // most 8) bytes each read only bytes already written, so they may be block copies.
        std::size_t k = 0;
        if (distance >= 8) {
          for (; k + 8 <= len; k += 8) memcpy(d + k, s + k, 8);
        }
        for (; k < len; ++k) d[k] = s[k];
      }
      op += len;
    } else {
      const std::size_t run = ctrl + 1;
      if (run > out_cap - op) return BlosclzResult{BlosclzStatus::kOutputFull, op, start};
      if (run > in_size - ip) return BlosclzResult{BlosclzStatus::kTruncated, op, start};
      memcpy(out + op, in + ip, run);
      ip += run;
      op += run;
    }
    if (ip >= in_size) break;
    ctrl = in[ip++];
  }
  r.produced = op;
  return r;
}

}  // namespace cubestream::codec::logic
