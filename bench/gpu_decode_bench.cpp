// GPU batch decode benchmark (issue 4): numcodecs LZ4 and blosc-lz4 + byte shuffle, decoded by
// the batched GPU API (src/cuda/decode) beside the CPU decoding the same batch on all cores, in
// the same run. Prints a markdown table.
//
//   build-gpu/gpu_decode_bench            (CUDA build only; no arguments)
//
// Batches (nothing is read from disk):
//   era5_4MiB   256 chunks of 4 MiB (1024 x 1024 float32; ERA5-like made here: smooth fields
//               plus noise, quantised to 16 bits)
//   mixed       1024 chunks of 64 KiB .. 1 MiB (the same kind of data)
//   synth       256 fields of 721 x 1440 float32 (4.15 MB) from the generator behind
//               `cubestream synth` (src/synth/era5_model.hpp: the six surface variables over
//               time steps), i.e. the chunks of the loader and U-Net benchmarks' stores
// Codecs: numcodecs lz4 (4-byte size + one LZ4 block, acceleration 1); blosc-lz4 clevel 5
// with byte shuffle in numcodecs' default layout (typesize 4, 512 KiB blocks split into 4
// streams), written by the test encoder (tests/cpp/codec/blosc_test_encoder.hpp; the GPU
// machine has no libblosc); and "blosc-lz4+shuffle (writer)": the same settings encoded by
// cubestream's own blosc encoder, exactly as its Zarr writer and `cubestream synth` write
// chunks (128 KiB blocks, not split: one LZ4 stream per block holding all four byte planes);
// for the synth fields also "blosc-lz4hc9+shuffle (writer)", the writer with cname lz4hc at
// clevel 9 (`cubestream synth --codec blosc-lz4hc:9`); and "lz4 of shuffled bytes": numcodecs
// lz4 over the whole chunk byte-shuffled first (the LZ4 stage of a Zarr chain with numcodecs'
// Shuffle filter; its output, the shuffled bytes, is what is checked), whose LZ4 blocks have
// the sequence density of blosc's shuffled streams in one block per chunk.
//
// Per batch and codec, after checking every output byte of the GPU and of the CPU against the
// original data:
//   kernel      cudaEvent time of batch_decode on compressed bytes already on the device
//   end-to-end  cudaEvent time of the H2D copy of the compressed bytes from pinned memory + decode
//   cpu         wall time of the CPU codecs (liblz4; the blosc codec = liblz4 + our unshuffle, what
//               libblosc does) over the batch on CS_BENCH_THREADS threads (default: all cores)
// Each the median of CS_BENCH_REPEAT runs (default 7). GB/s are decoded bytes (1e9) per second.
// CS_BENCH_CASE=text runs only the cases whose "batch / codec" contains text (for a profiler);
// CS_BENCH_CODEC=name[,name...] only the cases of those codecs (e.g. lz4: the numcodecs lz4 rows).
// CS_BENCH_ERA5_COUNTS=n[,n...] adds era5_4MiB batches of n chunks each (e.g. 1,16: whether a
// kernel's time is one buffer's chain of steps, the same alone, or the batch's share of the GPU,
// which shrinks with the batch).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <lz4.h>

#include "../tests/cpp/codec/blosc_test_encoder.hpp"
#include "era5_chunk.hpp"
#include "codec/codec.hpp"
#include "codec/logic/byte_shuffle.hpp"
#include "codec/registry.hpp"
#include "cubestream/error.hpp"
#include "cuda/check.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "synth/era5_model.hpp"

namespace {

using Bytes = std::vector<std::uint8_t>;
namespace cuda = cubestream::cuda;

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& f) {
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) f(i);
    });
  }
  for (auto& th : pool) th.join();
}

using cubestream_bench::era5_chunk;

