// CRC-32C (Castagnoli), the checksum of the Zarr v3 `crc32c` codec, shared by host and device.
//
// Parameters (RFC 3720, appendix B.4): polynomial 0x1EDC6F41, processed bit-reflected
// (0x82F63B78), initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF. The check value of the ASCII
// string "123456789" is 0xE3069283; 32 zero bytes give 0x8A9136AA.
//
// The software path is "slicing-by-8": eight 256-entry tables let one step consume eight input
// bytes with eight independent lookups. The tables are built by a constexpr function so that
// the host keeps them in read-only data and the GPU code can place the same values in
// constant memory (`__constant__ Crc32cTables t = make_crc32c_tables();`) and pass them in.
// On x86 hosts with SSE4.2 the host wrapper (bytes_to_bytes/crc32c_host.hpp) uses the crc32
// instruction instead; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace cubestream::codec::logic {

inline constexpr std::uint32_t kCrc32cPolyReflected = 0x82F63B78u;

struct Crc32cTables {
  std::uint32_t t[8][256];
};

// t[0][b] is the CRC register after shifting in byte b; t[k][b] is t[0][b] followed by k more
// zero bytes, which is what lets a step combine eight bytes at once.
CS_HD constexpr Crc32cTables make_crc32c_tables() {
  Crc32cTables tab{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ kCrc32cPolyReflected : c >> 1;
    tab.t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (std::uint32_t b = 0; b < 256; ++b) {
      const std::uint32_t prev = tab.t[k - 1][b];
      tab.t[k][b] = (prev >> 8) ^ tab.t[0][prev & 0xFFu];
    }
  }
  return tab;
}

// Little-endian 32-bit load from bytes: independent of host byte order and alignment.
CS_HD inline std::uint32_t crc32c_load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// Continues a CRC-32C over `n` more bytes. `crc` is a finished checksum (0 for an empty
// prefix), so crc32c_extend(crc32c_extend(0, a), b) == crc32c_extend(0, a ++ b).
CS_HD inline std::uint32_t crc32c_extend(const Crc32cTables& tab, std::uint32_t crc,
                                         const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = ~crc;
  while (n >= 8) {
    const std::uint32_t lo = c ^ crc32c_load_le32(p);
    const std::uint32_t hi = crc32c_load_le32(p + 4);
    c = tab.t[7][lo & 0xFFu] ^ tab.t[6][(lo >> 8) & 0xFFu] ^ tab.t[5][(lo >> 16) & 0xFFu] ^
        tab.t[4][lo >> 24] ^ tab.t[3][hi & 0xFFu] ^ tab.t[2][(hi >> 8) & 0xFFu] ^
        tab.t[1][(hi >> 16) & 0xFFu] ^ tab.t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = (c >> 8) ^ tab.t[0][(c ^ *p) & 0xFFu];
    ++p;
    --n;
  }
  return ~c;
}

}  // namespace cubestream::codec::logic
