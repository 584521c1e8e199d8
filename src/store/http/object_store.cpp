// The shared read path of the object stores: see object_store.hpp.
#include "store/http/object_store.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "cubestream/error.hpp"
#include "store/http/range.hpp"
#include "store/range_math.hpp"

namespace cubestream::http {

namespace {

double random_unit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// A status worth another attempt: the server or something before it is overloaded or failing
// (5xx), asks us to slow down (429 Too Many Requests, RFC 6585), or timed out waiting for our
// request (408).
bool retryable_status(long status) { return status >= 500 || status == 429 || status == 408; }

const char* reason_phrase(long status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

std::string status_text(long status) {
  std::string s = "HTTP " + std::to_string(status);
  const char* p = reason_phrase(status);
  if (*p) s += std::string(" ") + p;
  return s;
}

}  // namespace

void run_parallel(std::size_t n, int threads, const std::function<void(std::size_t)>& fn) {
  const std::size_t t = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, threads)));
  if (t <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mu;
  auto work = [&] {
    for (;;) {
      if (failed.load()) return;
      std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        failed.store(true);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  for (std::size_t k = 1; k < t; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (first) std::rethrow_exception(first);
}

ObjectStore::ObjectStore(std::shared_ptr<Transport> transport, Settings settings)
    : transport_(std::move(transport)), settings_(std::move(settings)) {}

std::string ObjectStore::explain(const Response& response) const { return status_text(response.status); }

Error ObjectStore::status_error(const Response& response, std::string_view method, std::string_view key) const {
  return Error(ErrorCode::kIo, std::string(method) + " failed: " + explain(response),
               ErrorContext{describe(), std::string(key), std::nullopt});
}

Response ObjectStore::execute(std::string_view method, std::string_view key, const HeaderList& extra,
                              std::string_view query, const Check& check, std::optional<std::uint64_t> offset,
                              Bytes* body_buffer) const {
  const int attempts = settings_.retries + 1;
  std::string last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    Response r = transport_->perform(build_request(method, key, extra, query),
                                     body_buffer ? std::move(*body_buffer) : Bytes{});
    long retry_after_ms = 0;
    if (!r.transport_error.empty()) {
      last = "transport error: " + r.transport_error;
    } else if (retryable_status(r.status)) {
      last = explain(r);
      if (auto ra = r.header("retry-after")) {
        // Retry-After in delta-seconds (RFC 9110 §10.2.3); an HTTP-date is ignored.
        try {
          retry_after_ms = std::stol(*ra) * 1000;
        } catch (...) {
          retry_after_ms = 0;
        }
      }
    } else {
      std::string why = check(r);
      if (why.empty()) return r;
      last = why;
    }
    if (body_buffer) *body_buffer = std::move(r.body);  // the next attempt reuses its memory
    if (attempt + 1 == attempts) break;
    long delay = backoff_ms(settings_, attempt, random_unit());
    delay = std::max(delay, std::min(retry_after_ms, settings_.backoff_max_ms));
    if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  }
  throw Error(ErrorCode::kIo,
              std::string(method) + " failed after " + std::to_string(attempts) + " attempt" +
                  (attempts == 1 ? "" : "s") + "; last: " + last,
              ErrorContext{describe(), std::string(key), offset});
}

std::optional<Bytes> ObjectStore::get(std::string_view key) const { return get_range(key, ByteRange::all()); }

std::optional<Bytes> ObjectStore::get_range(std::string_view key, ByteRange range) const {
  Bytes out;
  if (!read_into(key, range, out)) return std::nullopt;
  return out;
}

bool ObjectStore::read_into(std::string_view key, ByteRange range, Bytes& out) const {
  validate_key(key, describe());
  if (range.length == 0 && range.offset >= 0) {
    // No HTTP spelling for an empty range: check that the key exists and the offset is inside.
    auto n = size(key);
    if (!n) return false;
    store_detail::resolve_range(range, *n, describe(), key);
    out.clear();
    return true;
  }
  return ranged_get(key, range, out);
}

bool ObjectStore::ranged_get(std::string_view key, ByteRange range, Bytes& out) const {
  const HeaderList extra = {{"Range", range_header(range)}};
  enum class Outcome { kBytes, kMissing, kEmptyProbe } outcome = Outcome::kMissing;
  Response last = execute("GET", key, extra, "", [&](Response& r) -> std::string {
    if (r.status == 404) {
      on_not_found(r, key);
      outcome = Outcome::kMissing;
      return "";
    }
    if (r.status == 200 || r.status == 206 || r.status == 416) {
      auto got = take_range(range, std::move(r), describe(), key);
      if (got.kind == RangeOutcome::kRetry) return got.why;
      if (got.kind == RangeOutcome::kEmptyProbe) {
        outcome = Outcome::kEmptyProbe;
        return "";
      }
      out = std::move(got.bytes);
      outcome = Outcome::kBytes;
      return "";
    }
    throw status_error(r, "GET", key);
  }, range.offset >= 0 ? std::optional<std::uint64_t>(range.offset) : std::nullopt, &out);
  if (outcome == Outcome::kBytes) return true;
  // No bytes for the caller: the answer's body (a 404 or 416 page) goes back into `out`, so
  // that the caller keeps the memory it lent.
  out = std::move(last.body);
  out.clear();
  if (outcome == Outcome::kMissing) return false;
  // "bytes=0-" is unsatisfiable only for an empty value (RFC 7233 §2.1: a first-byte-pos at or
  // past the length); confirm with the size rather than trust the status alone.
  auto n = size(key);
  if (!n) return false;
  if (*n != 0)
    throw Error(ErrorCode::kIo, "server refused bytes=0- (HTTP 416) for a value of " + std::to_string(*n) + " bytes",
                ErrorContext{describe(), std::string(key), 0});
  return true;
}

std::optional<std::vector<Bytes>> ObjectStore::get_ranges(std::string_view key,
                                                          const std::vector<ByteRange>& ranges) const {
  validate_key(key, describe());
  if (ranges.empty()) {
    if (!size(key)) return std::nullopt;
    return std::vector<Bytes>{};
  }
  struct Item {
    std::size_t index;
    std::uint64_t offset, length;
  };
  std::vector<Item> items;
  bool bounded = true;
  for (const auto& r : ranges) bounded = bounded && r.offset >= 0 && r.length > 0;
  if (!bounded) {
    // Open-ended, suffix or empty ranges: resolve them all against the size first, which also
    // gives every range its precise out-of-range error.
    auto n = size(key);
    if (!n) return std::nullopt;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      auto rr = store_detail::resolve_range(ranges[i], *n, describe(), key);
      items.push_back({i, rr.offset, rr.length});
    }
  } else {
    for (std::size_t i = 0; i < ranges.size(); ++i)
      items.push_back({i, static_cast<std::uint64_t>(ranges[i].offset), static_cast<std::uint64_t>(ranges[i].length)});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.offset < b.offset; });

  // Coalesce: neighbours whose gap is at most coalesce_bytes become one request, since one
  // round trip costs more than reading a small gap. Empty ranges need no bytes at all.
  struct Block {
    std::uint64_t begin, end;
    std::size_t first, last;  // items [first, last)
  };
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < items.size();) {
    if (items[i].length == 0) {
      ++i;
      continue;
    }
    Block b{items[i].offset, items[i].offset + items[i].length, i, i + 1};
    std::size_t j = i + 1;
    while (j < items.size() && settings_.coalesce_bytes >= 0 &&
           items[j].offset <= b.end + static_cast<std::uint64_t>(settings_.coalesce_bytes)) {
      b.end = std::max(b.end, items[j].offset + items[j].length);
      b.last = ++j;
    }
    blocks.push_back(b);
    i = j;
  }

  std::vector<Bytes> out(ranges.size());
  std::atomic<bool> missing{false};
  run_parallel(blocks.size(), settings_.max_in_flight, [&](std::size_t bi) {
    const Block& b = blocks[bi];
    Bytes data;
    if (!ranged_get(key, ByteRange{static_cast<std::int64_t>(b.begin), static_cast<std::int64_t>(b.end - b.begin)}, data)) {
      missing.store(true);
      return;
    }
    for (std::size_t k = b.first; k < b.last; ++k) {
      const Item& it = items[k];
      if (it.length == 0) continue;
      auto off = static_cast<std::ptrdiff_t>(it.offset - b.begin);
      out[it.index].assign(data.begin() + off, data.begin() + off + static_cast<std::ptrdiff_t>(it.length));
    }
  });
  if (missing.load()) return std::nullopt;
  return out;
}

std::optional<std::uint64_t> ObjectStore::size(std::string_view key) const {
  validate_key(key, describe());
  std::optional<std::uint64_t> result;
  execute("HEAD", key, {}, "", [&](Response& r) -> std::string {
    if (r.status == 404) {
      result.reset();
      return "";
    }
    if (r.status == 200) {
      auto len = r.header("content-length");
      std::uint64_t n = 0;
      if (!len) return "HEAD response without Content-Length";
      try {
        std::size_t used = 0;
        n = std::stoull(*len, &used);
        if (used != len->size()) throw std::invalid_argument("trailing characters");
      } catch (...) {
        return "HEAD response with a bad Content-Length '" + *len + "'";
      }
      result = n;
      return "";
    }
    throw status_error(r, "HEAD", key);
  });
  return result;
}

}  // namespace cubestream::http
