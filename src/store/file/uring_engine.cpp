// The io_uring back end of the read engine (read_engine.hpp), built where liburing was found
// at configure time (CUBESTREAM_HAVE_LIBURING); elsewhere the probe says so and auto picks pread.
//
// io_uring facts this relies on:
// - io_uring_setup(2) may be refused at run time even where the kernel has io_uring: EPERM
//   under Docker's default seccomp profile or with sysctl kernel.io_uring_disabled=2 (or =1
//   for processes outside io_uring_group), ENOSYS on kernels built without it, ENOMEM on
//   kernels before 5.12 that charge the rings to RLIMIT_MEMLOCK. So it is probed once, with
//   a no-op round trip, and the pread pool is used where it fails.
// - IORING_OP_READ (Linux 5.6) takes the same preadv2 flags in sqe->rw_flags: with RWF_NOWAIT
//   a read the page cache cannot answer completes with -EAGAIN instead of waiting.
// - A buffered read whose pages are cached completes inline in io_uring_enter(2), i.e. the
//   copy out of the page cache runs on the submitting thread, one piece after another.
//   IOSQE_ASYNC hands such reads to the kernel's io-wq workers so that warm pieces are
//   copied in parallel. O_DIRECT reads are not marked: the block layer takes them
//   asynchronously from the submitting thread already.
// - A ring belongs to the thread that made it (one per calling thread: no locks, and
//   completions come back to the thread that waits for them). A forked child must not use
//   its parent's ring (the queues are shared memory): it makes its own.
#include "store/file/read_engine.hpp"

#include <cerrno>
#include <cstring>
#include <exception>

#include <unistd.h>

#include "cubestream/error.hpp"

#ifdef CUBESTREAM_HAVE_LIBURING
#include <liburing.h>
#endif

namespace cubestream::store_detail {

#ifndef CUBESTREAM_HAVE_LIBURING

const UringProbe& probe_io_uring() {
  static const UringProbe probe{false, "built without liburing (install liburing-dev and rebuild)"};
  return probe;
}

std::shared_ptr<ReadEngine> make_uring_engine(int, std::uint64_t) { return nullptr; }

#else

namespace {

std::string setup_error(int err) {
  std::string s = std::string("io_uring_setup failed: ") + std::strerror(err);
  if (err == EPERM) s += " (blocked by seccomp, e.g. a container's default profile, or kernel.io_uring_disabled)";
  if (err == ENOSYS) s += " (kernel without io_uring)";
  if (err == ENOMEM) s += " (RLIMIT_MEMLOCK too small for the ring on this kernel)";
  return s;
}

UringProbe do_probe() {
  io_uring ring;
  int r = io_uring_queue_init(4, &ring, 0);
  if (r < 0) return {false, setup_error(-r)};
  UringProbe out{true, "available"};
  io_uring_probe* ops = io_uring_get_probe_ring(&ring);
  if (!ops || !io_uring_opcode_supported(ops, IORING_OP_READ)) {
    out = {false, "the kernel's io_uring lacks IORING_OP_READ (needs Linux 5.6)"};
  } else {
    // One no-op round trip: some sandboxes (gVisor) accept io_uring_setup but not its use.
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_nop(sqe);
    io_uring_cqe* cqe = nullptr;
    int s = io_uring_submit_and_wait(&ring, 1);
    if (s < 0 || io_uring_peek_cqe(&ring, &cqe) != 0 || !cqe || cqe->res < 0) {
      out = {false, std::string("io_uring no-op round trip failed: ") + std::strerror(s < 0 ? -s : EIO)};
    }
    if (cqe) io_uring_cqe_seen(&ring, cqe);
  }
  if (ops) io_uring_free_probe(ops);
  io_uring_queue_exit(&ring);
  return out;
}

// This thread's ring, made on first use with `entries` entries.
struct ThreadRing {
  io_uring ring{};
  unsigned entries = 0;
  pid_t owner = 0;
  int init_error = 0;
  std::vector<Scratch> scratch;  // one staging buffer per slot

