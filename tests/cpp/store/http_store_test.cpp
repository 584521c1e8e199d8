// HttpStore against a real nginx on loopback: the shared store conformance suite, real Zarr
// arrays (sharded v3, consolidated v2) compared byte for byte with the file store, and faults
// injected by the tests' own proxy (fault_proxy.py) between the client and nginx.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <set>

#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "store/http/http_store.hpp"
#include "store/store_conformance.hpp"
#include "store/test_servers.hpp"
#include "store/zarr_compare.hpp"

namespace cubestream {
namespace {

using namespace test;

// One nginx per test process, serving a scratch directory that holds the fixture stores and
// whatever the conformance factories write.
struct Served {
  fs::path root = scratch_dir("www");
  Nginx nginx{root};
  std::string error;
  Served() {
    copy_fixture_stores(root);
    error = nginx.start();
  }
};

bool have_nginx() { return find_program("nginx").has_value(); }

Served& served() {
  static Served s;
  return s;
}

#define REQUIRE_NGINX()                                                                                   \
  do {                                                                                                    \
    if (!have_nginx()) GTEST_SKIP() << "nginx is not installed (scripts/setup.sh installs it): skipped"; \
    ASSERT_EQ(served().error, "");                                                                        \
  } while (0)

http::Settings quick_settings() {
  http::Settings s;
  s.retries = 4;
  s.backoff_ms = 2;
  s.backoff_max_ms = 20;
  s.connect_timeout_ms = 2000;
  s.timeout_ms = 10000;
  s.max_in_flight = 4;
  return s;
}

std::vector<StoreFactory> nginx_factories() {
  if (!have_nginx()) return {};  // HttpStoreServers.NginxIsInstalled reports the skip
  return {{"nginx",
           [](const auto& values) {
             static int n = 0;
             auto& s = served();
             if (!s.error.empty()) throw std::runtime_error(s.error);
             const std::string dir = "conformance_" + std::to_string(n++);
             for (const auto& [k, v] : values) {
               auto p = s.root / dir / k;
               fs::create_directories(p.parent_path());
               std::ofstream(p, std::ios::binary) << v;
             }
             return http::open_http_store(s.nginx.url() + "/" + dir, quick_settings());
           },
           /*lists=*/false}};
}

INSTANTIATE_TEST_SUITE_P(Http, StoreConformance, ::testing::ValuesIn(nginx_factories()),
                         [](const auto& info) { return info.param.name; });

TEST(HttpStoreServers, NginxIsInstalled) {
  if (!have_nginx()) GTEST_SKIP() << "nginx is not installed (scripts/setup.sh installs it): the HTTP store tests are skipped";
  ASSERT_EQ(served().error, "");
}

TEST(HttpStore, ReadsShardedAndConsolidatedStoresLikeTheFileStore) {
  REQUIRE_NGINX();
  expect_fixture_stores_match(served().nginx.url(), 4);
}

TEST(HttpStore, GroupsWithoutConsolidatedMetadataSayWhyTheyCannotList) {
  REQUIRE_NGINX();
  auto store = open_store(served().nginx.url() + "/tensorstore/sharded.zarr");
  Group g = Group::open(store);
  EXPECT_FALSE(g.consolidated());
  try {
    g.array_names();
    FAIL() << "plain HTTP cannot list";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("consolidated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_store("gopher://example/x"), Error);
}

TEST(HttpStore, ParallelCoalescedRangesMatchTheFile) {
  REQUIRE_NGINX();
  std::string v(300000, '\0');
  std::mt19937 rng(3);
  for (auto& c : v) c = static_cast<char>(rng());
  std::ofstream(served().root / "ranges.bin", std::ios::binary) << v;
  for (std::int64_t gap : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1} << 20}) {
    auto settings = quick_settings();
    settings.coalesce_bytes = gap;
    auto s = http::open_http_store(served().nginx.url(), settings);
    std::vector<ByteRange> ranges;
    for (int i = 0; i < 40; ++i) {
      std::int64_t off = rng() % 290000;
      ranges.push_back({off, 1 + static_cast<std::int64_t>(rng() % 9000)});
    }
    ranges.push_back(ByteRange::suffix(100));
    ranges.push_back({299990, -1});
    auto parts = s->get_ranges("ranges.bin", ranges);
    ASSERT_TRUE(parts.has_value());
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      std::int64_t off = ranges[i].offset < 0 ? 300000 + ranges[i].offset : ranges[i].offset;
      std::int64_t len = ranges[i].offset < 0 ? -ranges[i].offset : (ranges[i].length < 0 ? 300000 - off : ranges[i].length);
      ASSERT_EQ(std::string((*parts)[i].begin(), (*parts)[i].end()), v.substr(off, len)) << "gap " << gap << " range " << i;
    }
    EXPECT_FALSE(s->get_ranges("nothing.bin", {{0, 10}, {20, 10}}).has_value());
  }
}

// Reads into one buffer, as the array reader does (one buffer per thread, reused for every
// chunk): `buf` must keep its memory for every answer, found or not. The check is on the
// buffer's address, not on time: before this was kept, every 2.2 MB chunk GET went into a fresh
// allocation and paid a page fault per 4 KiB page, which made a read over loopback 2.5-7x slower
// than curl fetching the same ranges (docs/benchmarks.md, "Object store on loopback").
void expect_read_into_keeps_the_buffer(const Store& s, const std::string& key, const std::string& value,
                                       const std::string& missing_key) {
  Bytes buf;
  buf.reserve(value.size());
  const std::uint8_t* memory = buf.data();
  const std::int64_t n = static_cast<std::int64_t>(value.size());
  struct Case {
    ByteRange range;
    std::string want;
  };
  const std::vector<Case> cases = {{ByteRange::all(), value},
                                   {{1000, n / 2}, value.substr(1000, value.size() / 2)},
                                   {ByteRange::suffix(n / 3), value.substr(value.size() - value.size() / 3)},
                                   {{n - 10, -1}, value.substr(value.size() - 10)},
                                   {{100, 0}, ""}};
  for (int round = 0; round < 3; ++round) {
    for (const Case& c : cases) {
      SCOPED_TRACE("range " + std::to_string(c.range.offset) + "+" + std::to_string(c.range.length));
      ASSERT_TRUE(s.read_into(key, c.range, buf));
      EXPECT_EQ(std::string(buf.begin(), buf.end()), c.want);
      EXPECT_EQ(buf.data(), memory) << "the response went into new memory, not the caller's buffer";
    }
    EXPECT_FALSE(s.read_into(missing_key, {0, 100}, buf));
    EXPECT_EQ(buf.data(), memory) << "a 404 answer took the caller's buffer away";
  }
}

TEST(HttpStore, ReadIntoReceivesIntoTheCallersBuffer) {
  REQUIRE_NGINX();
  std::string value(1 << 20, '\0');
  std::mt19937 rng(5);
  for (auto& c : value) c = static_cast<char>(rng());
  fs::create_directories(served().root / "reuse");
  std::ofstream(served().root / "reuse" / "blob", std::ios::binary) << value;
  auto s = http::open_http_store(served().nginx.url(), quick_settings());
  expect_read_into_keeps_the_buffer(*s, "reuse/blob", value, "reuse/missing");
}

// Requests one after the other keep one connection alive: a new TCP connection per request
// would be a round trip (and, over TLS, a handshake) each. nginx's access log says which
// connection served each request.
TEST(HttpStore, SequentialRequestsShareOneConnection) {
  REQUIRE_NGINX();
  std::string value(300000, 'x');
  fs::create_directories(served().root / "keepalive");
  std::ofstream(served().root / "keepalive" / "blob", std::ios::binary) << value;
  auto s = http::open_http_store(served().nginx.url(), quick_settings());
  Bytes buf;
  constexpr int kReads = 20;
  for (int i = 0; i < kReads; ++i) {
    ASSERT_TRUE(s->read_into("keepalive/blob", {i * 1000, 100000}, buf));
    ASSERT_EQ(s->size("keepalive/blob"), value.size());
  }
  EXPECT_FALSE(s->get("keepalive/missing").has_value());
  auto log = served().nginx.logged("/keepalive/", 2 * kReads + 1);
  ASSERT_EQ(log.size(), 2u * kReads + 1);
  std::set<std::string> connections;
  for (const auto& r : log) connections.insert(r.connection);
  EXPECT_EQ(connections.size(), 1u) << "requests of one thread, one after the other, used " << connections.size()
                                     << " connections";
}

// ---- fault injection ------------------------------------------------------------------

struct Proxied {
  FaultProxy proxy;
  std::string error;
  std::string value;  // "faults/blob" in the served directory
  Proxied() {
    if (!served().error.empty()) {
      error = served().error;
      return;
    }
    value.resize(200000);
    std::mt19937 rng(11);
    for (auto& c : value) c = static_cast<char>(rng());
    fs::create_directories(served().root / "faults");
    std::ofstream(served().root / "faults" / "blob", std::ios::binary) << value;
    error = proxy.start(served().nginx.port());
  }

