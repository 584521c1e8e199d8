// The loader's CUDA hand-over: batches on the GPU equal the CPU loader's bit for bit, for a
// few configs (dtypes, windows, statics, prefetch), and buffers recycled through the pool are
// never overwritten while the consumer still reads them (the pool waits on the consumer's
// stream). Skipped where no CUDA device is visible; built everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "cubestream/error.hpp"
#include "cubestream/loader.hpp"
#include "cuda/memory.hpp"
#include "sample/selection_test_stores.hpp"

namespace cubestream {
namespace {

using namespace test_stores;

std::vector<std::uint8_t> host_bytes(const Tensor& t) {
  std::vector<std::uint8_t> out(t.num_bytes());
  if (t.device == DeviceKind::kCuda) {
    cuda::copy_to_host(out.data(), t.data, out.size(), t.device_index);
  } else {
    std::memcpy(out.data(), t.data, out.size());
  }
  return out;
}

// Walks both loaders to the end of their epoch: as many batches from each, the same bytes in
// inputs and targets. `batches` (if given) gets the count; `after_each` (if given) runs after
// every pair, as a consumer's step would.
void expect_same_batches(Loader& host, Loader& gpu, const std::string& what, std::int64_t* batches = nullptr,
                         const std::function<void()>& after_each = {}) {
  std::int64_t n = 0;
  for (;; ++n) {
    auto a = host.next();
    auto b = gpu.next();
    ASSERT_EQ(a.has_value(), b.has_value()) << what << " batch " << n;
    if (!a) break;
    a->synchronize();
    b->synchronize();
    ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << what << " batch " << n;
    ASSERT_EQ(host_bytes(*a->targets), host_bytes(*b->targets)) << what << " batch " << n;
    if (after_each) after_each();
  }
  if (batches) *batches = n;
}

TEST(LoaderCuda, BatchesEqualTheCpuLoaderBitForBit) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const auto years = three_years();
  const std::optional<Dataset> statics = Dataset::open(static_store());
  std::mt19937_64 rng(21);
  int batches = 0;
  for (int round = 0; round < 12; ++round) {
    LoaderConfig c;
    c.selection.variables = {"t2m", "temperature", "vt"};
    if (round % 2) c.selection.static_variables = {"orography", "soil"};
    if (round % 3 == 0) c.selection.select = {{"level", {850}}};
    c.sampler.window = ForecastWindow{"time", {-static_cast<std::int64_t>(round % 3), 0}, {1 + round % 2}};
    if (round % 4 == 1) c.sampler.patch = {{"latitude", 3}, {"longitude", 4}};
    c.sampler.shuffle = static_cast<ShuffleMode>(round % 3);
    c.sampler.seed = rng();
    c.sampler.batch_size = 1 + round % 4;
    c.dtype = static_cast<OutputDType>(round % 3);
    c.prefetch = 1 + round % 3;
    c.threads = 2;
    c.memory_limit = std::uint64_t{64} << 20;
    LoaderConfig g = c;
    g.device = DeviceKind::kCuda;
    // Odd rounds: decode and assemble on the host, copy the batch; even rounds: the GPU path
    // (these stores are uncompressed: the units go over raw and the GPU assembles them).
    g.decode = round % 2 ? DecodeBackend::kCpu : DecodeBackend::kAuto;
    Loader cpu(ConcatenatedTime(years), c, statics);
    Loader gpu(ConcatenatedTime(years), g, statics);
    for (int e = 0; e < 2; ++e) {
      for (;;) {
        auto a = cpu.next();
        auto b = gpu.next();
        ASSERT_EQ(a.has_value(), b.has_value());
        if (!a) break;
        ASSERT_EQ(b->inputs.device, DeviceKind::kCuda);
        b->synchronize();
        ASSERT_EQ(a->samples, b->samples);
        ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << "round " << round;
        ASSERT_EQ(a->targets.has_value(), b->targets.has_value());
        if (a->targets) ASSERT_EQ(host_bytes(*a->targets), host_bytes(*b->targets)) << "round " << round;
        ++batches;
      }
    }
    if (g.decode == DecodeBackend::kCpu) {
      EXPECT_GT(gpu.stats().transfer_s, 0.0);
      EXPECT_EQ(gpu.stats().decode_path, "cpu");
    } else {
      EXPECT_EQ(gpu.stats().decode_path, "gpu");
    }
  }
  EXPECT_GT(batches, 50);
}

TEST(LoaderCuda, ConsumerStreamOrderingKeepsHeldBatchesIntact) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (DecodeBackend decode : {DecodeBackend::kCpu, DecodeBackend::kAuto}) {
  LoaderConfig c;
  c.decode = decode;
  c.selection.variables = {"t2m"};
  c.sampler.window = ForecastWindow{"time", {0}, {1}};
  c.sampler.batch_size = 1;
  c.prefetch = 1;
  c.threads = 1;
  c.device = DeviceKind::kCuda;
  Loader l(ConcatenatedTime(three_years()), c);
  LoaderConfig cc = c;
  cc.device = DeviceKind::kCpu;
  Loader ref(ConcatenatedTime(three_years()), cc);
  // Hold every batch of the epoch (more than the pool keeps) and check them all at the end:
  // a recycled buffer overwritten too early would show another batch's data.
  std::vector<Batch> held;
  std::vector<std::vector<std::uint8_t>> want;
  void* stream = cuda::create_stream(0);
  while (auto b = l.next()) {
    b->wait_on(stream);
    held.push_back(std::move(*b));
    want.push_back(host_bytes(ref.next()->inputs));
  }
  ASSERT_EQ(held.size(), 11u);
  for (std::size_t i = 0; i < held.size(); ++i) {
    held[i].synchronize();
    EXPECT_EQ(host_bytes(held[i].inputs), want[i]) << i;
  }
  // The consumer's stream must outlive the batches handed to it (their buffers go back to
  // the pool ordered after it): release them first.
  held.clear();
  cuda::destroy_stream(stream, 0);
  }
}

}  // namespace
}  // namespace cubestream

