// A Store over a directory of the local file system.
//
// Each read opens the file, hands its ranges to the read engine (store/file/read_engine.hpp:
// a pread thread pool or io_uring, many pieces in flight, optional O_DIRECT) and closes it:
// no descriptor is shared between calls, so any number of reads can run at once. The
// settings (engine, depth, O_DIRECT, coalescing) are read from the environment when the
// store is opened; store/file/io_settings.hpp lists them.
#include "store/file/file_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "store/file/device_tuning.hpp"
#include "store/range_math.hpp"

namespace cubestream {

namespace {

class FileStore final : public store_detail::LocalFileStore {
 public:
  FileStore(std::string root, const store_detail::IoSettings& settings, const store_detail::UringProbe* probe)
      : root_(std::move(root)), settings_(settings) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    std::string why;
    engine_ = store_detail::engine_for(settings_, &why, probe);
    io_line_ = why + "; O_DIRECT " + store_detail::to_string(settings_.direct);
    if (!settings_.tuning.empty()) io_line_ += "; " + settings_.tuning;
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
    auto f = open_file(key, false);
    if (!f) return false;
    auto r = store_detail::resolve_range(range, f->size, describe(), key);
    out.resize(r.length);  // reuses the buffer's capacity; no zero-fill (Bytes' allocator)
    store_detail::ReadOp op{f.get(), r.offset, r.length, out.data(), r.length, direct_for(r.length)};
    read_ops(*f, {&op, 1});
    return true;
  }

