// A Store over a directory of the local file system, read with pread(2).
//
// Each get opens the file, reads with pread and closes it: no state is shared between
// threads, so any number of reads can run at once. (The parallel read engine, io_uring,
// O_DIRECT and GPUDirect Storage come with the storage work; this is the portable baseline.)
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "store/range_math.hpp"

namespace cubestream {

namespace {

class FileStore final : public Store {
 public:
  explicit FileStore(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  std::string describe() const override { return "file://" + root_; }

  std::optional<Bytes> get(std::string_view key) const override {
    return get_range(key, ByteRange::all());
  }

  std::optional<Bytes> get_range(std::string_view key, ByteRange range) const override {
    Bytes out;
    if (!read_into(key, range, out)) return std::nullopt;
    return out;
  }

  bool read_into(std::string_view key, ByteRange range, Bytes& out) const override {
    validate_key(key, describe());
    std::string path = full_path(key);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return false;
      throw io_error("cannot open", key, errno);
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw io_error("cannot stat", key, errno);
    if (S_ISDIR(st.st_mode)) return false;  // a "directory key" holds no value
    auto r = store_detail::resolve_range(range, static_cast<std::uint64_t>(st.st_size), describe(), key);
    out.resize(r.length);  // reuses the buffer's capacity; no zero-fill (Bytes' allocator)
    std::uint64_t done = 0;
    while (done < r.length) {
      ssize_t n = ::pread(fd, out.data() + done, r.length - done, static_cast<off_t>(r.offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw io_error("read failed", key, errno, r.offset + done);
      }
      if (n == 0) {
        throw Error(ErrorCode::kIo, "file shrank while it was read",
                    ErrorContext{describe(), std::string(key), r.offset + done});
      }
      done += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  std::optional<std::vector<Bytes>> get_ranges(std::string_view key,
                                               const std::vector<ByteRange>& ranges) const override {
    // One open for all ranges; neighbouring ranges are read in one pread.
    validate_key(key, describe());
    auto total = size(key);
    if (!total) return std::nullopt;
    struct Item {
      std::size_t index;
      store_detail::ResolvedRange r;
    };
    std::vector<Item> items;
    items.reserve(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i)
      items.push_back({i, store_detail::resolve_range(ranges[i], *total, describe(), key)});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.r.offset < b.r.offset; });
    std::vector<Bytes> out(ranges.size());
    std::size_t i = 0;
    while (i < items.size()) {
      std::size_t j = i + 1;
      std::uint64_t begin = items[i].r.offset, end = begin + items[i].r.length;
      // Coalesce ranges whose gap is small enough that reading it costs less than a syscall.
      constexpr std::uint64_t kMaxGap = 64 * 1024;
      while (j < items.size() && items[j].r.offset <= end + kMaxGap) {
        end = std::max(end, items[j].r.offset + items[j].r.length);
        ++j;
      }
      auto block = get_range(key, ByteRange{static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end - begin)});
      if (!block) return std::nullopt;
      for (std::size_t k = i; k < j; ++k) {
        auto off = items[k].r.offset - begin;
        out[items[k].index].assign(block->begin() + static_cast<std::ptrdiff_t>(off),
                                   block->begin() + static_cast<std::ptrdiff_t>(off + items[k].r.length));
      }
      i = j;
    }
    return out;
  }

  std::optional<std::uint64_t> size(std::string_view key) const override {
    validate_key(key, describe());
    struct stat st {};
    std::string path = full_path(key);
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
      throw io_error("cannot stat", key, errno);
    }
    if (S_ISDIR(st.st_mode)) return std::nullopt;
    return static_cast<std::uint64_t>(st.st_size);
  }

  std::vector<std::string> list_dir(std::string_view prefix) const override {
    std::string path = root_;
    if (!prefix.empty()) {
      std::string p(prefix);
      while (!p.empty() && p.back() == '/') p.pop_back();
      validate_key(p, describe());
      path += "/" + p;
    }
    std::vector<std::string> names;
    DIR* dir = ::opendir(path.c_str());
    if (!dir) return names;
    while (dirent* e = ::readdir(dir)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      names.push_back(std::move(n));
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string full_path(std::string_view key) const { return root_ + "/" + std::string(key); }

  Error io_error(const char* what, std::string_view key, int err, std::optional<std::uint64_t> off = {}) const {
    return Error(ErrorCode::kIo, std::string(what) + ": " + std::strerror(err),
                 ErrorContext{describe(), std::string(key), off});
  }

  std::string root_;
};

}  // namespace

std::shared_ptr<Store> open_file_store(const std::string& root) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    throw Error(ErrorCode::kNotFound, "not a directory", ErrorContext{"file://" + root, {}, std::nullopt});
  }
  return std::make_shared<FileStore>(std::filesystem::absolute(root).lexically_normal().string());
}

}  // namespace cubestream