namespace cubestream {
namespace {

// GPU decode + GPU assembly against the host path, on the shipped CMIP5 store (blosc-lz4 with
// shuffle, Zarr v2): the same bits, every unit decoded by the GPU decoders.
TEST(LoaderCuda, GpuDecodeEqualsHostDecodeOnBloscStore) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  for (int round = 0; round < 6; ++round) {
    LoaderConfig c;
    c.selection.variables = {"tas", "uas", "vas"};
    c.sampler.window = ForecastWindow{"time", {0}, {1}};
    if (round % 2) c.sampler.patch = {{"lat", 40}, {"lon", 64}};
    c.sampler.shuffle = static_cast<ShuffleMode>(round % 3);
    c.sampler.batch_size = 1 + round;
    c.dtype = static_cast<OutputDType>(round % 3);
    if (round == 4) c.selection.normalisation = {{"tas", {280.0, 20.0}}};
    c.device = DeviceKind::kCuda;
    LoaderConfig h = c;
    h.decode = DecodeBackend::kCpu;
    c.decode = DecodeBackend::kGpu;
    Loader gpu(ConcatenatedTime(Dataset::open(open_store(demo))), c);
    Loader host(ConcatenatedTime(Dataset::open(open_store(demo))), h);
    expect_same_batches(host, gpu, "round " + std::to_string(round));
    if (HasFatalFailure()) return;
    const LoaderStats st = gpu.stats();
    EXPECT_EQ(st.decode_path, "gpu");
    EXPECT_GT(st.units_gpu_decoded, 0u);
    EXPECT_EQ(st.units_gpu_fallback, 0u);
    EXPECT_EQ(host.stats().decode_path, "cpu");
  }
}

// The GPU path with a share of its units decoded by the fetch threads (fixed shares, and the
// adaptive one): the same bits as the host path, the chosen units counted, and decode=gpu
// refusing a host share.
// The demo store's three surface fields, 40 x 64 patches from t to t+1, shuffled samples,
// bf16 batches on the GPU: the config of the decode-path tests below.
LoaderConfig demo_patch_config(std::int64_t batch_size) {
  LoaderConfig c;
  c.selection.variables = {"tas", "uas", "vas"};
  c.sampler.window = ForecastWindow{"time", {0}, {1}};
  c.sampler.patch = {{"lat", 40}, {"lon", 64}};
  c.sampler.shuffle = ShuffleMode::kSample;
  c.sampler.batch_size = batch_size;
  c.dtype = OutputDType::kBFloat16;
  c.device = DeviceKind::kCuda;
  return c;
}

TEST(LoaderCuda, HostDecodeShareGivesTheSameBatches) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  for (double share : {0.5, 1.0, 0.25, -1.0}) {
    LoaderConfig c = demo_patch_config(4);
    c.host_decode_share = share;
    LoaderConfig h = c;
    h.decode = DecodeBackend::kCpu;
    Loader gpu(ConcatenatedTime(Dataset::open(open_store(demo))), c);
    Loader host(ConcatenatedTime(Dataset::open(open_store(demo))), h);
    std::int64_t n = 0;
    expect_same_batches(host, gpu, "share " + std::to_string(share), &n);
    if (HasFatalFailure()) return;
    ASSERT_GT(n, 2);
    const LoaderStats st = gpu.stats();
    EXPECT_EQ(st.decode_path, "gpu");
    EXPECT_EQ(st.units_gpu_fallback, 0u);
    if (share == 1.0) {
      EXPECT_EQ(st.units_gpu_decoded, 0u);
      EXPECT_EQ(st.units_host_decoded, st.units_fetched - st.units_missing);
    } else if (share > 0) {
      EXPECT_GT(st.units_gpu_decoded, 0u) << share;
      EXPECT_GT(st.units_host_decoded, 0u) << share;
    }
    if (share >= 0) EXPECT_DOUBLE_EQ(st.host_decode_share, share);
  }
  LoaderConfig g;
  g.selection.variables = {"tas"};
  g.device = DeviceKind::kCuda;
  g.decode = DecodeBackend::kGpu;
  g.host_decode_share = 0.5;
  EXPECT_THROW(Loader(ConcatenatedTime(Dataset::open(open_store(demo))), g), Error);
}

