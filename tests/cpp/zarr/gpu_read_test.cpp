// Array reads that decode on a GPU (ReadOptions::decode, zarr/gpu_read.cpp), run here against
// a host model of a device: its lanes hold their copies and decodes until they are waited for
// (so a read that used staging before its lane was done sees stale or poisoned bytes), its
// memory starts poisoned, and its decoder is the host codec with statuses the tests can turn
// into refusals. Every read is compared bit for bit with the host path's read of the same
// region: unsharded and sharded zstd, lz4 and blosc arrays, waves of one unit up to all of
// them, 2-4 slots, missing chunks and inner chunks, refused and corrupt units, fetches too
// large for their slot. Also the rules that pick the backend, and the errors of kGpu without
// a GPU. The same reads on a real GPU are GpuReadCuda.* (they skip where none is visible).
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <random>

#include "codec/codec.hpp"
#include "codec/registry.hpp"
#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/writer.hpp"
#include "cuda/memory.hpp"
#include "test_util_fixtures.hpp"
#include "zarr/gpu_read.hpp"
#include "zarr/gpu_read_pool.hpp"
#include "zarr/gpu_route.hpp"
#include "zarr/read_backend.hpp"

namespace cubestream {
namespace {

using nlohmann::json;
using zarr::GpuReadConfig;
using zarr::GpuReadStaging;
using zarr::GpuStagingLease;

constexpr std::uint8_t kPoison = 0xA5;

// A device modelled on the host. Lanes run their work only when waited for.
// What the model devices of a test did, summed over them (sets may be freed before the test ends).
struct ModelCounts {
  std::atomic<std::size_t> decode_calls{0}, max_batch{0}, buffers{0};
  std::atomic<int> devices{0}, most_devices{0};  // devices alive, and the most at once
};

class HostModelDevice final : public zarr::ReadDevice {
 public:
  // refuse(call, buffer): the decode status to report instead of decoding (kOk: decode;
  // nullopt: write none, as a decoder that skipped the buffer would).
  using Refuse = std::function<std::optional<cuda::DecodeStatus>(std::size_t call, std::size_t buffer)>;
  // fail_waits: every wait() throws Error(kCuda), as a device that broke would.
  HostModelDevice(Refuse refuse, std::shared_ptr<ModelCounts> counts, bool fail_waits = false)
      : refuse_(std::move(refuse)), counts_(std::move(counts)), fail_waits_(fail_waits) {
    const int now = ++counts_->devices;
    int most = counts_->most_devices.load();
    while (most < now && !counts_->most_devices.compare_exchange_weak(most, now)) {
    }
  }
  ~HostModelDevice() override {
    EXPECT_EQ(live_allocations_, 0) << "staging memory leaked";
    --counts_->devices;
  }

  std::uint8_t* alloc_host(std::size_t bytes) override { return alloc(bytes); }
  void free_host(std::uint8_t* p) noexcept override { release(p); }
  std::uint8_t* alloc_device(std::size_t bytes) override { return alloc(bytes); }
  void free_device(std::uint8_t* p) noexcept override { release(p); }

  void* create_lane() override { return new Lane; }
  void destroy_lane(void* lane) noexcept override {
    EXPECT_TRUE(static_cast<Lane*>(lane)->work.empty()) << "a lane destroyed with work pending";
    delete static_cast<Lane*>(lane);
  }
  void to_device(void* dst, const void* src, std::size_t bytes, void* lane) override {
    enqueue(lane, [=] { std::memcpy(dst, src, bytes); });
  }
  void to_host(void* dst, const void* src, std::size_t bytes, void* lane) override {
    enqueue(lane, [=] { std::memcpy(dst, src, bytes); });
  }
  std::size_t decode_scratch_bytes(cuda::BatchCodec, std::size_t buffers, std::size_t) override { return 64 * buffers; }
  void decode(cuda::BatchCodec codec, const cuda::DeviceBatch& batch, void* scratch, std::size_t scratch_bytes,
              void* lane) override {
    EXPECT_GE(scratch_bytes, 64 * batch.num_buffers);
    EXPECT_NE(scratch, nullptr);
    const std::size_t call = decode_calls_++;
    ++counts_->decode_calls;
    std::size_t seen = counts_->max_batch.load();
    while (seen < batch.num_buffers && !counts_->max_batch.compare_exchange_weak(seen, batch.num_buffers)) {
    }
    // the meta arrays are read when the work runs, as a kernel reads them
    enqueue(lane, [this, codec, batch, call] {
      const char* id = codec == cuda::BatchCodec::kZstd ? "zstd" : codec == cuda::BatchCodec::kLz4 ? "lz4" : "blosc";
      auto c = std::dynamic_pointer_cast<const codec::BytesToBytesCodec>(codec::make_codec(id, json{{"id", id}}));
      for (std::size_t i = 0; i < batch.num_buffers; ++i) {
        const std::optional<cuda::DecodeStatus> told = refuse_ ? refuse_(call, i) : cuda::DecodeStatus::kOk;
        if (!told) continue;  // no status written
        cuda::DecodeStatus st = *told;
        if (st == cuda::DecodeStatus::kOk) {
          try {
            const std::size_t got = c->decode(ByteView(batch.src[i], batch.src_bytes[i]),
                                              MutableByteView(batch.dst[i], batch.dst_bytes[i]));
            if (got != batch.dst_bytes[i]) st = cuda::DecodeStatus::kWrongSize;
          } catch (const Error&) {
            st = cuda::DecodeStatus::kCorrupt;
          }
        }
        if (st != cuda::DecodeStatus::kOk) std::memset(batch.dst[i], kPoison, batch.dst_bytes[i]);
        batch.status[i] = st;
        ++counts_->buffers;
      }
    });
  }
  void wait(void* lane) override {
    if (fail_waits_) throw Error(ErrorCode::kCuda, "the model device failed (a test)");
    run(static_cast<Lane*>(lane));
  }
  void wait_quietly(void* lane) noexcept override { run(static_cast<Lane*>(lane)); }

