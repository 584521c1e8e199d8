// What a GPU read (zarr/gpu_read.hpp) needs of a device, as an interface: staging memory on
// both sides, in-order lanes of work (a CUDA stream each), the copies, the batched decode and
// a wait. The CUDA implementation (make_cuda_read_device) goes through cuda/memory.hpp and
// cuda/decode/batch_decode.hpp; the tests run the same wave logic against a host model of a
// device that defers a lane's work until it is waited for, so that a read that used staging
// before its lane's work was done gets wrong bytes there too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cuda/decode/batch_decode.hpp"

namespace cubestream::zarr {

class ReadDevice {
 public:
  virtual ~ReadDevice() = default;

  // Host memory the device copies from and to (pinned, for a GPU); device memory.
  virtual std::uint8_t* alloc_host(std::size_t bytes) = 0;
  virtual void free_host(std::uint8_t* p) noexcept = 0;
  virtual std::uint8_t* alloc_device(std::size_t bytes) = 0;
  virtual void free_device(std::uint8_t* p) noexcept = 0;

  // An in-order queue of device work; the work of different lanes may run at the same time.
  virtual void* create_lane() = 0;
  virtual void destroy_lane(void* lane) noexcept = 0;

  // Enqueued on `lane`, in order; none of them waits for the work.
  virtual void to_device(void* dst, const void* src, std::size_t bytes, void* lane) = 0;
  virtual void to_host(void* dst, const void* src, std::size_t bytes, void* lane) = 0;
  virtual std::size_t decode_scratch_bytes(cuda::BatchCodec codec, std::size_t buffers, std::size_t decoded_bytes) = 0;
  virtual void decode(cuda::BatchCodec codec, const cuda::DeviceBatch& batch, void* scratch, std::size_t scratch_bytes,
                      void* lane) = 0;

  // Returns once everything enqueued on `lane` so far is done; throws what the work raised.
  virtual void wait(void* lane) = 0;
  // The same for unwinding: waits, reports nothing.
  virtual void wait_quietly(void* lane) noexcept = 0;
};

// The CUDA device `device` (a CUDA build with that device visible; Error(kUnsupported) in a
// CPU-only build, Error(kCuda) when the runtime refuses).
std::unique_ptr<ReadDevice> make_cuda_read_device(int device);

}  // namespace cubestream::zarr