Bytes numcodecs_lz4(const Bytes& src) {
  Bytes dst(4 + LZ4_compressBound(static_cast<int>(src.size())));
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<std::uint8_t>(src.size() >> (8 * i));
  const int n = LZ4_compress_default(reinterpret_cast<const char*>(src.data()), reinterpret_cast<char*>(dst.data() + 4),
                                     static_cast<int>(src.size()), static_cast<int>(dst.size() - 4));
  if (n <= 0) throw std::runtime_error("LZ4 compression failed");
  dst.resize(4 + static_cast<std::size_t>(n));
  return dst;
}

Bytes blosc_lz4_shuffle(const Bytes& src) {
  cs_codec_test::BloscEncodeOptions o;
  o.typesize = 4;
  o.blocksize = 512 * 1024;  // numcodecs' default for lz4 clevel 5, typesize 4
  o.shuffle = 1;
  o.split = true;
  o.compressor = 1;
  o.level = -1;  // LZ4 fast
  return cs_codec_test::blosc_test_encode(src, o);
}

// The writer's encoding: the registry's blosc codec with the configuration `cubestream synth`
// writes (the Zarr writer adds typesize from the array's dtype): lz4 at clevel 5 by default,
// or lz4hc at clevel 9 (`--codec blosc-lz4hc:9`: LZ4_compress_HC, the same block layout, fewer,
// longer and farther LZ4 sequences; docs/gpu_decoders.md, "Encodings of the synth fields").
Bytes blosc_writer(const Bytes& src, bool hc = false) {
  auto make = [](const char* cname, int clevel) {
    return std::dynamic_pointer_cast<const cubestream::codec::BytesToBytesCodec>(cubestream::codec::make_codec(
        "blosc", nlohmann::json{{"id", "blosc"}, {"cname", cname}, {"clevel", clevel}, {"shuffle", 1},
                                {"typesize", 4}, {"blocksize", 0}}));
  };
  static const auto lz4 = make("lz4", 5);
  static const auto lz4hc = make("lz4hc", 9);
  const auto e = (hc ? lz4hc : lz4)->encode(cubestream::ByteView(src.data(), src.size()));
  return Bytes(e.begin(), e.end());
}

// True when the comma-separated list names `codec` exactly.
bool names_codec(const std::string& list, const std::string& codec) {
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    if (list.compare(start, end - start, codec) == 0) return true;
    start = end + 1;
  }
  return false;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string batch, codec;
  std::size_t chunks = 0, decoded = 0, encoded = 0;
  double kernel_ms = 0, e2e_ms = 0, cpu_ms = 0;
  int threads = 0;
};

struct DeviceBuf {
  void* p = nullptr;
  explicit DeviceBuf(std::size_t n) { CS_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1))); }
  ~DeviceBuf() { cudaFree(p); }
  std::uint8_t* u8() const { return static_cast<std::uint8_t*>(p); }
};