 private:
  struct Lane {
    std::vector<std::function<void()>> work;
  };
  std::uint8_t* alloc(std::size_t bytes) {
    auto* p = new std::uint8_t[bytes];
    std::memset(p, kPoison, bytes);
    ++live_allocations_;
    return p;
  }
  void release(std::uint8_t* p) noexcept {
    if (!p) return;
    delete[] p;
    --live_allocations_;
  }
  void enqueue(void* lane, std::function<void()> fn) { static_cast<Lane*>(lane)->work.push_back(std::move(fn)); }
  void run(Lane* lane) noexcept {
    for (auto& fn : lane->work) fn();
    lane->work.clear();
  }
  Refuse refuse_;
  std::shared_ptr<ModelCounts> counts_;
  bool fail_waits_ = false;
  std::atomic<int> live_allocations_{0};
  std::size_t decode_calls_ = 0;  // this device's, for refuse_
};

// Installs a factory of host-model staging sets for the test's lifetime.
class ModelGpu {
 public:
  explicit ModelGpu(GpuReadConfig config, HostModelDevice::Refuse refuse = {}, bool fail_waits = false) {
    previous_ = GpuStagingLease::set_factory([counts = counts_, config, refuse, fail_waits](int) {
      return std::make_unique<GpuReadStaging>(std::make_unique<HostModelDevice>(refuse, counts, fail_waits), config);
    });
  }
  ~ModelGpu() { GpuStagingLease::set_factory(previous_); }
  std::size_t decode_calls() const { return counts_->decode_calls; }
  std::size_t max_batch() const { return counts_->max_batch; }
  int most_sets() const { return counts_->most_devices; }

