// Device reads: cuFile loaded at run time, or the pinned bounce ring (see device_read.hpp).
#include "store/gds/device_read.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <vector>

#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "store/file/file_store.hpp"
#include "store/range_math.hpp"

#if defined(CUBESTREAM_WITH_CUDA) && __has_include(<cufile.h>)
#include <cufile.h>
#define CS_HAVE_CUFILE_HEADER 1
#endif

namespace cubestream::gds {

namespace {

// The part of cuFile's C ABI used here, declared locally: cufile.h is not on every machine
// that builds cubestream (the development machine's CUDA lacks it), and the library is
// loaded with dlopen anyway. Where the header exists the layouts are checked against it.
struct CuFileError {
  int err;     // CUfileOpError: 0 is CU_FILE_SUCCESS
  int cu_err;  // CUresult
};
struct CuFileDescr {
  int type;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};
struct CuFileDrvProps {
  struct {
    unsigned int major_version;
    unsigned int minor_version;
    std::size_t poll_thresh_size;
    std::size_t max_direct_io_size;
    unsigned int dstatusflags;
    unsigned int dcontrolflags;
  } nvfs;
  unsigned int fflags;
  unsigned int max_device_cache_size;
  unsigned int per_buffer_cache_size;
  unsigned int max_device_pinned_mem_size;
  unsigned int max_batch_io_size;
  unsigned int max_batch_io_timeout_msecs;
};
constexpr int kOpaqueFd = 1;
constexpr unsigned kNvmeP2pSupported = 11;  // bit of nvfs.dstatusflags: PCIe P2PDMA without nvidia-fs

#ifdef CS_HAVE_CUFILE_HEADER
static_assert(sizeof(CuFileError) == sizeof(CUfileError_t));
static_assert(sizeof(CuFileDescr) == sizeof(CUfileDescr_t));
static_assert(offsetof(CuFileDescr, fs_ops) == offsetof(CUfileDescr_t, fs_ops));
static_assert(offsetof(CuFileDrvProps, nvfs.dstatusflags) == offsetof(CUfileDrvProps_t, nvfs.dstatusflags));
static_assert(static_cast<int>(CU_FILE_HANDLE_TYPE_OPAQUE_FD) == kOpaqueFd);
#endif

struct CuFile {
  bool loaded = false;       // dlopen and every symbol found
  bool driver_open = false;  // cuFileDriverOpen succeeded
  bool compat = true;        // no DMA path: cuFile would only do POSIX reads + copies
  std::string found;         // what was found, for the reason line
  CuFileError (*handle_register)(void** fh, CuFileDescr* descr) = nullptr;
  void (*handle_deregister)(void* fh) = nullptr;
  ssize_t (*read)(void* fh, void* dev, std::size_t size, off_t file_offset, off_t dev_offset) = nullptr;
};

// Loads libcufile (once). The driver is opened only where a GPU is visible: cuFileDriverOpen
// initialises CUDA.
const CuFile& cufile() {
  static const CuFile api = [] {
    CuFile c;
    void* lib = ::dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = ::dlopen("libcufile.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      c.found = "libcufile not found";
      return c;
    }
    auto sym = [&](const char* name) { return ::dlsym(lib, name); };
    auto driver_open = reinterpret_cast<CuFileError (*)()>(sym("cuFileDriverOpen"));
    auto props = reinterpret_cast<CuFileError (*)(CuFileDrvProps*)>(sym("cuFileDriverGetProperties"));
    c.handle_register = reinterpret_cast<decltype(c.handle_register)>(sym("cuFileHandleRegister"));
    c.handle_deregister = reinterpret_cast<decltype(c.handle_deregister)>(sym("cuFileHandleDeregister"));
    c.read = reinterpret_cast<decltype(c.read)>(sym("cuFileRead"));
    if (!driver_open || !props || !c.handle_register || !c.handle_deregister || !c.read) {
      c.found = "libcufile lacks the cuFile driver/handle/read entry points";
      return c;  // the library stays loaded: unloading libraries that start threads is unsafe
    }
    c.loaded = true;
    if (cuda::device_count() == 0) {
      c.found = "cuFile found, no GPU visible";
      return c;
    }
    CuFileError e = driver_open();
    if (e.err != 0) {
      c.found = "cuFile found, cuFileDriverOpen failed (cuFile error " + std::to_string(e.err) +
                (e.cu_err ? ", CUDA driver error " + std::to_string(e.cu_err) : std::string()) + ")";
      return c;
    }
    c.driver_open = true;
    // Room to spare in case a newer library fills a longer structure.
    union {
      CuFileDrvProps p;
      unsigned char room[1024];
    } pr{};
    bool have_props = props(&pr.p).err == 0;
    // nvidia-fs publishes /proc/driver/nvidia-fs/version when its module is loaded; without it
    // (and without the P2PDMA path of recent drivers) no DMA into GPU memory is possible and
    // cuFile falls back to compatibility mode.
    bool nvfs = ::access("/proc/driver/nvidia-fs/version", R_OK) == 0;
    bool p2p = have_props && (pr.p.nvfs.dstatusflags >> kNvmeP2pSupported & 1u);
    c.compat = !(nvfs || p2p);
    if (!c.compat) {
      c.found = std::string("cuFile found, ") + (nvfs ? "nvidia-fs" : "PCIe P2PDMA") + " loaded";
      if (have_props)
        c.found += " (nvfs " + std::to_string(pr.p.nvfs.major_version) + "." + std::to_string(pr.p.nvfs.minor_version) + ")";
    } else {
      c.found = "cuFile found, compatibility mode (no nvidia-fs)";
    }
    return c;
  }();
  return api;
}

}  // namespace

DevicePathChoice choose_device_path(store_detail::GdsMode mode) {
  using store_detail::GdsMode;
  if (!cuda::device_count()) {
#ifdef CUBESTREAM_WITH_CUDA
    return {DevicePath::kUnavailable, "no GPU visible: device reads unavailable (GDS: " + cufile().found + ")"};
#else
    return {DevicePath::kUnavailable, "built without CUDA: device reads unavailable"};
#endif
  }
  if (mode == GdsMode::kOff) return {DevicePath::kBounceRing, "GDS off (CUBESTREAM_GDS=off): pinned bounce ring"};
  const CuFile& c = cufile();
  if (!c.driver_open) return {DevicePath::kBounceRing, "GDS: " + c.found + ": pinned bounce ring"};
  if (!c.compat) return {DevicePath::kCuFile, "GDS: " + c.found + ": cuFile reads into device memory"};
  if (mode == GdsMode::kOn)
    return {DevicePath::kCuFile, "GDS: " + c.found + ": cuFile anyway (CUBESTREAM_GDS=on)"};
  return {DevicePath::kBounceRing, "GDS: " + c.found + ": pinned bounce ring"};
}

std::string device_path_summary() {
  return choose_device_path(store_detail::IoSettings::from_env().gds).why;
}

struct DeviceReader::Impl {
  std::shared_ptr<Store> store;
  const store_detail::LocalFileStore* local = nullptr;
  int device = 0;
  store_detail::IoSettings settings;
  DevicePathChoice choice;
  std::mutex mu;

