// The file store's readahead hint (Store::will_need): a hint of any key, existing or not,
// escaping the root or not, in any read mode, never throws and never changes what is read.
// (Whether the kernel reads the pages ahead cannot be observed reliably here: tmpfs and
// overlay keep every page resident; the GPU machine's benchmark measures the effect.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cubestream/store.hpp"
#include "store/file/file_store.hpp"
#include "store/file/io_settings.hpp"
#include "store/hint_recording_store.hpp"
#include "test_util_fixtures.hpp"

namespace cubestream {
namespace {

Bytes pattern(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>((i * 131 + 7) % 251);
  return b;
}

void hint_everything(const Store& s) {
  const std::vector<std::string> keys = {"v/0.0", "v/1.0", "v/missing", "missing/x", "v",  // dir key
                                         "../outside", "/etc/passwd", "", "v/../v/0.0", "a\\b", "fifo"};
  const std::vector<ByteRange> ranges = {ByteRange::all(), {0, 10}, {5, -1}, ByteRange::suffix(100), ByteRange::suffix(1 << 30),
                                         {1 << 30, 10}, {100, 1 << 30}, {0, 0}};
  for (const auto& k : keys) {
    for (const auto& r : ranges) EXPECT_NO_THROW(s.will_need(k, r)) << k;
  }
}

TEST(FileStoreHints, WillNeedNeverThrowsAndLeavesValuesAlone) {
  test::TempDir dir("cs_hint");
  const Bytes big = pattern(3 << 20), small = pattern(1000);
  {
    auto w = open_writable_file_store(dir.str());
    w->put("v/0.0", ByteView(big.data(), big.size()));
    w->put("v/1.0", ByteView(small.data(), small.size()));
  }
  // A FIFO under a key: opening it for a hint must not block.
  ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
  for (const auto mode : {store_detail::DirectMode::kOff, store_detail::DirectMode::kOn, store_detail::DirectMode::kAuto}) {
    store_detail::IoSettings settings;
    settings.direct = mode;
    auto s = store_detail::open_local_file_store(dir.str(), settings);
    hint_everything(*s);
    EXPECT_EQ(*s->get("v/0.0"), big) << store_detail::to_string(mode);
    EXPECT_EQ(*s->get("v/1.0"), small);
    EXPECT_EQ(*s->get_range("v/0.0", {1 << 20, 4096}), Bytes(big.begin() + (1 << 20), big.begin() + (1 << 20) + 4096));
    EXPECT_FALSE(s->get("v/missing").has_value());
    hint_everything(*s);  // after reads too (cached pages, a store that learned about O_DIRECT)
    EXPECT_EQ(*s->get("v/0.0"), big);
  }
  // The store opened from the environment, as the loader opens it.
  auto s = open_file_store(dir.str());
  hint_everything(*s);
  EXPECT_EQ(*s->get("v/0.0"), big);
}

TEST(StoreHints, DefaultWillNeedIsANoOpAndWrappersSeeEveryHint) {
  auto mem = std::make_shared<MemoryStore>("hints");
  mem->set("k", std::string("value"));
  EXPECT_NO_THROW(mem->will_need("k", ByteRange::all()));
  EXPECT_NO_THROW(mem->will_need("../escape", ByteRange::all()));
  EXPECT_EQ(*mem->get("k"), Bytes({'v', 'a', 'l', 'u', 'e'}));
  test_stores::HintRecordingStore rec(mem);
  rec.will_need("k", ByteRange{1, 2});
  ASSERT_EQ(rec.hints().size(), 1u);
  EXPECT_EQ(rec.hints()[0].key, "k");
  EXPECT_EQ(rec.hints()[0].range.offset, 1);
  EXPECT_EQ(rec.hints()[0].range.length, 2);
}

}  // namespace
}  // namespace cubestream
