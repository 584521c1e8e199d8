// The protocol half of the object stores without a network: Range headers, Content-Range
// checks, backoff, and the retry loop driven by a scripted transport.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "cubestream/error.hpp"
#include "store/http/http_store.hpp"
#include "store/http/range.hpp"

namespace cubestream::http {
namespace {

Response resp(long status, std::string body, HeaderList headers = {}) {
  Response r;
  r.status = status;
  r.body.assign(body.begin(), body.end());
  r.headers = std::move(headers);
  return r;
}

std::string str(const Bytes& b) { return std::string(b.begin(), b.end()); }

TEST(HttpRange, HeaderSpelling) {
  EXPECT_EQ(range_header({0, -1}), "bytes=0-");
  EXPECT_EQ(range_header({10, -1}), "bytes=10-");
  EXPECT_EQ(range_header({10, 5}), "bytes=10-14");
  EXPECT_EQ(range_header(ByteRange::suffix(16)), "bytes=-16");
}

TEST(HttpRange, ParsesContentRange) {
  auto a = parse_content_range("bytes 0-9/100");
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->satisfied);
  EXPECT_EQ(a->first, 0u);
  EXPECT_EQ(a->last, 9u);
  EXPECT_EQ(a->complete.value(), 100u);
  auto b = parse_content_range("bytes 5-9/*");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->complete);
  auto c = parse_content_range("bytes */42");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->satisfied);
  EXPECT_EQ(c->complete.value(), 42u);
  for (const char* bad : {"bytes 9-0/100", "bytes 0-100/100", "items 0-1/2", "bytes 0-1", "bytes */*", "bytes a-b/3", ""})
    EXPECT_FALSE(parse_content_range(bad)) << bad;
}

TEST(HttpRange, TakesOnlyTheAskedBytes) {
  // 206 with the right Content-Range.
  auto ok = take_range({2, 3}, resp(206, "cde", {{"content-range", "bytes 2-4/10"}}), "s", "k");
  EXPECT_EQ(ok.kind, RangeOutcome::kBytes);
  EXPECT_EQ(str(ok.bytes), "cde");
  // Suffix and open-ended ranges resolve against the complete length.
  EXPECT_EQ(str(take_range(ByteRange::suffix(2), resp(206, "ij", {{"content-range", "bytes 8-9/10"}}), "s", "k").bytes), "ij");
  EXPECT_EQ(str(take_range({7, -1}, resp(206, "hij", {{"content-range", "bytes 7-9/10"}}), "s", "k").bytes), "hij");
  // Body shorter or longer than Content-Range says: retry, never bytes.
  EXPECT_EQ(take_range({2, 3}, resp(206, "cd", {{"content-range", "bytes 2-4/10"}}), "s", "k").kind, RangeOutcome::kRetry);
  EXPECT_EQ(take_range({2, 3}, resp(206, "cdef", {{"content-range", "bytes 2-4/10"}}), "s", "k").kind, RangeOutcome::kRetry);
  // Another range than asked: retry.
  EXPECT_EQ(take_range({2, 3}, resp(206, "def", {{"content-range", "bytes 3-5/10"}}), "s", "k").kind, RangeOutcome::kRetry);
  // 206 without Content-Range: retry.
  EXPECT_EQ(take_range({2, 3}, resp(206, "cde"), "s", "k").kind, RangeOutcome::kRetry);
  // The value is shorter than the range: kOutOfRange, as every store reports it.
  try {
    take_range({8, 5}, resp(206, "ij", {{"content-range", "bytes 8-9/10"}}), "s", "k");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    EXPECT_EQ(e.context().key, "k");
  }
  // 200: the server ignored Range; the asked part is cut from the whole value.
  EXPECT_EQ(str(take_range({2, 3}, resp(200, "abcdefghij"), "s", "k").bytes), "cde");
  EXPECT_EQ(str(take_range(ByteRange::suffix(3), resp(200, "abcdefghij"), "s", "k").bytes), "hij");
  EXPECT_THROW(take_range({9, 5}, resp(200, "abcdefghij"), "s", "k"), Error);
  // 416: out of range, a probe for "bytes=0-" (maybe an empty value), or a confused server.
  EXPECT_THROW(take_range({20, -1}, resp(416, "", {{"content-range", "bytes */10"}}), "s", "k"), Error);
  EXPECT_EQ(take_range({0, -1}, resp(416, "", {{"content-range", "bytes */0"}}), "s", "k").kind, RangeOutcome::kEmptyProbe);
  EXPECT_EQ(take_range({2, 3}, resp(416, "", {{"content-range", "bytes */10"}}), "s", "k").kind, RangeOutcome::kRetry);
}

TEST(HttpRange, FullJitterBackoffStaysUnderItsCeiling) {
  Settings s;
  s.backoff_ms = 100;
  s.backoff_max_ms = 1000;
  EXPECT_EQ(backoff_ms(s, 0, 0.0), 0);
  EXPECT_EQ(backoff_ms(s, 0, 0.999), 99);
  EXPECT_EQ(backoff_ms(s, 2, 0.5), 200);
  EXPECT_EQ(backoff_ms(s, 10, 0.999), 999) << "capped at backoff_max_ms";
  EXPECT_EQ(backoff_ms(s, 1000, 0.5), 500) << "no overflow for large attempt numbers";
}

