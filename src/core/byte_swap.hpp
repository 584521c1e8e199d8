// Reversing the byte order of every element of a buffer in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cubestream {

// `unit` is the size in bytes of what swaps as one (2, 4, 8; complex types pass their part
// size). bytes must be a multiple of unit; unit 1 is a no-op.
inline void byte_swap_inplace(std::uint8_t* p, std::size_t bytes, std::size_t unit) {
  switch (unit) {
    case 2:
      for (std::size_t i = 0; i + 2 <= bytes; i += 2) {
        std::uint16_t v;
        std::memcpy(&v, p + i, 2);
        v = __builtin_bswap16(v);
        std::memcpy(p + i, &v, 2);
      }
      break;
    case 4:
      for (std::size_t i = 0; i + 4 <= bytes; i += 4) {
        std::uint32_t v;
        std::memcpy(&v, p + i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(p + i, &v, 4);
      }
      break;
    case 8:
      for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
        std::uint64_t v;
        std::memcpy(&v, p + i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(p + i, &v, 8);
      }
      break;
    default:
      if (unit > 1) {
        for (std::size_t i = 0; i + unit <= bytes; i += unit)
          for (std::size_t a = i, b = i + unit - 1; a < b; ++a, --b) {
            std::uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
          }
      }
  }
}

}  // namespace cubestream
