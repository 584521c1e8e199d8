#include "zarr/read_backend.hpp"

#include <algorithm>
#include <cstring>

#include "cubestream/error.hpp"

namespace cubestream::zarr {

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
  const std::string mode = env == nullptr ? "" : env;
  if (mode != "" && mode != "auto" && mode != "cpu" && mode != "gpu") {
    throw Error(ErrorCode::kInvalidArgument, "CUBESTREAM_READ_DECODE=" + mode + ": expected cpu, gpu or auto");
  }
  if (mode == "cpu" || !decodable) return {};
  if (mode != "gpu") {
    if (route.codec != cuda::BatchCodec::kZstd) return {};
    if (decoded_bytes < kAutoGpuReadMinBytes) return {};
    if (decoded_bytes < kAutoGpuReadColdBytes && !warm()) return {};
  }
  if (devices() <= std::max(device, 0)) return {};
  return {true, false};
}

}  // namespace cubestream::zarr