  // The ring: pinned, 4096-aligned (cudaHostAlloc returns page-aligned memory), each with
  // kDirectAlign bytes of room past slot_bytes so that an O_DIRECT read of an unaligned tail
  // can land in place. Made on first use.
  struct Slot {
    std::uint8_t* buf = nullptr;
    void* done = nullptr;  // event recorded after the copy out of this slot
    bool pending = false;
  };
  std::vector<Slot> slots;
  std::size_t next_slot = 0;
  void* own_stream = nullptr;
  // Reads from stores other than local files: the bytes, fetched whole, then staged.
  Bytes fetched;

  ~Impl() {
    for (auto& s : slots) {
      if (s.pending) {
        try {
          cuda::event_synchronize(s.done);
        } catch (...) {
        }
      }
      cuda::destroy_event(s.done, device);
      cuda::free_pinned(s.buf);
    }
    cuda::destroy_stream(own_stream, device);
  }

  void make_ring() {
    if (!slots.empty()) return;
    own_stream = cuda::create_stream(device);
    slots.resize(static_cast<std::size_t>(settings.gds_slots));
    for (auto& s : slots) {
      s.buf = static_cast<std::uint8_t*>(cuda::alloc_pinned(settings.gds_slot_bytes + store_detail::kDirectAlign));
      s.done = cuda::create_event(device);
    }
  }