Row run_case(const std::string& batch_name, const std::string& codec_name, const std::vector<Bytes>& raw,
             const std::vector<Bytes>& enc, cuda::BatchCodec kind, const nlohmann::json& cfg, int repeat,
             int threads) {
  const std::size_t n = raw.size();
  Row row;
  row.batch = batch_name;
  row.codec = codec_name;
  row.chunks = n;
  row.threads = threads;
  std::vector<std::size_t> in_at(n), out_at(n), src_bytes(n), dst_bytes(n);
  for (std::size_t i = 0; i < n; ++i) {
    in_at[i] = row.encoded;
    out_at[i] = row.decoded;
    src_bytes[i] = enc[i].size();
    dst_bytes[i] = raw[i].size();
    row.encoded += (enc[i].size() + 15) / 16 * 16;  // 16-byte aligned starts
    row.decoded += raw[i].size();
  }
  // pinned host copy of all compressed bytes, as a reader would have them
  std::uint8_t* pinned = nullptr;
  CS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned), row.encoded));
  for (std::size_t i = 0; i < n; ++i) std::memcpy(pinned + in_at[i], enc[i].data(), enc[i].size());

  DeviceBuf d_in(row.encoded), d_out(row.decoded), d_src(n * sizeof(void*)), d_dst(n * sizeof(void*)),
      d_sb(n * sizeof(std::size_t)), d_db(n * sizeof(std::size_t)), d_st(n * sizeof(cuda::DecodeStatus));
  std::vector<const std::uint8_t*> srcs(n);
  std::vector<std::uint8_t*> dsts(n);
  for (std::size_t i = 0; i < n; ++i) {
    srcs[i] = d_in.u8() + in_at[i];
    dsts[i] = d_out.u8() + out_at[i];
  }
  CS_CUDA_CHECK(cudaMemcpy(d_src.p, srcs.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
  CS_CUDA_CHECK(cudaMemcpy(d_dst.p, dsts.data(), n * sizeof(void*), cudaMemcpyHostToDevice));
  CS_CUDA_CHECK(cudaMemcpy(d_sb.p, src_bytes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
  CS_CUDA_CHECK(cudaMemcpy(d_db.p, dst_bytes.data(), n * sizeof(std::size_t), cudaMemcpyHostToDevice));
  cuda::DeviceBatch b;
  b.src = static_cast<const std::uint8_t* const*>(d_src.p);
  b.src_bytes = static_cast<const std::size_t*>(d_sb.p);
  b.dst = static_cast<std::uint8_t* const*>(d_dst.p);
  b.dst_bytes = static_cast<const std::size_t*>(d_db.p);
  b.status = static_cast<cuda::DecodeStatus*>(d_st.p);
  b.num_buffers = n;
  const std::size_t scratch_bytes = cuda::batch_decode_scratch_bytes(kind, n, row.decoded);
  DeviceBuf scratch(scratch_bytes);
  cudaStream_t stream;
  CS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1, e2;
  CS_CUDA_CHECK(cudaEventCreate(&e0));
  CS_CUDA_CHECK(cudaEventCreate(&e1));
  CS_CUDA_CHECK(cudaEventCreate(&e2));

  auto check_statuses = [&] {
    std::vector<cuda::DecodeStatus> st(n);
    CS_CUDA_CHECK(cudaMemcpy(st.data(), d_st.p, n * sizeof(cuda::DecodeStatus), cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      if (st[i] != cuda::DecodeStatus::kOk)
        throw std::runtime_error(batch_name + "/" + codec_name + ": GPU status of chunk " + std::to_string(i) + ": " +
                                 cubestream::codec::logic::decode_status_name(st[i]));
  };

  // ---- correctness first: every GPU and CPU output byte against the original ----------------
  CS_CUDA_CHECK(cudaMemcpyAsync(d_in.p, pinned, row.encoded, cudaMemcpyHostToDevice, stream));
  CS_CUDA_CHECK(cudaMemsetAsync(d_out.p, 0xCD, row.decoded, stream));
  cuda::batch_decode(kind, b, scratch.p, scratch_bytes, stream);
  CS_CUDA_CHECK(cudaStreamSynchronize(stream));
  check_statuses();
  {
    Bytes back(row.decoded);
    CS_CUDA_CHECK(cudaMemcpy(back.data(), d_out.p, row.decoded, cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < n; ++i)
      if (std::memcmp(back.data() + out_at[i], raw[i].data(), raw[i].size()) != 0)
        throw std::runtime_error(batch_name + "/" + codec_name + ": GPU output of chunk " + std::to_string(i) +
                                 " differs from the original");
  }
  auto cpu = std::dynamic_pointer_cast<const cubestream::codec::BytesToBytesCodec>(
      cubestream::codec::make_codec(cfg["id"].get<std::string>(), cfg));
  std::vector<Bytes> cpu_out(n);
  for (std::size_t i = 0; i < n; ++i) cpu_out[i].resize(raw[i].size());
  auto cpu_decode_all = [&] {
    parallel_for(n, threads, [&](std::size_t i) {
      cpu->decode(cubestream::ByteView(enc[i].data(), enc[i].size()),
                  cubestream::MutableByteView(cpu_out[i].data(), cpu_out[i].size()));
    });
  };
  cpu_decode_all();
  for (std::size_t i = 0; i < n; ++i)
    if (cpu_out[i] != raw[i])
      throw std::runtime_error(batch_name + "/" + codec_name + ": CPU output of chunk " + std::to_string(i) + " differs");

  // ---- timing ---------------------------------------------------------------------------------
  std::vector<double> kernel, e2e, cpu_ms;
  for (int r = 0; r < repeat; ++r) {
    CS_CUDA_CHECK(cudaEventRecord(e0, stream));
    CS_CUDA_CHECK(cudaMemcpyAsync(d_in.p, pinned, row.encoded, cudaMemcpyHostToDevice, stream));
    CS_CUDA_CHECK(cudaEventRecord(e1, stream));
    cuda::batch_decode(kind, b, scratch.p, scratch_bytes, stream);
    CS_CUDA_CHECK(cudaEventRecord(e2, stream));
    CS_CUDA_CHECK(cudaEventSynchronize(e2));
    float k = 0, t = 0;
    CS_CUDA_CHECK(cudaEventElapsedTime(&k, e1, e2));
    CS_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e2));
    kernel.push_back(k);
    e2e.push_back(t);
    check_statuses();
    const auto c0 = std::chrono::steady_clock::now();
    cpu_decode_all();
    cpu_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count());
  }
  row.kernel_ms = median(kernel);
  row.e2e_ms = median(e2e);
  row.cpu_ms = median(cpu_ms);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaEventDestroy(e2);
  cudaStreamDestroy(stream);
  cudaFreeHost(pinned);
  return row;
}

}  // namespace

int main() {
  try {
    const int repeat = std::max(5, env_int("CS_BENCH_REPEAT", 7));
    const int threads = std::max(1, env_int("CS_BENCH_THREADS", static_cast<int>(std::thread::hardware_concurrency())));
    int dev = 0;
    cudaDeviceProp prop{};
    CS_CUDA_CHECK(cudaGetDevice(&dev));
    CS_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));

    struct Batch {
      std::string name;
      std::vector<std::size_t> sizes;
      bool synth = false;  // fields of the synth model (sizes are then 721 x 1440 x 4)
    };
    std::vector<Batch> batches;
    batches.push_back({"era5_4MiB x256", std::vector<std::size_t>(256, std::size_t{4} << 20)});
    {
      std::mt19937 rng(42);
      std::vector<std::size_t> s(1024);
      for (auto& x : s) x = (std::size_t{64} << 10) + (rng() % ((std::size_t{960} << 10) / 4)) * 4;
      batches.push_back({"mixed_64KiB-1MiB x1024", s});
    }
    batches.push_back({"synth_721x1440 x256", std::vector<std::size_t>(256, std::size_t{721} * 1440 * 4), true});
    if (const char* counts = std::getenv("CS_BENCH_ERA5_COUNTS")) {
      for (const char* p = counts; *p != '\0';) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p) break;
        if (n > 0 && n <= 4096)
          batches.push_back({"era5_4MiB x" + std::to_string(n), std::vector<std::size_t>(static_cast<std::size_t>(n), std::size_t{4} << 20)});
        p = *end == ',' ? end + 1 : end;
      }
    }
    // six surface variables, as the loader benchmarks' stores hold (their fields compress
    // differently: 1.5x for winds, 2.2x for pressure)
    cubestream::synth::ModelSpec spec;
    spec.variables = {"2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind",
                      "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour"};
    std::unique_ptr<cubestream::synth::Era5Model> model;

    std::printf("# cubestream GPU batch decode benchmark\n\n");
    std::printf("device: %s, %d SMs, sm_%d%d; CPU threads: %d; repeats: %d (median)\n\n", prop.name,
                prop.multiProcessorCount, prop.major, prop.minor, threads, repeat);
    std::printf("| batch | codec | chunks | decoded GB | ratio | kernel ms | kernel GB/s | e2e ms | e2e GB/s | "
                "CPU ms (%d thr) | CPU GB/s | kernel / CPU | e2e / CPU |\n",
                threads);
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
    for (const auto& batch : batches) {
      // a filter naming a batch ("batch / codec") skips making the others' data
      const std::string only_batch = std::getenv("CS_BENCH_CASE") ? std::getenv("CS_BENCH_CASE") : "";
      if (only_batch.find(" / ") != std::string::npos && only_batch.rfind(batch.name, 0) != 0) continue;
      const std::size_t n = batch.sizes.size();
      std::vector<Bytes> raw(n), lz4(n), blosc(n), writer(n), writer_hc(n), shuffled(n), lz4_shuffled(n);
      if (batch.synth && !model) model = std::make_unique<cubestream::synth::Era5Model>(spec, threads);
      parallel_for(n, threads, [&](std::size_t i) {
        if (batch.synth) {
          raw[i].resize(model->field_elements() * 4);
          const std::size_t nv = spec.variables.size();
          model->field(i % nv, 0, static_cast<std::int64_t>(i / nv), reinterpret_cast<float*>(raw[i].data()));
        } else {
          raw[i] = era5_chunk(batch.sizes[i] / 4, static_cast<std::uint32_t>(i * 7919 + n));
        }
        lz4[i] = numcodecs_lz4(raw[i]);
        blosc[i] = blosc_lz4_shuffle(raw[i]);
        writer[i] = blosc_writer(raw[i]);
        if (batch.synth) writer_hc[i] = blosc_writer(raw[i], true);
        shuffled[i].resize(raw[i].size());
        cubestream::codec::logic::shuffle_block(raw[i].data(), shuffled[i].data(), raw[i].size(), 4);
        lz4_shuffled[i] = numcodecs_lz4(shuffled[i]);
      });
      const struct {
        const char* name;
        const std::vector<Bytes>* enc;
        cuda::BatchCodec kind;
        nlohmann::json cfg;
        const std::vector<Bytes>* decoded;  // what decoding gives back
      } cases[] = {
          {"lz4", &lz4, cuda::BatchCodec::kLz4, {{"id", "lz4"}}, &raw},
          {"blosc-lz4+shuffle", &blosc, cuda::BatchCodec::kBlosc, {{"id", "blosc"}}, &raw},
          {"blosc-lz4+shuffle (writer)", &writer, cuda::BatchCodec::kBlosc, {{"id", "blosc"}}, &raw},
          {"blosc-lz4hc9+shuffle (writer)", &writer_hc, cuda::BatchCodec::kBlosc, {{"id", "blosc"}}, &raw},
          {"lz4 of shuffled bytes", &lz4_shuffled, cuda::BatchCodec::kLz4, {{"id", "lz4"}}, &shuffled},
      };
      const char* only = std::getenv("CS_BENCH_CASE");
      const char* only_codec = std::getenv("CS_BENCH_CODEC");
      for (const auto& c : cases) {
        if (c.enc == &writer_hc && !batch.synth) continue;  // lz4hc only for the loader's fields
        if (only && *only && (batch.name + " / " + c.name).find(only) == std::string::npos) continue;
        if (only_codec && *only_codec && !names_codec(only_codec, c.name)) continue;
        const Row r = run_case(batch.name, c.name, *c.decoded, *c.enc, c.kind, c.cfg, repeat, threads);
        std::size_t enc_bytes = 0;
        for (const auto& e : *c.enc) enc_bytes += e.size();
        const double gb = r.decoded / 1e9;
        std::printf("| %s | %s | %zu | %.3f | %.2f | %.3f | %.1f | %.3f | %.1f | %.2f | %.1f | %.1fx | %.1fx |\n",
                    r.batch.c_str(), r.codec.c_str(), r.chunks, gb, double(r.decoded) / double(enc_bytes), r.kernel_ms,
                    gb / (r.kernel_ms / 1e3), r.e2e_ms, gb / (r.e2e_ms / 1e3), r.cpu_ms, gb / (r.cpu_ms / 1e3),
                    r.cpu_ms / r.kernel_ms, r.cpu_ms / r.e2e_ms);
        std::fflush(stdout);
      }
    }
    std::printf("\nAll GPU and CPU outputs were checked byte for byte against the original data before timing.\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_decode_bench: %s\n", e.what());
    return 1;
  }
}
