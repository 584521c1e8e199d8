// The part of every object store (plain HTTP, S3) that does not depend on the protocol's
// addressing and signing: ranged GETs with their checks, HEAD for sizes, parallel and coalesced
// range batches, and the retry loop with full-jitter backoff.
//
// A subclass says how to address and sign a request for a key (build_request, called afresh for
// every attempt so that signatures carry a current date), how to read a failed response
// (explain), and how to list.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "store/http/transport.hpp"

namespace cubestream::http {

class ObjectStore : public Store {
 public:
  ObjectStore(std::shared_ptr<Transport> transport, Settings settings);

  std::optional<Bytes> get(std::string_view key) const override;
  std::optional<Bytes> get_range(std::string_view key, ByteRange range) const override;
  // Receives the body straight into `out`'s memory (see Transport::perform): the reader calls
  // this with one buffer per thread, so a whole-array read allocates no memory per request.
  bool read_into(std::string_view key, ByteRange range, Bytes& out) const override;
  std::optional<std::vector<Bytes>> get_ranges(std::string_view key,
                                               const std::vector<ByteRange>& ranges) const override;
  std::optional<std::uint64_t> size(std::string_view key) const override;

  const Settings& settings() const { return settings_; }

 protected:
  // The request for `method` on `key` (validated, may be "" for the store root or a listing),
  // with `extra` headers (Range) and `query` (already canonical "a=b&c=d", or empty).
  virtual Request build_request(std::string_view method, std::string_view key, const HeaderList& extra,
                                std::string_view query) const = 0;

  // A message for a response with an unexpected status (no secrets: subclasses must not copy
  // request headers into it). The default names the status.
  virtual std::string explain(const Response& response) const;

  // Called for a 404 answer to a read of `key`: return normally when it means "no such key",
  // throw when it means something worse (S3: the bucket does not exist).
  virtual void on_not_found(const Response& response, std::string_view key) const {}

  // Decides about one response that arrived with an HTTP status other than a retryable one:
  // returns "" to accept it, or a reason to try again; throws to fail at once.
  using Check = std::function<std::string(Response&)>;

  // Performs method/key with retries: transport errors (connection refused or reset, timeouts,
  // short bodies), HTTP 5xx, 429 and 408, and whatever `check` asks to retry are tried again
  // after a full-jitter backoff (a server's Retry-After is honoured up to backoff_max_ms).
  // After the last attempt: Error(kIo) naming the store, the key, the attempts and the last
  // failure. With `body_buffer`, every attempt receives its body into that buffer's memory
  // (Transport::perform): the buffer is moved into each attempt and back after a failed one;
  // the returned Response's body is it.
  Response execute(std::string_view method, std::string_view key, const HeaderList& extra, std::string_view query,
                   const Check& check, std::optional<std::uint64_t> offset = std::nullopt,
                   Bytes* body_buffer = nullptr) const;

  // Error(kIo) for an unexpected status, with explain()'s message.
  Error status_error(const Response& response, std::string_view method, std::string_view key) const;

 private:
  // One ranged GET of a non-empty range into `out` (its memory reused); false when the key
  // does not exist.
  bool ranged_get(std::string_view key, ByteRange range, Bytes& out) const;

  std::shared_ptr<Transport> transport_;
  Settings settings_;
};

// Runs fn(i) for i in [0, n) on up to `threads` threads (the caller's included); the first
// exception is re-thrown after all started items finished, items not started are skipped.
void run_parallel(std::size_t n, int threads, const std::function<void(std::size_t)>& fn);

}  // namespace cubestream::http