// A transport that answers from a script and records what it was asked.
class Scripted : public Transport {
 public:
  std::deque<Response> answers;
  std::vector<Request> seen;
  std::mutex mu;
  using Transport::perform;
  Response perform(const Request& r, Bytes) override {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
    if (answers.empty()) return resp(500, "script ran out");
    Response a = std::move(answers.front());
    answers.pop_front();
    return a;
  }
};

Settings fast() {
  Settings s;
  s.retries = 3;
  s.backoff_ms = 1;
  s.backoff_max_ms = 2;
  s.max_in_flight = 1;
  return s;
}

TEST(HttpRetry, RetriesTransientFailuresThenSucceeds) {
  auto t = std::make_shared<Scripted>();
  Response reset;
  reset.transport_error = "Failure when receiving data from the peer";
  t->answers.push_back(resp(503, "busy"));
  t->answers.push_back(std::move(reset));
  t->answers.push_back(resp(429, "slow down", {{"retry-after", "0"}}));
  t->answers.push_back(resp(206, "bcd", {{"content-range", "bytes 1-3/5"}}));
  auto s = open_http_store("http://user:pw@example.test/data.zarr", fast(), t);
  EXPECT_EQ(str(*s->get_range("a/b", {1, 3})), "bcd");
  ASSERT_EQ(t->seen.size(), 4u);
  EXPECT_EQ(t->seen[0].url, "http://user:pw@example.test/data.zarr/a/b");
  EXPECT_EQ(t->seen[0].headers.at(0), (std::pair<std::string, std::string>{"Range", "bytes=1-3"}));
  EXPECT_EQ(s->describe(), "http://example.test/data.zarr") << "no password in descriptions";
}

TEST(HttpRetry, GivesUpWithAClearErrorAfterTheLastAttempt) {
  auto t = std::make_shared<Scripted>();
  for (int i = 0; i < 4; ++i) t->answers.push_back(resp(503, "busy"));
  auto s = open_http_store("http://user:pw@example.test/data.zarr", fast(), t);
  try {
    s->get("c/0/0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_EQ(e.context().key, "c/0/0");
    const std::string what = e.what();
    EXPECT_NE(what.find("4 attempts"), std::string::npos) << what;
    EXPECT_NE(what.find("503"), std::string::npos) << what;
    EXPECT_NE(what.find("http://example.test/data.zarr"), std::string::npos) << what;
    EXPECT_EQ(what.find("pw"), std::string::npos) << what;
  }
  EXPECT_EQ(t->seen.size(), 4u);
}

TEST(HttpRetry, ClientErrorsAndMissingKeysAreNotRetried) {
  auto t = std::make_shared<Scripted>();
  t->answers.push_back(resp(404, "no"));
  t->answers.push_back(resp(403, "denied"));
  auto s = open_http_store("http://example.test/d", fast(), t);
  EXPECT_FALSE(s->get("x").has_value());
  try {
    s->get("y");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("403"), std::string::npos);
  }
  EXPECT_EQ(t->seen.size(), 2u);
}

TEST(HttpRetry, WrongBytesAreRetriedNeverReturned) {
  auto t = std::make_shared<Scripted>();
  t->answers.push_back(resp(206, "XYZ", {{"content-range", "bytes 2-4/5"}}));  // other bytes than asked
  t->answers.push_back(resp(206, "bc", {{"content-range", "bytes 1-3/5"}}));   // truncated body
  t->answers.push_back(resp(206, "bcd", {{"content-range", "bytes 1-3/5"}}));
  auto s = open_http_store("http://example.test/d", fast(), t);
  EXPECT_EQ(str(*s->get_range("k", {1, 3})), "bcd");
  EXPECT_EQ(t->seen.size(), 3u);
}

TEST(HttpRetry, EmptyValuesAndZeroLengthRanges) {
  auto t = std::make_shared<Scripted>();
  t->answers.push_back(resp(416, "", {{"content-range", "bytes */0"}}));  // GET bytes=0- of an empty value
  t->answers.push_back(resp(200, "", {{"content-length", "0"}}));         // its HEAD
  t->answers.push_back(resp(200, "", {{"content-length", "10"}}));        // HEAD for a zero-length range
  auto s = open_http_store("http://example.test/d", fast(), t);
  EXPECT_EQ(s->get("empty")->size(), 0u);
  EXPECT_EQ(s->get_range("k", {10, 0})->size(), 0u);
  EXPECT_EQ(t->seen[1].method, "HEAD");
}

TEST(HttpStoreUrl, RefusesUrlsItCannotServe) {
  auto t = std::make_shared<Scripted>();
  EXPECT_THROW(open_http_store("ftp://x/y", fast(), t), Error);
  EXPECT_THROW(open_http_store("http:///y", fast(), t), Error);
  EXPECT_THROW(open_http_store("http://x/y?sig=1", fast(), t), Error);
  EXPECT_EQ(redact_url("https://u:p@h:1/a@b"), "https://h:1/a@b");
  EXPECT_EQ(percent_encode("c/0 1/é", true), "c/0%201/%C3%A9");
}

}  // namespace
}  // namespace cubestream::http