// Under a consumer slower than the host (here: a sleep per batch, as a training step would
// be) the adaptive share's first trial of whole batches passes and they stay: batches are
// built whole on the host from the start. Over many epochs they equal the CPU loader's, bit
// for bit; with CUBESTREAM_HOST_BATCHES=off there is no trial, the share climbs from 0 to 1
// and every batch stays on the GPU stage.
TEST(LoaderCuda, AdaptiveShareAtOneBuildsWholeBatchesOnTheHost) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  for (const bool host_batches : {true, false}) {
    if (host_batches) {
      unsetenv("CUBESTREAM_HOST_BATCHES");
    } else {
      setenv("CUBESTREAM_HOST_BATCHES", "off", 1);
    }
    LoaderConfig c = demo_patch_config(2);
    c.host_decode_share = -1;   // adaptive
    LoaderConfig h = c;
    h.decode = DecodeBackend::kCpu;
    Loader gpu(ConcatenatedTime(Dataset::open(open_store(demo))), c);
    Loader host(ConcatenatedTime(Dataset::open(open_store(demo))), h);
    unsetenv("CUBESTREAM_HOST_BATCHES");
    const std::string what = host_batches ? "host batches on" : "host batches off";
    std::int64_t batches = 0;
    std::uint64_t built_before_last = 0;
    for (int epoch = 0; epoch < 16; ++epoch) {
      std::int64_t n = 0;
      expect_same_batches(host, gpu, what + " epoch " + std::to_string(epoch), &n,
                          [] { std::this_thread::sleep_for(std::chrono::milliseconds(4)); });
      if (HasFatalFailure()) return;
      batches += n;
      if (epoch == 14) built_before_last = gpu.stats().batches_built_on_host;
    }
    const LoaderStats st = gpu.stats();
    EXPECT_GT(batches, 60) << what;
    EXPECT_EQ(st.units_gpu_fallback, 0u);
    EXPECT_DOUBLE_EQ(st.host_decode_share, 1.0) << what;
    if (host_batches) {
      // The trial kept them, and they stay (the host's work is far below the consumer's step).
      EXPECT_GE(st.batches_built_on_host, static_cast<std::uint64_t>(batches)) << what;   // and any prefetched
      EXPECT_GT(st.batches_built_on_host, built_before_last);
      EXPECT_EQ(st.units_gpu_decoded, 0u);
      EXPECT_EQ(st.host_share_trials, 1u);
      EXPECT_EQ(st.host_share_trials_kept, 1u);
    } else {
      EXPECT_EQ(st.host_share_trials, 0u);
      EXPECT_EQ(st.batches_built_on_host, 0u);
      EXPECT_GT(st.units_gpu_decoded, 0u);   // the first batches, before the share climbed
    }
  }
}