  std::optional<std::vector<Bytes>> get_ranges(std::string_view key,
                                               const std::vector<ByteRange>& ranges) const override {
    // One open for all ranges; neighbouring small ranges are read as one, and every read is
    // in flight at once.
    validate_key(key, describe());
    auto f = open_file(key, false);
    if (!f) return std::nullopt;
    struct Item {
      std::size_t index;
      store_detail::ResolvedRange r;
    };
    std::vector<Item> items;
    items.reserve(ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i)
      items.push_back({i, store_detail::resolve_range(ranges[i], f->size, describe(), key)});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.r.offset < b.r.offset; });
    std::vector<Bytes> out(ranges.size());
    struct Group {
      std::size_t first, last;  // items[first, last)
      std::uint64_t begin, end;
      Bytes block;              // used when the group holds more than one range
    };
    std::vector<Group> groups;
    // Coalesce small ranges whose gap is small enough that reading it costs less than another
    // request. A range of at least a quarter block is read on its own, straight into its
    // output: the engine splits it into pieces in flight anyway, and reading it into a shared
    // block would cost a copy of every byte (and the faults of a second buffer).
    const std::int64_t gap = settings_.coalesce_bytes;
    const std::uint64_t alone = std::max<std::uint64_t>(settings_.block_bytes / 4, 1);
    for (std::size_t i = 0; i < items.size();) {
      std::size_t j = i + 1;
      std::uint64_t begin = items[i].r.offset, end = begin + items[i].r.length;
      if (items[i].r.length < alone) {
        while (gap >= 0 && j < items.size() && items[j].r.length < alone &&
               items[j].r.offset <= end + static_cast<std::uint64_t>(gap)) {
          end = std::max(end, items[j].r.offset + items[j].r.length);
          ++j;
        }
      }
      groups.push_back({i, j, begin, end, {}});
      i = j;
    }
    std::vector<store_detail::ReadOp> ops;
    ops.reserve(groups.size());
    for (auto& g : groups) {
      std::uint8_t* dst;
      if (g.last - g.first == 1) {
        Bytes& b = out[items[g.first].index];
        b.resize(g.end - g.begin);
        dst = b.data();
      } else {
        g.block.resize(g.end - g.begin);
        dst = g.block.data();
      }
      ops.push_back({f.get(), g.begin, g.end - g.begin, dst, g.end - g.begin, direct_for(g.end - g.begin)});
    }
    read_ops(*f, ops);
    for (auto& g : groups) {
      if (g.last - g.first == 1) continue;
      for (std::size_t k = g.first; k < g.last; ++k) {
        auto off = items[k].r.offset - g.begin;
        out[items[k].index].assign(g.block.begin() + static_cast<std::ptrdiff_t>(off),
                                   g.block.begin() + static_cast<std::ptrdiff_t>(off + items[k].r.length));
      }
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

  // POSIX_FADV_WILLNEED asks the kernel to start reading the range into the page cache and
  // returns without waiting for it (it can wait a little to queue the reads when the device's
  // request queue is full: give hints from a thread that may wait). A later buffered read of
  // those pages is then served from memory, or waits only for the read already in flight.
  // Two things bound it:
  //   - Linux reads at most max(the device's max_sectors_kb, the file's readahead window) per
  //     call (force_page_cache_ra in mm/readahead.c clamps the count), so one call for a
  //     whole 2 MB chunk would read only its first 128 KiB on many disks. The range is hinted
  //     in pieces of max_sectors_kb (the largest request the block layer sends; 128 KiB where
  //     sysfs does not say), each of which the kernel reads whole.
  //   - When reads bypass the page cache (CUBESTREAM_IO_DIRECT=1, and auto, whose cold reads
  //     use O_DIRECT), pages read ahead would never be used, or in auto mode, while still in
  //     flight, would make the read go O_DIRECT and fetch the bytes a second time: no hints
  //     then, unless the file system refused O_DIRECT and every read is buffered.
  // Errors of any kind (no such key, a key escaping the root, a failing disk) end the hint
  // quietly: the read that follows reports them.
  void will_need(std::string_view key, ByteRange range) const noexcept override {
    if (settings_.direct != store_detail::DirectMode::kOff && !direct_refused_.load(std::memory_order_relaxed)) return;
    try {
      validate_key(key, describe());
    } catch (...) {
      return;
    }
    std::string path;
    try {
      path = full_path(key);
    } catch (...) {
      return;
    }
    // O_NONBLOCK: a key that is a FIFO must not block the hint in open(); it changes nothing
    // for regular files.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      const auto size = static_cast<std::uint64_t>(st.st_size);
      std::uint64_t begin = 0, end = size;
      if (range.offset < 0) {
        const auto n = static_cast<std::uint64_t>(-range.offset);
        begin = n < size ? size - n : 0;
      } else {
        begin = std::min(static_cast<std::uint64_t>(range.offset), size);
        if (range.length >= 0) end = std::min(size, begin + static_cast<std::uint64_t>(range.length));
      }
      const std::uint64_t piece = hint_piece_bytes();
      for (std::uint64_t at = begin; at < end; at += piece) {
        const std::uint64_t len = std::min(piece, end - at);
        if (::posix_fadvise(fd, static_cast<off_t>(at), static_cast<off_t>(len), POSIX_FADV_WILLNEED) != 0) break;
      }
    }
    ::close(fd);
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

  std::unique_ptr<store_detail::OpenFile> open_file(std::string_view key, bool direct) const override {
    validate_key(key, describe());
    std::string path = full_path(key);
    auto f = std::make_unique<store_detail::OpenFile>();
    f->store = describe();
    f->key = std::string(key);
    f->path = path;
    f->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return nullptr;
      throw io_error("cannot open", key, errno);
    }
    struct stat st {};
    if (::fstat(f->fd, &st) != 0) throw io_error("cannot stat", key, errno);
    if (S_ISDIR(st.st_mode)) return nullptr;  // a "directory key" holds no value
    f->size = static_cast<std::uint64_t>(st.st_size);
    if (direct) open_direct(*f);
    return f;
  }

  // EINVAL is the kernel's answer where the file system does not do direct I/O; the store
  // remembers it and reads buffered from then on.
  void open_direct(store_detail::OpenFile& f) const override {
    if (f.direct_fd >= 0 || direct_refused_.load(std::memory_order_relaxed)) return;
    f.direct_fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (f.direct_fd < 0 && errno == EINVAL) direct_refused_.store(true, std::memory_order_relaxed);
  }

