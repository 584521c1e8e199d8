// Byte ranges over HTTP (RFC 7233, "Range Requests"): the Range header we send and the checks
// that a response carries exactly the bytes that were asked for. Pure functions, no network.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cubestream/bytes.hpp"
#include "cubestream/store.hpp"
#include "store/http/transport.hpp"

namespace cubestream::http {

// The Range header value for `r` (RFC 7233 §3.1, byte-range-spec / suffix-byte-range-spec):
//   {o, -1} -> "bytes=o-"    {o, n} -> "bytes=o-(o+n-1)"    suffix(n) -> "bytes=-n"
// A zero-length range has no HTTP spelling ("bytes=5-4" is invalid and would be ignored, giving
// the whole value); callers handle it without a ranged GET. Requires r.length != 0.
std::string range_header(ByteRange r);

// A parsed Content-Range header (RFC 7233 §4.2): "bytes first-last/complete" where complete
// may be "*" (unknown), or "bytes */complete" on a 416 response.
struct ContentRange {
  bool satisfied = true;                  // false for "bytes */complete"
  std::uint64_t first = 0, last = 0;      // inclusive, when satisfied
  std::optional<std::uint64_t> complete;  // total size of the value, when known
};
std::optional<ContentRange> parse_content_range(std::string_view value);

// What a ranged GET's response (status 200, 206 or 416) means.
struct RangeOutcome {
  enum Kind {
    kBytes,       // `bytes` are exactly the asked range
    kRetry,       // the response cannot be trusted (body disagrees with its headers): try again
    kEmptyProbe,  // 416 to "bytes=0-": the value may be empty; the caller must check its size
  };
  Kind kind = kBytes;
  Bytes bytes;
  std::string why;  // for kRetry: what was wrong
};

// Checks `response` against the asked range `r` and takes its bytes. Never returns bytes other
// than the asked ones:
//   206: Content-Range must be present, the body must be exactly last-first+1 bytes (else kRetry:
//        a truncated or padded body), and first/last must be what was asked once the range is
//        resolved against the complete length (a range past the end is Error(kOutOfRange); any
//        other disagreement is kRetry).
//   200: the server ignored Range (RFC 7233 §3.1 allows it): the body is the whole value and
//        the asked range is cut from it (past the end: Error(kOutOfRange)).
//   416: Range Not Satisfiable (§4.4): Error(kOutOfRange), except kEmptyProbe for "bytes=0-".
// `store` and `key` name the value in errors.
RangeOutcome take_range(ByteRange r, Response&& response, std::string_view store, std::string_view key);

// Full-jitter exponential backoff ("Exponential Backoff And Jitter", AWS Architecture Blog, and
// the AWS SDKs' standard retry mode): a delay drawn uniformly from [0, min(max, base * 2^attempt)]
// milliseconds. `unit` is a random number in [0, 1).
long backoff_ms(const Settings& s, int attempt, double unit);

}  // namespace cubestream::http
