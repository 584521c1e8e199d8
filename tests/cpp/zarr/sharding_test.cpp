// Sharded Zarr v3 arrays built by hand (so every byte of the format is under test control):
// partial reads fetch only the needed inner chunks; index at start and end; empty-chunk
// markers; missing shards; edge shards; nested codecs; and the corruptions a reader must catch
// (index pointing outside the shard, crc32c mismatch, truncated shard).
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <random>

#include "codec/bytes_to_bytes/crc32c_host.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "sample/selection_test_stores.hpp"
#include "store/hint_recording_store.hpp"

namespace cubestream {
namespace {

using nlohmann::json;

struct ShardedFixture {
  std::vector<std::int64_t> shape{10, 13};
  std::vector<std::int64_t> shard{4, 6};
  std::vector<std::int64_t> inner{2, 3};
  bool index_at_start = false;
  bool inner_zstd = false;
  bool inner_crc = false;
  std::vector<float> values;  // the full array, C order
  float fill = -9999.0f;

  // Inner chunks (global inner-grid coordinates) to leave empty, and shards to leave out.
  std::function<bool(std::int64_t, std::int64_t)> inner_empty = [](std::int64_t, std::int64_t) { return false; };
  std::function<bool(std::int64_t, std::int64_t)> shard_missing = [](std::int64_t, std::int64_t) { return false; };

  json metadata() const {
    json inner_codecs = json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
    if (inner_zstd) inner_codecs.push_back({{"name", "zstd"}, {"configuration", {{"level", 3}, {"checksum", false}}}});
    if (inner_crc) inner_codecs.push_back({{"name", "crc32c"}});
    return {{"zarr_format", 3},
            {"node_type", "array"},
            {"shape", shape},
            {"data_type", "float32"},
            {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", shard}}}}},
            {"chunk_key_encoding", {{"name", "default"}}},
            {"fill_value", fill},
            {"codecs",
             json::array({{{"name", "sharding_indexed"},
                           {"configuration",
                            {{"chunk_shape", inner},
                             {"codecs", inner_codecs},
                             {"index_codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                                           {{"name", "crc32c"}}})},
                             {"index_location", index_at_start ? "start" : "end"}}}}})},
            {"dimension_names", {"y", "x"}}};
  }

  static void put_crc(Bytes& b) {
    std::uint32_t c = codec::crc32c(0, b.data(), b.size());
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::uint8_t>(c >> (8 * i)));
  }

  Bytes encode_inner(std::int64_t gy, std::int64_t gx) const {
    Bytes raw;
    for (std::int64_t y = 0; y < inner[0]; ++y)
      for (std::int64_t x = 0; x < inner[1]; ++x) {
        std::int64_t Y = gy * inner[0] + y, X = gx * inner[1] + x;
        float v = (Y < shape[0] && X < shape[1]) ? values[Y * shape[1] + X] : 12345.0f;  // padding beyond the edge
        std::uint8_t b[4];
        std::memcpy(b, &v, 4);
        raw.insert(raw.end(), b, b + 4);
      }
    if (inner_zstd) {
      Bytes z(ZSTD_compressBound(raw.size()));
      z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3));
      raw = z;
    }
    if (inner_crc) put_crc(raw);
    return raw;
  }

  std::shared_ptr<MemoryStore> build() {
    std::mt19937 rng(5);
    std::normal_distribution<float> n(0, 1);
    if (values.empty()) {
      values.resize(shape[0] * shape[1]);
      for (auto& v : values) v = 280.0f + n(rng);
    }
    auto store = std::make_shared<MemoryStore>("sharded");
    store->set("a/zarr.json", metadata().dump());
    const std::int64_t per_y = shard[0] / inner[0], per_x = shard[1] / inner[1];
    for (std::int64_t sy = 0; sy * shard[0] < shape[0]; ++sy)
      for (std::int64_t sx = 0; sx * shard[1] < shape[1]; ++sx) {
        if (shard_missing(sy, sx)) continue;
        std::vector<Bytes> chunks;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> index;
        const std::uint64_t index_bytes = per_y * per_x * 16 + 4;
        std::uint64_t offset = index_at_start ? index_bytes : 0;
        Bytes data;
        for (std::int64_t iy = 0; iy < per_y; ++iy)
          for (std::int64_t ix = 0; ix < per_x; ++ix) {
            std::int64_t gy = sy * per_y + iy, gx = sx * per_x + ix;
            if (inner_empty(gy, gx)) {
              index.push_back({~0ull, ~0ull});
              continue;
            }
            Bytes c = encode_inner(gy, gx);
            index.push_back({offset, c.size()});
            offset += c.size();
            data.insert(data.end(), c.begin(), c.end());
          }
        Bytes idx;
        for (auto [o, nb] : index)
          for (std::uint64_t v : {o, nb})
            for (int i = 0; i < 8; ++i) idx.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        put_crc(idx);
        Bytes shard_bytes;
        if (index_at_start) {
          shard_bytes = idx;
          shard_bytes.insert(shard_bytes.end(), data.begin(), data.end());
        } else {
          shard_bytes = data;
          shard_bytes.insert(shard_bytes.end(), idx.begin(), idx.end());
        }
        store->set("a/c/" + std::to_string(sy) + "/" + std::to_string(sx), std::move(shard_bytes));
      }
    return store;
  }