 private:
  std::shared_ptr<ModelCounts> counts_ = std::make_shared<ModelCounts>();
  GpuStagingLease::Factory previous_;
};

ArrayMetadata float_array(std::vector<std::int64_t> shape, std::vector<std::int64_t> chunks, json codecs) {
  ArrayMetadata m;
  m.zarr_format = 3;
  m.shape = std::move(shape);
  m.chunk_shape = std::move(chunks);
  m.dtype = DataType::float_(4);
  const float fill = -9999.f;
  m.fill_value.resize(4);
  std::memcpy(m.fill_value.data(), &fill, 4);
  m.codecs = std::move(codecs);
  return m;
}

// A (6, 21, 19) float32 field written with `choice`, chunks (2, 8, 5) (shards of that shape
// when sharded, inner chunks (1, 4, 5)).
struct TestArray {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>("gpu-read");
  std::vector<std::int64_t> shape{6, 21, 19};
  Bytes data;
};

TestArray make_array(const CodecChoice& choice) {
  TestArray t;
  const std::size_t n = static_cast<std::size_t>(t.shape[0] * t.shape[1] * t.shape[2]);
  std::vector<float> v(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0, 0.3f);
  for (std::size_t i = 0; i < n; ++i) v[i] = 250.0f + static_cast<float>(i % 97) * 0.5f + noise(rng);
  t.data.resize(n * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  const std::vector<std::int64_t> chunks{2, 8, 5};
  auto w = ArrayWriter::create(t.store, "a", float_array(t.shape, chunks, v3_codecs(choice, DataType::float_(4))));
  w.write_region({{0, 0, 0}, t.shape}, t.data.data(), t.data.size());
  return t;
}

Region random_region(std::mt19937& rng, const std::vector<std::int64_t>& shape) {
  Region r;
  for (auto s : shape) {
    std::uniform_int_distribution<std::int64_t> a(0, s - 1);
    const std::int64_t lo = a(rng);
    std::uniform_int_distribution<std::int64_t> len(1, s - lo);
    r.start.push_back(lo);
    r.shape.push_back(len(rng));
  }
  return r;
}

ReadOptions with(DecodeBackend d, int threads) {
  ReadOptions o;
  o.decode = d;
  o.threads = threads;
  return o;
}

// The region read both ways, bit for bit; returns the GPU read's stats.
ReadStats expect_same(const Array& a, const Region& r, int threads) {
  const std::size_t bytes = static_cast<std::size_t>(r.num_elements()) * 4;
  Bytes host(bytes), gpu(bytes);
  std::memset(gpu.data(), 0x5A, bytes);
  a.read(r, host.data(), bytes, with(DecodeBackend::kCpu, threads));
  const ReadStats s = a.read(r, gpu.data(), bytes, with(DecodeBackend::kGpu, threads));
  EXPECT_EQ(std::memcmp(host.data(), gpu.data(), bytes), 0)
      << "region start " << r.start[0] << "," << r.start[1] << "," << r.start[2] << " shape " << r.shape[0] << ","
      << r.shape[1] << "," << r.shape[2];
  return s;
}

// The error a read of the region raises (a test failure, and a kInternal stand-in, if none).
Error error_of(const Array& a, const Region& r, DecodeBackend d, int threads) {
  Bytes out(static_cast<std::size_t>(r.num_elements()) * a.dtype().size);
  try {
    a.read(r, out.data(), out.size(), with(d, threads));
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error with decode " << static_cast<int>(d);
  return Error(ErrorCode::kInternal, "none");
}

CodecChoice plain(const char* compressor) {
  CodecChoice c;
  c.compressor = compressor;
  return c;
}
CodecChoice sharded(const char* compressor, bool at_start = false) {
  CodecChoice c;
  c.compressor = compressor;
  c.inner_chunks = std::vector<std::int64_t>{1, 4, 5};
  c.index_at_start = at_start;
  return c;
}

GpuReadConfig config(std::size_t wave_units, std::size_t slots, std::size_t unit_bytes) {
  GpuReadConfig c;
  c.wave_bytes = wave_units * ((unit_bytes + 255) / 256 * 256);
  c.slots = slots;
  return c;
}

TEST(GpuReadModel, EveryRegionMatchesTheHostReadForEveryWaveAndSlotCount) {
  const std::vector<CodecChoice> choices{plain("zstd"), plain("lz4"), plain("blosc-lz4"), sharded("zstd"),
                                         sharded("blosc-lz4", true)};
  for (const auto& choice : choices) {
    const TestArray t = make_array(choice);
    const Array a = Array::open(t.store, "a");
    const std::size_t ub = a.unit_bytes();
    SCOPED_TRACE(a.metadata().codecs.dump());
    std::mt19937 rng(11);
    for (std::size_t wave_units : {std::size_t{1}, std::size_t{3}, std::size_t{1000}}) {
      for (std::size_t slots : {std::size_t{2}, std::size_t{3}, std::size_t{4}}) {
        ModelGpu gpu(config(wave_units, slots, ub));
        SCOPED_TRACE("wave of " + std::to_string(wave_units) + " units, " + std::to_string(slots) + " slots");
        const Region all{{0, 0, 0}, t.shape};
        const ReadStats s = expect_same(a, all, 3);
        EXPECT_EQ(s.chunks_decoded_on_gpu, s.chunks_read);
        EXPECT_GT(s.chunks_read, 0u);
        EXPECT_EQ(s.gpu_refused, 0u);
        if (wave_units == 1) EXPECT_EQ(gpu.max_batch(), 1u);
        for (int i = 0; i < 6; ++i) expect_same(a, random_region(rng, t.shape), i % 2 ? 1 : 4);
      }
    }
  }
}

TEST(GpuReadModel, MissingChunksAndEmptyInnerChunksReadAsTheFillValue) {
  for (const auto& choice : {plain("zstd"), sharded("zstd")}) {
    TestArray t = make_array(choice);
    // leave out every third chunk or shard, and (sharded) rewrite one shard with empty inner chunks
    int k = 0;
    std::vector<std::string> keys;
    for (const auto& a : t.store->list_dir("a/c"))
      for (const auto& b : t.store->list_dir("a/c/" + a))
        for (const auto& c : t.store->list_dir("a/c/" + a + "/" + b)) keys.push_back("a/c/" + a + "/" + b + "/" + c);
    for (const auto& key : keys)
      if (++k % 3 == 0) t.store->erase(key);
    if (choice.inner_chunks) {
      auto w = ArrayWriter::open(t.store, "a");
      auto shard = w.begin_shard({1, 1, 1});
      std::vector<float> inner(20, 3.5f);
      shard.add({0, 1, 0}, ByteView(reinterpret_cast<const std::uint8_t*>(inner.data()), inner.size() * 4));
      shard.commit();
    }
    const Array a = Array::open(t.store, "a");
    ModelGpu gpu(config(4, 3, a.unit_bytes()));
    const ReadStats s = expect_same(a, {{0, 0, 0}, t.shape}, 4);
    EXPECT_GT(s.chunks_missing, 0u);
    EXPECT_EQ(s.chunks_decoded_on_gpu, s.chunks_read);
    std::mt19937 rng(3);
    for (int i = 0; i < 8; ++i) expect_same(a, random_region(rng, t.shape), 2);
  }
}

TEST(GpuReadModel, ARegionOfOnlyMissingChunksIsFilled) {
  TestArray t = make_array(plain("zstd"));
  t.store->erase_prefix("a/c");
  const Array a = Array::open(t.store, "a");
  ModelGpu gpu(config(2, 3, a.unit_bytes()));
  const ReadStats s = expect_same(a, {{0, 0, 0}, t.shape}, 2);
  EXPECT_EQ(s.chunks_read, 0u);
  EXPECT_GT(s.chunks_missing, 0u);
  EXPECT_EQ(gpu.decode_calls(), 0u);
}

TEST(GpuReadModel, UnitsTheDeviceRefusesAreDecodedOnTheHost) {
  for (const auto& choice : {plain("zstd"), sharded("zstd")}) {
    const TestArray t = make_array(choice);
    const Array a = Array::open(t.store, "a");
    using St = std::optional<cuda::DecodeStatus>;
    // the last: the device writes no status for those buffers (what it left there must not read
    // as ok: the read sets every status to kSkipped before the decode)
    for (St refusal : {St(cuda::DecodeStatus::kUnsupported), St(cuda::DecodeStatus::kCorrupt),
                       St(cuda::DecodeStatus::kSkipped), St()}) {
      ModelGpu gpu(config(3, 3, a.unit_bytes()),
                   [refusal](std::size_t call, std::size_t i) { return (call + i) % 2 ? refusal : St(cuda::DecodeStatus::kOk); });
      const ReadStats s = expect_same(a, {{0, 0, 0}, t.shape}, 3);
      EXPECT_GT(s.gpu_refused, 0u);
      EXPECT_EQ(s.chunks_decoded_on_gpu + s.gpu_refused, s.chunks_read);
    }
  }
}

TEST(GpuReadModel, FetchesTooLargeForTheirSlotAreDecodedOnTheHost) {
  // A slot's compressed side holds 1/8 more than its decoded side and 1 MiB; a chunk value
  // followed by a skippable frame of 2 MiB (valid Zstandard, decoded as the frame alone) is
  // larger than that for waves of a few small units.
  TestArray t = make_array(plain("zstd"));
  const std::string key = "a/c/1/0/3";
  Bytes v = *t.store->get(key);
  const std::uint32_t magic = 0x184D2A50, pad = 2u << 20;
  for (std::uint32_t word : {magic, pad})
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<std::uint8_t>(word >> (8 * i)));
  v.resize(v.size() + pad, 0x11);
  t.store->set(key, v);
  const Array a = Array::open(t.store, "a");
  ModelGpu gpu(config(3, 2, a.unit_bytes()));
  const ReadStats s = expect_same(a, {{0, 0, 0}, t.shape}, 3);
  EXPECT_EQ(s.gpu_refused, 0u);
  EXPECT_EQ(s.chunks_decoded_on_gpu + 1, s.chunks_read);  // the host took the one that did not fit
}

TEST(GpuReadModel, CorruptChunksGiveTheHostCodecsErrorWithKeyAndOffset) {
  for (const auto& choice : {plain("zstd"), sharded("zstd")}) {
    TestArray t = make_array(choice);
    const std::string key = "a/c/1/1/2";
    Bytes v = *t.store->get(key);
    // the frame header of the chunk, or of a shard's third inner chunk (not at offset 0, so
    // that an error's offset must count the shard's bytes before it): the shard's index is at
    // its end, 4 entries of (offset, nbytes) little-endian u64 and a crc32c
    std::uint64_t at = 0;
    if (choice.inner_chunks) {
      for (int i = 0; i < 8; ++i) at |= std::uint64_t{v[v.size() - 68 + 32 + i]} << (8 * i);
      ASSERT_GT(at, 0u);
    }
    for (std::size_t i = at; i < at + 8 && i < v.size(); ++i) v[i] ^= 0xFF;
    t.store->set(key, v);
    const Array a = Array::open(t.store, "a");
    ModelGpu gpu(config(3, 3, a.unit_bytes()));
    const Region all{{0, 0, 0}, t.shape};
    const Error host = error_of(a, all, DecodeBackend::kCpu, 3), gpu_err = error_of(a, all, DecodeBackend::kGpu, 3);
    EXPECT_EQ(gpu_err.code(), host.code()) << gpu_err.what();
    EXPECT_EQ(gpu_err.context().key, key) << gpu_err.what();
    EXPECT_EQ(gpu_err.context().offset, host.context().offset) << gpu_err.what() << " / " << host.what();
    ASSERT_TRUE(host.context().offset.has_value()) << host.what();
    EXPECT_GE(*host.context().offset, at) << host.what();
    EXPECT_EQ(gpu_err.context().store, host.context().store);
  }
}

TEST(GpuReadModel, StagingGrowsForLargerUnitsAndServesReadAfterRead) {
  const TestArray small = make_array(plain("zstd"));
  auto big_store = std::make_shared<MemoryStore>("big");
  const std::vector<std::int64_t> shape{2, 300, 300};
  std::vector<float> v(2 * 300 * 300);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000) * 0.25f;
  auto w = ArrayWriter::create(big_store, "a", float_array(shape, {1, 300, 300}, v3_codecs(plain("zstd"), DataType::float_(4))));
  w.write_region({{0, 0, 0}, shape}, v.data(), v.size() * 4);
  GpuReadConfig c;
  c.wave_bytes = 256;  // smaller than either array's units: a wave of one unit each
  c.slots = 3;
  ModelGpu gpu(c);
  const Array a = Array::open(small.store, "a"), b = Array::open(big_store, "a");
  for (int round = 0; round < 2; ++round) {
    expect_same(a, {{0, 0, 0}, small.shape}, 2);
    expect_same(b, {{0, 0, 0}, shape}, 2);
  }
  EXPECT_EQ(gpu.max_batch(), 1u);
}

TEST(GpuReadModel, ConcurrentReadsShareAtMostTwoStagingSets) {
  const TestArray t = make_array(plain("zstd"));
  const Array a = Array::open(t.store, "a");
  ModelGpu gpu(config(2, 3, a.unit_bytes()));
  Bytes host(t.data.size());
  a.read({{0, 0, 0}, t.shape}, host.data(), host.size(), with(DecodeBackend::kCpu, 1));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      Bytes out(t.data.size());
      for (int r = 0; r < 3; ++r) {
        a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kGpu, 2));
        if (std::memcmp(out.data(), host.data(), out.size()) != 0) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(gpu.most_sets(), 1);
  EXPECT_LE(gpu.most_sets(), GpuStagingLease::kMaxSets);
}

TEST(GpuReadModel, TheReadsOfACodecChainTheGpuDoesNotDecodeAreRefusedForKGpu) {
  const TestArray t = make_array(plain("gzip"));
  const Array a = Array::open(t.store, "a");
  ModelGpu gpu(config(2, 3, a.unit_bytes()));
  Bytes out(t.data.size());
  EXPECT_TRUE(test::throws_error([&] { a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kGpu, 1)); },
                                 ErrorCode::kUnsupported, {"decode on the GPU was asked for", "gzip"}));
  const TestArray raw = make_array(plain("none"));
  const Array r = Array::open(raw.store, "a");
  EXPECT_TRUE(test::throws_error([&] { r.read({{0, 0, 0}, raw.shape}, out.data(), out.size(), with(DecodeBackend::kGpu, 1)); },
                                 ErrorCode::kUnsupported, {"uncompressed"}));
  // kAuto reads them on the host
  EXPECT_NO_THROW(a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kAuto, 1)));
  EXPECT_EQ(gpu.decode_calls(), 0u);
}

