// How deep and in how large pieces the read engine reads with O_DIRECT, chosen from what the
// block device holding the data says about itself in sysfs.
//
// Why: O_DIRECT reads reach the device as the engine issues them (no page cache, no
// readahead), so the engine's queue depth and piece size are the device's request pattern.
// One fixed choice does not suit every disk: on the GPU machine's virtio disk, io_uring at
// depth 32 with 1 MiB pieces reached 91% of `dd iflag=direct bs=4M`, depth 4 with 8 MiB
// pieces 97% (docs/benchmarks.md, issue 5); NVMe drives have many deep hardware queues and
// were what depth 32 x 1 MiB was chosen for.
//
// The sysfs files used (Documentation/block/queue-sysfs.rst and
// Documentation/ABI/stable/sysfs-block in the kernel tree):
//   /sys/dev/block/MAJ:MIN         link to the device's directory; for a partition that
//                                  directory holds a `partition` file and its parent is the
//                                  whole disk, whose queue/ describes the hardware
//   queue/max_sectors_kb           the largest request (KiB) the block layer sends for a
//                                  file system read; a larger read is split into several
//   queue/max_hw_sectors_kb        the largest single transfer the hardware supports (KiB)
//   queue/nr_requests              requests the block layer may allocate per hardware queue
//                                  (the tags a submitter can hold before it waits)
//   queue/rotational               1 for a spinning disk; a virtio disk often says 1 too,
//                                  whatever backs it, so the driver is looked at first
//   mq/<n>/                        one directory per hardware queue of a blk-mq device
//   device/driver (or, for NVMe namespaces, device/device/driver)
//                                  the driver: virtio_blk, nvme, sd, ...
//   slaves/                        the devices under a device-mapper or md device
// Files that are missing or unreadable leave that fact unknown; a path whose file system has
// no block device (tmpfs, overlay, NFS, FUSE, btrfs' anonymous device numbers) gets the
// defaults, and says so.
#pragma once

#include <cstdint>
#include <string>

#include "store/file/io_settings.hpp"

namespace cubestream::store_detail {

// What sysfs says about the block device under a path. Zero or -1 means "not known".
struct BlockDeviceFacts {
  bool found = false;
  std::string missing;               // why `found` is false: "stat /data: No such file ..."
  std::string disk;                  // whole disk: "vda", "nvme0n1", "dm-0"
  std::string partition;             // the partition holding the path, or empty
  std::string below;                 // for a stacked device (dm, md) with one device under
                                     // it: that device, whose driver and queues are used
  std::string driver;                // "virtio_blk", "nvme", "sd", ...; empty if none
  std::uint64_t max_sectors_kb = 0;
  std::uint64_t max_hw_sectors_kb = 0;
  std::uint64_t nr_requests = 0;
  int rotational = -1;               // 0, 1 or -1
  int hw_queues = 0;                 // entries under mq/; 0 for bio-based or unknown
};

// Reads the facts for device MAJ:MIN under `sysfs` ("/sys"; tests pass a fake tree). Never
// throws for missing or malformed files: they leave facts unknown.
BlockDeviceFacts read_block_device_facts(unsigned major, unsigned minor, const std::string& sysfs = "/sys");
// The same for the device holding `path` (stat's st_dev).
BlockDeviceFacts block_device_facts_for_path(const std::string& path, const std::string& sysfs = "/sys");
// One line: "vda (driver virtio_blk; max_sectors_kb 4096, ...)" or "unknown (why)".
std::string describe(const BlockDeviceFacts& f);

// O_DIRECT depth and piece size for a device, and why (a phrase for `cubestream info`).
struct IoTuning {
  int depth = 32;
  std::uint64_t block_bytes = 1 << 20;
  std::string why;
};
// Pure: the choice for these facts (the rules are at its definition).
IoTuning choose_io_tuning(const BlockDeviceFacts& f);

// Sets s.depth and s.block_bytes from the device holding `path` where the environment did not
// set them (s.depth_from_env, s.block_from_env) and reads may use O_DIRECT (s.direct != 0:
// buffered reads reach the disk through readahead, which the kernel sizes, and their depth
// spreads page-cache copies over threads). Fills s.tuning with what was chosen and why.
void apply_device_tuning(IoSettings& s, const std::string& path, const std::string& sysfs = "/sys");

// "8 MiB", "1280 KiB", "1000 bytes": for messages.
std::string format_bytes(std::uint64_t n);

}  // namespace cubestream::store_detail