  Slot& take_slot() {
    Slot& s = slots[next_slot++ % slots.size()];
    if (s.pending) cuda::event_synchronize(s.done);  // its last copy must have run
    s.pending = false;
    return s;
  }

  // Ring path. `f` is the open file (local stores) or null with the bytes in `fetched`.
  void ring_read(const store_detail::OpenFile* f, std::uint64_t off, std::uint64_t len, std::uint8_t* dst,
                 void* stream) {
    make_ring();
    void* st = stream ? stream : own_stream;
    const std::uint64_t slot_bytes = settings.gds_slot_bytes;
    // Half the ring is read while the other half's copies run (at least one slot per wave).
    const std::size_t wave = std::max<std::size_t>(1, slots.size() / 2);
    const std::uint64_t end = off + len;
    std::uint64_t pos = off;
    Slot* last = nullptr;
    std::vector<store_detail::ReadOp> ops;
    std::vector<std::pair<Slot*, std::uint64_t>> filled;  // slot, chunk start
    while (pos < end) {
      ops.clear();
      filled.clear();
      for (std::size_t w = 0; w < wave && pos < end; ++w) {
        // Chunks are cut at multiples of slot_bytes in the value, so every chunk but the
        // first starts aligned (in-place O_DIRECT reads).
        std::uint64_t cut = std::min(end, (pos / slot_bytes + 1) * slot_bytes);
        Slot& s = take_slot();
        if (f) {
          ops.push_back({f, pos, cut - pos, s.buf, slot_bytes + store_detail::kDirectAlign, local->direct_for(cut - pos)});
        } else {
          std::memcpy(s.buf, fetched.data() + (pos - off), cut - pos);
        }
        filled.emplace_back(&s, pos);
        pos = cut;
      }
      if (f) local->engine().run(ops);
      for (std::size_t k = 0; k < filled.size(); ++k) {
        auto [s, c0] = filled[k];
        std::uint64_t c1 = k + 1 < filled.size() ? filled[k + 1].second : pos;
        cuda::copy_to_device_async(dst + (c0 - off), s->buf, c1 - c0, st, device);
        cuda::record_event(s->done, st, device);
        s->pending = true;
        last = s;
      }
    }
    if (f) local->note_direct_refused(*f);
    if (!stream && last) cuda::event_synchronize(last->done);
  }