// Host-built and GPU-stage batches interleaved (CUBESTREAM_HOST_BATCHES=alternate: every other
// batch built on the host, whatever the share) with three batches prefetched: they arrive in
// order and equal the CPU loader's, also after a restart in the middle of an epoch that drops
// batches of both kinds in flight and ready (their device buffers, written by two different
// streams, go back to one pool), and within the memory limit.
TEST(LoaderCuda, HostBuiltAndGpuStageBatchesInterleaveInOrder) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  LoaderConfig c = demo_patch_config(2);
  c.prefetch = 3;
  c.host_decode_share = 0;   // the GPU decodes the GPU-stage batches' units
  LoaderConfig h = c;
  h.decode = DecodeBackend::kCpu;
  setenv("CUBESTREAM_HOST_BATCHES", "alternate", 1);
  Loader gpu(ConcatenatedTime(Dataset::open(open_store(demo))), c);
  unsetenv("CUBESTREAM_HOST_BATCHES");
  Loader host(ConcatenatedTime(Dataset::open(open_store(demo))), h);
  // Two batches of epoch 0, then a restart at epoch 1 while the rest are in flight or ready.
  for (int i = 0; i < 2; ++i) {
    auto a = host.next();
    auto b = gpu.next();
    ASSERT_TRUE(a && b);
    b->synchronize();
    ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << "epoch 0 batch " << i;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));   // let the producer fill its slots
  host.set_epoch(1);
  gpu.set_epoch(1);
  for (int e = 1; e <= 3; ++e) {
    std::int64_t n = 0;
    expect_same_batches(host, gpu, "epoch " + std::to_string(e), &n);
    if (HasFatalFailure()) return;
    ASSERT_GT(n, 3);
  }
  const LoaderStats st = gpu.stats();
  EXPECT_GT(st.batches_built_on_host, 4u);
  EXPECT_GT(st.units_gpu_decoded, 0u);
  EXPECT_EQ(st.units_gpu_fallback, 0u);
  EXPECT_LE(st.memory_peak, st.memory_limit);
}

