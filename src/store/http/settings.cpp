// HTTP settings from the environment, and small URL helpers shared by the object stores.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cubestream/error.hpp"
#include "store/http/transport.hpp"

namespace cubestream::http {

namespace {

template <class T>
void read_int(const char* name, T& into, long long min, long long max) {
  const char* v = std::getenv(name);
  if (!v || !*v) return;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < min || x > max) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + "='" + v + "' is not an integer in [" +
                                                 std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  into = static_cast<T>(x);
}

}  // namespace

Settings Settings::from_env() {
  Settings s;
  read_int("CUBESTREAM_HTTP_MAX_INFLIGHT", s.max_in_flight, 1, 1024);
  read_int("CUBESTREAM_HTTP_RETRIES", s.retries, 0, 100);
  read_int("CUBESTREAM_HTTP_CONNECT_TIMEOUT_MS", s.connect_timeout_ms, 1, 3600000);
  read_int("CUBESTREAM_HTTP_TIMEOUT_MS", s.timeout_ms, 0, 86400000);
  read_int("CUBESTREAM_HTTP_LOW_SPEED_TIMEOUT_MS", s.low_speed_timeout_ms, 0, 86400000);
  read_int("CUBESTREAM_HTTP_BACKOFF_MS", s.backoff_ms, 0, 3600000);
  read_int("CUBESTREAM_HTTP_BACKOFF_MAX_MS", s.backoff_max_ms, 0, 3600000);
  read_int("CUBESTREAM_HTTP_COALESCE_BYTES", s.coalesce_bytes, -1, std::int64_t{1} << 40);
  int verify = 1;
  read_int("CUBESTREAM_HTTP_VERIFY_TLS", verify, 0, 1);
  s.verify_tls = verify != 0;
  if (const char* ca = std::getenv("CUBESTREAM_HTTP_CA_BUNDLE")) s.ca_bundle = ca;
  return s;
}

std::optional<std::string> Response::header(std::string_view lower_name) const {
  for (const auto& [n, v] : headers)
    if (n == lower_name) return v;
  return std::nullopt;
}

std::string percent_encode(std::string_view s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string redact_url(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  auto host_begin = scheme + 3;
  auto path_begin = url.find_first_of("/?#", host_begin);
  auto authority = url.substr(host_begin, path_begin == std::string_view::npos ? url.npos : path_begin - host_begin);
  auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, host_begin));
  out += authority.substr(at + 1);
  if (path_begin != std::string_view::npos) out += url.substr(path_begin);
  return out;
}

}  // namespace cubestream::http
