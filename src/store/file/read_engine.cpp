// The piece state machine and the pread back end (see read_engine.hpp).
#include "store/file/read_engine.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "core/thread_pool.hpp"
#include "cubestream/error.hpp"
#include "store/file/device_tuning.hpp"

namespace cubestream::store_detail {

namespace {

constexpr std::uint64_t kA = kDirectAlign;
std::uint64_t align_down(std::uint64_t x) { return x / kA * kA; }
std::uint64_t align_up(std::uint64_t x) { return (x + kA - 1) / kA * kA; }

[[noreturn]] void fail(const Piece& p, const std::string& what, std::uint64_t at) {
  throw Error(ErrorCode::kIo, what, ErrorContext{p.file->store, p.file->key, at});
}

void enter_direct(Piece& p, Scratch& scratch) {
  const std::uint64_t pos = p.offset + p.done, end = p.offset + p.length;
  p.a0 = align_down(pos);
  p.alen = align_up(end) - p.a0;
  p.sdone = 0;
  std::uint8_t* at = p.dst + p.done;
  p.in_place = p.a0 == pos && reinterpret_cast<std::uintptr_t>(at) % kA == 0 && p.dst_capacity - p.done >= p.alen;
  p.stage = p.in_place ? at : scratch.get(p.alen);
  p.phase = Piece::Phase::kDirect;
}

void enter_buffered(Piece& p) { p.phase = p.done == p.length ? Piece::Phase::kDone : Piece::Phase::kBuffered; }

}  // namespace

IoCounters& io_counters() {
  static IoCounters c;
  return c;
}

OpenFile::~OpenFile() {
  if (fd >= 0) ::close(fd);
  if (direct_fd >= 0) ::close(direct_fd);
}

Scratch::~Scratch() { std::free(p_); }

std::uint8_t* Scratch::get(std::uint64_t bytes) {
  if (bytes > cap_) {
    std::free(p_);
    p_ = nullptr;
    cap_ = 0;
    void* q = nullptr;
    if (::posix_memalign(&q, kA, align_up(bytes)) != 0)
      throw Error(ErrorCode::kResourceExhausted, "cannot allocate " + std::to_string(bytes) + " bytes for O_DIRECT staging");
    p_ = static_cast<std::uint8_t*>(q);
    cap_ = align_up(bytes);
  }
  return p_;
}

IoCall next_call(Piece& p, Scratch& scratch) {
  switch (p.phase) {
    case Piece::Phase::kProbe: {
      // Up to the end of the first page: what a cached page can answer without the disk,
      // and afterwards the rest of the piece starts page-aligned.
      std::uint64_t pos = p.offset + p.done;
      std::uint64_t n = std::min(p.length - p.done, align_down(pos) + kA - pos);
      return {p.file->fd, p.dst + p.done, n, pos, RWF_NOWAIT};
    }
    case Piece::Phase::kBuffered:
      return {p.file->fd, p.dst + p.done, p.length - p.done, p.offset + p.done, 0};
    case Piece::Phase::kDirect:
      if (p.file->direct_refused.load(std::memory_order_relaxed)) {
        // Another piece of this file learned that O_DIRECT is refused: do not try again.
        p.phase = Piece::Phase::kBuffered;
        return next_call(p, scratch);
      }
      if (!p.stage) enter_direct(p, scratch);
      return {p.file->direct_fd, p.stage + p.sdone, p.alen - p.sdone, p.a0 + p.sdone, 0};
    case Piece::Phase::kDone:
      break;
  }
  throw Error(ErrorCode::kInternal, "read engine asked for a call of a finished piece");
}

void complete_call(Piece& p, long r) {
  const std::uint64_t end = p.offset + p.length;
  if (r == -EINTR) return;  // interrupted before any byte moved: issue the same call again
  switch (p.phase) {
    case Piece::Phase::kProbe: {
      std::uint64_t asked = std::min(p.length - p.done, align_down(p.offset + p.done) + kA - (p.offset + p.done));
      if (r > 0) {
        p.done += static_cast<std::uint64_t>(r);
        io_counters().buffered_bytes.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
      }
      if (r == 0) fail(p, "file ended before its size at open (did it shrink?)", p.offset + p.done);
      if (r > 0 && static_cast<std::uint64_t>(r) == asked) {
        io_counters().probe_warm.fetch_add(1, std::memory_order_relaxed);
        enter_buffered(p);  // the first page was cached: warm, stay in the page cache
      } else if (r > 0 || r == -EAGAIN) {
        io_counters().probe_cold.fetch_add(1, std::memory_order_relaxed);
        // EAGAIN (or a short read): the page is not cached, reading it would wait for the disk.
        p.phase = p.done == p.length ? Piece::Phase::kDone : Piece::Phase::kDirect;
        p.stage = nullptr;
      } else if (r == -EOPNOTSUPP || r == -EINVAL) {
        enter_buffered(p);  // no RWF_NOWAIT here (old kernel or file system): cannot tell, read buffered
      } else {
        fail(p, std::string("read failed: ") + std::strerror(static_cast<int>(-r)), p.offset + p.done);
      }
      return;
    }
    case Piece::Phase::kBuffered:
      if (r == -EAGAIN) return;
      if (r < 0) fail(p, std::string("read failed: ") + std::strerror(static_cast<int>(-r)), p.offset + p.done);
      if (r == 0) fail(p, "file ended before its size at open (did it shrink?)", p.offset + p.done);
      p.done += static_cast<std::uint64_t>(r);
      io_counters().buffered_bytes.fetch_add(static_cast<std::uint64_t>(r), std::memory_order_relaxed);
      if (p.done >= p.length) p.phase = Piece::Phase::kDone;
      return;
    case Piece::Phase::kDirect: {
      if (r == -EAGAIN) return;
      if (r == -EINVAL) {
        // The file system (or the device's alignment) refuses this O_DIRECT read.
        p.file->direct_refused.store(true, std::memory_order_relaxed);
        io_counters().direct_refused.fetch_add(1, std::memory_order_relaxed);
        p.stage = nullptr;
        enter_buffered(p);
        return;
      }
      if (r < 0) fail(p, std::string("O_DIRECT read failed: ") + std::strerror(static_cast<int>(-r)), p.a0 + p.sdone);
      p.sdone += static_cast<std::uint64_t>(r);
      if (p.a0 + p.sdone >= end) {
        const std::uint64_t pos = p.offset + p.done;
        if (!p.in_place) std::memcpy(p.dst + p.done, p.stage + (pos - p.a0), end - pos);
        io_counters().direct_bytes.fetch_add(end - pos, std::memory_order_relaxed);
        p.done = p.length;
        p.stage = nullptr;
        p.phase = Piece::Phase::kDone;
        return;
      }
      // Short of the end: fine if it stopped at an aligned point (continue there); an
      // unaligned stop or no progress is end-of-file before the size seen at open.
      if (r == 0 || p.sdone % kA != 0) fail(p, "file ended before its size at open (did it shrink?)", p.a0 + p.sdone);
      return;
    }
    case Piece::Phase::kDone:
      break;
  }
  throw Error(ErrorCode::kInternal, "read engine completed a finished piece");
}

std::vector<Piece> split_into_pieces(std::span<const ReadOp> ops, std::uint64_t block) {
  std::vector<Piece> pieces;
  for (const ReadOp& op : ops) {
    if (op.length == 0) continue;
    Piece::Phase phase = Piece::Phase::kBuffered;
    if (op.file->direct_fd >= 0 && !op.file->direct_refused.load(std::memory_order_relaxed)) {
      if (op.direct == ReadOp::Direct::kYes) phase = Piece::Phase::kDirect;
      if (op.direct == ReadOp::Direct::kIfCold) phase = Piece::Phase::kProbe;
    }
    std::uint64_t pos = op.offset, end = op.offset + op.length;
    while (pos < end) {
      std::uint64_t cut = std::min(end, (pos / block + 1) * block);
      std::uint64_t rel = pos - op.offset;
      pieces.push_back(Piece{op.file, pos, cut - pos, op.dst + rel, op.dst_capacity - rel, phase});
      pos = cut;
    }
  }
  return pieces;
}

void run_piece_blocking(Piece& p, Scratch& scratch) {
  while (p.phase != Piece::Phase::kDone) {
    IoCall c = next_call(p, scratch);
    iovec iov{c.buf, static_cast<std::size_t>(c.len)};
    ssize_t n = ::preadv2(c.fd, &iov, 1, static_cast<off_t>(c.offset), c.rwf);
    complete_call(p, n < 0 ? -errno : static_cast<long>(n));
  }
}

namespace {

// pread back end: pieces run on a pool of `depth` threads (the caller's thread included),
// each with its own staging buffer. Blocking reads on that many threads keep `depth`
// requests in flight at the device, and warm reads copy out of the page cache in parallel.
// Called from inside a ThreadPool item (a loader worker), ThreadPool runs the pieces inline
// on that worker (no pool waits on another), so the parallelism then comes from the
// callers; io_uring keeps `depth` reads in flight from any one thread.
class PreadEngine final : public ReadEngine {
 public:
  PreadEngine(int depth, std::uint64_t block) : depth_(depth), block_(block) {}
  const char* name() const override { return "pread"; }

