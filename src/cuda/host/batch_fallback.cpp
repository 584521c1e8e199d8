// decode_batch_with_fallback: the GPU batch, then the CPU codec for every buffer the GPU left
// as kUnsupported, so that the caller gets what the CPU path gives for every buffer.
//
// A convenience for tests, the Python face and tools: it allocates the device arrays and the
// scratch for this one call and synchronises the stream. The pipeline calls batch_decode with
// long-lived scratch instead.
//
// A .cpp of the CUDA build (the codec layer is C++20, which the CUDA sources are not): it only
// calls the CUDA runtime API, never launches kernels itself.
#ifdef CUBESTREAM_WITH_CUDA
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"
#include "codec/decode_status_error.hpp"
#include "codec/registry.hpp"
#include "cubestream/error.hpp"
#include "cuda/check.hpp"
#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda {

namespace {

// Device memory owned for the duration of the call.
struct DeviceAlloc {
  void* p = nullptr;
  explicit DeviceAlloc(std::size_t bytes) {
    if (bytes != 0) CS_CUDA_CHECK(cudaMalloc(&p, bytes));
  }
  ~DeviceAlloc() {
    if (p) cudaFree(p);  // nothing useful to do with a failure while unwinding
  }
  DeviceAlloc(const DeviceAlloc&) = delete;
  DeviceAlloc& operator=(const DeviceAlloc&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

std::shared_ptr<const codec::BytesToBytesCodec> cpu_codec(const nlohmann::json& cfg) {
  if (!cfg.is_object() || !cfg.contains("id") || !cfg["id"].is_string())
    throw Error(ErrorCode::kInvalidArgument, "codec configuration needs a string \"id\": " + cfg.dump());
  auto c = std::dynamic_pointer_cast<const codec::BytesToBytesCodec>(codec::make_codec(cfg["id"].get<std::string>(), cfg));
  if (!c) throw Error(ErrorCode::kInvalidArgument, "codec " + cfg["id"].get<std::string>() + " is not bytes->bytes");
  return c;
}

}  // namespace

void decode_batch_with_fallback(BatchCodec codec, const std::vector<DeviceBuffer>& buffers,
                                const std::string& codec_config, StreamHandle stream_handle) {
  const cudaStream_t stream = stream_handle;
  const nlohmann::json cfg = nlohmann::json::parse(codec_config);
  auto cpu = cpu_codec(cfg);  // checked before any GPU work: a bad config fails fast
  const std::size_t n = buffers.size();
  if (n == 0) return;

  std::vector<const std::uint8_t*> src(n);
  std::vector<std::size_t> src_bytes(n), dst_bytes(n);
  std::vector<std::uint8_t*> dst(n);
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    src[i] = buffers[i].src;
    src_bytes[i] = buffers[i].src_bytes;
    dst[i] = buffers[i].dst;
    dst_bytes[i] = buffers[i].dst_bytes;
    total += buffers[i].dst_bytes;
  }
  const std::size_t ptr_bytes = n * sizeof(void*), size_bytes = n * sizeof(std::size_t);
  DeviceAlloc d_src(ptr_bytes), d_src_bytes(size_bytes), d_dst(ptr_bytes), d_dst_bytes(size_bytes),
      d_status(n * sizeof(DecodeStatus));
  const std::size_t scratch_bytes = batch_decode_scratch_bytes(codec, n, total);
  DeviceAlloc scratch(scratch_bytes);
  CS_CUDA_CHECK(cudaMemcpyAsync(d_src.p, src.data(), ptr_bytes, cudaMemcpyHostToDevice, stream));
  CS_CUDA_CHECK(cudaMemcpyAsync(d_src_bytes.p, src_bytes.data(), size_bytes, cudaMemcpyHostToDevice, stream));
  CS_CUDA_CHECK(cudaMemcpyAsync(d_dst.p, dst.data(), ptr_bytes, cudaMemcpyHostToDevice, stream));
  CS_CUDA_CHECK(cudaMemcpyAsync(d_dst_bytes.p, dst_bytes.data(), size_bytes, cudaMemcpyHostToDevice, stream));

  DeviceBatch b;
  b.src = d_src.as<const std::uint8_t* const>();
  b.src_bytes = d_src_bytes.as<const std::size_t>();
  b.dst = d_dst.as<std::uint8_t* const>();
  b.dst_bytes = d_dst_bytes.as<const std::size_t>();
  b.status = d_status.as<DecodeStatus>();
  b.num_buffers = n;
  batch_decode(codec, b, scratch.p, scratch_bytes, stream_handle);

  std::vector<DecodeStatus> status(n);
  CS_CUDA_CHECK(cudaMemcpyAsync(status.data(), d_status.p, n * sizeof(DecodeStatus), cudaMemcpyDeviceToHost, stream));
  CS_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<std::uint8_t> in, out;
  for (std::size_t i = 0; i < n; ++i) {
    if (status[i] == DecodeStatus::kOk) continue;
    if (status[i] != DecodeStatus::kUnsupported) {
      throw Error(codec::decode_status_error_code(status[i]),
                  std::string(batch_codec_name(codec)) + " GPU batch: buffer " + std::to_string(i) + " of " +
                      std::to_string(n) + ": " + codec::logic::decode_status_name(status[i]) + " (" +
                      std::to_string(src_bytes[i]) + " compressed bytes, " + std::to_string(dst_bytes[i]) +
                      " expected)");
    }
    // the CPU codec decodes what the GPU path does not support, with the CPU path's result
    in.resize(src_bytes[i]);
    out.resize(dst_bytes[i]);
    if (!in.empty()) CS_CUDA_CHECK(cudaMemcpy(in.data(), src[i], in.size(), cudaMemcpyDeviceToHost));
    std::size_t got = 0;
    try {
      got = cpu->decode(ByteView(in.data(), in.size()), MutableByteView(out.data(), out.size()));
    } catch (const Error& e) {
      throw Error(e.code(), std::string(batch_codec_name(codec)) + " CPU fallback: buffer " + std::to_string(i) +
                                " of " + std::to_string(n) + ": " + e.message(),
                  e.context());
    }
    if (got != out.size()) {
      throw Error(ErrorCode::kSizeMismatch, std::string(batch_codec_name(codec)) + " CPU fallback: buffer " +
                                                std::to_string(i) + " decodes to " + std::to_string(got) +
                                                " bytes, " + std::to_string(out.size()) + " expected");
    }
    if (!out.empty()) CS_CUDA_CHECK(cudaMemcpy(dst[i], out.data(), out.size(), cudaMemcpyHostToDevice));
  }
}

}  // namespace cubestream::cuda
#endif  // CUBESTREAM_WITH_CUDA
