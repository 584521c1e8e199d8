#include "zarr/read_backend.hpp"

#include <algorithm>
#include <string>

#include "cubestream/error.hpp"

namespace cubestream {

DecodeBackend decode_backend_from_name(std::string_view name) {
  if (name == "auto") return DecodeBackend::kAuto;
  if (name == "cpu") return DecodeBackend::kCpu;
  if (name == "gpu") return DecodeBackend::kGpu;
  throw Error(ErrorCode::kInvalidArgument, "decode must be \"auto\", \"cpu\" or \"gpu\", not \"" + std::string(name) + "\"");
}

namespace zarr {

ReadBackendChoice choose_read_backend(DecodeBackend asked, const char* env, const ChainRoute& route,
                                      std::size_t decoded_bytes, std::size_t unit_bytes, int device,
                                      const std::function<bool()>& warm, const std::function<int()>& devices) {
  const bool decodable = route.route == UnitRoute::kGpuDecode && unit_bytes <= kGpuReadMaxUnitBytes;
  if (asked == DecodeBackend::kCpu) return {};
  if (asked == DecodeBackend::kGpu) {
    if (route.route == UnitRoute::kRaw) {
      throw Error(ErrorCode::kUnsupported, "decode on the GPU was asked for, but this array is stored uncompressed");
    }
    if (route.route != UnitRoute::kGpuDecode) {
      throw Error(ErrorCode::kUnsupported, "decode on the GPU was asked for, but " + route.why);
    }
    if (!decodable) {
      throw Error(ErrorCode::kUnsupported, "decode on the GPU was asked for, but its decode units of " +
                                               std::to_string(unit_bytes) + " bytes are larger than a GPU read takes (" +
                                               std::to_string(kGpuReadMaxUnitBytes) + ")");
    }
    return {true, true};
  }
  // kAuto
  DecodeBackend mode = DecodeBackend::kAuto;
  if (env != nullptr && *env != '\0') {
    try {
      mode = decode_backend_from_name(env);
    } catch (const Error& e) {
      throw Error(e.code(), std::string("CUBESTREAM_READ_DECODE=") + env + ": " + e.message());
    }
  }
  if (mode == DecodeBackend::kCpu || !decodable) return {};
  if (mode != DecodeBackend::kGpu) {
    if (route.codec != cuda::BatchCodec::kZstd) return {};
    if (decoded_bytes < kAutoGpuReadMinBytes) return {};
    if (decoded_bytes < kAutoGpuReadColdBytes && !warm()) return {};
  }
  if (devices() <= std::max(device, 0)) return {};
  return {true, false};
}

}  // namespace zarr
}  // namespace cubestream
