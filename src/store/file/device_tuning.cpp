// Choosing O_DIRECT depth and piece size from sysfs (see device_tuning.hpp).
#include "store/file/device_tuning.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace cubestream::store_detail {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// The first line of a sysfs file, or empty when it cannot be read.
std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// A decimal number from a sysfs file; 0 when missing or not a number (0 is never a
// meaningful value of the files read here).
std::uint64_t read_number(const fs::path& p) {
  std::string s = read_line(p);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return 0;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  return errno ? 0 : v;
}

// The whole disk for a device directory: a partition's directory holds a `partition` file
// and sits inside its disk's directory.
fs::path whole_disk(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "partition", ec)) return dir.parent_path();
  return dir;
}

// The driver bound to a disk: its `device` link's driver, or for an NVMe namespace (whose
// `device` is the controller, a class device) that controller's device's driver.
std::string driver_of(const fs::path& disk) {
  for (const char* rel : {"device/driver", "device/device/driver"}) {
    std::error_code ec;
    fs::path d = fs::canonical(disk / rel, ec);
    if (!ec) return d.filename().string();
  }
  return {};
}

int count_hw_queues(const fs::path& disk) {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it(disk / "mq", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) ++n;
  return n;
}

// The only device under a stacked one (dm, md), resolved to its whole disk; empty when
// there are none or several (then the stack's own facts are all there is).
fs::path only_slave(const fs::path& disk) {
  std::error_code ec;
  fs::path found;
  int n = 0;
  for (fs::directory_iterator it(disk / "slaves", ec), end; !ec && it != end; it.increment(ec)) {
    ++n;
    found = it->path();
  }
  if (n != 1) return {};
  fs::path p = fs::canonical(found, ec);
  return ec ? fs::path() : whole_disk(p);
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string format_bytes(std::uint64_t n) {
  if (n >= kMiB && n % kMiB == 0) return std::to_string(n / kMiB) + " MiB";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n / 1024) + " KiB";
  return std::to_string(n) + " bytes";
}

BlockDeviceFacts read_block_device_facts(unsigned major, unsigned minor, const std::string& sysfs) {
  BlockDeviceFacts f;
  const std::string id = std::to_string(major) + ":" + std::to_string(minor);
  try {
    std::error_code ec;
    fs::path dir = fs::canonical(fs::path(sysfs) / "dev" / "block" / id, ec);
    if (ec) {
      f.missing = "no " + sysfs + "/dev/block/" + id + (major == 0 ? " (a file system without a block device)" : "");
      return f;
    }
    fs::path disk = whole_disk(dir);
    f.disk = disk.filename().string();
    if (disk != dir) f.partition = dir.filename().string();
    const fs::path q = disk / "queue";
    if (!fs::is_directory(q, ec)) {
      f.missing = f.disk + " has no queue/ in sysfs";
      return f;
    }
    f.found = true;
    f.max_sectors_kb = read_number(q / "max_sectors_kb");
    f.max_hw_sectors_kb = read_number(q / "max_hw_sectors_kb");
    f.nr_requests = read_number(q / "nr_requests");
    std::string rot = read_line(q / "rotational");
    f.rotational = rot == "0" ? 0 : rot == "1" ? 1 : -1;
    f.driver = driver_of(disk);
    f.hw_queues = count_hw_queues(disk);
    // A device-mapper or md device has no driver of its own: the kind of hardware is that of
    // the one device under it (LVM or dm-crypt on one disk). Its queue limits stay those of
    // the stack, which the kernel derives from the devices below.
    fs::path below = disk;
    for (int level = 0; level < 4 && f.driver.empty(); ++level) {
      below = only_slave(below);
      if (below.empty()) break;
      f.below = below.filename().string();
      f.driver = driver_of(below);
      f.hw_queues = count_hw_queues(below);
      if (f.rotational < 0) {
        std::string r = read_line(below / "queue" / "rotational");
        f.rotational = r == "0" ? 0 : r == "1" ? 1 : -1;
      }
    }
  } catch (const std::exception& e) {
    // Filesystem errors are taken as error codes above; anything else (allocation) still must
    // not stop a store from opening: the defaults do.
    f = BlockDeviceFacts{};
    f.missing = std::string("reading ") + sysfs + " failed: " + e.what();
  }
  return f;
}

BlockDeviceFacts block_device_facts_for_path(const std::string& path, const std::string& sysfs) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    BlockDeviceFacts f;
    f.missing = "stat " + path + ": " + std::strerror(errno);
    return f;
  }
  return read_block_device_facts(major(st.st_dev), minor(st.st_dev), sysfs);
}

std::string describe(const BlockDeviceFacts& f) {
  if (!f.found) return "unknown (" + f.missing + ")";
  auto num = [](std::uint64_t v) { return v ? std::to_string(v) : std::string("?"); };
  std::string s = f.disk;
  if (!f.partition.empty()) s += " (partition " + f.partition + ")";
  if (!f.below.empty()) s += " over " + f.below;
  s += ": driver " + (f.driver.empty() ? std::string("?") : f.driver);
  s += ", max_sectors_kb " + num(f.max_sectors_kb) + ", max_hw_sectors_kb " + num(f.max_hw_sectors_kb);
  s += ", nr_requests " + num(f.nr_requests);
  s += ", rotational " + (f.rotational < 0 ? std::string("?") : std::to_string(f.rotational));
  s += ", hardware queues " + std::to_string(f.hw_queues);
  return s;
}