  io_uring* get(unsigned want) {
    if (entries && owner != ::getpid()) {
      io_uring_queue_exit(&ring);  // the child's own mapping and descriptor, not the parent's ring
      entries = 0;
    }
    if (entries < want) {
      if (entries) io_uring_queue_exit(&ring);
      entries = 0;
      int r = io_uring_queue_init(want, &ring, 0);
      if (r < 0) {
        init_error = -r;
        return nullptr;
      }
      entries = want;
      owner = ::getpid();
    }
    if (scratch.size() < want) scratch.resize(want);
    return &ring;
  }
  ~ThreadRing() {
    if (entries && owner == ::getpid()) io_uring_queue_exit(&ring);
  }
};

class UringEngine final : public ReadEngine {
 public:
  UringEngine(int depth, std::uint64_t block)
      : depth_(static_cast<unsigned>(depth)), block_(block), fallback_(make_pread_engine(depth, block)) {}
  const char* name() const override { return "io_uring"; }

  void run(std::span<const ReadOp> ops) override {
    auto pieces = split_into_pieces(ops, block_);
    thread_local ThreadRing tr;
    if (pieces.size() <= 1) {
      // One piece: a plain system call costs less than a ring round trip.
      if (!pieces.empty()) {
        if (tr.scratch.empty()) tr.scratch.resize(1);
        run_piece_blocking(pieces[0], tr.scratch[0]);
      }
      return;
    }
    io_uring* ring = tr.get(depth_);
    if (!ring) {
      // A ring that cannot be made now (memory locked by other rings on an old kernel):
      // this call uses the pread pool instead.
      fallback_->run(ops);
      return;
    }
    drive(*ring, tr.scratch, pieces);
  }

 private:
  void drive(io_uring& ring, std::vector<Scratch>& scratch, std::vector<Piece>& pieces) {
    const unsigned slots = std::min<std::size_t>(depth_, pieces.size());
    std::vector<Piece*> slot(slots, nullptr);
    std::vector<unsigned> free_slots;
    for (unsigned i = slots; i-- > 0;) free_slots.push_back(i);
    std::size_t next = 0;
    unsigned in_flight = 0;
    std::exception_ptr error;

    auto submit = [&](unsigned i) {
      try {
        Piece& p = *slot[i];
        IoCall c = next_call(p, scratch[i]);
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        if (!sqe) throw Error(ErrorCode::kInternal, "io_uring submission queue full");
        io_uring_prep_read(sqe, c.fd, c.buf, static_cast<unsigned>(c.len), c.offset);
        sqe->rw_flags = c.rwf;
        if (p.phase == Piece::Phase::kBuffered) sqe->flags |= IOSQE_ASYNC;
        io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<std::uintptr_t>(i)));
        ++in_flight;
      } catch (...) {
        if (!error) error = std::current_exception();
        slot[i] = nullptr;
        free_slots.push_back(i);
      }
    };

    for (;;) {
      while (!error && next < pieces.size() && !free_slots.empty()) {
        unsigned i = free_slots.back();
        free_slots.pop_back();
        slot[i] = &pieces[next++];
        submit(i);
      }
      if (in_flight == 0) break;
      int r = io_uring_submit_and_wait(&ring, 1);
      if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
        // The ring itself failed: nothing more can be waited for safely; this should not
        // happen after a successful probe.
        throw Error(ErrorCode::kIo, std::string("io_uring_enter failed: ") + std::strerror(-r));
      }
      io_uring_cqe* cqe = nullptr;
      std::vector<unsigned> again;
      unsigned head;
      unsigned seen = 0;
      io_uring_for_each_cqe(&ring, head, cqe) {
        ++seen;
        auto i = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(io_uring_cqe_get_data(cqe)));
        --in_flight;
        Piece& p = *slot[i];
        try {
          complete_call(p, cqe->res);
        } catch (...) {
          if (!error) error = std::current_exception();
          p.phase = Piece::Phase::kDone;
        }
        if (!error && p.phase != Piece::Phase::kDone) {
          again.push_back(i);
        } else {
          slot[i] = nullptr;
          free_slots.push_back(i);
        }
      }
      io_uring_cq_advance(&ring, seen);
      for (unsigned i : again) {
        if (error) {
          slot[i] = nullptr;
          free_slots.push_back(i);
        } else {
          submit(i);
        }
      }
    }
    if (error) std::rethrow_exception(error);
  }

  unsigned depth_;
  std::uint64_t block_;
  std::shared_ptr<ReadEngine> fallback_;
};

}  // namespace

const UringProbe& probe_io_uring() {
  static const UringProbe probe = do_probe();
  return probe;
}

std::shared_ptr<ReadEngine> make_uring_engine(int depth, std::uint64_t block_bytes) {
  if (!probe_io_uring().available) return nullptr;
  return std::make_shared<UringEngine>(depth, block_bytes);
}

#endif

}  // namespace cubestream::store_detail
