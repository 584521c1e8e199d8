// Device reads (store/gds/device_read.hpp): every path (the pinned bounce ring buffered and
// with O_DIRECT, cuFile where libcufile loads) delivers the same bytes as the host read, for
// unaligned ranges, ranges to the end of odd-sized files and ranges longer than the whole
// ring, with and without a caller's stream; stores other than local files go through the ring.
// Without a GPU the GPU tests skip; what a machine without one must say is checked everywhere.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "store/file/file_store.hpp"
#include "store/gds/device_read.hpp"

#ifdef CUBESTREAM_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cubestream {
namespace {

using store_detail::DirectMode;
using store_detail::GdsMode;
using store_detail::IoSettings;

std::string random_bytes(std::size_t n, unsigned seed) {
  std::string v(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

TEST(DeviceRead, SaysWhyWhereNoGpuIsVisible) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is visible: the GPU tests below run instead";
  auto choice = gds::choose_device_path(GdsMode::kAuto);
  EXPECT_EQ(choice.path, gds::DevicePath::kUnavailable);
  EXPECT_NE(choice.why.find("device reads unavailable"), std::string::npos) << choice.why;
  auto store = std::make_shared<MemoryStore>("m");
  try {
    gds::DeviceReader r(store, 0);
    FAIL() << "a device reader needs a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_EQ(e.message(), choice.why);
  }
}

#ifdef CUBESTREAM_WITH_CUDA

class DeviceReadGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU visible";
    root_ = (std::filesystem::temp_directory_path() / ("cs_device_read_" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    ref_ = random_bytes(kSize, 11);
    std::ofstream(root_ + "/v", std::ios::binary) << ref_;
    ASSERT_EQ(cudaMalloc(&dev_, kSize), cudaSuccess);
  }
  void TearDown() override {
    if (dev_) cudaFree(dev_);
    if (!root_.empty()) std::filesystem::remove_all(root_);
  }

  // Reads every test range through `reader` and compares what reached the device.
  void check_ranges(gds::DeviceReader& reader, const std::string& what) {
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const std::vector<ByteRange> ranges = {ByteRange::all(), {1, 4095}, {4096, 8192}, {12345, 3000000},
                                           ByteRange::suffix(777777), {kSize - 1, 1}, {kSize, 0}};
    for (bool with_stream : {false, true}) {
      for (const auto& r : ranges) {
        ASSERT_EQ(cudaMemset(dev_, 0, kSize), cudaSuccess);
        auto n = reader.read_to_device("v", r, dev_, with_stream ? stream : nullptr);
        ASSERT_TRUE(n.has_value());
        std::uint64_t off = r.offset < 0 ? kSize + r.offset : r.offset;
        std::uint64_t len = r.offset < 0 ? -r.offset : r.length < 0 ? kSize - off : r.length;
        ASSERT_EQ(*n, len);
        std::string back(len, '\0');
        // Ordered after the reader's copies: on its stream, or (no stream) they are done already.
        if (with_stream) {
          ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        }
        ASSERT_EQ(cudaMemcpy(back.data(), dev_, len, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_TRUE(back == ref_.substr(off, len))
            << what << ": range " << r.offset << "+" << r.length << (with_stream ? " on a stream" : "");
      }
    }
    EXPECT_FALSE(reader.read_to_device("missing", ByteRange::all(), dev_).has_value());
    EXPECT_THROW(reader.read_to_device("v", {kSize - 10, 11}, dev_), Error);
    cudaStreamDestroy(stream);
  }

  IoSettings small_ring(GdsMode gds, DirectMode direct) {
    IoSettings s;
    s.gds = gds;
    s.direct = direct;
    s.direct_min_bytes = 0;
    s.block_bytes = 256 * 1024;
    s.gds_slot_bytes = 1 << 20;  // the 5 MB file is longer than the whole ring: slots are reused
    s.gds_slots = 3;
    return s;
  }

  static constexpr std::uint64_t kSize = 5 * 1024 * 1024 + 4321;
  std::string root_;
  std::string ref_;
  void* dev_ = nullptr;
};

TEST_F(DeviceReadGpu, BounceRingBufferedAndDirect) {
  for (auto direct : {DirectMode::kOff, DirectMode::kOn}) {
    auto s = small_ring(GdsMode::kOff, direct);
    auto store = store_detail::open_local_file_store(root_, s);
    gds::DeviceReader reader(store, 0, s);
    EXPECT_EQ(reader.path(), gds::DevicePath::kBounceRing);
    EXPECT_NE(reader.path_description().find("bounce ring"), std::string::npos);
    check_ranges(reader, direct == DirectMode::kOn ? "ring, O_DIRECT" : "ring, buffered");
  }
}

TEST_F(DeviceReadGpu, CuFileWhereItLoads) {
  auto s = small_ring(GdsMode::kOn, DirectMode::kOff);
  auto choice = gds::choose_device_path(GdsMode::kOn);
  if (choice.path != gds::DevicePath::kCuFile) GTEST_SKIP() << choice.why;
  auto store = store_detail::open_local_file_store(root_, s);
  gds::DeviceReader reader(store, 0, s);
  EXPECT_EQ(reader.path(), gds::DevicePath::kCuFile) << reader.path_description();
  check_ranges(reader, "cuFile");
  // cuFile may refuse the file at registration; the reader then went on with the ring (and
  // the bytes were checked above), but cuFile itself was not exercised.
  if (reader.path() != gds::DevicePath::kCuFile) GTEST_SKIP() << reader.path_description();
}

TEST_F(DeviceReadGpu, AutoPathAndItsReason) {
  auto auto_choice = gds::choose_device_path(GdsMode::kAuto);
  EXPECT_NE(auto_choice.path, gds::DevicePath::kUnavailable);
  EXPECT_EQ(auto_choice.why.rfind("GDS: ", 0), 0u) << auto_choice.why;
  // Compatibility mode is never chosen under auto: there the ring is the faster path.
  if (auto_choice.why.find("compatibility mode") != std::string::npos) {
    EXPECT_EQ(auto_choice.path, gds::DevicePath::kBounceRing);
  }
  auto s = small_ring(GdsMode::kAuto, DirectMode::kOff);
  auto store = store_detail::open_local_file_store(root_, s);
  gds::DeviceReader reader(store, 0, s);
  check_ranges(reader, auto_choice.why);
}

TEST_F(DeviceReadGpu, OtherStoresGoThroughTheRing) {
  auto mem = std::make_shared<MemoryStore>("m");
  mem->set("v", std::string_view(ref_));
  auto s = small_ring(GdsMode::kAuto, DirectMode::kOff);
  gds::DeviceReader reader(mem, 0, s);
  EXPECT_EQ(reader.path(), gds::DevicePath::kBounceRing);
  check_ranges(reader, "memory store");
}

#endif

}  // namespace
}  // namespace cubestream