// Step pacing (LoaderConfig::gpu_pacing = kStep): a GPU-stage batch fetched ahead is launched only
// when the consumer takes its next batch, unless none is ready. Under a consumer that sleeps
// per batch (a training step) the producer waits at the gate (the trace records only waits
// that happened), with prefetch 3 and 2 alike, and the batches equal the CPU loader's bit for
// bit over several epochs; after a restart in mid-epoch, a consumer that drains the queue
// without pausing gets every batch too. A value other than step or off is refused.
TEST(LoaderCuda, PacedLaunchesKeepTheBatchesAndTheirOrder) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::string demo = std::string(CUBESTREAM_SOURCE_DIR) + "/data/demo/cmip5_2005.zarr";
  for (const int prefetch : {3, 2}) {
    SCOPED_TRACE("prefetch " + std::to_string(prefetch));
    LoaderConfig c = demo_patch_config(2);
    c.prefetch = prefetch;
    c.host_decode_share = 0;   // every unit through the GPU stage
    c.trace = true;
    LoaderConfig h = c;
    h.decode = DecodeBackend::kCpu;
    h.trace = false;
    setenv("CUBESTREAM_GPU_PACING", "sometimes", 1);
    EXPECT_THROW(Loader(ConcatenatedTime(Dataset::open(open_store(demo))), c), Error);
    unsetenv("CUBESTREAM_GPU_PACING");
    c.gpu_pacing = GpuPacing::kStep;
    Loader gpu(ConcatenatedTime(Dataset::open(open_store(demo))), c);
    Loader host(ConcatenatedTime(Dataset::open(open_store(demo))), h);
    for (int e = 0; e < 3; ++e) {
      std::int64_t n = 0;
      expect_same_batches(host, gpu, "slow consumer, epoch " + std::to_string(e), &n,
                          [] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); });
      if (HasFatalFailure()) return;
      ASSERT_GT(n, 3);
    }
    // A restart in mid-epoch (batches fetched, in flight or ready are dropped), then epochs
    // taken as fast as they come.
    for (int i = 0; i < 2; ++i) {
      auto a = host.next();
      auto b = gpu.next();
      ASSERT_TRUE(a && b);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    host.set_epoch(4);
    gpu.set_epoch(4);
    for (int e = 4; e < 6; ++e) {
      std::int64_t n = 0;
      expect_same_batches(host, gpu, "fast consumer, epoch " + std::to_string(e), &n);
      if (HasFatalFailure()) return;
      ASSERT_GT(n, 3);
    }
    double waited_ms = 0;
    int waits = 0;
    // What the producer did, for the failure message: events and milliseconds per stage, and
    // the deepest ready queue it saw (a gate that never waits with batches ready is a bug; one
    // that never sees a ready batch means the producer was slower than the consumer).
    std::map<std::string, std::pair<int, double>> stages;
    std::int64_t ready_max = 0;
    // Held in a variable: in C++20 a range-for over trace_json()["traceEvents"] would iterate a
    // reference into a temporary destroyed before the loop body runs.
    const nlohmann::json trace = gpu.trace_json();
    for (const auto& ev : trace["traceEvents"]) {
      const std::string name = ev["name"];
      if (ev["ph"] == "C") {
        ready_max = std::max<std::int64_t>(ready_max, ev["args"]["value"].get<std::int64_t>());
        continue;
      }
      auto& [count, ms] = stages[name];
      ++count;
      ms += ev["dur"].get<double>() / 1000.0;
      if (name != "gpu pacing wait") continue;
      ++waits;
      waited_ms += ev["dur"].get<double>() / 1000.0;
    }
    std::string summary = "deepest ready queue " + std::to_string(ready_max);
    for (const auto& [name, cm] : stages) {
      summary += "; " + name + ": " + std::to_string(cm.first) + " events, " + std::to_string(cm.second) + " ms";
    }
    EXPECT_GT(waits, 10) << summary;
    EXPECT_GT(waited_ms, 20.0) << summary;   // the 10 ms steps held launches back
    EXPECT_GT(gpu.stats().units_gpu_decoded, 0u);
  }
}

}  // namespace
}  // namespace cubestream

#include <lz4.h>
#include <zstd.h>

