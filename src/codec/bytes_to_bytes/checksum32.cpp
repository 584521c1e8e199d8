#include "codec/bytes_to_bytes/checksum32.hpp"

#include <cstdio>
#include <cstring>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/decode_check.hpp"

namespace cubestream::codec {

namespace {

constexpr std::size_t kChecksumBytes = 4;

std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

class Checksum32Codec final : public BytesToBytesCodec {
 public:
  Checksum32Codec(const Checksum32Spec& spec, ChecksumLocation loc, nlohmann::json cfg)
      : spec_(spec), location_(loc), cfg_(std::move(cfg)) {}

  std::string name() const override { return spec_.name; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes + kChecksumBytes, decoded.exact};
  }

  bool can_encode() const override { return true; }
  // The payload and its checksum as a little-endian u32, before or after it.
  Bytes encode(ByteView in) const override {
    const std::uint32_t sum = spec_.fn(spec_.initial, in.data(), in.size());
    const std::uint8_t le[kChecksumBytes] = {static_cast<std::uint8_t>(sum), static_cast<std::uint8_t>(sum >> 8),
                                             static_cast<std::uint8_t>(sum >> 16), static_cast<std::uint8_t>(sum >> 24)};
    Bytes out;
    out.reserve(in.size() + kChecksumBytes);
    if (location_ == ChecksumLocation::kStart) out.insert(out.end(), le, le + kChecksumBytes);
    out.insert(out.end(), in.begin(), in.end());
    if (location_ == ChecksumLocation::kEnd) out.insert(out.end(), le, le + kChecksumBytes);
    return out;
  }
  std::size_t decode(ByteView in, MutableByteView out) const override {
    CS_DECODE_CHECK(in.size() >= kChecksumBytes, kCorruptData, spec_.name,
                    "input of " + std::to_string(in.size()) + " bytes is too short to hold a 4-byte checksum",
                    0);
    const std::size_t n = in.size() - kChecksumBytes;
    const bool at_start = location_ == ChecksumLocation::kStart;
    const std::uint8_t* payload = in.data() + (at_start ? kChecksumBytes : 0);
    const std::size_t sum_at = at_start ? 0 : n;
    CS_DECODE_CHECK(n <= out.size(), kSizeMismatch, spec_.name,
                    "payload of " + std::to_string(n) + " bytes does not fit the " +
                        std::to_string(out.size()) + " bytes expected",
                    0);
    const std::uint32_t stored = load_le32(in.data() + sum_at);
    const std::uint32_t actual = spec_.fn(spec_.initial, payload, n);
    CS_DECODE_CHECK(stored == actual, kChecksumMismatch, spec_.name,
                    "stored checksum " + hex32(stored) + " does not match the data's " + hex32(actual),
                    sum_at);
    if (n > 0) std::memcpy(out.data(), payload, n);
    return n;
  }

 private:
  Checksum32Spec spec_;
  ChecksumLocation location_;
  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_checksum32_codec(const Checksum32Spec& spec, const nlohmann::json& configuration) {
  config::require_object(configuration, spec.name);
  ChecksumLocation loc = spec.default_location;
  if (auto s = config::get_string(configuration, spec.name, "location")) {
    if (*s == "start") {
      loc = ChecksumLocation::kStart;
    } else if (*s == "end") {
      loc = ChecksumLocation::kEnd;
    } else {
      config::fail(spec.name, "location", "must be \"start\" or \"end\", got \"" + *s + "\"");
    }
  }
  return std::make_shared<Checksum32Codec>(spec, loc, configuration);
}

}  // namespace cubestream::codec
