// libFuzzer harness for one bytes->bytes codec's decode, compiled once per codec with
// -DCS_FUZZ_CODEC="<id>" (see cs_add_fuzzer in CMakeLists.txt).
//
// Input layout: byte 0-1 pick the output size (little-endian, times 16: 0 .. ~1 MiB), byte 2
// picks one of the codec's configurations (filters need a dtype; checksums a location), the
// rest is the encoded data. The output buffer is a heap allocation of exactly that size, so
// AddressSanitizer reports any write past it. A cubestream::Error is the expected answer to
// bad data; any other exception, a crash, a sanitizer report, or a claimed size beyond the
// output is a bug. decode_blocks() runs on the same input and must agree with decode().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/factories.hpp"
#include "cubestream/error.hpp"

#ifndef CS_FUZZ_CODEC
#error "compile with -DCS_FUZZ_CODEC=\"<codec id>\""
#endif

namespace {

using cubestream::codec::CodecPtr;
using nlohmann::json;

struct Target {
  const char* id;
  CodecPtr (*make)(const json&);
  std::vector<json> configs;
};

std::vector<Target> targets() {
  namespace c = cubestream::codec;
  const json none = json::object();
  return {
      {"zstd", c::make_zstd_codec, {none}},
      {"gzip", c::make_gzip_codec, {none}},
      {"zlib", c::make_zlib_codec, {none}},
      {"lz4", c::make_lz4_codec, {none}},
      {"blosc", c::make_blosc_codec, {none}},
      {"crc32c", c::make_crc32c_codec, {none, {{"location", "start"}}}},
      {"crc32", c::make_crc32_codec, {none, {{"location", "end"}}}},
      {"adler32", c::make_adler32_codec, {none, {{"location", "end"}}}},
      {"bitround", c::make_bitround_codec, {{{"keepbits", 5}}}},
      {"shuffle",
       c::make_shuffle_codec,
       {{{"elementsize", 1}}, {{"elementsize", 2}}, {{"elementsize", 3}}, {{"elementsize", 4}},
        {{"elementsize", 8}}, {{"elementsize", 16}}}},
      {"delta",
       c::make_delta_codec,
       {{{"dtype", "<i4"}}, {{"dtype", "<i2"}, {"astype", "|i1"}}, {{"dtype", ">u8"}, {"astype", "<i2"}},
        {{"dtype", "<f4"}, {"astype", "<f8"}}, {{"dtype", "<f2"}}, {{"dtype", "<i4"}, {"astype", "<f4"}},
        {{"dtype", "|b1"}}, {{"dtype", "<u8"}, {"astype", "<i8"}}}},
      {"fixedscaleoffset",
       c::make_fixedscaleoffset_codec,
       {{{"scale", 10}, {"offset", 1000}, {"dtype", "<f8"}, {"astype", "|u1"}},
        {{"scale", 0.01}, {"offset", -5.5}, {"dtype", ">f4"}, {"astype", ">i2"}},
        {{"scale", 3}, {"offset", 7}, {"dtype", "<i4"}, {"astype", "<f4"}},
        {{"scale", 10}, {"offset", 1000}, {"dtype", "<f8"}, {"astype", "<f2"}},
        {{"scale", 1e-300}, {"offset", 1e300}, {"dtype", "<u8"}, {"astype", "<f8"}}}},
      {"quantize",
       c::make_quantize_codec,
       {{{"digits", 2}, {"dtype", "<f8"}, {"astype", "<f4"}}, {{"digits", 2}, {"dtype", "<f4"}, {"astype", "<f8"}},
        {{"digits", 2}, {"dtype", ">f8"}, {"astype", "<f2"}}, {{"digits", 2}, {"dtype", "<f2"}, {"astype", ">f8"}}}},
  };
}

const std::vector<CodecPtr>& codecs() {
  static const std::vector<CodecPtr> built = [] {
    for (const auto& t : targets()) {
      if (std::strcmp(t.id, CS_FUZZ_CODEC) != 0) continue;
      std::vector<CodecPtr> out;
      for (const auto& cfg : t.configs) out.push_back(t.make(cfg));
      return out;
    }
    std::fprintf(stderr, "fuzz_codec: unknown codec '%s'\n", CS_FUZZ_CODEC);
    std::abort();
  }();
  return built;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::size_t out_size = (static_cast<std::size_t>(data[0]) | (static_cast<std::size_t>(data[1]) << 8)) * 16;
  const auto& all = codecs();
  const auto& codec = static_cast<const cubestream::codec::BytesToBytesCodec&>(*all[data[2] % all.size()]);
  std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[out_size == 0 ? 1 : out_size]);
  const cubestream::ByteView in(data + 3, size - 3);
  std::size_t n = 0;
  bool decoded = false;
  try {
    n = codec.decode(in, cubestream::MutableByteView(out.get(), out_size));
    if (n > out_size) {
      std::fprintf(stderr, "decode claims %zu bytes written into %zu\n", n, out_size);
      std::abort();
    }
    decoded = true;
  } catch (const cubestream::Error&) {
    // the expected answer to malformed input
  }
  // decode_blocks (blosc; the others decline) on the same input: pieces in order, inside the
  // output, whole multiples of the alignment, and together exactly decode()'s bytes; it may
  // decline, but never succeed where decode() failed or stopped short, nor fail where it
  // decoded the whole output.
  const std::size_t align = std::size_t{1} << (data[2] % 4);
  std::vector<std::uint8_t> pieces;
  bool taken = false, threw = false;
  try {
    taken = codec.decode_blocks(in, out_size, align, [&](std::size_t offset, const std::uint8_t* p, std::size_t bytes) {
      if (offset != pieces.size() || bytes % align != 0 || offset + bytes > out_size) {
        std::fprintf(stderr, "decode_blocks piece at %zu of %zu bytes (align %zu, %zu so far, output %zu)\n", offset,
                     bytes, align, pieces.size(), out_size);
        std::abort();
      }
      pieces.insert(pieces.end(), p, p + bytes);
    });
  } catch (const cubestream::Error&) {
    threw = true;
  }
  const bool whole = decoded && n == out_size;
  if (taken && (!whole || pieces.size() != out_size || (out_size && std::memcmp(pieces.data(), out.get(), out_size)))) {
    std::fprintf(stderr, "decode_blocks gave %zu bytes that decode() did not\n", pieces.size());
    std::abort();
  }
  if (threw && whole) {
    std::fprintf(stderr, "decode_blocks failed where decode() decoded %zu bytes\n", n);
    std::abort();
  }
  return 0;
}