  // Reads with cuFile; false (after nothing was written) when cuFile refuses the file, which
  // then switches this reader to the ring for good and says why.
  bool cufile_read(const store_detail::OpenFile& f, std::uint64_t off, std::uint64_t len, void* dst, void* stream) {
    const CuFile& c = cufile();
    if (stream) {
      // cuFileRead is synchronous: work already queued on `stream` may still use the
      // destination, so wait for it first.
      make_ring();
      cuda::record_event(slots[0].done, stream, device);
      cuda::event_synchronize(slots[0].done);
    }
    cuda::set_device(device);
    // A descriptor of cuFile's own with no flags but O_DIRECT (DMA needs it; compatibility
    // mode also takes a buffered one): registration refuses some open flags.
    int fd = ::open(f.path.c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) fd = ::open(f.path.c_str(), O_RDONLY);
    if (fd < 0) throw Error(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno), ErrorContext{f.store, f.key, {}});
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    CuFileDescr d{};
    d.type = kOpaqueFd;
    d.handle.fd = fd;
    void* fh = nullptr;
    CuFileError e = c.handle_register(&fh, &d);
    if (e.err != 0) {
      choice = {DevicePath::kBounceRing, choice.why + "; cuFileHandleRegister failed (cuFile error " +
                                             std::to_string(e.err) + "): pinned bounce ring"};
      return false;
    }
    struct Dereg {
      const CuFile& c;
      void* fh;
      ~Dereg() { c.handle_deregister(fh); }
    } dereg{c, fh};
    std::uint64_t done = 0;
    while (done < len) {
      ssize_t n = c.read(fh, dst, len - done, static_cast<off_t>(off + done), static_cast<off_t>(done));
      if (n < 0) {
        // -1 with errno for POSIX failures, else a negated CUfileOpError.
        std::string why = n == -1 ? std::strerror(errno) : "cuFile error " + std::to_string(-n);
        throw Error(ErrorCode::kIo, "cuFileRead failed: " + why, ErrorContext{f.store, f.key, off + done});
      }
      if (n == 0)
        throw Error(ErrorCode::kIo, "file ended before its size at open (did it shrink?)",
                    ErrorContext{f.store, f.key, off + done});
      done += static_cast<std::uint64_t>(n);
    }
    return true;
  }
};

DeviceReader::DeviceReader(std::shared_ptr<Store> store, int device)
    : DeviceReader(std::move(store), device, store_detail::IoSettings::from_env()) {}

DeviceReader::DeviceReader(std::shared_ptr<Store> store, int device, const store_detail::IoSettings& settings)
    : impl_(std::make_unique<Impl>()) {
  impl_->choice = choose_device_path(settings.gds);
  if (impl_->choice.path == DevicePath::kUnavailable) throw Error(ErrorCode::kUnsupported, impl_->choice.why);
  if (device < 0 || device >= cuda::device_count())
    throw Error(ErrorCode::kInvalidArgument, "no GPU " + std::to_string(device) + " (" +
                                                 std::to_string(cuda::device_count()) + " visible)");
  impl_->store = std::move(store);
  impl_->local = dynamic_cast<const store_detail::LocalFileStore*>(impl_->store.get());
  impl_->device = device;
  impl_->settings = settings;
  if (!impl_->local && impl_->choice.path == DevicePath::kCuFile) {
    impl_->choice = {DevicePath::kBounceRing, "not a local file store: pinned bounce ring"};
  }
}

DeviceReader::~DeviceReader() = default;

DevicePath DeviceReader::path() const { return impl_->choice.path; }
const std::string& DeviceReader::path_description() const { return impl_->choice.why; }

std::optional<std::uint64_t> DeviceReader::read_to_device(std::string_view key, ByteRange range, void* device_ptr,
                                                          void* stream) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto* dst = static_cast<std::uint8_t*>(device_ptr);
  if (!m.local) {
    if (!m.store->read_into(key, range, m.fetched)) return std::nullopt;
    if (!m.fetched.empty()) m.ring_read(nullptr, 0, m.fetched.size(), dst, stream);
    return m.fetched.size();
  }
  const bool cufile = m.choice.path == DevicePath::kCuFile;
  auto f = m.local->open_file(key, false);
  if (!f) return std::nullopt;
  auto r = store_detail::resolve_range(range, f->size, m.store->describe(), key);
  if (r.length == 0) return 0;
  // The ring asks the store's O_DIRECT setting (cuFile opens a descriptor of its own).
  if (m.local->direct_for(r.length) != store_detail::ReadOp::Direct::kNo) m.local->open_direct(*f);
  if (!cufile || !m.cufile_read(*f, r.offset, r.length, dst, stream)) m.ring_read(f.get(), r.offset, r.length, dst, stream);
  return r.length;
}

}  // namespace cubestream::gds