TEST(GpuReadModel, KAutoTakesTheGpuTheEnvironmentAsksForAndFallsBackWhenTheDeviceFails) {
  const TestArray t = make_array(plain("zstd"));
  const Array a = Array::open(t.store, "a");
  const Region all{{0, 0, 0}, t.shape};
  Bytes out(t.data.size());
  ::setenv("CUBESTREAM_READ_DECODE", "gpu", 1);
  {
    ModelGpu gpu(config(3, 3, a.unit_bytes()));
    const ReadStats s = a.read(all, out.data(), out.size(), with(DecodeBackend::kAuto, 3));
    EXPECT_GT(s.chunks_read, 0u);
    EXPECT_EQ(s.chunks_decoded_on_gpu, s.chunks_read);
    EXPECT_EQ(std::memcmp(out.data(), t.data.data(), out.size()), 0);
    // "cpu" keeps it on the host
    ::setenv("CUBESTREAM_READ_DECODE", "cpu", 1);
    EXPECT_EQ(a.read(all, out.data(), out.size(), with(DecodeBackend::kAuto, 3)).chunks_decoded_on_gpu, 0u);
    ::setenv("CUBESTREAM_READ_DECODE", "gpu", 1);
  }
  {
    ModelGpu broken(config(3, 3, a.unit_bytes()), {}, /*fail_waits=*/true);
    for (int round = 0; round < 2; ++round) {  // the failed set is discarded, not kept: no hang
      std::memset(out.data(), 0x5A, out.size());
      const ReadStats s = a.read(all, out.data(), out.size(), with(DecodeBackend::kAuto, 3));
      EXPECT_EQ(s.chunks_decoded_on_gpu, 0u);
      EXPECT_EQ(s.chunks_read + s.chunks_missing, 36u);
      EXPECT_EQ(std::memcmp(out.data(), t.data.data(), out.size()), 0);
      EXPECT_TRUE(test::throws_error([&] { a.read(all, out.data(), out.size(), with(DecodeBackend::kGpu, 3)); },
                                     ErrorCode::kCuda, {"model device failed"}));
    }
    EXPECT_EQ(GpuStagingLease::idle_bytes(-1).first, 0u);
  }
  ::setenv("CUBESTREAM_READ_DECODE", "auto", 1);
  Bytes small(4 * 21 * 19 * 4);
  EXPECT_NO_THROW(a.read({{0, 0, 0}, {4, 21, 19}}, small.data(), small.size(), with(DecodeBackend::kAuto, 1)));
  ::setenv("CUBESTREAM_READ_DECODE", "gpus", 1);
  // a bad value is an error of every default read, naming the variable and the array
  EXPECT_TRUE(test::throws_error([&] { a.read(all, out.data(), out.size(), with(DecodeBackend::kAuto, 1)); },
                                 ErrorCode::kInvalidArgument, {"CUBESTREAM_READ_DECODE", "gpu-read"}));
  ::unsetenv("CUBESTREAM_READ_DECODE");
}

