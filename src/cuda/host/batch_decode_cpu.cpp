// The CPU-only build's batch API: every entry point exists, so callers link, and says clearly
// that there is no GPU path (the CUDA build compiles src/cuda/decode/*.cu instead).
#ifndef CUBESTREAM_WITH_CUDA
#include <string>

#include "cubestream/error.hpp"
#include "cuda/decode/batch_decode.hpp"

namespace cubestream::cuda {

namespace {

[[noreturn]] void no_gpu(const char* what) {
  throw Error(ErrorCode::kUnsupported,
              std::string(what) + ": cubestream was built without CUDA, so there is no GPU decode path "
                                  "(rebuild with -DCUBESTREAM_CUDA=ON, or decode on the CPU)");
}

}  // namespace

std::size_t batch_decode_scratch_bytes(BatchCodec, std::size_t, std::size_t) { no_gpu("batch_decode_scratch_bytes"); }
void batch_decode(BatchCodec, const DeviceBatch&, void*, std::size_t, StreamHandle) { no_gpu("batch_decode"); }
void batch_unshuffle(const DeviceBatch&, std::size_t, StreamHandle) { no_gpu("batch_unshuffle"); }
void batch_byteswap(const DeviceBatch&, std::size_t, StreamHandle) { no_gpu("batch_byteswap"); }
void batch_delta(const DeviceBatch&, codec::logic::NumType, codec::logic::NumType, StreamHandle) {
  no_gpu("batch_delta");
}
void batch_fixedscaleoffset(const DeviceBatch&, const codec::logic::FixedScaleOffsetParams&, StreamHandle) {
  no_gpu("batch_fixedscaleoffset");
}
void batch_transpose(const DeviceBatch&, const std::vector<std::int64_t>&, const std::vector<int>&, std::size_t,
                     StreamHandle) {
  no_gpu("batch_transpose");
}
void decode_batch_with_fallback(BatchCodec, const std::vector<DeviceBuffer>&, const std::string&, StreamHandle) {
  no_gpu("decode_batch_with_fallback");
}

}  // namespace cubestream::cuda
#endif
