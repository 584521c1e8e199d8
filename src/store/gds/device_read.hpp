// Reading stored bytes straight into GPU memory.
//
// Two paths, chosen once per process (CUBESTREAM_GDS, see store/file/io_settings.hpp):
//
//   cuFile (GPUDirect Storage). libcufile is loaded at run time with dlopen, never linked,
//     so builds and machines without it work unchanged. With the nvidia-fs kernel module (or
//     PCIe P2PDMA on recent drivers) the NVMe device DMAs into GPU memory, skipping host
//     memory. Without them cuFile runs in "compatibility mode": it reads with POSIX calls into
//     its own bounce buffers and copies them to the GPU, one request at a time; then (under
//     CUBESTREAM_GDS=auto) the bounce ring below is used instead, since it overlaps reads
//     with copies and runs many reads at once.
//
//   Pinned bounce ring. A few page-locked host buffers (CUBESTREAM_GDS_SLOTS of
//     CUBESTREAM_GDS_SLOT_BYTES). A range is cut into slot-sized chunks; half the ring is
//     filled by the read engine (many reads in flight, O_DIRECT per CUBESTREAM_IO_DIRECT:
//     the buffers are 4096-aligned so aligned chunks land in place) while the other half's
//     cudaMemcpyAsync copies run; an event per slot says when a slot may be refilled.
//     Pinned memory matters: copies from pageable memory run at a fraction of PCIe speed
//     (the driver stages them through its own small pinned buffers, synchronously).
//
// `cubestream info` prints which path is in use and why (device_path_summary()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cubestream/store.hpp"
#include "store/file/io_settings.hpp"

namespace cubestream::gds {

enum class DevicePath { kUnavailable, kCuFile, kBounceRing };

struct DevicePathChoice {
  DevicePath path = DevicePath::kUnavailable;
  // e.g. "GDS: libcufile not found: pinned bounce ring",
  //      "GDS: cuFile found, compatibility mode (no nvidia-fs): pinned bounce ring"
  std::string why;
};

// The path device reads take under `mode` in this process. libcufile is looked for once and
// its driver opened once (where a GPU is visible); the answer is kept.
DevicePathChoice choose_device_path(store_detail::GdsMode mode);

// One line for `cubestream info` under the settings from the environment.
std::string device_path_summary();

// Reads values of one store into device memory. Local file stores go through the chosen path;
// other stores (HTTP, S3, memory) fetch the bytes with get_range and copy them through the
// bounce ring. Calls on one reader are serialised (it owns one ring); use one reader per
// thread to read from many threads.
class DeviceReader {
 public:
  // Settings from the environment. Throws Error(kUnsupported) in a build without CUDA or
  // where no GPU is visible.
  DeviceReader(std::shared_ptr<Store> store, int device);
  DeviceReader(std::shared_ptr<Store> store, int device, const store_detail::IoSettings& settings);
  ~DeviceReader();
  DeviceReader(const DeviceReader&) = delete;
  DeviceReader& operator=(const DeviceReader&) = delete;

  // Copies `range` of `key` into device memory at `device_ptr` (on this reader's device,
  // room for the range's length). Returns the number of bytes, or nullopt when the key does
  // not exist; ranges past the end are Error(kOutOfRange), as for Store::get_range.
  //   stream == nullptr: returns when the bytes are in device memory.
  //   stream given (a cudaStream_t): work enqueued on `stream` afterwards sees the bytes.
  //     With the bounce ring the call returns once every read is done and every copy is
  //     enqueued; with cuFile (synchronous reads) it first waits for work already on
  //     `stream`, which may still be using the destination.
  std::optional<std::uint64_t> read_to_device(std::string_view key, ByteRange range, void* device_ptr,
                                              void* stream = nullptr);

  DevicePath path() const;
  // The reason line of the path in use (as choose_device_path gives it).
  const std::string& path_description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cubestream::gds
