// Reusable batch buffers: host memory (pinned when feeding a GPU) and device memory.
//
// A buffer handed out lives in a TensorStorage (the public tensor's storage); when the last
// holder drops it (the consumer, or a DLPack deleter on any thread, possibly after the
// loader is gone) it returns to its pool, which keeps at most `max_free` idle buffers and
// frees the rest. GPU work may still use a buffer when it is returned, so a buffer carries
// an event: for a pinned staging buffer the end of its copy to the GPU (the host waits on it
// before writing again), for a device buffer the consumer's last use on its stream (the
// loader's copy stream waits on it, without blocking the host, before overwriting).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "cubestream/loader.hpp"

namespace cubestream::pipeline {

enum class MemoryKind { kHost, kPinned, kDevice };

struct PoolBlock {
  void* data = nullptr;
  void* event = nullptr;      // created on first need, reused
  bool event_pending = false; // `event` was recorded and guards the next use
};

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> create(MemoryKind kind, std::size_t bytes, int device, std::size_t max_free);
  ~BufferPool();

  // An idle buffer or a new one. The caller waits on block.event if event_pending (see above).
  PoolBlock take();
  void give_back(PoolBlock block) noexcept;
  // Wraps a block in a TensorStorage that returns it here when dropped.
  std::shared_ptr<TensorStorage> wrap(PoolBlock block);

  // Device pools: the consumer dropped a batch; its release was marked on `stream` (see
  // TensorStorage). consumer_caught_up() then says whether the GPU has finished the work the
  // consumer had queued by its latest release (true before any release, and for host pools):
  // a consumer that waits for a batch while its own GPU work is still running is not short
  // of data, the GPU is busy (the host decode share reads this, see loader.cpp).
  void note_release(void* stream, bool stream_known) noexcept;
  bool consumer_caught_up() noexcept;

  MemoryKind kind() const { return kind_; }
  std::size_t bytes() const { return bytes_; }
  int device() const { return device_; }
  void release_block(PoolBlock& block) noexcept;  // frees the memory and event

 private:
  BufferPool(MemoryKind kind, std::size_t bytes, int device, std::size_t max_free)
      : kind_(kind), bytes_(bytes), device_(device), max_free_(max_free) {}
  const MemoryKind kind_;
  const std::size_t bytes_;
  const int device_;
  const std::size_t max_free_;
  std::mutex mu_;
  std::vector<PoolBlock> free_;
  void* last_release_ = nullptr;  // event recorded at the latest release (device pools)
};

}  // namespace cubestream::pipeline

namespace cubestream {

struct TensorStorage {
  pipeline::PoolBlock block;
  std::size_t bytes = 0;
  DeviceKind device = DeviceKind::kCpu;
  int device_index = 0;
  // The consumer stream the data was handed to (Batch::wait_on); the buffer is reused only
  // after work queued there so far has finished.
  void* consumer_stream = nullptr;
  bool consumer_stream_known = false;
  // Device buffers: the event recorded after the loader's write into this buffer (the
  // batch's ready event), which a release without a consumer stream waits for.
  std::shared_ptr<void> written;
  std::shared_ptr<pipeline::BufferPool> pool;
  ~TensorStorage();
};

}  // namespace cubestream
