// O_DIRECT depth and piece size from sysfs (store/file/device_tuning.hpp): facts read from fake
// sysfs trees built in a temporary directory (partitions, NVMe namespaces, device-mapper,
// malformed and missing files), the rules of choose_io_tuning, the environment's precedence,
// and the real sysfs of the machine running the test (which may have none).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "cubestream/store.hpp"
#include "store/file/device_tuning.hpp"
#include "store/file/file_store.hpp"
#include "store/file/io_settings.hpp"

namespace cubestream {
namespace {

namespace fs = std::filesystem;
using store_detail::BlockDeviceFacts;
using store_detail::choose_io_tuning;
using store_detail::DirectMode;
using store_detail::IoSettings;
using store_detail::read_block_device_facts;

constexpr std::uint64_t kMiB = 1 << 20;

// A sysfs tree shaped like the kernel's: devices under devices/..., dev/block/MAJ:MIN links
// to them, `device` and `driver` links, queue/ files and mq/<n>/ directories.
class FakeSysfs {
 public:
  FakeSysfs() {
    static int n = 0;
    root_ = fs::temp_directory_path() / ("cs_fake_sysfs_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(root_);
    fs::create_directories(root_ / "dev" / "block");
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  std::string root() const { return root_.string(); }

  // A disk at devices/<parent>/block/<name>, registered as MAJ:MIN; `parent` is the device
  // the disk's `device` link points to, bound to `driver` (through `driver_hop`: "" for
  // device/driver, "device/" for the NVMe shape device/device/driver).
  fs::path disk(const std::string& parent, const std::string& name, const std::string& id,
                const std::map<std::string, std::string>& queue, const std::string& driver, int hw_queues,
                const std::string& driver_hop = "") {
    fs::path dev = root_ / "devices" / parent;
    fs::path d = dev / "block" / name;
    fs::create_directories(d / "queue");
    for (const auto& [k, v] : queue) std::ofstream(d / "queue" / k) << v << "\n";
    for (int i = 0; i < hw_queues; ++i) fs::create_directories(d / "mq" / std::to_string(i));
    fs::create_symlink(dev, d / "device");
    if (!driver.empty()) {
      fs::path drv = root_ / "bus" / "drivers" / driver;
      fs::create_directories(drv);
      fs::path holder = dev / driver_hop;
      fs::create_directories(holder);
      fs::create_symlink(drv, holder / "driver");
    }
    link(id, d);
    return d;
  }
  fs::path partition(const fs::path& disk, const std::string& name, const std::string& id) {
    fs::path p = disk / name;
    fs::create_directories(p);
    std::ofstream(p / "partition") << "1\n";
    link(id, p);
    return p;
  }
  void link(const std::string& id, const fs::path& target) { fs::create_symlink(target, root_ / "dev" / "block" / id); }

 private:
  fs::path root_;
};

const std::map<std::string, std::string> kVirtioQueue = {
    {"max_sectors_kb", "4096"}, {"max_hw_sectors_kb", "2147483647"}, {"nr_requests", "256"}, {"rotational", "1"}};

TEST(IoSettingsDeviceTuning, VirtioPartitionIsReadFromItsWholeDisk) {
  FakeSysfs sys;
  auto vda = sys.disk("pci0000:00/0000:00:02.0/virtio1", "vda", "254:0", kVirtioQueue, "virtio_blk", 1);
  sys.partition(vda, "vda1", "254:1");
  BlockDeviceFacts f = read_block_device_facts(254, 1, sys.root());
  ASSERT_TRUE(f.found) << f.missing;
  EXPECT_EQ(f.disk, "vda");
  EXPECT_EQ(f.partition, "vda1");
  EXPECT_EQ(f.driver, "virtio_blk");
  EXPECT_EQ(f.max_sectors_kb, 4096u);
  EXPECT_EQ(f.max_hw_sectors_kb, 2147483647u);
  EXPECT_EQ(f.nr_requests, 256u);
  EXPECT_EQ(f.rotational, 1);
  EXPECT_EQ(f.hw_queues, 1);
  // virtio says rotational 1 whatever backs it: the driver decides, not `rotational`.
  auto t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 4);
  EXPECT_EQ(t.block_bytes, 8 * kMiB) << "two whole 4 MiB requests per piece: nothing to cut";
  EXPECT_NE(t.why.find("virtio"), std::string::npos) << t.why;
}

TEST(IoSettingsDeviceTuning, NvmeNamespaceFindsTheControllersDriver) {
  FakeSysfs sys;
  // nvme0n1's `device` is the controller nvme0 (a class device without a driver link); the
  // PCI function under it carries the driver: device/device/driver.
  sys.disk("pci0000:00/0000:00:04.0/nvme/nvme0", "nvme0n1", "259:0",
           {{"max_sectors_kb", "512"}, {"max_hw_sectors_kb", "512"}, {"nr_requests", "1023"}, {"rotational", "0"}},
           "nvme", 3, "device/");
  BlockDeviceFacts f = read_block_device_facts(259, 0, sys.root());
  ASSERT_TRUE(f.found) << f.missing;
  EXPECT_EQ(f.driver, "nvme");
  EXPECT_EQ(f.hw_queues, 3);
  auto t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 32);
  EXPECT_EQ(t.block_bytes, 1 * kMiB) << "1 MiB is two whole 512 KiB requests";
  EXPECT_NE(t.why.find("NVMe (3 hardware queues)"), std::string::npos) << t.why;
}

TEST(IoSettingsDeviceTuning, PiecesAreWholeRequestsAndDepthFitsTheTags) {
  BlockDeviceFacts f;
  f.found = true;
  f.disk = "vdb";
  f.driver = "virtio_blk";
  f.max_sectors_kb = 1280;  // 8 MiB is 6.4 of these: cut to 6 (7.5 MiB)
  f.nr_requests = 256;
  auto t = choose_io_tuning(f);
  EXPECT_EQ(t.block_bytes, 6u * 1280 * 1024);
  EXPECT_EQ(t.depth, 4);
  f.nr_requests = 13;  // 6 requests per piece: two pieces fit
  t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 2);
  EXPECT_NE(t.why.find("nr_requests 13"), std::string::npos) << t.why;
  f.nr_requests = 3;  // not even one piece fits: still one in flight
  EXPECT_EQ(choose_io_tuning(f).depth, 1);
  // No max_sectors_kb: the hardware's limit is used; an "unlimited" one is ignored.
  f.max_sectors_kb = 0;
  f.max_hw_sectors_kb = 2147483647;
  f.nr_requests = 0;
  t = choose_io_tuning(f);
  EXPECT_EQ(t.block_bytes, 8 * kMiB);
  f.max_hw_sectors_kb = 3001;  // not a multiple of 4 KiB: requests of 3000 KiB count
  t = choose_io_tuning(f);
  EXPECT_EQ(t.block_bytes % 4096, 0u);
  EXPECT_EQ(t.block_bytes, 2u * 3000 * 1024);
}

TEST(IoSettingsDeviceTuning, RotationalAndOtherDevices) {
  BlockDeviceFacts f;
  f.found = true;
  f.disk = "sda";
  f.driver = "sd";
  f.max_sectors_kb = 1024;
  f.nr_requests = 64;
  f.rotational = 1;
  auto t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 2);
  EXPECT_EQ(t.block_bytes, 8 * kMiB);
  f.rotational = 0;  // a SATA/SAS SSD: no rule, the defaults
  t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 32);
  EXPECT_EQ(t.block_bytes, 1 * kMiB);
  f.nr_requests = 16;  // ... but never more pieces than tags
  EXPECT_EQ(choose_io_tuning(f).depth, 16);
  // Without a driver link the name is the hint.
  BlockDeviceFacts g;
  g.found = true;
  g.disk = "vdc";
  EXPECT_EQ(choose_io_tuning(g).depth, 4);
  g.disk = "nvme1n1";
  EXPECT_EQ(choose_io_tuning(g).depth, 32);
}