  void run(std::span<const ReadOp> ops) override {
    auto pieces = split_into_pieces(ops, block_);
    thread_local Scratch scratch;
    if (pieces.size() <= 1 || depth_ <= 1) {
      for (auto& p : pieces) run_piece_blocking(p, scratch);
      return;
    }
    pool().parallel_for(pieces.size(), [&](std::size_t i) { run_piece_blocking(pieces[i], scratch); });
  }

 private:
  // Made on first use. A forked child (a torch DataLoader worker) inherits the pool object
  // but not its threads: it abandons that pool (never joined: its locks may be held by
  // threads that do not exist in the child) and makes a fresh one.
  ThreadPool& pool() {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_ && owner_ != ::getpid()) (void)pool_.release();
    if (!pool_) {
      pool_ = std::make_unique<ThreadPool>(depth_ - 1);
      owner_ = ::getpid();
    }
    return *pool_;
  }
  int depth_;
  std::uint64_t block_;
  std::mutex mu_;
  pid_t owner_ = 0;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace

std::shared_ptr<ReadEngine> make_pread_engine(int depth, std::uint64_t block_bytes) {
  return std::make_shared<PreadEngine>(depth, block_bytes);
}

std::shared_ptr<ReadEngine> engine_for(const IoSettings& s, std::string* why, const UringProbe* probe_override) {
  // One engine per (kind, depth, block): stores opened with the same settings share threads.
  static std::mutex mu;
  static std::map<std::tuple<int, int, std::uint64_t>, std::shared_ptr<ReadEngine>> engines;
  bool want_uring = s.engine != IoEngineKind::kPread;
  const UringProbe* probe = probe_override ? probe_override : want_uring ? &probe_io_uring() : nullptr;
  bool uring = want_uring && probe->available;
  const std::string shape = std::to_string(s.depth) + ", " + format_bytes(s.block_bytes) + " pieces";
  std::string line;
  if (s.engine == IoEngineKind::kPread) {
    line = "pread pool of " + shape + " (CUBESTREAM_IO_ENGINE=pread)";
  } else if (uring) {
    line = "io_uring, depth " + shape + " (CUBESTREAM_IO_ENGINE=" + to_string(s.engine) + "; io_uring: " + probe->why + ")";
  } else {
    line = "pread pool of " + shape + " (CUBESTREAM_IO_ENGINE=" + to_string(s.engine) +
           "; io_uring unavailable: " + probe->why + ")";
  }
  if (why) *why = line;
  std::lock_guard<std::mutex> lock(mu);
  auto& e = engines[{uring ? 1 : 0, s.depth, s.block_bytes}];
  if (!e) e = uring ? make_uring_engine(s.depth, s.block_bytes) : make_pread_engine(s.depth, s.block_bytes);
  if (!e) e = make_pread_engine(s.depth, s.block_bytes);
  return e;
}

}  // namespace cubestream::store_detail