  store_detail::ReadOp::Direct direct_for(std::uint64_t length) const override {
    using D = store_detail::ReadOp::Direct;
    switch (settings_.direct) {
      case store_detail::DirectMode::kOff: return D::kNo;
      case store_detail::DirectMode::kOn: return D::kYes;
      case store_detail::DirectMode::kAuto: return length >= settings_.direct_min_bytes ? D::kIfCold : D::kNo;
    }
    return D::kNo;
  }

  void note_direct_refused(const store_detail::OpenFile& f) const override {
    if (f.direct_refused.load(std::memory_order_relaxed)) direct_refused_.store(true, std::memory_order_relaxed);
  }

  store_detail::ReadEngine& engine() const override { return *engine_; }
  const store_detail::IoSettings& io_settings() const override { return settings_; }
  std::string io_description() const override {
    return io_line_ + (direct_refused_.load() ? " (refused by this file system: reading buffered)" : "");
  }


  // ---- writing -----------------------------------------------------------------------------
  std::unique_ptr<ValueWriter> open_writer(std::string_view key) override;

  void erase(std::string_view key) override {
    validate_key(key, describe());
    if (::unlink(full_path(key).c_str()) != 0 && errno != ENOENT && errno != ENOTDIR) throw io_error("cannot remove", key, errno);
  }

  void erase_prefix(std::string_view prefix) override {
    std::error_code ec;
    if (prefix.empty()) {
      // Everything inside the root, not the root itself (it may be a mount point).
      for (const auto& e : std::filesystem::directory_iterator(root_, ec)) {
        std::filesystem::remove_all(e.path(), ec);
        if (ec) throw io_error("cannot remove", e.path().filename().string(), ec.value());
      }
      if (ec) throw io_error("cannot list", "", ec.value());
      return;
    }
    validate_key(prefix, describe());
    std::filesystem::remove_all(full_path(prefix), ec);
    if (ec) throw io_error("cannot remove", prefix, ec.value());
  }

  std::size_t remove_temporaries() override {
    std::size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root_, ec); !ec && it != std::filesystem::recursive_directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() > 1 && name[0] == '.' && name.find(kTempMarker) != std::string::npos && it->is_regular_file()) {
        std::error_code rm;
        if (std::filesystem::remove(it->path(), rm)) ++n;
      }
    }
    return n;
  }

  // Temporaries are "<dir>/.<name>" + kTempMarker + "<pid>-<counter>": hidden, beside the final
  // file so that rename(2) stays within one file system and is atomic (POSIX rename).
  static constexpr const char* kTempMarker = ".tmp-";

  std::string full_path(std::string_view key) const { return root_ + "/" + std::string(key); }


  // The piece will_need hints per posix_fadvise call: the store's device's max_sectors_kb
  // (asked once, on the first hint), else 128 KiB (the kernel's default readahead window).
  std::uint64_t hint_piece_bytes() const noexcept {
    std::call_once(hint_piece_once_, [this] {
      std::uint64_t kb = 0;
      try {
        kb = store_detail::block_device_facts_for_path(root_).max_sectors_kb;
      } catch (...) {
      }
      hint_piece_ = (kb >= 4 ? kb : 128) << 10;
    });
    return hint_piece_;
  }

  void read_ops(store_detail::OpenFile& f, std::span<const store_detail::ReadOp> ops) const {
    bool direct = std::any_of(ops.begin(), ops.end(),
                              [](const auto& op) { return op.direct != store_detail::ReadOp::Direct::kNo; });
    if (direct) open_direct(f);
    engine_->run(ops);
    note_direct_refused(f);
  }

  Error io_error(const char* what, std::string_view key, int err, std::optional<std::uint64_t> off = {}) const {
    std::string msg = std::string(what) + ": " + std::strerror(err);
    if (err == ENOSPC || err == EDQUOT) msg += " (the target is full: free space, then run again with --resume)";
    if (err == EACCES || err == EPERM || err == EROFS) msg += " (no permission to write there)";
    return Error(ErrorCode::kIo, msg, ErrorContext{describe(), std::string(key), off});
  }

  void make_parents(std::string_view key) const {
    const auto slash = key.rfind('/');
    if (slash == std::string_view::npos) return;
    std::error_code ec;
    std::filesystem::create_directories(full_path(key.substr(0, slash)), ec);
    if (ec) throw io_error("cannot create the directory for", key, ec.value());
  }

 private:
  std::string root_;
  store_detail::IoSettings settings_;
  std::shared_ptr<store_detail::ReadEngine> engine_;
  std::string io_line_;
  mutable std::atomic<bool> direct_refused_{false};
  mutable std::once_flag hint_piece_once_;
  mutable std::uint64_t hint_piece_ = 0;
};