  float expected(std::int64_t y, std::int64_t x) const {
    const std::int64_t gy = y / inner[0], gx = x / inner[1];
    if (shard_missing(y / shard[0], x / shard[1]) || inner_empty(gy, gx)) return fill;
    return values[y * shape[1] + x];
  }
};

void check_region(const Array& a, const ShardedFixture& f, Region r, int threads) {
  std::vector<float> out(r.num_elements());
  a.read(r, out.data(), out.size() * 4, ReadOptions{threads});
  for (std::int64_t y = 0; y < r.shape[0]; ++y)
    for (std::int64_t x = 0; x < r.shape[1]; ++x)
      ASSERT_EQ(out[y * r.shape[1] + x], f.expected(r.start[0] + y, r.start[1] + x))
          << "at (" << r.start[0] + y << ", " << r.start[1] + x << ") region start " << r.start[0] << "," << r.start[1];
}

class Sharding : public ::testing::TestWithParam<std::tuple<bool, bool, bool>> {};

TEST_P(Sharding, RandomRegionsMatch) {
  ShardedFixture f;
  std::tie(f.index_at_start, f.inner_zstd, f.inner_crc) = GetParam();
  f.inner_empty = [](std::int64_t gy, std::int64_t gx) { return (gy * 7 + gx) % 5 == 0; };
  f.shard_missing = [](std::int64_t sy, std::int64_t sx) { return sy == 1 && sx == 1; };
  auto store = f.build();
  Array a = Array::open(store, "a");
  ASSERT_TRUE(a.metadata().inner_chunk_shape.has_value());
  EXPECT_EQ(*a.metadata().inner_chunk_shape, f.inner);
  EXPECT_EQ(a.metadata().dimension_names, (std::vector<std::string>{"y", "x"}));
  std::mt19937 rng(99);
  check_region(a, f, Region{{0, 0}, f.shape}, 1);
  check_region(a, f, Region{{0, 0}, f.shape}, 4);
  for (int i = 0; i < 200; ++i) {
    Region r;
    for (int d = 0; d < 2; ++d) {
      std::int64_t s = rng() % (f.shape[d] + 1);
      std::int64_t e = s + rng() % (f.shape[d] - s + 1);
      r.start.push_back(s);
      r.shape.push_back(e - s);
    }
    check_region(a, f, r, 1 + i % 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, Sharding,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool()));

TEST(ShardingPartialRead, FetchesOnlyTheNeededInnerChunks) {
  ShardedFixture f;
  auto store = f.build();
  Array a = Array::open(store, "a");
  // One element: one shard index + one inner chunk.
  std::vector<float> one(1);
  ReadStats s = a.read(Region{{5, 7}, {1, 1}}, one.data(), 4, ReadOptions{1});
  EXPECT_EQ(s.chunks_read, 1u);
  EXPECT_EQ(one[0], f.values[5 * 13 + 7]);
  EXPECT_EQ(s.bytes_fetched, (2 * 2 * 16 + 4) + 2 * 3 * 4u) << "index of a 2x2 inner grid plus one raw inner chunk";
  // A 2x3 block aligned to one inner chunk decodes straight into the output.
  std::vector<float> block(6);
  s = a.read(Region{{2, 3}, {2, 3}}, block.data(), 24, ReadOptions{1});
  EXPECT_EQ(s.chunks_read, 1u);
  EXPECT_EQ(s.chunks_decoded_in_place, 1u);
}

TEST(ShardingPartialRead, IndexesAreCachedAndNeighbouringInnerChunksShareOneRequest) {
  ShardedFixture f;
  auto store = f.build();
  Array a = Array::open(store, "a");
  std::vector<float> out(4 * 6);
  // Shard (0,0) whole: its 2x2 inner chunks lie back to back, so one ranged request.
  ReadStats first = a.read(Region{{0, 0}, {4, 6}}, out.data(), out.size() * 4, ReadOptions{1});
  EXPECT_EQ(first.chunks_read, 4u);
  EXPECT_EQ(first.chunk_requests, 1u);
  EXPECT_EQ(first.shard_index_cache_hits, 0u);
  EXPECT_EQ(first.bytes_fetched, (2 * 2 * 16 + 4) + 4 * (2 * 3 * 4u));
  ReadStats second = a.read(Region{{0, 0}, {4, 6}}, out.data(), out.size() * 4, ReadOptions{1});
  EXPECT_EQ(second.shard_index_cache_hits, 1u);
  EXPECT_EQ(second.bytes_fetched, 4 * (2 * 3 * 4u)) << "the index is not fetched again";
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) EXPECT_EQ(out[y * 6 + x], f.expected(y, x));
  // A shard rewritten with another size is noticed by the same Array: its index is read again.
  ShardedFixture g;
  g.values = f.values;
  g.inner_empty = [](std::int64_t gy, std::int64_t gx) { return gy == 0 && gx == 0; };
  store->set("a/c/0/0", *g.build()->get("a/c/0/0"));
  ReadStats third = a.read(Region{{0, 0}, {4, 6}}, out.data(), out.size() * 4, ReadOptions{1});
  EXPECT_EQ(third.shard_index_cache_hits, 0u);
  EXPECT_EQ(third.chunks_missing, 1u);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) EXPECT_EQ(out[y * 6 + x], g.expected(y, x));
}

