#include "codec/bytes_to_bytes/crc32c_host.hpp"

#include <cstring>

#include "codec/logic/crc32c.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CS_CRC32C_X86 1
#include <nmmintrin.h>
#else
#define CS_CRC32C_X86 0
#endif

namespace cubestream::codec {

namespace {

constexpr logic::Crc32cTables kTables = logic::make_crc32c_tables();

#if CS_CRC32C_X86
// The crc32 instruction computes exactly the reflected Castagnoli CRC register update, eight
// bytes per instruction; the pre/post inversion is the same as in the table code.
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc,
                                                             const std::uint8_t* p,
                                                             std::size_t n) {
  std::uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7u) != 0) {
    c = _mm_crc32_u8(static_cast<std::uint32_t>(c), *p++);
    --n;
  }
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = _mm_crc32_u8(static_cast<std::uint32_t>(c), *p++);
    --n;
  }
  return ~static_cast<std::uint32_t>(c);
}

bool detect_sse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

}  // namespace

std::uint32_t crc32c_portable(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
  return logic::crc32c_extend(kTables, crc, p, n);
}

bool crc32c_uses_hardware() {
#if CS_CRC32C_X86
  static const bool has = detect_sse42();
  return has;
#else
  return false;
#endif
}

std::uint32_t crc32c(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
#if CS_CRC32C_X86
  if (crc32c_uses_hardware()) return crc32c_sse42(crc, p, n);
#endif
  return crc32c_portable(crc, p, n);
}

}  // namespace cubestream::codec