TEST(IoSettingsDeviceTuning, MissingAndMalformedSysfsGiveTheDefaults) {
  FakeSysfs sys;
  BlockDeviceFacts none = read_block_device_facts(8, 0, sys.root());
  EXPECT_FALSE(none.found);
  EXPECT_NE(none.missing.find("8:0"), std::string::npos) << none.missing;
  auto t = choose_io_tuning(none);
  EXPECT_EQ(t.depth, 32);
  EXPECT_EQ(t.block_bytes, 1 * kMiB);
  EXPECT_NE(read_block_device_facts(0, 42, sys.root()).missing.find("without a block device"), std::string::npos);
  EXPECT_FALSE(read_block_device_facts(8, 0, "/nonexistent/sysfs").found);

  // Garbage, empty and absent queue files leave those facts unknown; nothing throws.
  sys.disk("virtual/block", "loop0", "7:0",
           {{"max_sectors_kb", "lots"}, {"nr_requests", ""}, {"rotational", "2"}, {"max_hw_sectors_kb", "-5"}}, "", 0);
  BlockDeviceFacts f = read_block_device_facts(7, 0, sys.root());
  ASSERT_TRUE(f.found) << f.missing;
  EXPECT_EQ(f.max_sectors_kb, 0u);
  EXPECT_EQ(f.max_hw_sectors_kb, 0u);
  EXPECT_EQ(f.nr_requests, 0u);
  EXPECT_EQ(f.rotational, -1);
  EXPECT_EQ(f.driver, "");
  t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 32);
  EXPECT_EQ(t.block_bytes, 1 * kMiB);
  EXPECT_NE(store_detail::describe(f).find("max_sectors_kb ?"), std::string::npos) << store_detail::describe(f);

  // A device directory without queue/.
  fs::create_directories(fs::path(sys.root()) / "devices" / "odd");
  sys.link("9:9", fs::path(sys.root()) / "devices" / "odd");
  BlockDeviceFacts odd = read_block_device_facts(9, 9, sys.root());
  EXPECT_FALSE(odd.found);
  EXPECT_NE(odd.missing.find("queue"), std::string::npos) << odd.missing;
}

