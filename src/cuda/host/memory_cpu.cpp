// The CPU-only build's cuda/memory.hpp: no devices; asking for GPU memory is an error that
// says why (the CUDA build compiles memory.cu instead).
#ifndef CUBESTREAM_WITH_CUDA
#include "cuda/memory.hpp"
#include "cubestream/error.hpp"

namespace cubestream::cuda {

namespace {
[[noreturn]] void no_cuda() {
  throw Error(ErrorCode::kUnsupported, "this cubestream was built without CUDA (CPU-only build)");
}
}  // namespace

int device_count() { return 0; }
void set_device(int) { no_cuda(); }
int current_device() noexcept { return -1; }
void* alloc_pinned(std::size_t) { no_cuda(); }
void free_pinned(void*) noexcept {}
void* alloc_device(std::size_t, int) { no_cuda(); }
void free_device(void*, int) noexcept {}
void* create_stream(int) { no_cuda(); }
void destroy_stream(void*, int) noexcept {}
void* create_event(int) { no_cuda(); }
void destroy_event(void*, int) noexcept {}
void copy_to_device_async(void*, const void*, std::size_t, void*, int) { no_cuda(); }
void copy_batch_to_device_async(void* const*, const void* const*, const std::size_t*, std::size_t, void*, int) {
  no_cuda();
}
void record_event(void*, void*, int) { no_cuda(); }
void stream_wait_event(void*, void*, int) { no_cuda(); }
void event_synchronize(void*) { no_cuda(); }
bool event_query(void*) { no_cuda(); }
void copy_to_host(void*, const void*, std::size_t, int) { no_cuda(); }
void* alloc_device_async(std::size_t, void*, int, void*) { no_cuda(); }
void* create_device_pool(int) noexcept { return nullptr; }
void destroy_device_pool(void*, int) noexcept {}
void free_device_async(void*, void*, int) noexcept {}
void copy_to_host_async(void*, const void*, std::size_t, void*, int) { no_cuda(); }
void stream_synchronize(void*, int) { no_cuda(); }

}  // namespace cubestream::cuda
#endif
