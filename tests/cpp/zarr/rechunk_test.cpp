// The rechunk engine: the copy reads back bit for bit whatever the source and target chunking
// (including shards streamed under a tight memory budget), parts are disjoint and together
// complete, a run interrupted by a failing target resumes to the same result, a corrupt
// source chunk stops the run with its key, and an existing target is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>

#include "cubestream/array.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "cubestream/writer.hpp"
#include "test_util_fixtures.hpp"
#include "zarr/rechunk.hpp"

namespace cubestream {
namespace {

using nlohmann::json;

// A small ERA5-like dataset: t2m (time, latitude, longitude) float32 in blosc-lz4 chunks of
// 5 time steps, z (time, level, latitude, longitude) int16 with CF scale/offset, and 1-d
// coordinates.
struct Source {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>("src");
  std::vector<float> t2m;
  std::vector<std::int16_t> z;
  static constexpr std::int64_t T = 23, L = 3, Y = 17, X = 29;

  explicit Source(int format = 2) {
    write_group(store, "", format, {{"title", "era5-like"}, {"Conventions", "CF-1.8"}});
    std::mt19937 rng(1);
    std::normal_distribution<float> n(0, 1);
    t2m.resize(T * Y * X);
    for (auto& v : t2m) v = 280 + 5 * n(rng);
    z.resize(T * L * Y * X);
    for (auto& v : z) v = static_cast<std::int16_t>(1000 * n(rng));
    CodecChoice lz4;
    lz4.compressor = "blosc-lz4";
    lz4.shuffle = true;
    auto meta = [&](std::vector<std::int64_t> shape, std::vector<std::int64_t> chunks, DataType dt, std::vector<std::string> dims) {
      ArrayMetadata m;
      m.zarr_format = format;
      m.shape = shape;
      m.chunk_shape = chunks;
      m.dtype = dt;
      m.fill_value.assign(dt.size, 0);
      m.dimension_names = dims;
      m.codecs = format == 3 ? v3_codecs(lz4, dt) : v2_codecs(lz4, dt);
      if (format == 2) {
        m.chunk_key_encoding = "v2";
        m.chunk_key_separator = '.';
      }
      return m;
    };
    auto a = meta({T, Y, X}, {5, Y, X}, DataType::float_(4), {"time", "latitude", "longitude"});
    a.attributes = {{"units", "K"}};
    ArrayWriter::create(store, "t2m", a).write_region({{0, 0, 0}, {T, Y, X}}, t2m.data(), t2m.size() * 4);
    auto b = meta({T, L, Y, X}, {4, 1, 9, 29}, DataType::int_(2), {"time", "level", "latitude", "longitude"});
    b.attributes = {{"scale_factor", 0.5}, {"add_offset", 100.0}};
    ArrayWriter::create(store, "z", b).write_region({{0, 0, 0, 0}, {T, L, Y, X}}, z.data(), z.size() * 2);
    std::vector<double> time(T);
    for (std::int64_t i = 0; i < T; ++i) time[static_cast<std::size_t>(i)] = 6.0 * static_cast<double>(i);
    auto tm = meta({T}, {10}, DataType::float_(8), {"time"});
    tm.attributes = {{"units", "hours since 2000-01-01"}, {"calendar", "standard"}};
    ArrayWriter::create(store, "time", tm).write_region({{0}, {T}}, time.data(), time.size() * 8);
    std::vector<float> lat(Y);
    for (std::int64_t i = 0; i < Y; ++i) lat[static_cast<std::size_t>(i)] = 90.f - 10.f * static_cast<float>(i);
    ArrayWriter::create(store, "latitude", meta({Y}, {Y}, DataType::float_(4), {"latitude"})).write_region({{0}, {Y}}, lat.data(), lat.size() * 4);
    consolidate_metadata(store, "", format);
  }
};

void expect_same_arrays(const std::shared_ptr<Store>& a, const std::shared_ptr<Store>& b, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    const Bytes x = Array::open(a, n).read_all(), y = Array::open(b, n).read_all();
    EXPECT_TRUE(x == y) << n;
  }
}

const std::vector<std::string> kNames{"t2m", "z", "time", "latitude"};

zarr::RechunkOptions era5_options() {
  zarr::RechunkOptions o;
  o.chunks = {{"time", 1}, {"level", 1}};
  o.shards = {{"time", 8}};
  o.codec.compressor = "zstd";
  o.codec.level = 3;
  o.codec.shuffle = true;
  o.threads = 2;
  return o;
}

TEST(Rechunk, CopiesEveryVariableWithAttributesAndReadsBackBitForBit) {
  Source src;
  auto dst = std::make_shared<MemoryStore>("dst");
  zarr::RechunkProgress progress;
  std::vector<zarr::RechunkPlanInfo> plans;
  zarr::rechunk(src.store, dst, era5_options(), progress, [&](const zarr::RechunkPlanInfo& p) { plans.push_back(p); });
  expect_same_arrays(src.store, dst, kNames);
  EXPECT_EQ(progress.done_bytes.load(), progress.total_bytes.load());
  Array t = Array::open(dst, "t2m");
  EXPECT_EQ(t.metadata().zarr_format, 3);
  EXPECT_EQ(t.unit_shape(), (std::vector<std::int64_t>{1, Source::Y, Source::X}));
  EXPECT_EQ(t.metadata().chunk_shape, (std::vector<std::int64_t>{8, Source::Y, Source::X}));
  EXPECT_EQ(Array::open(dst, "z").unit_shape(), (std::vector<std::int64_t>{1, 1, 9, 29}));  // unnamed axes keep the source's chunks
  EXPECT_EQ(Array::open(dst, "time").metadata().chunk_shape, (std::vector<std::int64_t>{Source::T}));  // coordinate: one chunk
  EXPECT_FALSE(Array::open(dst, "time").metadata().inner_chunk_shape.has_value());
  // CF attributes and coordinates survive: decoded values equal the source's.
  auto a = Dataset::open(src.store), b = Dataset::open(dst);
  EXPECT_EQ(b.attributes().value("title", ""), "era5-like");
  EXPECT_TRUE(b.variable("time").is_dimension_coordinate);
  const Region all{{0, 0, 0, 0}, {Source::T, Source::L, Source::Y, Source::X}};
  const auto za = a.read_decoded("z", all), zb = b.read_decoded("z", all);  // NaN where masked
  ASSERT_EQ(za.size(), zb.size());
  EXPECT_EQ(std::memcmp(za.data(), zb.data(), za.size() * sizeof(double)), 0);
  EXPECT_EQ(a.decode_time("time")[7].iso(), b.decode_time("time")[7].iso());
  EXPECT_TRUE(Group::open(dst, "").consolidated());
}

TEST(Rechunk, TightMemoryStreamsShardsAndStillMatches) {
  Source src;
  for (std::uint64_t memory : {std::uint64_t{40} << 10, std::uint64_t{36} << 10}) {
    auto dst = std::make_shared<MemoryStore>("dst");
    auto o = era5_options();
    o.memory_bytes = memory;
    o.array = "t2m";
    zarr::RechunkProgress progress;
    bool streamed = false;
    zarr::rechunk(src.store, dst, o, progress, [&](const zarr::RechunkPlanInfo& p) { streamed |= p.streamed_shards; });
    EXPECT_TRUE(streamed) << memory;
    expect_same_arrays(src.store, dst, {"t2m"});
  }
  // Below one inner chunk plus the reader's scratch: a clear error, nothing half-done.
  auto dst = std::make_shared<MemoryStore>("dst");
  auto o = era5_options();
  o.memory_bytes = 1000;
  EXPECT_TRUE(test::throws_error([&] {
    zarr::RechunkProgress p;
    zarr::rechunk(src.store, dst, o, p);
  }, ErrorCode::kResourceExhausted, {"--memory"}));
}

TEST(Rechunk, AnyChunkingToAnyOtherAndV2Targets) {
  Source src(3);
  struct C {
    std::map<std::string, std::int64_t> chunks, shards;
    int format;
    bool at_start;
  };
  for (const C& c : {C{{{"time", 7}, {"latitude", 5}}, {}, 2, false}, C{{{"time", 3}, {"longitude", 4}}, {{"time", 9}, {"longitude", 8}}, 3, true},
                     C{{{"time", -1}, {"latitude", 1}}, {{"latitude", -1}}, 3, false}}) {
    auto dst = std::make_shared<MemoryStore>("dst");
    zarr::RechunkOptions o;
    o.chunks = c.chunks;
    o.shards = c.shards;
    o.zarr_format = c.format;
    o.codec.index_at_start = c.at_start;
    o.codec.compressor = c.format == 2 ? "blosc-zstd" : "gzip";
    o.memory_bytes = 200 << 10;
    zarr::RechunkProgress p;
    zarr::rechunk(src.store, dst, o, p);
    expect_same_arrays(src.store, dst, kNames);
    EXPECT_EQ(Group::open(dst, "").zarr_format(), c.format);
  }
}

TEST(Rechunk, PartsAreDisjointAndTogetherComplete) {
  Source src;
  auto whole = std::make_shared<MemoryStore>("whole");
  zarr::RechunkProgress p0;
  zarr::rechunk(src.store, whole, era5_options(), p0);
  auto dst = std::make_shared<MemoryStore>("parts");
  std::uint64_t written = 0;
  for (int part : {2, 0, 1}) {  // any order
    auto o = era5_options();
    o.part = part;
    o.parts = 3;
    zarr::RechunkProgress p;
    zarr::rechunk(src.store, dst, o, p);
    EXPECT_EQ(p.chunks_skipped.load(), 0u);  // nothing another part wrote is written again
    written += p.chunks_written.load();
  }
  EXPECT_EQ(written, p0.chunks_written.load());
  expect_same_arrays(src.store, dst, kNames);
}

// A target whose writes start failing after a number of values, like a disk that fills up.
class FailingStore final : public WritableStore {
 public:
  FailingStore(std::shared_ptr<MemoryStore> inner, int allow) : inner_(std::move(inner)), left_(allow) {}
  std::string describe() const override { return inner_->describe(); }
  std::optional<Bytes> get(std::string_view k) const override { return inner_->get(k); }
  std::optional<Bytes> get_range(std::string_view k, ByteRange r) const override { return inner_->get_range(k, r); }
  std::optional<std::uint64_t> size(std::string_view k) const override { return inner_->size(k); }
  std::vector<std::string> list_dir(std::string_view p) const override { return inner_->list_dir(p); }
  void erase(std::string_view k) override { inner_->erase(k); }
  void erase_prefix(std::string_view p) override { inner_->erase_prefix(p); }
  std::unique_ptr<ValueWriter> open_writer(std::string_view key) override {
    if (left_-- <= 0)
      throw Error(ErrorCode::kIo, "cannot write: No space left on device", ErrorContext{describe(), std::string(key), std::nullopt});
    return inner_->open_writer(key);
  }

