// Byte ranges over HTTP: see range.hpp.
#include "store/http/range.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "cubestream/error.hpp"
#include "store/range_math.hpp"

namespace cubestream::http {

std::string range_header(ByteRange r) {
  if (r.offset < 0) return "bytes=-" + std::to_string(-r.offset);
  if (r.length < 0) return "bytes=" + std::to_string(r.offset) + "-";
  return "bytes=" + std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length - 1);
}

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

}  // namespace

std::optional<ContentRange> parse_content_range(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  constexpr std::string_view kUnit = "bytes ";
  if (v.substr(0, kUnit.size()) != kUnit) return std::nullopt;
  v.remove_prefix(kUnit.size());
  auto slash = v.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view span = v.substr(0, slash), total = v.substr(slash + 1);
  ContentRange cr;
  if (total != "*") {
    std::uint64_t t = 0;
    if (!parse_u64(total, t)) return std::nullopt;
    cr.complete = t;
  }
  if (span == "*") {
    if (!cr.complete) return std::nullopt;  // "bytes */*" is not valid
    cr.satisfied = false;
    return cr;
  }
  auto dash = span.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  if (!parse_u64(span.substr(0, dash), cr.first) || !parse_u64(span.substr(dash + 1), cr.last)) return std::nullopt;
  if (cr.last < cr.first) return std::nullopt;
  if (cr.complete && cr.last >= *cr.complete) return std::nullopt;
  return cr;
}

RangeOutcome take_range(ByteRange r, Response&& response, std::string_view store, std::string_view key) {
  RangeOutcome out;
  auto retry = [&](std::string why) {
    out.kind = RangeOutcome::kRetry;
    out.why = std::move(why);
    return out;
  };
  if (response.status == 200) {
    // The whole value: cut the range out of it. resolve_range throws kOutOfRange past the end.
    auto rr = store_detail::resolve_range(r, response.body.size(), store, key);
    if (rr.offset == 0 && rr.length == response.body.size()) {
      out.bytes = std::move(response.body);
    } else {
      out.bytes.assign(response.body.begin() + static_cast<std::ptrdiff_t>(rr.offset),
                       response.body.begin() + static_cast<std::ptrdiff_t>(rr.offset + rr.length));
    }
    return out;
  }
  auto header = response.header("content-range");
  std::optional<ContentRange> cr;
  if (header) cr = parse_content_range(*header);
  if (response.status == 416) {
    if (r.offset == 0 && r.length < 0) {
      out.kind = RangeOutcome::kEmptyProbe;
      return out;
    }
    // Resolve against the complete length when the server said it: past the end is a precise
    // kOutOfRange; a range that fits is a confused answer, worth another try.
    if (cr && cr->complete) {
      store_detail::resolve_range(r, *cr->complete, store, key);
      return retry("HTTP 416 for " + range_header(r) + " although the value has " + std::to_string(*cr->complete) +
                   " bytes");
    }
    throw Error(ErrorCode::kOutOfRange, "range " + range_header(r) + " is not satisfiable (HTTP 416)",
                ErrorContext{std::string(store), std::string(key), r.offset >= 0 ? std::optional<std::uint64_t>(r.offset) : std::nullopt});
  }
  if (response.status != 206) {
    throw Error(ErrorCode::kInternal, "take_range called for HTTP " + std::to_string(response.status),
                ErrorContext{std::string(store), std::string(key), std::nullopt});
  }
  if (!cr || !cr->satisfied) {
    return retry("206 response without a valid Content-Range (" + (header ? "'" + *header + "'" : std::string("none")) + ")");
  }
  const std::uint64_t got = cr->last - cr->first + 1;
  if (response.body.size() != got) {
    return retry("body of " + std::to_string(response.body.size()) + " bytes for Content-Range '" + *header + "'");
  }
  // What was asked, resolved against the complete length when known.
  std::uint64_t want_first = 0;
  std::optional<std::uint64_t> want_len;
  if (cr->complete) {
    auto rr = store_detail::resolve_range(r, *cr->complete, store, key);  // kOutOfRange past the end
    want_first = rr.offset;
    want_len = rr.length;
  } else if (r.offset >= 0) {
    want_first = static_cast<std::uint64_t>(r.offset);
    if (r.length >= 0) want_len = static_cast<std::uint64_t>(r.length);
  } else {
    // A suffix with an unknown complete length: only its length can be checked, and a shorter
    // answer is either a shorter value or a server fault. Refuse to guess.
    want_len = static_cast<std::uint64_t>(-r.offset);
    if (got != *want_len) {
      throw Error(ErrorCode::kIo, "suffix range answered with " + std::to_string(got) +
                                      " bytes and no complete length; cannot tell whether the value is shorter",
                  ErrorContext{std::string(store), std::string(key), std::nullopt});
    }
    want_first = cr->first;
  }
  if (cr->first != want_first || (want_len && got != *want_len)) {
    return retry("asked " + range_header(r) + ", server sent Content-Range '" + *header + "'");
  }
  out.bytes = std::move(response.body);
  return out;
}

long backoff_ms(const Settings& s, int attempt, double unit) {
  double ceiling = static_cast<double>(s.backoff_ms) * std::ldexp(1.0, std::min(attempt, 30));
  ceiling = std::min(ceiling, static_cast<double>(s.backoff_max_ms));
  return static_cast<long>(std::clamp(unit, 0.0, 1.0) * ceiling);
}

}  // namespace cubestream::http