TEST(IoSettingsDeviceTuning, DeviceMapperOverOneDiskTakesThatDisksKind) {
  FakeSysfs sys;
  auto nvme = sys.disk("pci0000:00/0000:00:04.0/nvme/nvme0", "nvme0n1", "259:0",
                       {{"max_sectors_kb", "128"}, {"nr_requests", "1023"}, {"rotational", "0"}}, "nvme", 8, "device/");
  auto p = sys.partition(nvme, "nvme0n1p2", "259:2");
  fs::path dm = fs::path(sys.root()) / "devices" / "virtual" / "block" / "dm-0";
  fs::create_directories(dm / "queue");
  fs::create_directories(dm / "slaves");
  std::ofstream(dm / "queue" / "max_sectors_kb") << "128\n";
  fs::create_symlink(p, dm / "slaves" / "nvme0n1p2");
  sys.link("253:0", dm);
  BlockDeviceFacts f = read_block_device_facts(253, 0, sys.root());
  ASSERT_TRUE(f.found) << f.missing;
  EXPECT_EQ(f.disk, "dm-0");
  EXPECT_EQ(f.below, "nvme0n1");
  EXPECT_EQ(f.driver, "nvme");
  EXPECT_EQ(f.hw_queues, 8);
  EXPECT_EQ(f.rotational, 0) << "dm-0 has no rotational file: the disk below says";
  EXPECT_EQ(f.max_sectors_kb, 128u) << "the stack's own limit";
  auto t = choose_io_tuning(f);
  EXPECT_EQ(t.depth, 32);
  EXPECT_EQ(t.block_bytes, 1 * kMiB);

  // Over two devices (a stripe): no single kind; the defaults, and no crash.
  fs::path dm1 = fs::path(sys.root()) / "devices" / "virtual" / "block" / "dm-1";
  fs::create_directories(dm1 / "queue");
  fs::create_directories(dm1 / "slaves");
  fs::create_symlink(nvme, dm1 / "slaves" / "nvme0n1");
  fs::create_symlink(dm, dm1 / "slaves" / "dm-0");
  sys.link("253:1", dm1);
  BlockDeviceFacts g = read_block_device_facts(253, 1, sys.root());
  ASSERT_TRUE(g.found);
  EXPECT_EQ(g.below, "");
  EXPECT_EQ(g.driver, "");
}

struct EnvVar {
  std::string name;
  EnvVar(std::string n, const char* v) : name(std::move(n)) { ::setenv(name.c_str(), v, 1); }
  ~EnvVar() { ::unsetenv(name.c_str()); }
};