TEST(ShardingErrors, IndexPointingOutsideTheShard) {
  ShardedFixture f;
  auto store = f.build();
  Bytes shard = *store->get("a/c/0/0");
  // Entry 0's offset (first 8 bytes of the index at the end) points far past the end.
  const std::size_t at = shard.size() - (2 * 2 * 16 + 4);
  std::uint64_t bad = 1ull << 40;
  std::memcpy(shard.data() + at, &bad, 8);
  Bytes idx(shard.begin() + at, shard.end() - 4);
  std::uint32_t c = codec::crc32c(0, idx.data(), idx.size());
  std::memcpy(shard.data() + shard.size() - 4, &c, 4);  // keep the index checksum valid
  store->set("a/c/0/0", shard);
  Array a = Array::open(store, "a");
  std::vector<float> out(10 * 13);
  try {
    a.read(Region{{0, 0}, {10, 13}}, out.data(), out.size() * 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange) << e.what();
    EXPECT_EQ(e.context().key, "a/c/0/0");
    EXPECT_NE(std::string(e.what()).find("memory://sharded"), std::string::npos) << e.what();
  }
}

TEST(ShardingErrors, IndexChecksumMismatchAndTruncation) {
  ShardedFixture f;
  auto store = f.build();
  Bytes shard = *store->get("a/c/0/1");
  shard[shard.size() - 10] ^= 0x40;  // inside the index, not its checksum
  store->set("a/c/0/1", shard);
  Array a = Array::open(store, "a");
  std::vector<float> out(4 * 6);
  try {
    a.read(Region{{0, 6}, {4, 6}}, out.data(), out.size() * 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kChecksumMismatch) << e.what();
    EXPECT_EQ(e.context().key, "a/c/0/1");
  }
  store->set("a/c/0/1", Bytes(shard.begin(), shard.begin() + 20));  // shorter than its index
  EXPECT_THROW(a.read(Region{{0, 6}, {4, 6}}, out.data(), out.size() * 4), Error);
}

TEST(ShardingErrors, CorruptInnerChunkNamesKeyAndOffset) {
  ShardedFixture f;
  f.inner_zstd = true;
  auto store = f.build();
  Bytes shard = *store->get("a/c/0/0");
  for (std::size_t i = 0; i < 12; ++i) shard[i] ^= 0xFF;  // first inner chunk's zstd frame header
  store->set("a/c/0/0", shard);
  Array a = Array::open(store, "a");
  std::vector<float> out(2 * 3);
  try {
    a.read(Region{{0, 0}, {2, 3}}, out.data(), out.size() * 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.context().key, "a/c/0/0") << e.what();
    EXPECT_TRUE(e.code() == ErrorCode::kCorruptData || e.code() == ErrorCode::kSizeMismatch) << e.what();
  }
}