TEST(GpuReadModel, UnitsLargerThanAWaveUseTwoSlotsAndTheGrownSetIsFreedAfterTheRead) {
  auto store = std::make_shared<MemoryStore>("big-units");
  const std::vector<std::int64_t> shape{5, 300, 300};
  std::vector<float> v(5 * 300 * 300);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 977) * 0.5f;
  auto w = ArrayWriter::create(store, "a", float_array(shape, {1, 300, 300}, v3_codecs(plain("zstd"), DataType::float_(4))));
  w.write_region({{0, 0, 0}, shape}, v.data(), v.size() * 4);
  const TestArray small = make_array(plain("zstd"));
  GpuReadConfig c;
  c.wave_bytes = 4096;  // units of 360 KB: a wave of one unit, and 2 of the 4 slots
  c.slots = 4;
  ModelGpu gpu(c);
  const Array big = Array::open(store, "a"), a = Array::open(small.store, "a");
  expect_same(big, {{0, 0, 0}, shape}, 3);
  EXPECT_EQ(GpuStagingLease::idle_bytes(-1).first, 0u) << "a set grown for large units is kept";
  EXPECT_EQ(gpu.max_batch(), 1u);
  expect_same(a, {{0, 0, 0}, small.shape}, 3);  // units of 320 bytes fit the configured wave
  EXPECT_GT(GpuStagingLease::idle_bytes(-1).first, 0u) << "a set of the configured size is not kept";
}

