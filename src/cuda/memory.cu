// CUDA runtime implementation of cuda/memory.hpp. Every call goes through CS_CUDA_CHECK; the
// release functions are noexcept (they run in destructors) and ignore failures, which at that
// point can only mean the context is already gone.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/memory.hpp"

namespace cubestream::cuda {

namespace {

// Each call names its device: the loader's thread and the consumer's may have others current.
void use(int device) { CS_CUDA_CHECK(cudaSetDevice(device)); }

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error for later calls
    return 0;
  }
  return n;
}

void set_device(int device) { use(device); }

int current_device() noexcept {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

void* alloc_pinned(std::size_t bytes) {
  void* p = nullptr;
  CS_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

void free_pinned(void* p) noexcept {
  if (p) cudaFreeHost(p);
}

void* alloc_device(std::size_t bytes, int device) {
  use(device);
  void* p = nullptr;
  CS_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void free_device(void* p, int device) noexcept {
  if (!p) return;
  cudaSetDevice(device);
  cudaFree(p);
}

void* create_stream(int device) {
  use(device);
  // The lowest priority the device has (numerically the largest; CUDA's default, 0, on every
  // GPU so far, stated here so that it stays so): the loader's kernels run beside a model, and
  // a consumer that trains on a stream of higher priority gets free SMs before the loader's
  // pending thread blocks (cudaStreamCreateWithPriority: priorities order the scheduling of
  // pending work only; running blocks are not preempted).
  int least = 0, greatest = 0;
  CS_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t s = nullptr;
  CS_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, least));
  return s;
}

void destroy_stream(void* stream, int device) noexcept {
  if (!stream) return;
  cudaSetDevice(device);
  cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

void* create_event(int device) {
  use(device);
  cudaEvent_t e = nullptr;
  CS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void destroy_event(void* event, int device) noexcept {
  if (!event) return;
  cudaSetDevice(device);
  cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void copy_to_device_async(void* dst, const void* src, std::size_t bytes, void* stream, int device) {
  use(device);
  CS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
}

void copy_batch_to_device_async(void* const* dst, const void* const* src, const std::size_t* bytes, std::size_t count,
                                void* stream, int device) {
  use(device);
  const auto s = static_cast<cudaStream_t>(stream);
  if (count == 0) return;
#if CUDART_VERSION >= 13000
  // One attribute for every copy: the source is read in stream order (pinned host memory that
  // the fetch threads finished writing before this call).
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attr.srcLocHint.type = cudaMemLocationTypeHost;
  attr.dstLocHint.type = cudaMemLocationTypeDevice;
  attr.dstLocHint.id = device;
  std::size_t attr_at = 0;
  const cudaError_t e = cudaMemcpyBatchAsync(dst, src, bytes, count, &attr, &attr_at, 1, s);
  if (e == cudaSuccess) return;
  if (e != cudaErrorNotSupported && e != cudaErrorInvalidValue) CS_CUDA_CHECK(e);
  cudaGetLastError();  // not taken: the copies one by one below
#endif
  for (std::size_t i = 0; i < count; ++i) {
    CS_CUDA_CHECK(cudaMemcpyAsync(dst[i], src[i], bytes[i], cudaMemcpyHostToDevice, s));
  }
}

void record_event(void* event, void* stream, int device) {
  use(device);
  CS_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
}

void stream_wait_event(void* stream, void* event, int device) {
  use(device);
  CS_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
}

void* alloc_device_async(std::size_t bytes, void* stream, int device, void* pool) {
  use(device);
  void* p = nullptr;
  if (pool) {
    CS_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, static_cast<cudaMemPool_t>(pool), static_cast<cudaStream_t>(stream)));
  } else {
    CS_CUDA_CHECK(cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream)));
  }
  return p;
}

void* create_device_pool(int device) noexcept {
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
    cudaGetLastError();  // no pool of our own: the default pool serves, not an error
    return nullptr;
  }
  std::uint64_t keep = UINT64_MAX;
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
    cudaGetLastError();
    cudaMemPoolDestroy(pool);
    return nullptr;
  }
  return pool;
}

void destroy_device_pool(void* pool, int device) noexcept {
  if (!pool) return;
  cudaSetDevice(device);
  cudaMemPoolDestroy(static_cast<cudaMemPool_t>(pool));
}

void free_device_async(void* p, void* stream, int device) noexcept {
  if (!p) return;
  cudaSetDevice(device);
  cudaFreeAsync(p, static_cast<cudaStream_t>(stream));
}

void copy_to_host_async(void* dst, const void* src, std::size_t bytes, void* stream, int device) {
  use(device);
  CS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream)));
}

void stream_synchronize(void* stream, int device) {
  use(device);
  CS_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, int device) {
  use(device);
  CS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void event_synchronize(void* event) { CS_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event))); }

bool event_query(void* event) {
  const cudaError_t s = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (s == cudaErrorNotReady) return false;
  CS_CUDA_CHECK(s);
  return true;
}

}  // namespace cubestream::cuda
