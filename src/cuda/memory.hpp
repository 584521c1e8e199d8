// The few CUDA runtime services the loader's hand-over needs: pinned host memory, device
// memory, a stream, events and an asynchronous host-to-device copy. Handles are opaque
// pointers so that callers compile without CUDA headers; in a build without CUDA every call
// but device_count() throws Error(kUnsupported).
#pragma once

#include <cstddef>

namespace cubestream::cuda {

// Devices visible to this process; 0 in a CPU-only build or without a usable driver.
int device_count();

// Makes `device` current on the calling thread (for libraries that use the current device,
// e.g. cuFile in src/store/gds).
void set_device(int device);
// The calling thread's current device, or -1 where none can be had (a CPU-only build, no
// driver). Never throws.
int current_device() noexcept;

void* alloc_pinned(std::size_t bytes);          // page-locked host memory (cudaHostAlloc)
void free_pinned(void* p) noexcept;
void* alloc_device(std::size_t bytes, int device);
void free_device(void* p, int device) noexcept;

void* create_stream(int device);                 // a non-blocking stream of the lowest priority
void destroy_stream(void* stream, int device) noexcept;
void* create_event(int device);                  // timing disabled: cheapest to record and wait on
void destroy_event(void* event, int device) noexcept;

// Stream-ordered copy of `bytes` from pinned host memory to device memory.
void copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream, int device);
// `count` such copies in one runtime call (cudaMemcpyBatchAsync, CUDA 13 runtimes), in stream
// order as a whole (the copies among themselves in any order: their ranges must not overlap).
// Where the runtime lacks the call or refuses the batch, one cudaMemcpyAsync each. A loader
// batch copies ~180 host-decoded units: one call instead of 180 takes the runtime's lock once.
void copy_batch_to_device_async(void* const* dst, const void* const* src, const std::size_t* bytes, std::size_t count,
                                void* stream, int device);
void record_event(void* event, void* stream, int device);
// Makes later work on `stream` wait for `event`; the host does not block.
void stream_wait_event(void* stream, void* event, int device);
void event_synchronize(void* event);
// Whether the work before the event's last record has finished; never blocks.
bool event_query(void* event);
// Stream-ordered device memory (cudaMallocAsync, or cudaMallocFromPoolAsync where `pool` is
// one of create_device_pool's; cudaFreeAsync for either).
void* alloc_device_async(std::size_t bytes, void* stream, int device, void* pool = nullptr);
void free_device_async(void* p, void* stream, int device) noexcept;
// A stream-ordered memory pool of the caller's own that keeps freed memory until it is
// destroyed. The device's default pool has a release threshold of 0: at every synchronisation
// of any stream (a training loop makes two a step) it hands what was freed back to the driver,
// so work that allocates and frees hundreds of MB a batch maps them again every batch. A pool
// whose threshold is unbounded keeps at most its owner's peak use. Returns null where the
// device cannot make one (the default pool is then used). Destroying it with allocations
// outstanding defers the release until they are freed (cudaMemPoolDestroy).
void* create_device_pool(int device) noexcept;
void destroy_device_pool(void* pool, int device) noexcept;
void copy_to_host_async(void* dst, const void* src, std::size_t bytes, void* stream, int device);
void stream_synchronize(void* stream, int device);
// Synchronous device-to-host copy (tests and diagnostics).
void copy_to_host(void* dst, const void* src, std::size_t bytes, int device);

}  // namespace cubestream::cuda