// Writes into the temporary file; commit() renames it over the final name.
class FileValueWriter final : public WritableStore::ValueWriter {
 public:
  FileValueWriter(const FileStore* store, std::string key) : store_(store), key_(std::move(key)) {
    static std::atomic<std::uint64_t> counter{0};
    store_->make_parents(key_);
    final_ = store_->full_path(key_);
    const auto slash = final_.rfind('/');
    tmp_ = final_.substr(0, slash + 1) + "." + final_.substr(slash + 1) + FileStore::kTempMarker +
           std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) throw store_->io_error("cannot create", key_, errno);
  }
  ~FileValueWriter() override {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  void append(ByteView bytes) override {
    write_all(size_, bytes);
    size_ += bytes.size();
  }
  void write_at(std::uint64_t offset, ByteView bytes) override {
    if (offset + bytes.size() > size_) throw Error(ErrorCode::kInvalidArgument, "write_at past the end of the value");
    write_all(offset, bytes);
  }
  std::uint64_t size() const override { return size_; }
  void commit() override {
    if (::close(fd_) != 0) {
      fd_ = -1;
      throw store_->io_error("cannot write", key_, errno);
    }
    fd_ = -1;
    if (::rename(tmp_.c_str(), final_.c_str()) != 0) throw store_->io_error("cannot rename into place", key_, errno);
    committed_ = true;
  }

 private:
  void write_all(std::uint64_t offset, ByteView bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw store_->io_error("cannot write", key_, errno, offset + done);
      }
      done += static_cast<std::size_t>(n);
    }
  }
  const FileStore* store_;
  std::string key_, final_, tmp_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  bool committed_ = false;
};

std::unique_ptr<WritableStore::ValueWriter> FileStore::open_writer(std::string_view key) {
  validate_key(key, describe());
  return std::make_unique<FileValueWriter>(this, std::string(key));
}

}  // namespace

std::shared_ptr<WritableStore> open_writable_file_store(const std::string& root) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec || !std::filesystem::is_directory(root)) {
    throw Error(ErrorCode::kIo, "cannot create the directory: " + ec.message(), ErrorContext{"file://" + root, {}, std::nullopt});
  }
  return std::make_shared<FileStore>(std::filesystem::absolute(root).lexically_normal().string(),
                                     store_detail::IoSettings::for_path(root), nullptr);
}

std::shared_ptr<store_detail::LocalFileStore> store_detail::open_local_file_store(const std::string& root,
                                                                                 const IoSettings& settings,
                                                                                 const UringProbe* probe) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    throw Error(ErrorCode::kNotFound, "not a directory", ErrorContext{"file://" + root, {}, std::nullopt});
  }
  return std::make_shared<FileStore>(std::filesystem::absolute(root).lexically_normal().string(), settings, probe);
}

std::shared_ptr<Store> open_file_store(const std::string& root) {
  // The store's directory decides the block device whose facts choose O_DIRECT depth and
  // piece size (a store spanning several file systems through links is read with the
  // choice made for its root).
  return store_detail::open_local_file_store(root, store_detail::IoSettings::for_path(root));
}

}  // namespace cubestream