namespace cubestream {
namespace {

// A (time, lat, lon) float32 variable compressed with `codec` ("zstd": Zarr v3 bytes + zstd
// level 3; "lz4": Zarr v2 numcodecs lz4, a 4-byte size then one LZ4 block), written chunk by
// chunk into `s` with the libraries themselves.
void put_compressed(MemoryStore& s, const std::string& name, const std::string& codec, std::int64_t nt,
                    std::int64_t ny, std::int64_t nx, std::int64_t ct, std::int64_t cy, std::int64_t cx, int seed) {
  using nlohmann::json;
  if (codec == "zstd") {
    json z = {{"zarr_format", 3}, {"node_type", "array"}, {"shape", {nt, ny, nx}}, {"data_type", "float32"},
              {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {ct, cy, cx}}}}}},
              {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", "NaN"},
              {"codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                      {{"name", "zstd"}, {"configuration", {{"level", 3}, {"checksum", false}}}}})},
              {"dimension_names", {"time", "lat", "lon"}}};
    s.set(name + "/zarr.json", z.dump());
  } else {
    json z = {{"zarr_format", 2}, {"shape", {nt, ny, nx}}, {"chunks", {ct, cy, cx}}, {"dtype", "<f4"},
              {"compressor", {{"id", "lz4"}, {"acceleration", 1}}}, {"fill_value", "NaN"}, {"filters", nullptr},
              {"order", "C"}};
    s.set(name + "/.zarray", z.dump());
    s.set(name + "/.zattrs", json{{"_ARRAY_DIMENSIONS", {"time", "lat", "lon"}}}.dump());
  }
  for (std::int64_t t = 0; t < nt / ct; ++t)
    for (std::int64_t y = 0; y < ny / cy; ++y)
      for (std::int64_t x = 0; x < nx / cx; ++x) {
        std::vector<float> v(static_cast<std::size_t>(ct * cy * cx));
        for (std::size_t i = 0; i < v.size(); ++i) {
          // Smooth plus a little noise, quantised: compresses like climate data.
          v[i] = std::round(static_cast<float>(250 + 20 * std::sin(0.01 * static_cast<double>(i + t * 7 + seed)) +
                                               noise(seed, 1, static_cast<std::int64_t>(i)) / 50) * 64) / 64;
        }
        Bytes enc;
        const std::size_t raw = v.size() * 4;
        if (codec == "zstd") {
          enc.resize(ZSTD_compressBound(raw));
          enc.resize(ZSTD_compress(enc.data(), enc.size(), v.data(), raw, 3));
        } else {
          enc.resize(4 + static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw))));
          const auto n = static_cast<std::uint32_t>(raw);
          std::memcpy(enc.data(), &n, 4);  // little-endian host
          const int c = LZ4_compress_default(reinterpret_cast<const char*>(v.data()), reinterpret_cast<char*>(enc.data() + 4),
                                             static_cast<int>(raw), static_cast<int>(enc.size() - 4));
          enc.resize(4 + static_cast<std::size_t>(c));
        }
        const std::string key = codec == "zstd" ? name + "/c/" + std::to_string(t) + "/" + std::to_string(y) + "/" +
                                                      std::to_string(x)
                                                : name + "/" + std::to_string(t) + "." + std::to_string(y) + "." +
                                                      std::to_string(x);
        s.set(key, std::move(enc));
      }
}

