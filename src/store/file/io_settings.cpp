// IoSettings from the environment (the variables are documented in io_settings.hpp).
#include "store/file/io_settings.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cubestream/error.hpp"
#include "store/file/device_tuning.hpp"

namespace cubestream::store_detail {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

[[noreturn]] void bad(const char* name, const char* value, const std::string& want) {
  throw Error(ErrorCode::kInvalidArgument, std::string(name) + "='" + value + "' is not " + want);
}

// Returns whether NAME was set (and valid).
template <class T>
bool read_int(const char* name, T& into, long long min, long long max) {
  const char* v = env(name);
  if (!v) return false;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < min || x > max)
    bad(name, v, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  into = static_cast<T>(x);
  return true;
}

// Reads NAME as one of `choices` (case-sensitive, as documented); returns its index.
template <class E, std::size_t N>
void read_choice(const char* name, E& into, const char* const (&choices)[N], const E (&values)[N]) {
  const char* v = env(name);
  if (!v) return;
  std::string want = "one of";
  for (std::size_t i = 0; i < N; ++i) {
    if (std::string_view(v) == choices[i]) {
      into = values[i];
      return;
    }
    want += std::string(i ? ", " : " ") + choices[i];
  }
  bad(name, v, want);
}

}  // namespace

IoSettings IoSettings::from_env() {
  IoSettings s;
  read_choice("CUBESTREAM_IO_ENGINE", s.engine, {"auto", "pread", "io_uring"},
              {IoEngineKind::kAuto, IoEngineKind::kPread, IoEngineKind::kIoUring});
  s.depth_from_env = read_int("CUBESTREAM_IO_DEPTH", s.depth, 1, 1024);
  s.block_from_env = read_int("CUBESTREAM_IO_BLOCK_BYTES", s.block_bytes, 1, std::int64_t{1} << 30);
  s.block_bytes = (s.block_bytes + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  read_int("CUBESTREAM_IO_COALESCE_BYTES", s.coalesce_bytes, -1, std::int64_t{1} << 40);
  read_choice("CUBESTREAM_IO_DIRECT", s.direct, {"0", "1", "auto"},
              {DirectMode::kOff, DirectMode::kOn, DirectMode::kAuto});
  read_int("CUBESTREAM_IO_DIRECT_MIN_BYTES", s.direct_min_bytes, 0, std::int64_t{1} << 40);
  read_choice("CUBESTREAM_GDS", s.gds, {"auto", "on", "off"}, {GdsMode::kAuto, GdsMode::kOn, GdsMode::kOff});
  read_int("CUBESTREAM_GDS_SLOT_BYTES", s.gds_slot_bytes, 1, std::int64_t{1} << 30);
  s.gds_slot_bytes = (s.gds_slot_bytes + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  read_int("CUBESTREAM_GDS_SLOTS", s.gds_slots, 2, 64);
  return s;
}

IoSettings IoSettings::for_path(const std::string& path) {
  IoSettings s = from_env();
  apply_device_tuning(s, path);
  return s;
}

const char* to_string(IoEngineKind k) {
  switch (k) {
    case IoEngineKind::kAuto: return "auto";
    case IoEngineKind::kPread: return "pread";
    case IoEngineKind::kIoUring: return "io_uring";
  }
  return "?";
}

const char* to_string(DirectMode m) {
  switch (m) {
    case DirectMode::kOff: return "0";
    case DirectMode::kOn: return "1";
    case DirectMode::kAuto: return "auto";
  }
  return "?";
}

const char* to_string(GdsMode m) {
  switch (m) {
    case GdsMode::kAuto: return "auto";
    case GdsMode::kOn: return "on";
    case GdsMode::kOff: return "off";
  }
  return "?";
}

}  // namespace cubestream::store_detail