TEST(GpuRead, WithoutAVisibleGpuKGpuIsAClearErrorAndKAutoReadsOnTheHost) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is visible: GpuReadCuda.* covers it";
  const TestArray t = make_array(plain("zstd"));
  const Array a = Array::open(t.store, "a");
  Bytes out(t.data.size());
  EXPECT_TRUE(test::throws_error([&] { a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kGpu, 1)); },
                                 ErrorCode::kUnsupported, {"GPU"}));
  const ReadStats s = a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kAuto, 1));
  EXPECT_EQ(s.chunks_decoded_on_gpu, 0u);
  EXPECT_EQ(std::memcmp(out.data(), t.data.data(), out.size()), 0);
}

// ---- the same reads on a real GPU (skipped where none is visible) --------------------------

// Installs a factory of staging sets on CUDA device 0 with `config` for the test's lifetime.
class CudaGpu {
 public:
  explicit CudaGpu(GpuReadConfig config) {
    previous_ = GpuStagingLease::set_factory(
        [config](int d) { return std::make_unique<GpuReadStaging>(zarr::make_cuda_read_device(d), config); });
  }
  ~CudaGpu() { GpuStagingLease::set_factory(previous_); }

 private:
  GpuStagingLease::Factory previous_;
};

// A smooth (8, 181, 360) float32 field, quantised to 1/64 as reanalysis is, in chunks of
// (1, 181, 360) (260 KB) or shards of (4, 181, 360) with such inner chunks.
TestArray make_field(const CodecChoice& choice) {
  TestArray t;
  t.shape = {8, 181, 360};
  const std::size_t n = 8 * 181 * 360;
  std::vector<float> v(n);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0, 0.2f);
  for (std::size_t i = 0; i < n; ++i) {
    const float y = static_cast<float>((i / 360) % 181), x = static_cast<float>(i % 360), tt = static_cast<float>(i / (181 * 360));
    const float f = 273.0f + 30.0f * std::cos(y * 0.0174f) + 4.0f * std::sin(x * 0.05f + tt) + noise(rng);
    v[i] = std::round(f * 64.0f) / 64.0f;
  }
  t.data.resize(n * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  CodecChoice c = choice;
  if (c.inner_chunks) c.inner_chunks = std::vector<std::int64_t>{1, 181, 360};
  auto w = ArrayWriter::create(t.store, "a",
                               float_array(t.shape, {c.inner_chunks ? 4 : 1, 181, 360}, v3_codecs(c, DataType::float_(4))));
  w.write_region({{0, 0, 0}, t.shape}, t.data.data(), t.data.size(), 2);
  return t;
}

TEST(GpuReadCuda, EveryCodecAndRegionMatchesTheHostReadBitForBit) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  CodecChoice shuffled = plain("blosc-lz4");
  shuffled.shuffle = true;
  CodecChoice blosc_zstd = plain("blosc-zstd");
  blosc_zstd.shuffle = true;
  for (const auto& choice : {plain("zstd"), plain("lz4"), shuffled, blosc_zstd, sharded("zstd"), sharded("lz4", true)}) {
    const TestArray t = make_field(choice);
    const Array a = Array::open(t.store, "a");
    SCOPED_TRACE(a.metadata().codecs.dump());
    for (std::size_t wave_units : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
      CudaGpu gpu(config(wave_units, wave_units == 3 ? 2 : 4, a.unit_bytes()));
      const ReadStats s = expect_same(a, {{0, 0, 0}, t.shape}, 4);
      if (choice.compressor == "blosc-zstd") {
        // the GPU's blosc decoder leaves blosc's inner zstd to the host (kUnsupported): every
        // chunk comes back refused and is decoded from the staging on the host
        EXPECT_EQ(s.gpu_refused, s.chunks_read);
      } else {
        EXPECT_EQ(s.chunks_decoded_on_gpu, s.chunks_read) << "refused: " << s.gpu_refused;
      }
      std::mt19937 rng(static_cast<unsigned>(wave_units));
      for (int i = 0; i < 5; ++i) expect_same(a, random_region(rng, t.shape), 3);
    }
    // the small arrays of the model tests too (units of 320 bytes, many a wave)
    const TestArray small = make_array(choice);
    const Array b = Array::open(small.store, "a");
    CudaGpu gpu(config(16, 3, b.unit_bytes()));
    expect_same(b, {{0, 0, 0}, small.shape}, 2);
  }
}

