// HTTP as a byte transport, apart from any protocol spoken over it.
//
// The object stores (HttpStore, S3Store) build requests and interpret responses; a Transport only
// moves one request and its response over the network. The libcurl transport below is the one
// the library uses; tests substitute scripted transports to drive the retry and range logic
// without a network.
//
// Settings, each backed by an environment variable (read once per store, when it is opened):
//   CUBESTREAM_HTTP_MAX_INFLIGHT        requests in flight for one get_ranges call       (16)
//   CUBESTREAM_HTTP_RETRIES             retries after the first attempt                 (6)
//   CUBESTREAM_HTTP_CONNECT_TIMEOUT_MS  limit on establishing one connection            (10000)
//   CUBESTREAM_HTTP_TIMEOUT_MS          limit on one whole request, body included       (120000)
//   CUBESTREAM_HTTP_LOW_SPEED_TIMEOUT_MS  abort an attempt that moves no bytes this long (30000)
//   CUBESTREAM_HTTP_BACKOFF_MS          first backoff ceiling; doubles per retry         (100)
//   CUBESTREAM_HTTP_BACKOFF_MAX_MS      largest backoff ceiling                          (10000)
//   CUBESTREAM_HTTP_COALESCE_BYTES      ranges of one key closer than this are fetched
//                                       in one request (-1: never coalesce)             (262144)
//   CUBESTREAM_HTTP_VERIFY_TLS          0 turns off TLS peer and host verification       (1)
//   CUBESTREAM_HTTP_CA_BUNDLE           a CA certificate bundle for TLS                  (system)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cubestream/bytes.hpp"

namespace cubestream::http {

struct Settings {
  int max_in_flight = 16;
  int retries = 6;
  long connect_timeout_ms = 10000;
  long timeout_ms = 120000;
  long low_speed_timeout_ms = 30000;
  long backoff_ms = 100;
  long backoff_max_ms = 10000;
  std::int64_t coalesce_bytes = 256 * 1024;
  bool verify_tls = true;
  std::string ca_bundle;

  // The defaults above, overridden by the environment variables listed at the top of this file.
  // A variable that is set but not a valid number is Error(kInvalidArgument) naming it.
  static Settings from_env();
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method = "GET";  // GET, HEAD, PUT (tests upload with PUT)
  std::string url;             // absolute http:// or https:// URL, path already percent-encoded
  HeaderList headers;          // sent as given (a "Host" entry replaces the one from the URL)
  Bytes body;                  // request body (PUT)
};

struct Response {
  // The HTTP status of the final response, 0 when none arrived.
  long status = 0;
  // Response headers of the final response (after redirects), names lower-cased.
  HeaderList headers;
  Bytes body;
  // Non-empty when the exchange failed below HTTP: no connection, reset, timeout, a body shorter
  // than its Content-Length. The status and body must then not be trusted.
  std::string transport_error;

  // The first header named `lower_name` (lower case), or nullopt.
  std::optional<std::string> header(std::string_view lower_name) const;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // One attempt, no retries. Must be safe to call from many threads at once. Failures below HTTP
  // are reported in Response::transport_error, never thrown.
  //
  // The response body is received into `body_buffer`'s memory (its contents are dropped, its
  // capacity kept), and Response::body is that buffer. A caller that reads many values passes
  // the same buffer back each time: a fresh multi-megabyte allocation per response costs a page
  // fault for every 4 KiB page it is written to, which was most of the time of a GET on loopback.
  virtual Response perform(const Request& request, Bytes body_buffer) = 0;
  Response perform(const Request& request) { return perform(request, Bytes{}); }
};

// The libcurl transport: a pool of easy handles over one share handle, so that connections,
// DNS answers and TLS sessions are reused across requests and threads.
std::shared_ptr<Transport> make_curl_transport(const Settings& settings);

// Percent-encodes `s` per RFC 3986 (unreserved characters A-Z a-z 0-9 - . _ ~ stay, everything
// else becomes %XX with upper-case hex). With keep_slash, '/' stays as well (path segments).
std::string percent_encode(std::string_view s, bool keep_slash);

// The URL with any user:password@ part removed, for messages.
std::string redact_url(std::string_view url);

}  // namespace cubestream::http
