// ReadDevice over the CUDA runtime wrappers (cuda/memory.hpp) and the batched decoders. A
// plain C++ file: those headers need no CUDA headers, and in a CPU-only build their calls
// throw Error(kUnsupported), which make_cuda_read_device turns into one clear message first.
#include <string>

#include "cubestream/error.hpp"
#include "cuda/device_info.hpp"
#include "cuda/memory.hpp"
#include "zarr/gpu_read_device.hpp"

namespace cubestream::zarr {

namespace {

class CudaReadDevice final : public ReadDevice {
 public:
  explicit CudaReadDevice(int device) : device_(device) {}

  std::uint8_t* alloc_host(std::size_t bytes) override { return static_cast<std::uint8_t*>(cuda::alloc_pinned(bytes)); }
  void free_host(std::uint8_t* p) noexcept override { cuda::free_pinned(p); }
  std::uint8_t* alloc_device(std::size_t bytes) override {
    return static_cast<std::uint8_t*>(cuda::alloc_device(bytes, device_));
  }
  void free_device(std::uint8_t* p) noexcept override { cuda::free_device(p, device_); }

  void* create_lane() override { return cuda::create_stream(device_); }
  void destroy_lane(void* lane) noexcept override { cuda::destroy_stream(lane, device_); }

  void to_device(void* dst, const void* src, std::size_t bytes, void* lane) override {
    cuda::copy_to_device_async(dst, src, bytes, lane, device_);
  }
  void to_host(void* dst, const void* src, std::size_t bytes, void* lane) override {
    cuda::copy_to_host_async(dst, src, bytes, lane, device_);
  }
  std::size_t decode_scratch_bytes(cuda::BatchCodec codec, std::size_t buffers, std::size_t decoded_bytes) override {
    return cuda::batch_decode_scratch_bytes(codec, buffers, decoded_bytes);
  }
  void decode(cuda::BatchCodec codec, const cuda::DeviceBatch& batch, void* scratch, std::size_t scratch_bytes,
              void* lane) override {
    cuda::set_device(device_);  // kernels launch on the current device
    cuda::batch_decode(codec, batch, scratch, scratch_bytes, static_cast<cuda::StreamHandle>(lane));
  }
  void wait(void* lane) override { cuda::stream_synchronize(lane, device_); }
  void wait_quietly(void* lane) noexcept override {
    try {
      cuda::stream_synchronize(lane, device_);
    } catch (...) {
    }
  }

 private:
  int device_;
};

}  // namespace

std::unique_ptr<ReadDevice> make_cuda_read_device(int device) {
  if (!cuda::compiled_with_cuda()) {
    throw Error(ErrorCode::kUnsupported, "decoding on the GPU needs a CUDA build; this cubestream was built without CUDA");
  }
  const int n = cuda::device_count();
  if (device < 0 || device >= n) {
    throw Error(ErrorCode::kUnsupported, "decoding on the GPU needs CUDA device " + std::to_string(device) + ", but " +
                                             (n == 0 ? std::string("no CUDA device is visible")
                                                     : std::to_string(n) + " device(s) are visible"));
  }
  return std::make_unique<CudaReadDevice>(device);
}

}  // namespace cubestream::zarr