// zstd (v3) and lz4 (v2) variables decoded by the GPU decoders (decode=gpu) against the host.
TEST(LoaderCuda, GpuZstdAndLz4DecodeEqualHostDecode) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto s = std::make_shared<MemoryStore>("zstd_lz4");
  s->set("zarr.json", R"({"zarr_format": 3, "node_type": "group"})");
  put_compressed(*s, "a", "zstd", 12, 32, 48, 1, 32, 48, 1);
  put_compressed(*s, "b", "zstd", 12, 32, 48, 2, 16, 24, 2);
  auto s2 = std::make_shared<MemoryStore>("lz4");
  s2->set(".zgroup", R"({"zarr_format": 2})");
  put_compressed(*s2, "c", "lz4", 12, 32, 48, 1, 32, 48, 3);
  put_compressed(*s2, "d", "lz4", 12, 32, 48, 3, 8, 16, 4);
  struct Case { std::shared_ptr<MemoryStore> store; std::vector<std::string> vars; };
  for (const Case& k : {Case{s, {"a", "b"}}, Case{s2, {"c", "d"}}}) {
    for (int round = 0; round < 3; ++round) {
      LoaderConfig c;
      c.selection.variables = k.vars;
      c.sampler.window = ForecastWindow{"time", {0}, {1}};
      if (round == 1) c.sampler.patch = {{"lat", 16}, {"lon", 20}};
      c.sampler.shuffle = round == 2 ? ShuffleMode::kSample : ShuffleMode::kNone;
      c.sampler.batch_size = 3;
      c.dtype = static_cast<OutputDType>(round);
      c.device = DeviceKind::kCuda;
      LoaderConfig h = c;
      h.decode = DecodeBackend::kCpu;
      c.decode = DecodeBackend::kGpu;
      Loader gpu(ConcatenatedTime(Dataset::open(k.store)), c);
      Loader host(ConcatenatedTime(Dataset::open(k.store)), h);
      expect_same_batches(host, gpu, k.vars[0] + " round " + std::to_string(round));
      if (HasFatalFailure()) return;
      const LoaderStats st = gpu.stats();
      EXPECT_EQ(st.decode_path, "gpu");
      EXPECT_GT(st.units_gpu_decoded, 0u) << k.vars[0];
      EXPECT_EQ(st.units_gpu_fallback, 0u);
    }
    // decode=auto takes both on the GPU (share 0: the adaptive share would start with a trial
    // of batches built whole on the host).
    LoaderConfig a;
    a.selection.variables = k.vars;
    a.sampler.window = ForecastWindow{"time", {0}, {1}};
    a.device = DeviceKind::kCuda;
    a.host_decode_share = 0;
    Loader autol(ConcatenatedTime(Dataset::open(k.store)), a);
    ASSERT_TRUE(autol.next());
    EXPECT_GT(autol.stats().units_gpu_decoded, 0u) << autol.stats().decode_path;
  }
}

// Several batches in flight on the GPU decode path (fetch of one while earlier ones copy and
// decode): with up to 3 in flight, with prefetch 1 (one at a time) and with a memory limit that
// leaves room for a single staging slot, every batch equals the host path's, in order, also
// after set_epoch() and load_state() drop batches still in flight.
TEST(LoaderCuda, BatchesInFlightKeepOrderAndContentThroughRestarts) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto s = std::make_shared<MemoryStore>("lz4_flight");
  s->set(".zgroup", R"({"zarr_format": 2})");
  put_compressed(*s, "c", "lz4", 40, 32, 48, 1, 32, 48, 5);
  put_compressed(*s, "d", "lz4", 40, 32, 48, 2, 16, 24, 6);
  struct Case {
    int prefetch;
    std::uint64_t memory_limit;  // 0: default
  };
  for (const Case k : {Case{3, 0}, Case{1, 0}, Case{3, 1}}) {
    LoaderConfig c;
    c.selection.variables = {"c", "d"};
    c.sampler.window = ForecastWindow{"time", {-1, 0}, {1}};
    c.sampler.shuffle = ShuffleMode::kSample;
    c.sampler.seed = 9;
    c.sampler.batch_size = 2;
    c.threads = 3;
    c.prefetch = k.prefetch;
    c.device = DeviceKind::kCuda;
    c.gpu_cache_bytes = 48 * 32 * 4 * 6;  // a few units: most batches decode again
    LoaderConfig h = c;
    h.decode = DecodeBackend::kCpu;
    c.decode = DecodeBackend::kGpu;
    if (k.memory_limit) {
      // The smallest limit the constructor takes, plus a little: one staging slot fits.
      const std::uint64_t batch = 2 * (2 + 1) * 2 * 32 * 48 * 4;
      const std::uint64_t task = 2 * 32 * 48 * 4 + 32 * 48 * 4 / 64 + (64u << 10);
      c.memory_limit = static_cast<std::uint64_t>(c.prefetch + 1) * batch + 3 * task + 8000;
    }
    Loader gpu(ConcatenatedTime(Dataset::open(s)), c);
    Loader host(ConcatenatedTime(Dataset::open(s)), h);
    auto same = [&](int n, const std::string& what) {
      for (int i = 0; i < n; ++i) {
        auto a = host.next();
        auto b = gpu.next();
        ASSERT_EQ(a.has_value(), b.has_value()) << what << " " << i;
        if (!a) continue;
        ASSERT_EQ(a->epoch, b->epoch);
        ASSERT_EQ(a->index, b->index) << what;
        ASSERT_EQ(a->samples, b->samples) << what;
        b->synchronize();
        a->synchronize();
        ASSERT_EQ(host_bytes(a->inputs), host_bytes(b->inputs)) << what << " batch " << i;
        ASSERT_EQ(host_bytes(*a->targets), host_bytes(*b->targets)) << what << " batch " << i;
      }
    };
    const int per_epoch = static_cast<int>(gpu.len()) + 1;  // with the end marker
    same(per_epoch + 5, "epoch 0 and into 1, prefetch " + std::to_string(k.prefetch));
    // Restarting drops what is in flight; its units must not be served from the cache unchecked.
    gpu.set_epoch(3);
    host.set_epoch(3);
    same(7, "after set_epoch");
    const SamplerState st = host.state();
    gpu.load_state(st);
    host.load_state(st);
    same(per_epoch + 2, "after load_state");
    const LoaderStats gs = gpu.stats();
    EXPECT_EQ(gs.decode_path, "gpu");
    EXPECT_GT(gs.units_gpu_decoded, 0u);
    EXPECT_EQ(gs.units_gpu_fallback, 0u);
  }
}