TEST(ShardingNested, ShardInsideAShardDecodesWhole) {
  // Outer shards of 4x6 hold inner shards of 2x6 (whole, via the codec), which hold 2x3 chunks.
  auto store = std::make_shared<MemoryStore>("nested");
  ShardedFixture inner_fixture;  // reuse its encoder for a 2x6 "array" per inner shard
  json inner_shard_codec = {{"name", "sharding_indexed"},
                            {"configuration",
                             {{"chunk_shape", {2, 3}},
                              {"codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})},
                              {"index_codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})}}}};
  json meta = {{"zarr_format", 3},
               {"node_type", "array"},
               {"shape", {4, 6}},
               {"data_type", "float32"},
               {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {4, 6}}}}}},
               {"chunk_key_encoding", {{"name", "default"}}},
               {"fill_value", 0},
               {"codecs", json::array({{{"name", "sharding_indexed"},
                                        {"configuration",
                                         {{"chunk_shape", {2, 6}},
                                          {"codecs", json::array({inner_shard_codec})},
                                          {"index_codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})}}}}})}};
  store->set("n/zarr.json", meta.dump());
  // Build: values v(y,x) = y*10+x. Each inner shard (2x6) = two 2x3 chunks + 2-entry index (no crc).
  auto le64 = [](Bytes& b, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  std::vector<Bytes> inner_shards;
  for (int s = 0; s < 2; ++s) {
    Bytes data, idx;
    for (int c = 0; c < 2; ++c) {
      le64(idx, data.size());
      le64(idx, 2 * 3 * 4);
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 3; ++x) {
          float v = static_cast<float>((s * 2 + y) * 10 + c * 3 + x);
          std::uint8_t b[4];
          std::memcpy(b, &v, 4);
          data.insert(data.end(), b, b + 4);
        }
    }
    data.insert(data.end(), idx.begin(), idx.end());
    inner_shards.push_back(data);
  }
  Bytes outer, oidx;
  for (auto& s : inner_shards) {
    le64(oidx, outer.size());
    le64(oidx, s.size());
    outer.insert(outer.end(), s.begin(), s.end());
  }
  outer.insert(outer.end(), oidx.begin(), oidx.end());
  store->set("n/c/0/0", outer);
  Array a = Array::open(store, "n");
  std::vector<float> out(24);
  a.read(Region{{0, 0}, {4, 6}}, out.data(), 96);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) EXPECT_EQ(out[y * 6 + x], static_cast<float>(y * 10 + x)) << y << "," << x;
  (void)inner_fixture;
}

}  // namespace
}  // namespace cubestream

namespace cubestream {
namespace {

TEST(ShardingAfterTranspose, ShardSeesTheTransposedShape) {
  // Array 2x3, one chunk; transpose [1,0] makes the shard's array 3x2, split into inner 3x1.
  using nlohmann::json;
  json meta = {{"zarr_format", 3}, {"node_type", "array"}, {"shape", {2, 3}}, {"data_type", "uint8"},
               {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {2, 3}}}}}},
               {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", 0},
               {"codecs", json::array({{{"name", "transpose"}, {"configuration", {{"order", {1, 0}}}}},
                                       {{"name", "sharding_indexed"},
                                        {"configuration", {{"chunk_shape", {3, 1}},
                                                           {"codecs", json::array({{{"name", "bytes"}}})},
                                                           {"index_codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}})}}}}})}};
  auto store = std::make_shared<MemoryStore>("tsh");
  store->set("zarr.json", meta.dump());
  // values v[y][x] = 10*y + x; transposed T[x][y]; inner chunk j holds column j of T: T[0..2][j] = v[j][0..2]
  Bytes shard = {0, 1, 2, 10, 11, 12};
  auto le64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) shard.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  le64(0); le64(3); le64(3); le64(3);
  store->set("c/0/0", shard);
  Array a = Array::open(store, "");
  auto out = a.read_all({});
  EXPECT_EQ(std::vector<std::uint8_t>(out.begin(), out.end()), (std::vector<std::uint8_t>{0, 1, 2, 10, 11, 12}));
}

}  // namespace
}  // namespace cubestream

namespace cubestream {
namespace {

// A store (as a user might write one) whose ranged reads come back one byte short.
class ShortReadStore final : public Store {
 public:
  explicit ShortReadStore(std::shared_ptr<MemoryStore> inner) : inner_(std::move(inner)) {}
  std::string describe() const override { return "short://test"; }
  std::optional<Bytes> get(std::string_view key) const override { return inner_->get(key); }
  std::optional<Bytes> get_range(std::string_view key, ByteRange range) const override {
    auto v = inner_->get_range(key, range);
    if (v && !v->empty() && key.find("zarr.json") == std::string_view::npos && range.length > 80) v->pop_back();  // chunk data (96 bytes), not the 68-byte index
    return v;
  }
  std::optional<std::uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  std::vector<std::string> list_dir(std::string_view prefix) const override { return inner_->list_dir(prefix); }

 private:
  std::shared_ptr<MemoryStore> inner_;
};

TEST(ShardingErrors, AStoreReturningAShortRangeIsAnErrorNotAnOverRead) {
  ShardedFixture f;
  auto store = std::make_shared<ShortReadStore>(f.build());
  Array a = Array::open(store, "a");
  std::vector<float> out(4 * 6);
  try {
    a.read(Region{{0, 0}, {4, 6}}, out.data(), out.size() * 4, ReadOptions{1});  // 4 inner chunks: one 96-byte range
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
    EXPECT_EQ(e.context().key, "a/c/0/0");
  }
}

}  // namespace
}  // namespace cubestream

namespace cubestream {
namespace {

// Array::will_need_unit: a hint of exactly the bytes fetch_unit reads, given without any I/O
// of its own; for a sharded array only once the shard's index is cached.
TEST(ArrayStoreHints, ShardedUnitsAreHintedOnlyOnceTheirShardIndexIsKnown) {
  ShardedFixture f;  // 10 x 13, shards 4 x 6, inner chunks 2 x 3: 2 x 2 inner chunks a shard
  f.inner_empty = [](std::int64_t gy, std::int64_t gx) { return gy == 1 && gx == 0; };
  auto store = std::make_shared<test_stores::HintRecordingStore>(f.build());
  Array a = Array::open(store, "a");
  const std::size_t reads = store->reads().size();
  EXPECT_FALSE(a.will_need_unit({1, 1}));  // the index of shard (0, 0) is not known yet
  EXPECT_TRUE(store->hints().empty());
  EXPECT_EQ(store->reads().size(), reads);  // and the hint did not read it
  a.fetch_unit({0, 0});                     // reads and caches that index
  ASSERT_TRUE(a.will_need_unit({1, 1}));
  const auto enc = a.fetch_unit({1, 1});
  auto hints = store->hints();
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0].key, "a/c/0/0");
  EXPECT_EQ(hints[0].range.offset, static_cast<std::int64_t>(enc.offset));
  EXPECT_EQ(hints[0].range.length, static_cast<std::int64_t>(enc.bytes.size()));
  EXPECT_FALSE(a.will_need_unit({1, 0}));  // empty inner chunk: nothing to read
  EXPECT_FALSE(a.will_need_unit({2, 0}));  // shard (1, 0): index not cached
  EXPECT_FALSE(a.will_need_unit({5, 0}));  // outside the unit grid
  EXPECT_FALSE(a.will_need_unit({-1, 0}));
  EXPECT_FALSE(a.will_need_unit({0}));     // wrong rank
  EXPECT_EQ(store->hints().size(), 1u);
  std::vector<float> out(10 * 13);
  a.read(Region{{0, 0}, {10, 13}}, out.data(), out.size() * 4, ReadOptions{1});
  std::vector<float> want = f.values;
  for (int y = 2; y < 4; ++y)
    for (int x = 0; x < 3; ++x) want[static_cast<std::size_t>(y * 13 + x)] = f.fill;  // the empty inner chunk
  EXPECT_EQ(out, want);  // hints change nothing that is read
}

TEST(ArrayStoreHints, UnshardedUnitsHintTheWholeChunk) {
  auto store = std::make_shared<test_stores::HintRecordingStore>(test_stores::year_store(0, {test_stores::hours(0, 4)}));
  Array t2m = Array::open(store, "t2m");  // (4, 5, 6) in chunks of (2, 3, 4)
  const std::size_t reads = store->reads().size();
  ASSERT_TRUE(t2m.will_need_unit({1, 1, 0}));
  EXPECT_FALSE(t2m.will_need_unit({2, 0, 0}));
  EXPECT_EQ(store->reads().size(), reads);
  const auto hints = store->hints();
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0].key, "t2m/1.1.0");
  EXPECT_EQ(hints[0].range.offset, 0);
  EXPECT_EQ(hints[0].range.length, -1);
}

}  // namespace
}  // namespace cubestream