TEST(GpuReadCuda, CorruptChunksGiveTheHostCodecsError) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (const auto& choice : {plain("zstd"), plain("lz4"), sharded("zstd")}) {
    TestArray t = make_field(choice);
    const std::string key = choice.inner_chunks ? "a/c/1/0/0" : "a/c/5/0/0";
    Bytes v = *t.store->get(key);
    for (std::size_t i = 0; i < 8; ++i) v[i] ^= 0xFF;
    t.store->set(key, v);
    const Array a = Array::open(t.store, "a");
    CudaGpu gpu(config(3, 3, a.unit_bytes()));
    const Region all{{0, 0, 0}, t.shape};
    const Error host = error_of(a, all, DecodeBackend::kCpu, 3), gpu_err = error_of(a, all, DecodeBackend::kGpu, 3);
    EXPECT_EQ(gpu_err.code(), host.code()) << gpu_err.what();
    EXPECT_EQ(gpu_err.context().key, key) << gpu_err.what();
    EXPECT_EQ(gpu_err.context().offset, host.context().offset) << gpu_err.what() << " / " << host.what();
    // and the device is still usable after the refusal
    TestArray clean = make_field(choice);
    expect_same(Array::open(clean.store, "a"), {{0, 0, 0}, clean.shape}, 3);
  }
}

TEST(GpuReadCuda, TheDefaultPoolServesKGpuAndTheEnvironmentsGpuMode) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const TestArray t = make_field(plain("zstd"));
  const Array a = Array::open(t.store, "a");
  Bytes out(t.data.size());
  const ReadStats s = a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kGpu, 4));
  EXPECT_EQ(s.chunks_decoded_on_gpu, 8u);
  EXPECT_EQ(std::memcmp(out.data(), t.data.data(), out.size()), 0);
  // kAuto: this read is below the size the default sends to the GPU; "gpu" sends it there
  EXPECT_EQ(a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kAuto, 4)).chunks_decoded_on_gpu, 0u);
  ::setenv("CUBESTREAM_READ_DECODE", "gpu", 1);
  const ReadStats g = a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), with(DecodeBackend::kAuto, 4));
  ::unsetenv("CUBESTREAM_READ_DECODE");
  EXPECT_EQ(g.chunks_decoded_on_gpu, 8u);
  EXPECT_EQ(std::memcmp(out.data(), t.data.data(), out.size()), 0);
}

TEST(GpuReadCuda, AChecksummedFrameWhoseBytesWereDamagedIsTheHostsChecksumError) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  // random values do not compress: zstd stores them in raw blocks, so a flipped byte inside
  // one still parses and only the frame's content checksum catches it
  auto store = std::make_shared<MemoryStore>("checksummed");
  const std::vector<std::int64_t> shape{4, 300, 300};
  std::vector<std::uint32_t> v(4 * 300 * 300);
  std::mt19937 rng(9);
  for (auto& x : v) x = rng();
  const json codecs = json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                   {{"name", "zstd"}, {"configuration", {{"level", 1}, {"checksum", true}}}}});
  auto w = ArrayWriter::create(store, "a", float_array(shape, {1, 300, 300}, codecs));
  w.write_region({{0, 0, 0}, shape}, v.data(), v.size() * 4);
  const Array a = Array::open(store, "a");
  CudaGpu gpu(config(2, 3, a.unit_bytes()));
  expect_same(a, {{0, 0, 0}, shape}, 2);  // intact: the GPU checks the checksums and agrees
  Bytes damaged = *store->get("a/c/2/0/0");
  damaged[1000] ^= 0x01;
  store->set("a/c/2/0/0", damaged);
  const Region all{{0, 0, 0}, shape};
  const Error host = error_of(a, all, DecodeBackend::kCpu, 2), gpu_err = error_of(a, all, DecodeBackend::kGpu, 2);
  EXPECT_EQ(host.code(), ErrorCode::kChecksumMismatch) << host.what();
  EXPECT_EQ(gpu_err.code(), host.code()) << gpu_err.what();
  EXPECT_EQ(gpu_err.context().key, "a/c/2/0/0");
}

TEST(GpuReadCuda, TheCallersCurrentDeviceIsKept) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const int last = cuda::device_count() - 1;
  cuda::set_device(last);
  const TestArray t = make_field(plain("zstd"));
  const Array a = Array::open(t.store, "a");
  Bytes out(t.data.size());
  ReadOptions o = with(DecodeBackend::kGpu, 2);
  o.gpu_device = 0;
  EXPECT_EQ(a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), o).chunks_decoded_on_gpu, 8u);
  EXPECT_EQ(cuda::current_device(), last);
  o.gpu_device = -1;  // the current one
  EXPECT_EQ(a.read({{0, 0, 0}, t.shape}, out.data(), out.size(), o).chunks_decoded_on_gpu, 8u);
  EXPECT_EQ(cuda::current_device(), last);
  EXPECT_EQ(std::memcmp(out.data(), t.data.data(), out.size()), 0);
}

// ---- the backend rules ----------------------------------------------------------------------

zarr::ChainRoute route(zarr::UnitRoute r, cuda::BatchCodec c = cuda::BatchCodec::kZstd) {
  zarr::ChainRoute x;
  x.route = r;
  x.codec = c;
  x.why = "codec \"gzip\" has no GPU decoder";
  return x;
}