  void set(const std::string& query) {
    auto t = http::make_curl_transport(quick_settings());
    http::Request r;
    r.url = proxy.url() + "/__fault__?" + query;
    auto resp = t->perform(r);
    ASSERT_EQ(resp.status, 200) << resp.transport_error;
  }

  nlohmann::json stats() {
    auto t = http::make_curl_transport(quick_settings());
    http::Request r;
    r.url = proxy.url() + "/__stats__";
    auto resp = t->perform(r);
    return nlohmann::json::parse(std::string(resp.body.begin(), resp.body.end()));
  }

  std::shared_ptr<Store> store(http::Settings s = quick_settings()) { return http::open_http_store(proxy.url(), s); }
};

Proxied& proxied() {
  static Proxied p;
  return p;
}

#define REQUIRE_PROXY()                                  \
  do {                                                   \
    REQUIRE_NGINX();                                     \
    ASSERT_EQ(proxied().error, "") << proxied().proxy.log(); \
  } while (0)

std::string str(const Bytes& b) { return std::string(b.begin(), b.end()); }

// Each fault, injected `count` times, is survived by retrying: the data is right, and the proxy
// did inject what it was told (so a test cannot pass by never meeting the fault).
TEST(HttpFaults, EveryTransientFaultEndsInTheRightBytes) {
  REQUIRE_PROXY();
  auto& p = proxied();
  auto s = p.store();
  for (const char* mode : {"status&status=503", "status&status=429", "status&status=500", "reset", "truncate",
                           "long_length", "short_length", "wrong_range"}) {
    SCOPED_TRACE(mode);
    p.set(std::string("mode=") + mode + "&count=3");
    EXPECT_EQ(str(*s->get_range("faults/blob", {1000, 50000})), p.value.substr(1000, 50000));
    auto st = p.stats();
    EXPECT_EQ(st["faults"], 3);
    EXPECT_EQ(st["requests"], 4) << "three faults, one good answer";
    p.set(std::string("mode=") + mode + "&count=2");
    EXPECT_EQ(str(*s->get("faults/blob")), p.value);
  }
  // A 503 storm on HEAD as well.
  p.set("mode=status&status=503&count=3");
  EXPECT_EQ(s->size("faults/blob").value(), p.value.size());
  p.set("mode=none");
}

// A retried attempt receives into the same memory as the failed one: execute() hands the
// caller's buffer to each attempt and takes it back after a failure.
TEST(HttpFaults, RetriesKeepTheCallersBuffer) {
  REQUIRE_PROXY();
  auto& p = proxied();
  auto s = p.store();
  for (const char* mode : {"status&status=503", "truncate", "reset", "short_length", "wrong_range"}) {
    SCOPED_TRACE(mode);
    Bytes buf;
    buf.reserve(p.value.size());
    const std::uint8_t* memory = buf.data();
    p.set(std::string("mode=") + mode + "&count=2");
    ASSERT_TRUE(s->read_into("faults/blob", {1000, 50000}, buf));
    EXPECT_EQ(str(buf), p.value.substr(1000, 50000));
    EXPECT_EQ(buf.data(), memory);
    EXPECT_EQ(p.stats()["faults"], 2);
  }
  p.set("mode=none");
}

TEST(HttpFaults, ServersThatIgnoreRangeStillGiveTheAskedBytes) {
  REQUIRE_PROXY();
  auto& p = proxied();
  p.set("mode=ignore_range&count=-1");
  auto s = p.store();
  EXPECT_EQ(str(*s->get_range("faults/blob", {123, 4567})), p.value.substr(123, 4567));
  EXPECT_EQ(str(*s->get_range("faults/blob", ByteRange::suffix(77))), p.value.substr(p.value.size() - 77));
  EXPECT_EQ(p.stats()["faults"], 2);
  p.set("mode=none");
}

TEST(HttpFaults, PersistentFaultsEndInAClearError) {
  REQUIRE_PROXY();
  auto& p = proxied();
  auto settings = quick_settings();
  settings.retries = 2;
  auto s = p.store(settings);
  struct Case {
    const char* mode;
    const char* expect;  // in the message
  };
  for (Case c : {Case{"status&status=503", "503"}, Case{"reset", "transport error"}, Case{"wrong_range", "Content-Range"},
                 Case{"short_length", "Content-Range"}}) {
    SCOPED_TRACE(c.mode);
    p.set(std::string("mode=") + c.mode + "&count=-1");
    try {
      s->get_range("faults/blob", {10, 100});
      FAIL() << "must not succeed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_EQ(e.context().key, "faults/blob");
      EXPECT_EQ(e.context().store, s->describe());
      const std::string what = e.what();
      EXPECT_NE(what.find("3 attempts"), std::string::npos) << what;
      EXPECT_NE(what.find(c.expect), std::string::npos) << what;
    }
    EXPECT_EQ(p.stats()["requests"], 3);
  }
  p.set("mode=none");
}

TEST(HttpFaults, SlowResponsesWaitOrTimeOutAndRetry) {
  REQUIRE_PROXY();
  auto& p = proxied();
  // Slower than usual but within the timeout: one attempt, right bytes.
  p.set("mode=slow&delay_ms=300&count=1");
  EXPECT_EQ(str(*p.store()->get_range("faults/blob", {0, 1000})), p.value.substr(0, 1000));
  EXPECT_EQ(p.stats()["requests"], 1);
  // Slower than the timeout once: the attempt is abandoned and the retry succeeds.
  auto settings = quick_settings();
  settings.timeout_ms = 250;
  p.set("mode=slow&delay_ms=1500&count=1");
  EXPECT_EQ(str(*p.store(settings)->get_range("faults/blob", {0, 1000})), p.value.substr(0, 1000));
  EXPECT_EQ(p.stats()["requests"], 2);
  // Always too slow: a clear timeout error.
  settings.retries = 1;
  p.set("mode=slow&delay_ms=1500&count=-1");
  try {
    p.store(settings)->get_range("faults/blob", {0, 1000});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("imeout"), std::string::npos) << e.what();
  }
  p.set("mode=none");
}

// Random faults of every kind under a whole parallel read of real sharded arrays: the arrays
// come out identical to the local ones (or the read fails; it never returns wrong data).
TEST(HttpFaults, ChaosDuringArrayReadsNeverGivesWrongData) {
  REQUIRE_PROXY();
  auto& p = proxied();
  auto settings = quick_settings();
  settings.retries = 12;
  p.set("mode=chaos&p=0.2&seed=5&count=-1");
  auto remote = http::open_http_store(p.proxy.url() + "/tensorstore/sharded.zarr", settings);
  auto local = open_store((tensorstore_dir() / "sharded.zarr").string());
  for (const char* a : {"f4_end_zstd", "f4_nested_sharding", "i2_end_blosc_lz4_shuffle", "f8_transpose_be_gzip_crc32c"})
    expect_same_array(remote, local, a, 4);
  EXPECT_GT(p.stats()["faults"].get<int>(), 0);
  p.set("mode=none");
}

}  // namespace
}  // namespace cubestream
