// CRC-32C on the host: the SSE4.2 crc32 instruction where the CPU has it (checked once at run
// time), otherwise the portable slicing-by-8 code shared with the GPU (logic/crc32c.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cubestream::codec {

// Continues a finished CRC-32C `crc` (0 to start) over `n` bytes at `p`.
std::uint32_t crc32c(std::uint32_t crc, const std::uint8_t* p, std::size_t n);

// The same, always through the portable table code (for tests comparing the two paths).
std::uint32_t crc32c_portable(std::uint32_t crc, const std::uint8_t* p, std::size_t n);

// True when crc32c() uses the SSE4.2 instruction on this machine.
bool crc32c_uses_hardware();

}  // namespace cubestream::codec