 private:
  std::shared_ptr<MemoryStore> inner_;
  std::atomic<int> left_;
};

TEST(Rechunk, DiskFullStopsNamingTheKeyAndResumeFinishes) {
  Source src;
  auto mem = std::make_shared<MemoryStore>("dst");
  auto failing = std::make_shared<FailingStore>(mem, 12);
  zarr::RechunkProgress p1;
  EXPECT_TRUE(test::throws_error([&] { zarr::rechunk(src.store, failing, era5_options(), p1); }, ErrorCode::kIo,
                                 {"No space left on device", "memory://dst"}));
  // What was written is valid: the arrays open, and every chunk present decodes.
  EXPECT_NO_THROW(Group::open(mem, ""));
  // Without --resume the target is refused.
  EXPECT_TRUE(test::throws_error([&] {
    zarr::RechunkProgress p;
    zarr::rechunk(src.store, mem, era5_options(), p);
  }, ErrorCode::kInvalidArgument, {"--resume"}));
  // Cut one written shard short, as a torn write would (which atomic writes prevent, but a
  // disk may still lose data): its index no longer checks out, so resume writes it again.
  auto o = era5_options();
  o.existing = zarr::ExistingTarget::kResume;
  std::string victim;
  for (const auto& n : mem->list_dir("z/c/0/0/0")) victim = "z/c/0/0/0/" + n;
  if (!victim.empty()) {
    Bytes b = *mem->get(victim);
    b.resize(b.size() / 2);
    mem->set(victim, b);
  }
  zarr::RechunkProgress p2;
  zarr::rechunk(src.store, mem, o, p2);
  EXPECT_GT(p2.chunks_skipped.load(), 0u);
  EXPECT_GT(p2.chunks_written.load(), 0u);
  if (!victim.empty()) EXPECT_GE(p2.chunks_rewritten.load(), 1u);
  expect_same_arrays(src.store, mem, kNames);
  // Resuming with other settings is refused, naming the array.
  auto other = o;
  other.codec.compressor = "gzip";
  EXPECT_TRUE(test::throws_error([&] {
    zarr::RechunkProgress p;
    zarr::rechunk(src.store, mem, other, p);
  }, ErrorCode::kInvalidArgument, {"other settings"}));
}

TEST(Rechunk, CorruptSourceChunkStopsNamingItsKey) {
  Source src;
  // Truncated: the blosc header promises more bytes than there are. (Flipping bits inside an
  // unchecksummed stream may decode to other values without any error: no reader can tell.)
  Bytes b = *src.store->get("t2m/1.0.0");
  b.resize(b.size() / 2);
  src.store->set("t2m/1.0.0", b);
  auto dst = std::make_shared<MemoryStore>("dst");
  zarr::RechunkProgress p;
  EXPECT_TRUE(test::throws_error([&] { zarr::rechunk(src.store, dst, era5_options(), p); }, ErrorCode::kCorruptData, {"t2m/1.0.0", "reading source array 't2m'"}));
}

TEST(Rechunk, OverwriteReplacesTheTarget) {
  Source src;
  auto dst = std::make_shared<MemoryStore>("dst");
  dst->set("zarr.json", std::string(R"({"zarr_format": 3, "node_type": "group"})"));
  dst->set("stale/zarr.json", std::string("{}"));
  auto o = era5_options();
  o.existing = zarr::ExistingTarget::kOverwrite;
  zarr::RechunkProgress p;
  zarr::rechunk(src.store, dst, o, p);
  EXPECT_FALSE(dst->exists("stale/zarr.json"));
  expect_same_arrays(src.store, dst, kNames);
}

}  // namespace
}  // namespace cubestream