// A corrupt chunk met by the GPU decoder with later batches already in flight: the batches
// before it arrive, then the error with the key; none after it. Restarting meets the same
// error again (the bad unit was not kept in the device cache as decoded).
TEST(LoaderCuda, GpuDecodeErrorArrivesInOrderAndIsNotCached) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto s = std::make_shared<MemoryStore>("lz4_bad");
  s->set(".zgroup", R"({"zarr_format": 2})");
  put_compressed(*s, "c", "lz4", 16, 32, 48, 1, 32, 48, 7);
  // A plausible header (the right decoded size), then bytes that are no LZ4 block.
  Bytes bad(600);
  const std::uint32_t n = 32 * 48 * 4;
  std::memcpy(bad.data(), &n, 4);
  for (std::size_t i = 4; i < bad.size(); ++i) bad[i] = static_cast<std::uint8_t>(0xF0 | (i * 7 % 16));
  s->set("c/9.0.0", std::move(bad));
  LoaderConfig c;
  c.selection.variables = {"c"};
  c.sampler.window = ForecastWindow{"time", {0}, {1}};
  c.sampler.shuffle = ShuffleMode::kNone;
  c.sampler.batch_size = 1;
  c.threads = 2;
  c.prefetch = 3;
  c.device = DeviceKind::kCuda;
  c.decode = DecodeBackend::kGpu;
  Loader l(ConcatenatedTime(Dataset::open(s)), c);
  for (int round = 0; round < 2; ++round) {
    int delivered = 0;
    try {
      while (auto b = l.next()) {
        b->synchronize();
        EXPECT_EQ(b->index, delivered);
        ++delivered;
      }
      FAIL() << "the corrupt chunk went unnoticed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("c/9.0.0"), std::string::npos) << e.what();
    }
    // Anchors 0..7 read time steps 0..8; anchor 8 needs step 9 as its target.
    EXPECT_EQ(delivered, 8) << "round " << round;
    EXPECT_THROW(l.next(), Error);  // sticky until restarted
    l.set_epoch(0);
  }
}

}  // namespace
}  // namespace cubestream
