// Settings of the local read engine (the file store) and of device reads (src/store/gds).
//
// Each setting is backed by an environment variable, read when a store (or a DeviceReader)
// is opened; a variable that is set but not valid is Error(kInvalidArgument) naming it.
//
//   CUBESTREAM_IO_ENGINE         auto | pread | io_uring                                (auto)
//        pread:    a pool of threads, each issuing blocking pread(2) calls.
//        io_uring: one submission ring per calling thread, up to IO_DEPTH reads in flight.
//        auto:     io_uring where the kernel lets this process use it (probed once per
//                  process), else pread. Containers often forbid io_uring: Docker's default
//                  seccomp profile and kernel.io_uring_disabled=2 make io_uring_setup(2)
//                  fail with EPERM; kernels built without it give ENOSYS. Asking for
//                  io_uring where it is unavailable falls back to pread (`cubestream info`
//                  says why).
//   CUBESTREAM_IO_DEPTH          reads in flight per request (threads of the pread pool,
//                                ring entries for io_uring)                        (32 or *)
//   CUBESTREAM_IO_BLOCK_BYTES    large reads are split into pieces of this size, cut at
//                                multiples of it in the file; rounded up to 4096,
//                                at most 1 GiB                                   (1 MiB or *)
//        * Where reads may use O_DIRECT (IO_DIRECT=1 or auto) and a variable is unset, a
//          store opened from the environment chooses it from the block device holding the
//          store (device_tuning.hpp: e.g. 4 x 8 MiB on a virtio disk, 32 x 1 MiB on NVMe);
//          `cubestream info PATH` says what it chose and why.
//   CUBESTREAM_IO_COALESCE_BYTES ranges of one file closer than this are read as one
//                                (get_ranges); -1 never coalesces                      (65536)
//   CUBESTREAM_IO_DIRECT         0 | 1 | auto                                              (0)
//        0:    every read goes through the page cache (warm data is served from memory,
//              and what is read stays cached for the next epoch).
//        1:    every read uses O_DIRECT (bypasses the page cache: no copy into the cache, no
//              readahead, no cache pollution; for data sets far larger than memory).
//        auto: reads of at least IO_DIRECT_MIN_BYTES first ask the page cache with
//              preadv2(RWF_NOWAIT), which returns only what is already cached and never
//              waits for the disk; when the first page is cached (warm) the read stays
//              buffered, otherwise (cold) the rest of it is read with O_DIRECT.
//        O_DIRECT needs the file offset, the length and the memory address aligned to the
//        file system's logical block size (512 or 4096 bytes on NVMe). The engine reads
//        the 4096-aligned superset of a range into an aligned buffer and cuts the range
//        out; a read reaching the end of a file whose size is not a multiple of 4096
//        returns short at end-of-file, which is expected. File systems that refuse
//        O_DIRECT (open or read fails with EINVAL: tmpfs before Linux 6.6, some FUSE and
//        network file systems) are read buffered instead, and the store remembers it.
//   CUBESTREAM_IO_DIRECT_MIN_BYTES  smallest read that IO_DIRECT=auto considers     (1 MiB)
//
// Device reads (src/store/gds/device_read.hpp):
//   CUBESTREAM_GDS               auto | on | off                                        (auto)
//        auto: cuFile (GPUDirect Storage) when libcufile loads, its driver opens and it
//              would move data by DMA (nvidia-fs or PCIe P2PDMA); in compatibility mode
//              cuFile itself only does POSIX reads into its own bounce buffers, so the
//              pinned bounce ring below is used instead.
//        on:   cuFile whenever it loads and its driver opens, compatibility mode included.
//        off:  always the pinned bounce ring.
//   CUBESTREAM_GDS_SLOT_BYTES    size of one pinned bounce buffer                      (8 MiB)
//   CUBESTREAM_GDS_SLOTS         bounce buffers in the ring (>= 2: reads into one overlap
//                                the copies to the device out of the others)             (4)
#pragma once

#include <cstdint>
#include <string>

namespace cubestream::store_detail {

enum class IoEngineKind { kAuto, kPread, kIoUring };
enum class DirectMode { kOff, kOn, kAuto };
enum class GdsMode { kAuto, kOn, kOff };

// O_DIRECT alignment used for offsets, lengths and buffers. 4096 satisfies both common
// logical block sizes (512 and 4096); a device that needs more makes the read fail with
// EINVAL, and the engine then reads buffered.
inline constexpr std::uint64_t kDirectAlign = 4096;

struct IoSettings {
  IoEngineKind engine = IoEngineKind::kAuto;
  int depth = 32;
  std::uint64_t block_bytes = 1 << 20;
  std::int64_t coalesce_bytes = 64 * 1024;
  DirectMode direct = DirectMode::kOff;
  std::uint64_t direct_min_bytes = 1 << 20;

  // Whether CUBESTREAM_IO_DEPTH / CUBESTREAM_IO_BLOCK_BYTES set depth / block_bytes: those
  // then win over what the device suggests (apply_device_tuning).
  bool depth_from_env = false;
  bool block_from_env = false;
  // How depth and block_bytes were chosen, for `cubestream info` and io_description(); empty
  // when nobody asked the device (explicit settings).
  std::string tuning;

  GdsMode gds = GdsMode::kAuto;
  std::uint64_t gds_slot_bytes = 8 << 20;
  int gds_slots = 4;

  // The defaults above, overridden by the environment variables listed at the top of this file.
  static IoSettings from_env();
  // from_env(), then depth and block_bytes from the device holding `path` where the
  // environment left them unset (device_tuning.hpp). What open_file_store uses.
  static IoSettings for_path(const std::string& path);
};

const char* to_string(IoEngineKind k);
const char* to_string(DirectMode m);
const char* to_string(GdsMode m);

}  // namespace cubestream::store_detail
