// The binding of the codec layer for cubestream.codecs (python/cubestream/codecs.py):
// decoding one buffer with any registered bytes->bytes codec on the CPU, and decoding device
// buffers with the batched GPU API (with the CPU fallback for what the GPU leaves). Device
// buffers cross as integer pointers from __cuda_array_interface__ / DLPack; the Python side
// allocates outputs with CuPy or torch and passes the consumer's stream.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/codec.hpp"
#include "codec/registry.hpp"
#include "cubestream/error.hpp"
#include "cuda/decode/batch_decode.hpp"
#include "cuda/device_info.hpp"

namespace py = pybind11;

namespace cubestream::python {

namespace {

std::shared_ptr<const codec::BytesToBytesCodec> bytes_codec(const nlohmann::json& cfg) {
  if (!cfg.is_object() || !cfg.contains("id") || !cfg["id"].is_string())
    throw Error(ErrorCode::kInvalidArgument, "codec configuration needs a string \"id\": " + cfg.dump());
  const std::string id = cfg["id"].get<std::string>();
  auto c = std::dynamic_pointer_cast<const codec::BytesToBytesCodec>(codec::make_codec(id, cfg));
  if (!c) throw Error(ErrorCode::kInvalidArgument, "codec '" + id + "' is not a bytes->bytes codec");
  return c;
}

// Decodes `data` into a new uint8 array. With out_size the output has exactly that capacity;
// without, it starts at 4x the input and doubles while the codec reports that its output does
// not fit (codecs with a size header say so before decoding anything).
py::array_t<std::uint8_t> decode_cpu(const std::string& config_json, py::buffer data, py::object out_size) {
  const auto codec = bytes_codec(nlohmann::json::parse(config_json));
  const py::buffer_info info = data.request();
  if (info.ndim > 1 && info.strides.back() != info.itemsize)
    throw Error(ErrorCode::kInvalidArgument, "input must be a contiguous buffer");
  const ByteView in(static_cast<const std::uint8_t*>(info.ptr), static_cast<std::size_t>(info.size * info.itemsize));
  const bool fixed = !out_size.is_none();
  std::size_t cap = fixed ? out_size.cast<std::size_t>() : std::max<std::size_t>(4 * in.size(), 4096);
  constexpr std::size_t kMaxGuess = std::size_t{1} << 34;  // 16 GiB: beyond it, pass out_size
  for (;;) {
    py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(cap));
    std::size_t n = 0;
    try {
      py::gil_scoped_release release;
      n = codec->decode(in, MutableByteView(out.mutable_data(), cap));
    } catch (const Error& e) {
      if (fixed || e.code() != ErrorCode::kSizeMismatch || cap >= kMaxGuess) throw;
      cap *= 2;
      continue;
    }
    if (n == cap) return out;
    return py::array_t<std::uint8_t>(static_cast<py::ssize_t>(n), out.data());
  }
}

// Decodes device buffers (integer device pointers) with the GPU batch for `codec_id`
// (lz4/blosc/zstd), with the CPU codec of `config_json` for what the GPU leaves; the call
// returns when the outputs are written (it synchronises `stream`).
void decode_cuda(const std::string& config_json, const std::vector<std::uintptr_t>& src,
                 const std::vector<std::size_t>& src_bytes, const std::vector<std::uintptr_t>& dst,
                 const std::vector<std::size_t>& dst_bytes, std::uintptr_t stream) {
  const nlohmann::json cfg = nlohmann::json::parse(config_json);
  bytes_codec(cfg);  // a bad configuration fails before any GPU work
  const cuda::BatchCodec kind = cuda::batch_codec_for_id(cfg["id"].get<std::string>());
  if (src.size() != src_bytes.size() || src.size() != dst.size() || src.size() != dst_bytes.size())
    throw Error(ErrorCode::kInvalidArgument, "decode_cuda: the four buffer lists differ in length");
  std::vector<cuda::DeviceBuffer> buffers(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    buffers[i].src = reinterpret_cast<const std::uint8_t*>(src[i]);
    buffers[i].src_bytes = src_bytes[i];
    buffers[i].dst = reinterpret_cast<std::uint8_t*>(dst[i]);
    buffers[i].dst_bytes = dst_bytes[i];
  }
  py::gil_scoped_release release;
  cuda::decode_batch_with_fallback(kind, buffers, config_json, reinterpret_cast<cuda::StreamHandle>(stream));
}

}  // namespace

void bind_codecs(py::module_& m) {
  m.def("_codec_decode_cpu", &decode_cpu, py::arg("config_json"), py::arg("data"), py::arg("out_size") = py::none(),
        "Decode one buffer with a bytes->bytes codec configuration (JSON text) on the CPU.");
  m.def("_codec_decode_cuda", &decode_cuda, py::arg("config_json"), py::arg("src"), py::arg("src_bytes"),
        py::arg("dst"), py::arg("dst_bytes"), py::arg("stream") = 0,
        "Decode device buffers with the batched GPU decoder (lz4, blosc, zstd), CPU fallback included.");
  m.def("_codec_gpu_codecs", [] { return std::vector<std::string>{"lz4", "blosc", "zstd"}; },
        "Codec ids the batched GPU decoder takes.");
  m.def("_compiled_with_cuda", &cuda::compiled_with_cuda, "Whether this build contains the CUDA sources.");
}

}  // namespace cubestream::python
