#include "pipeline/buffer_pool.hpp"

#include <cstdlib>
#include <new>

#include "cuda/memory.hpp"
#include "cubestream/error.hpp"

namespace cubestream::pipeline {

std::shared_ptr<BufferPool> BufferPool::create(MemoryKind kind, std::size_t bytes, int device, std::size_t max_free) {
  return std::shared_ptr<BufferPool>(new BufferPool(kind, bytes, device, max_free));
}

BufferPool::~BufferPool() {
  for (auto& b : free_) release_block(b);
  if (last_release_) cuda::destroy_event(last_release_, device_);
}

PoolBlock BufferPool::take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      // The longest idle first: its event (the end of its last copy, or the consumer's last
      // use) is the likeliest to have passed, so the host or the GPU waits least on it.
      PoolBlock b = free_.front();
      free_.erase(free_.begin());
      return b;
    }
  }
  PoolBlock b;
  const std::size_t n = bytes_ ? bytes_ : 1;
  switch (kind_) {
    case MemoryKind::kHost:
      // 256-byte alignment: what DLPack consumers and vector loads like.
      b.data = std::aligned_alloc(256, (n + 255) / 256 * 256);
      if (!b.data) throw Error(ErrorCode::kResourceExhausted, "cannot allocate a batch buffer of " + std::to_string(n) + " bytes");
      break;
    case MemoryKind::kPinned:
      b.data = cuda::alloc_pinned(n);
      break;
    case MemoryKind::kDevice:
      b.data = cuda::alloc_device(n, device_);
      break;
  }
  return b;
}

void BufferPool::release_block(PoolBlock& b) noexcept {
  if (b.event) {
    if (b.event_pending && kind_ != MemoryKind::kHost) {
      try {
        cuda::event_synchronize(b.event);
      } catch (...) {
      }
    }
    cuda::destroy_event(b.event, device_);
  }
  switch (kind_) {
    case MemoryKind::kHost: std::free(b.data); break;
    case MemoryKind::kPinned: cuda::free_pinned(b.data); break;
    case MemoryKind::kDevice: cuda::free_device(b.data, device_); break;
  }
  b = PoolBlock{};
}

void BufferPool::note_release(void* stream, bool stream_known) noexcept {
  if (kind_ != MemoryKind::kDevice) return;
  std::lock_guard<std::mutex> lock(mu_);
  try {
    if (!last_release_) last_release_ = cuda::create_event(device_);
    cuda::record_event(last_release_, stream_known ? stream : nullptr, device_);
  } catch (...) {
  }
}

bool BufferPool::consumer_caught_up() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_release_) return true;
  try {
    return cuda::event_query(last_release_);
  } catch (...) {
    return false;
  }
}

void BufferPool::give_back(PoolBlock block) noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < max_free_) {
      free_.push_back(block);
      return;
    }
  }
  release_block(block);
}

std::shared_ptr<TensorStorage> BufferPool::wrap(PoolBlock block) {
  auto s = std::make_shared<TensorStorage>();
  s->block = block;
  s->bytes = bytes_;
  s->device = kind_ == MemoryKind::kDevice ? DeviceKind::kCuda : DeviceKind::kCpu;
  s->device_index = device_;
  s->pool = shared_from_this();
  return s;
}

}  // namespace cubestream::pipeline

namespace cubestream {

TensorStorage::~TensorStorage() {
  if (!pool) return;
  if (pool->kind() == pipeline::MemoryKind::kDevice) {
    // Work the consumer queued on its stream may still read this buffer: mark the point
    // after it, so that the next copy into the buffer waits for it on the GPU. A buffer the
    // consumer never took on a stream (dropped unread, or read without one) has no such
    // point, and the loader's write into it may still run: wait for that write here, since
    // the next writer may be another of the loader's streams (the GPU stage's assembly or
    // the copy of a batch built on the host).
    try {
      if (!consumer_stream_known && written) cuda::event_synchronize(written.get());
      if (!block.event) block.event = cuda::create_event(device_index);
      cuda::record_event(block.event, consumer_stream_known ? consumer_stream : nullptr, device_index);
      block.event_pending = true;
    } catch (...) {
      // The context is going away: nothing can use the buffer any more.
    }
    pool->note_release(consumer_stream, consumer_stream_known);
  }
  pool->give_back(block);
}

}  // namespace cubestream