// The path's real device number, described by a fake tree as a virtio disk.
TEST(IoSettingsDeviceTuning, AppliedOnlyToODirectAndNeverOverTheEnvironment) {
  FakeSysfs sys;
  struct stat st {};
  ASSERT_EQ(::stat(sys.root().c_str(), &st), 0);
  const std::string id = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  sys.disk("pci0000:00/0000:00:02.0/virtio1", "vda", id, kVirtioQueue, "virtio_blk", 1);

  IoSettings s;
  s.direct = DirectMode::kOn;
  store_detail::apply_device_tuning(s, sys.root(), sys.root());
  EXPECT_EQ(s.depth, 4);
  EXPECT_EQ(s.block_bytes, 8 * kMiB);
  EXPECT_NE(s.tuning.find("O_DIRECT on vda: virtio"), std::string::npos) << s.tuning;

  IoSettings buffered;  // IO_DIRECT=0: readahead shapes the requests; threads copy warm pages
  store_detail::apply_device_tuning(buffered, sys.root(), sys.root());
  EXPECT_EQ(buffered.depth, 32);
  EXPECT_EQ(buffered.block_bytes, 1 * kMiB);
  EXPECT_NE(buffered.tuning.find("buffered"), std::string::npos) << buffered.tuning;

  {
    EnvVar d("CUBESTREAM_IO_DEPTH", "12"), m("CUBESTREAM_IO_DIRECT", "auto");
    IoSettings e = IoSettings::from_env();
    EXPECT_TRUE(e.depth_from_env);
    EXPECT_FALSE(e.block_from_env);
    store_detail::apply_device_tuning(e, sys.root(), sys.root());
    EXPECT_EQ(e.depth, 12) << "the environment wins";
    EXPECT_EQ(e.block_bytes, 8 * kMiB) << "what the environment left unset comes from the device";
    EXPECT_NE(e.tuning.find("CUBESTREAM_IO_DEPTH"), std::string::npos) << e.tuning;
  }
  {
    EnvVar d("CUBESTREAM_IO_DEPTH", "12"), b("CUBESTREAM_IO_BLOCK_BYTES", "65536"), m("CUBESTREAM_IO_DIRECT", "1");
    IoSettings e = IoSettings::from_env();
    store_detail::apply_device_tuning(e, sys.root(), sys.root());
    EXPECT_EQ(e.depth, 12);
    EXPECT_EQ(e.block_bytes, 65536u);
  }
  // A path that cannot be stat'ed: the defaults, with the reason.
  IoSettings gone;
  gone.direct = DirectMode::kOn;
  store_detail::apply_device_tuning(gone, sys.root() + "/no/such/dir", sys.root());
  EXPECT_EQ(gone.depth, 32);
  EXPECT_NE(gone.tuning.find("stat"), std::string::npos) << gone.tuning;
}

// The machine running the test: wherever its sysfs has the device, the facts agree with the
// same files read through /sys/block/<disk>; where there is none (a container without /sys,
// tmpfs or overlay under the temporary directory), the old defaults.
TEST(IoSettingsDeviceTuning, RealSysfsOfThisMachine) {
  const std::string dir = fs::temp_directory_path().string();
  BlockDeviceFacts f = store_detail::block_device_facts_for_path(dir);
  auto t = choose_io_tuning(f);
  std::printf("  %s: %s\n  O_DIRECT: depth %d, %s pieces (%s)\n", dir.c_str(), store_detail::describe(f).c_str(),
              t.depth, store_detail::format_bytes(t.block_bytes).c_str(), t.why.c_str());
  EXPECT_GE(t.depth, 1);
  EXPECT_LE(t.depth, 1024);
  EXPECT_GE(t.block_bytes, 4096u);
  EXPECT_EQ(t.block_bytes % 4096, 0u);
  if (!f.found) {
    EXPECT_EQ(t.depth, 32);
    EXPECT_EQ(t.block_bytes, 1 * kMiB);
    EXPECT_FALSE(f.missing.empty());
  } else {
    fs::path q = fs::path("/sys/block") / f.disk / "queue";
    if (fs::exists(q)) {
      std::ifstream in(q / "max_sectors_kb");
      std::uint64_t kb = 0;
      if (in >> kb) {
        EXPECT_EQ(f.max_sectors_kb, kb);
      }
    }
  }

  // A store opened from the environment with O_DIRECT uses exactly that choice.
  EnvVar m("CUBESTREAM_IO_DIRECT", "1");
  auto store = std::dynamic_pointer_cast<store_detail::LocalFileStore>(open_file_store(dir));
  ASSERT_TRUE(store);
  EXPECT_EQ(store->io_settings().depth, t.depth);
  EXPECT_EQ(store->io_settings().block_bytes, t.block_bytes);
  EXPECT_NE(store->io_description().find(store_detail::format_bytes(t.block_bytes) + " pieces"), std::string::npos)
      << store->io_description();
}

}  // namespace
}  // namespace cubestream