// The rules, in order:
//  1. No facts: the old defaults, 32 pieces of 1 MiB in flight.
//  2. virtio disk (driver virtio_blk; named vd* where the driver is unknown): each request is
//     a trip through the hypervisor to whatever backs the disk, so a few large requests do
//     best: 4 pieces of 8 MiB (measured on the GPU machine's virtio disk, docs/benchmarks.md).
//     Checked before `rotational`, which virtio disks often set whatever backs them.
//  3. NVMe (driver nvme; named nvme* where unknown): many deep hardware queues; 32 pieces of
//     1 MiB keep the drive busy (the old defaults, chosen for NVMe).
//  4. rotational disk: a seek costs far more than a transfer, so few large pieces: 2 of 8
//     MiB (reasoning, not measured here: no spinning disk was available).
//  5. anything else (SATA/SAS SSD, loop, zram, stacks over several devices): the defaults.
// Then, for every rule but the first:
//  - the piece is cut to a whole number of the block layer's largest request
//    (max_sectors_kb, else max_hw_sectors_kb) when that is smaller than the piece, so that
//    the kernel does not split every piece into full requests plus a short tail;
//  - the depth is capped so that depth x (requests per piece) fits in nr_requests: beyond it
//    the submitting thread waits for free tags instead of the device working.
IoTuning choose_io_tuning(const BlockDeviceFacts& f) {
  IoTuning t;
  if (!f.found) {
    t.why = "no block device facts: " + f.missing;
    return t;
  }
  const std::string& name = f.below.empty() ? f.disk : f.below;
  const bool virtio = f.driver == "virtio_blk" || (f.driver.empty() && starts_with(name, "vd"));
  const bool nvme = f.driver == "nvme" || (f.driver.empty() && starts_with(name, "nvme"));
  if (virtio) {
    t.depth = 4;
    t.block_bytes = 8 * kMiB;
    t.why = "virtio disk: few large requests";
  } else if (nvme) {
    t.why = "NVMe (" + std::to_string(f.hw_queues) + " hardware queues): many requests in flight";
  } else if (f.rotational == 1) {
    t.depth = 2;
    t.block_bytes = 8 * kMiB;
    t.why = "rotational disk: few large requests";
  } else {
    t.why = "no rule for driver " + (f.driver.empty() ? std::string("?") : f.driver) + ": defaults";
  }
  std::uint64_t req = (f.max_sectors_kb ? f.max_sectors_kb : f.max_hw_sectors_kb);
  // Values near 2^32 KiB mean "no limit" (virtio reports max_hw_sectors_kb 2147483647).
  req = req > (std::uint64_t{1} << 30) ? 0 : req * 1024 / kDirectAlign * kDirectAlign;
  if (req >= kDirectAlign && req < t.block_bytes) {
    std::uint64_t piece = t.block_bytes / req * req;
    if (piece != t.block_bytes) {
      t.block_bytes = piece;
      t.why += "; pieces cut to " + std::to_string(piece / req) + " requests of max_sectors_kb";
    }
  }
  if (f.nr_requests) {
    std::uint64_t per_piece = req >= kDirectAlign ? (t.block_bytes + req - 1) / req : 1;
    auto cap = static_cast<int>(std::clamp<std::uint64_t>(f.nr_requests / per_piece, 1, 1024));
    if (t.depth > cap) {
      t.depth = cap;
      t.why += "; depth capped by nr_requests " + std::to_string(f.nr_requests);
    }
  }
  return t;
}

void apply_device_tuning(IoSettings& s, const std::string& path, const std::string& sysfs) {
  if (s.depth_from_env && s.block_from_env) {
    s.tuning = "CUBESTREAM_IO_DEPTH and CUBESTREAM_IO_BLOCK_BYTES";
    return;
  }
  if (s.direct == DirectMode::kOff) {
    s.tuning = "buffered reads (CUBESTREAM_IO_DIRECT=0): the page cache's readahead sizes the disk's requests";
    return;
  }
  BlockDeviceFacts f = block_device_facts_for_path(path, sysfs);
  IoTuning t = choose_io_tuning(f);
  if (!s.depth_from_env) s.depth = t.depth;
  if (!s.block_from_env) s.block_bytes = t.block_bytes;
  s.tuning = std::string("O_DIRECT on ") + (f.found ? f.disk : std::string("?")) + ": " + t.why;
  if (s.depth_from_env) s.tuning += "; depth from CUBESTREAM_IO_DEPTH";
  if (s.block_from_env) s.tuning += "; pieces from CUBESTREAM_IO_BLOCK_BYTES";
}

}  // namespace cubestream::store_detail
