// The local read engine under the file store: many reads of open files in flight at once.
//
// A caller (the file store, the device bounce ring) describes what it wants as ReadOps: a
// range of an open file and where the bytes go. The engine splits each op into pieces of
// at most IoSettings::block_bytes, cut at multiples of block_bytes in the file (so every
// piece but a range's first starts block-aligned), and drives every piece through one small
// state machine (Piece, below) that both back ends share:
//
//   probe    (IO_DIRECT=auto) preadv2(RWF_NOWAIT) of the piece's first page: the kernel
//            answers from the page cache or returns EAGAIN/short without touching the disk.
//            Cached: the piece is warm and continues buffered. Not cached: it goes direct.
//   buffered pread(2) on the plain descriptor, repeated until the piece is complete.
//   direct   pread(2) on the O_DIRECT descriptor of the piece's 4096-aligned superset,
//            into an aligned staging buffer (or straight into the destination when the
//            destination, the offset and the spare room after it allow), then the piece is
//            cut out. EINVAL means this file system refuses O_DIRECT: the piece continues
//            buffered and the file is marked so that later pieces do not try again.
//
// The back ends only differ in how they issue the calls: PreadEngine runs pieces on a pool
// of IO_DEPTH threads; UringEngine (uring_engine.cpp, built where liburing was found) keeps
// up to IO_DEPTH of them in flight on a per-thread io_uring.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "store/file/io_settings.hpp"

namespace cubestream::store_detail {

// An open file: a buffered descriptor, an O_DIRECT one where wanted and allowed, its size
// and what to name in errors. Closes both descriptors when destroyed.
struct OpenFile {
  int fd = -1;
  int direct_fd = -1;
  std::uint64_t size = 0;
  std::string store;  // for error messages: "file:///data/era5.zarr"
  std::string key;
  std::string path;   // on the local file system
  // Set when a read on direct_fd failed with EINVAL; later pieces read buffered.
  mutable std::atomic<bool> direct_refused{false};
  OpenFile() = default;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile();
};

// One read: `length` bytes at `offset` of `file` into `dst`. `dst_capacity` (>= length) is
// how many bytes at dst may be written: room past `length` lets an O_DIRECT read of an
// aligned tail land in place instead of through a staging buffer.
struct ReadOp {
  const OpenFile* file = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint8_t* dst = nullptr;
  std::uint64_t dst_capacity = 0;
  // Whether this op may use O_DIRECT (decided by the caller from IoSettings::direct and the
  // op's size; ignored when file->direct_fd < 0).
  enum class Direct : std::uint8_t { kNo, kYes, kIfCold } direct = Direct::kNo;
};

// The per-piece state machine shared by the back ends (see the top of this file).
struct Piece {
  enum class Phase : std::uint8_t { kProbe, kBuffered, kDirect, kDone };
  const OpenFile* file;
  std::uint64_t offset;
  std::uint64_t length;
  std::uint8_t* dst;
  std::uint64_t dst_capacity;
  Phase phase;
  std::uint64_t done = 0;  // bytes of [offset, offset+length) delivered to dst
  // Direct phase: the aligned superset [a0, a0+alen) read into `stage` (sdone bytes so far).
  std::uint8_t* stage = nullptr;
  bool in_place = false;
  std::uint64_t a0 = 0, alen = 0, sdone = 0;
};

// One system call a piece wants next: preadv2(fd, buf, len, offset, rwf).
struct IoCall {
  int fd;
  std::uint8_t* buf;
  std::uint64_t len;
  std::uint64_t offset;
  int rwf;  // 0 or RWF_NOWAIT
};

// A per-slot aligned staging buffer for direct reads, grown on demand.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Scratch(Scratch&& o) noexcept : p_(o.p_), cap_(o.cap_) { o.p_ = nullptr, o.cap_ = 0; }
  ~Scratch();
  std::uint8_t* get(std::uint64_t bytes);

 private:
  std::uint8_t* p_ = nullptr;
  std::uint64_t cap_ = 0;
};

// Process-wide counts of what the engine did (tests and benchmarks check which path ran).
struct IoCounters {
  std::atomic<std::uint64_t> buffered_bytes{0};  // delivered by buffered reads (probes included)
  std::atomic<std::uint64_t> direct_bytes{0};    // delivered by O_DIRECT reads
  std::atomic<std::uint64_t> probe_warm{0};      // IO_DIRECT=auto probes answered by the page cache
  std::atomic<std::uint64_t> probe_cold{0};      // ... and those that went to the disk with O_DIRECT
  std::atomic<std::uint64_t> direct_refused{0};  // O_DIRECT reads refused with EINVAL
};
IoCounters& io_counters();

// The largest single system call the state machine issues (Linux caps one read at
// 0x7ffff000 bytes anyway; pieces are far smaller).
IoCall next_call(Piece& p, Scratch& scratch);
// Applies the result of the call next_call returned (bytes, or -errno). Throws Error(kIo)
// naming the store, the key and the offset on failure, or when the file turned out shorter
// than its size at open (it shrank while being read).
void complete_call(Piece& p, long result);

// Splits ops into pieces of at most block_bytes, cut at multiples of block_bytes.
std::vector<Piece> split_into_pieces(std::span<const ReadOp> ops, std::uint64_t block_bytes);

// Runs one piece to completion with blocking system calls on this thread.
void run_piece_blocking(Piece& p, Scratch& scratch);

class ReadEngine {
 public:
  virtual ~ReadEngine() = default;
  // "pread" or "io_uring".
  virtual const char* name() const = 0;
  // Reads every op; returns when all are complete. On failure, waits until no read is in
  // flight any more (the kernel must not write into buffers the caller frees) and throws
  // the first error.
  virtual void run(std::span<const ReadOp> ops) = 0;
};

// Whether io_uring can be used by this process: probed once (io_uring_setup with a small
// ring, the opcodes the engine needs, and one no-op round trip). `why` says what was found:
// "available", "built without liburing", "io_uring_setup failed: Operation not permitted
// (seccomp or kernel.io_uring_disabled)", ...
struct UringProbe {
  bool available = false;
  std::string why;
};
const UringProbe& probe_io_uring();

// The engine for `s`: shared by every store with the same engine kind and depth (each keeps
// a pool of threads or per-thread rings). `why` receives a line saying which was chosen and
// why (for `cubestream info`). `probe` replaces probe_io_uring()'s answer (tests use it to
// see the fallback taken where io_uring is refused).
std::shared_ptr<ReadEngine> engine_for(const IoSettings& s, std::string* why = nullptr,
                                       const UringProbe* probe = nullptr);

// The pread back end (also the fallback for io_uring).
std::shared_ptr<ReadEngine> make_pread_engine(int depth, std::uint64_t block_bytes);
// The io_uring back end, or nullptr where it was not built or is not available.
std::shared_ptr<ReadEngine> make_uring_engine(int depth, std::uint64_t block_bytes);

}  // namespace cubestream::store_detail