TEST(ReadBackend, AutoTakesTheGpuForLargeZstdReadsOnlyWhereADeviceIsVisible) {
  using zarr::choose_read_backend;
  const auto gpu = route(zarr::UnitRoute::kGpuDecode);
  const std::size_t big = zarr::kAutoGpuReadColdBytes, unit = 4 << 20;
  int asked = 0;
  auto one = [&] {
    ++asked;
    return 1;
  };
  auto none = [&] {
    ++asked;
    return 0;
  };
  auto cold = [] { return false; };
  auto warm = [] { return true; };
  EXPECT_TRUE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, big, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, big, unit, 0, cold, one).required);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, big, unit, 0, cold, none).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, big, unit, 1, cold, one).gpu);  // device 1 of 1
  asked = 0;
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, big - 1, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, "auto", route(zarr::UnitRoute::kGpuDecode, cuda::BatchCodec::kLz4),
                                   big, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, "cpu", gpu, big, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, route(zarr::UnitRoute::kHostDecode), big, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, big, zarr::kGpuReadMaxUnitBytes + 1, 0, cold, one).gpu);
  EXPECT_EQ(asked, 0) << "the devices were asked for although the answer did not matter";
  // once a staging set exists (the start is paid), reads from 64 MiB up
  const std::size_t warm_min = zarr::kAutoGpuReadMinBytes;
  EXPECT_TRUE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, warm_min, unit, 0, warm, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, warm_min, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, nullptr, gpu, warm_min - 1, unit, 0, warm, one).gpu);
  // "gpu": every decodable chain, any size; the others still on the host
  EXPECT_TRUE(choose_read_backend(DecodeBackend::kAuto, "gpu", route(zarr::UnitRoute::kGpuDecode, cuda::BatchCodec::kBlosc),
                                  100, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, "gpu", route(zarr::UnitRoute::kHostDecode), big, unit, 0, cold, one).gpu);
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kAuto, "gpu", gpu, big, unit, 0, cold, none).gpu);
  EXPECT_TRUE(test::throws_error([&] { choose_read_backend(DecodeBackend::kAuto, "gpus", gpu, big, unit, 0, cold, one); },
                                 ErrorCode::kInvalidArgument, {"CUBESTREAM_READ_DECODE"}));
  // kCpu never, kGpu always (the device's absence is found when the staging is made)
  EXPECT_FALSE(choose_read_backend(DecodeBackend::kCpu, "gpu", gpu, big, unit, 0, cold, one).gpu);
  const auto req = choose_read_backend(DecodeBackend::kGpu, "cpu", gpu, 10, unit, 0, cold, none);
  EXPECT_TRUE(req.gpu && req.required);
  EXPECT_TRUE(test::throws_error(
      [&] { choose_read_backend(DecodeBackend::kGpu, nullptr, route(zarr::UnitRoute::kHostDecode), big, unit, 0, cold, one); },
      ErrorCode::kUnsupported, {"gzip"}));
  EXPECT_TRUE(test::throws_error(
      [&] { choose_read_backend(DecodeBackend::kGpu, nullptr, gpu, big, zarr::kGpuReadMaxUnitBytes + 1, 0, cold, one); },
      ErrorCode::kUnsupported, {"larger"}));
}

TEST(ReadBackend, TheChainRouteNamesWhatTheGpuDecodes) {
  struct Case {
    CodecChoice choice;
    zarr::UnitRoute route;
    cuda::BatchCodec codec;
  };
  CodecChoice shuffled_lz4 = plain("blosc-lz4");
  shuffled_lz4.shuffle = true;
  const std::vector<Case> cases{{plain("zstd"), zarr::UnitRoute::kGpuDecode, cuda::BatchCodec::kZstd},
                                {plain("lz4"), zarr::UnitRoute::kGpuDecode, cuda::BatchCodec::kLz4},
                                {shuffled_lz4, zarr::UnitRoute::kGpuDecode, cuda::BatchCodec::kBlosc},
                                {sharded("zstd"), zarr::UnitRoute::kGpuDecode, cuda::BatchCodec::kZstd},
                                {plain("none"), zarr::UnitRoute::kRaw, cuda::BatchCodec::kBlosc},
                                {plain("gzip"), zarr::UnitRoute::kHostDecode, cuda::BatchCodec::kBlosc}};
  for (const auto& c : cases) {
    const TestArray t = make_array(c.choice);
    const zarr::ChainRoute r = zarr::chain_route(Array::open(t.store, "a"));
    EXPECT_EQ(r.route, c.route) << r.why;
    if (r.route == zarr::UnitRoute::kGpuDecode) EXPECT_EQ(r.codec, c.codec);
  }
  CodecChoice crc = plain("zstd");
  crc.checksum = true;  // zstd then crc32c: a chain of three
  const TestArray t = make_array(crc);
  const zarr::ChainRoute r = zarr::chain_route(Array::open(t.store, "a"));
  EXPECT_EQ(r.route, zarr::UnitRoute::kHostDecode);
  EXPECT_NE(r.why.find("3 codecs"), std::string::npos) << r.why;
}

}  // namespace
}  // namespace cubestream
