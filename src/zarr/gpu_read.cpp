#include "zarr/gpu_read.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "cubestream/error.hpp"
#include "zarr/region_output.hpp"

namespace cubestream::zarr {

using cuda::DecodeStatus;

namespace {

// Offsets inside the staging are 256-byte aligned, as cudaMalloc's own allocations are.
constexpr std::size_t kAlign = 256;
// A unit that is one run of the output is placed in pieces of this size, so that a wave of a
// few large units still spreads over every thread.
constexpr std::size_t kPieceBytes = std::size_t{2} << 20;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::size_t env_size(const char* name, std::size_t fallback, std::size_t lo, std::size_t hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || n < static_cast<long long>(lo) || n > static_cast<long long>(hi)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + "=" + v + ": expected an integer in [" +
                                                 std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<std::size_t>(n);
}

enum class UnitState : std::uint8_t { kPending, kOnDevice, kDone };

struct Unit {
  const PlannedChunk* chunk = nullptr;
  Overlap overlap;
  std::uint64_t at = 0;        // where its bytes start inside its fetch's bytes
  std::uint64_t length = 0;    // their length (a whole value's is set by the fetch)
  std::size_t decoded_at = 0;  // offset in the slot's decoded staging
  std::size_t comp_at = 0;     // offset in the slot's compressed staging (kOnDevice)
  std::size_t fetch = 0;       // its fetch in the wave
  UnitState state = UnitState::kPending;
};

struct Fetch {
  const FetchTask* task = nullptr;
  std::uint64_t offset = 0, length = 0;  // the range inside the value (ranged tasks)
  std::size_t first = 0, count = 0;      // its units in the wave
};

struct Wave {
  std::vector<Fetch> fetches;
  std::vector<Unit> units;
  std::size_t decoded_bytes = 0;
  std::vector<std::size_t> batch;  // the units decoded on the device, in batch order
};

// Cuts the plan's units into waves of at most `cap` decoded bytes and `max_units` units. A
// ranged fetch whose units do not fit one wave is split into fetches of neighbouring units.
// Missing tasks (known empty inner chunks) go to `missing`.
std::vector<Wave> cut_waves(const ReadPlan& plan, const RegionOutput& ro, std::size_t cap, std::size_t max_units,
                            std::vector<const FetchTask*>& missing) {
  const std::size_t ub = align_up(plan.unit_spec.num_bytes());
  std::vector<Wave> waves;
  Wave cur;
  auto flush = [&] {
    if (!cur.units.empty()) waves.push_back(std::move(cur));
    cur = Wave{};
  };
  std::vector<std::pair<const PlannedChunk*, Overlap>> meet;
  for (const FetchTask& t : plan.tasks) {
    if (t.missing) {
      missing.push_back(&t);
      continue;
    }
    meet.clear();
    for (const auto& c : t.chunks) {
      Overlap o = ro.overlap_of(c);
      if (!o.empty()) meet.emplace_back(&c, std::move(o));  // not inner chunks beyond the array's edge
    }
    for (std::size_t i = 0; i < meet.size();) {
      if (cur.decoded_bytes + ub > cap || cur.units.size() >= max_units) flush();
      const std::size_t room = std::min((cap - cur.decoded_bytes) / ub, max_units - cur.units.size());
      const std::size_t k = std::min(meet.size() - i, std::max<std::size_t>(room, 1));
      Fetch f;
      f.task = &t;
      f.first = cur.units.size();
      f.count = k;
      std::uint64_t lo = 0, hi = 0;
      if (!t.whole_value) {
        lo = meet[i].first->offset;
        for (std::size_t j = i; j < i + k; ++j) {
          lo = std::min(lo, meet[j].first->offset);
          hi = std::max(hi, meet[j].first->offset + meet[j].first->length);
        }
        f.offset = t.offset + lo;
        f.length = hi - lo;
      }
      for (std::size_t j = i; j < i + k; ++j) {
        Unit u;
        u.chunk = meet[j].first;
        u.overlap = std::move(meet[j].second);
        u.at = t.whole_value ? 0 : meet[j].first->offset - lo;
        u.length = meet[j].first->length;
        u.decoded_at = cur.decoded_bytes;
        u.fetch = cur.fetches.size();
        cur.decoded_bytes += ub;
        cur.units.push_back(std::move(u));
      }
      cur.fetches.push_back(f);
      i += k;
    }
  }
  flush();
  return waves;
}

// The meta arrays of a slot for `n` (the capacity) units.
struct MetaView {
  const std::uint8_t** src;
  std::size_t* src_bytes;
  std::uint8_t** dst;
  std::size_t* dst_bytes;
  DecodeStatus* status;
};
MetaView meta_view(std::uint8_t* base, std::size_t n, std::size_t status_offset) {
  return MetaView{reinterpret_cast<const std::uint8_t**>(base), reinterpret_cast<std::size_t*>(base + 8 * n),
                  reinterpret_cast<std::uint8_t**>(base + 16 * n), reinterpret_cast<std::size_t*>(base + 24 * n),
                  reinterpret_cast<DecodeStatus*>(base + status_offset)};
}

struct Counters {
  std::atomic<std::uint64_t> read{0}, missing{0}, fetched{0}, in_place{0}, requests{0}, on_gpu{0}, refused{0};
};

class DeviceRead {
 public:
  DeviceRead(const Array::Impl& a, const Region& region, const ReadPlan& plan, const ChainRoute& route,
             std::uint8_t* out, GpuReadStaging& staging)
      : a_(a), plan_(plan), route_(route), ro_(plan, region, out, a.meta.dtype.size), staging_(staging),
        dev_(staging.device()), unit_bytes_(plan.unit_spec.num_bytes()) {}

  void run(const ForEach& for_each, ReadStats& stats) {
    // waves of the configured size (or one unit), in slots that may have grown larger for an
    // earlier read's units
    const GpuReadConfig& cfg = staging_.config();
    const std::size_t cap = std::max(align_up(cfg.wave_bytes), align_up(unit_bytes_));
    const std::size_t units = std::clamp<std::size_t>(cap / align_up(unit_bytes_), 1, cfg.max_buffers);
    // Units larger than a wave make waves of one unit; fewer slots (at least two) then keep the
    // staging near the configured slots x wave_bytes.
    const std::size_t slots = std::clamp<std::size_t>(cfg.slots * align_up(cfg.wave_bytes) / cap, 2, cfg.slots);
    staging_.prepare(cap, units, route_.codec, slots);
    std::vector<const FetchTask*> missing;
    std::vector<Wave> waves = cut_waves(plan_, ro_, cap, units, missing);
    std::deque<std::size_t> in_flight;  // waves launched, not yet placed (oldest first)
    std::size_t next = 0;
    std::vector<std::function<void()>> items;
    for (const FetchTask* t : missing) {
      items.push_back([this, t] {
        for (const auto& c : t->chunks) fill(ro_.overlap_of(c));
      });
    }
    while (next < waves.size() || !in_flight.empty()) {
      std::optional<std::size_t> placing;
      if (!in_flight.empty() && (in_flight.size() + 1 >= slots || next == waves.size())) {
        placing = in_flight.front();
        in_flight.pop_front();
        dev_.wait(staging_.slot(*placing % slots).lane);
      }
      std::optional<std::size_t> fetching;
      if (next < waves.size()) fetching = next++;
      if (fetching) {
        Wave& w = waves[*fetching];
        GpuReadStaging::Slot& s = staging_.slot(*fetching % slots);
        s.comp_used.store(0, std::memory_order_relaxed);
        for (Fetch& f : w.fetches) items.push_back([this, &w, &f, &s] { fetch(w, f, s); });
      }
      if (placing) place_items(waves[*placing], staging_.slot(*placing % slots), items);
      for_each(items.size(), [&](std::size_t i) { items[i](); });
      items.clear();
      if (fetching) {
        launch(waves[*fetching], staging_.slot(*fetching % slots));
        in_flight.push_back(*fetching);
      }
      if (placing) waves[*placing] = Wave{};  // its memory is no longer needed
    }
    for_each(items.size(), [&](std::size_t i) { items[i](); });  // the fills of a read with no wave
    stats.chunks_read += c_.read;
    stats.chunks_missing += c_.missing;
    stats.bytes_fetched += c_.fetched;
    stats.chunks_decoded_in_place += c_.in_place;
    stats.chunk_requests += c_.requests;
    stats.chunks_decoded_on_gpu += c_.on_gpu;
    stats.gpu_refused += c_.refused;
  }

 private:
  void fill(const Overlap& o) {
    if (o.empty()) return;
    ro_.fill(o, a_.meta.fill_value.data());
    ++c_.missing;
  }

  // Decodes one unit on the host from its encoded bytes, into place.
  void host_decode(const Fetch& f, const Unit& u, ByteView enc) {
    const FetchTask& t = *f.task;
    const std::optional<std::uint64_t> value_offset =
        t.whole_value ? std::nullopt : std::optional<std::uint64_t>(f.offset + u.at);
    with_unit_context(a_, t.key, value_offset, [&] {
      if (ro_.decode_into(u.overlap, enc)) ++c_.in_place;
    });
    ++c_.read;
  }

  // One fetch of a wave into the slot's compressed staging (or, where it does not fit, decoded
  // on the host right away).
  void fetch(Wave& w, const Fetch& f, GpuReadStaging::Slot& s) {
    const FetchTask& t = *f.task;
    thread_local Bytes enc;
    TrimOnExit trim{enc};
    const ByteRange range = t.whole_value ? ByteRange::all()
                                          : ByteRange{static_cast<std::int64_t>(f.offset), static_cast<std::int64_t>(f.length)};
    with_unit_context(a_, t.key, std::nullopt, [&] {
      ++c_.requests;
      if (!a_.store->read_into(t.key, range, enc)) {
        for (std::size_t k = f.first; k < f.first + f.count; ++k) {
          fill(w.units[k].overlap);
          w.units[k].state = UnitState::kDone;
        }
        return;
      }
      if (!t.whole_value && enc.size() != f.length) {
        throw Error(ErrorCode::kIo, "store returned " + std::to_string(enc.size()) + " bytes for a range of " +
                                        std::to_string(f.length),
                    ErrorContext{a_.store->describe(), t.key, f.offset});
      }
      c_.fetched += enc.size();
      // room in the slot, claimed only where it fits (so that one large fetch does not send
      // every later fetch of the wave to the host)
      const std::size_t need = align_up(enc.size());
      std::size_t at = s.comp_used.load(std::memory_order_relaxed);
      bool fits = true;
      do {
        if (need > s.comp_cap || at > s.comp_cap - need) {
          fits = false;
          break;
        }
      } while (!s.comp_used.compare_exchange_weak(at, at + need, std::memory_order_relaxed));
      for (std::size_t k = f.first; k < f.first + f.count; ++k) {
        Unit& u = w.units[k];
        if (t.whole_value) u.length = enc.size();
        if (u.at + u.length > enc.size()) {
          throw Error(ErrorCode::kInternal, "planned unit lies outside its fetch",
                      ErrorContext{a_.store->describe(), t.key, f.offset + u.at});
        }
      }
      if (!fits) {
        for (std::size_t k = f.first; k < f.first + f.count; ++k) {
          Unit& u = w.units[k];
          host_decode(f, u, ByteView(enc.data() + u.at, u.length));
          u.state = UnitState::kDone;
        }
        return;
      }
      if (!enc.empty()) std::memcpy(s.h_comp + at, enc.data(), enc.size());
      for (std::size_t k = f.first; k < f.first + f.count; ++k) {
        w.units[k].comp_at = at + w.units[k].at;
        w.units[k].state = UnitState::kOnDevice;
      }
    });
  }

  // Enqueues the wave's device work on its slot's lane.
  void launch(Wave& w, GpuReadStaging::Slot& s) {
    w.batch.clear();
    for (std::size_t k = 0; k < w.units.size(); ++k)
      if (w.units[k].state == UnitState::kOnDevice) w.batch.push_back(k);
    const std::size_t n = w.batch.size();
    if (n == 0) return;
    const std::size_t cap = staging_.config().max_buffers;
    const MetaView h = meta_view(s.h_meta, cap, staging_.status_offset());
    for (std::size_t i = 0; i < n; ++i) {
      const Unit& u = w.units[w.batch[i]];
      h.src[i] = s.d_comp + u.comp_at;
      h.src_bytes[i] = u.length;
      h.dst[i] = s.d_decoded + u.decoded_at;
      h.dst_bytes[i] = unit_bytes_;
      h.status[i] = DecodeStatus::kSkipped;
    }
    const MetaView d = meta_view(s.d_meta, cap, staging_.status_offset());
    // the statuses too: one the decoder left unwritten reads kSkipped, and goes to the host
    dev_.to_device(s.d_meta, s.h_meta, staging_.status_offset() + n * sizeof(DecodeStatus), s.lane);
    const std::size_t comp = s.comp_used.load(std::memory_order_relaxed);
    if (comp > 0) dev_.to_device(s.d_comp, s.h_comp, comp, s.lane);
    cuda::DeviceBatch b;
    b.src = d.src;
    b.src_bytes = d.src_bytes;
    b.dst = d.dst;
    b.dst_bytes = d.dst_bytes;
    b.status = d.status;
    b.num_buffers = n;
    dev_.decode(route_.codec, b, s.scratch, s.scratch_bytes, s.lane);
    const Unit& last = w.units[w.batch.back()];
    dev_.to_host(s.h_decoded, s.d_decoded, last.decoded_at + unit_bytes_, s.lane);
    dev_.to_host(h.status, d.status, n * sizeof(DecodeStatus), s.lane);
  }

  // The items that place a wave whose lane is done: the decoded units into the output (runs in
  // pieces), the refused ones decoded on the host.
  void place_items(Wave& w, GpuReadStaging::Slot& s, std::vector<std::function<void()>>& items) {
    const MetaView h = meta_view(s.h_meta, staging_.config().max_buffers, staging_.status_offset());
    for (std::size_t i = 0; i < w.batch.size(); ++i) {
      Unit& u = w.units[w.batch[i]];
      if (h.status[i] != DecodeStatus::kOk) {
        ++c_.refused;
        const Fetch& f = w.fetches[u.fetch];
        items.push_back([this, &f, &u, &s] { host_decode(f, u, ByteView(s.h_comp + u.comp_at, u.length)); });
        continue;
      }
      ++c_.read;
      ++c_.on_gpu;
      const std::uint8_t* src = s.h_decoded + u.decoded_at;
      if (std::uint8_t* dst = ro_.run_of(u.overlap)) {
        for (std::size_t p = 0; p < unit_bytes_; p += kPieceBytes) {
          const std::size_t len = std::min(kPieceBytes, unit_bytes_ - p);
          items.push_back([dst, src, p, len] { std::memcpy(dst + p, src + p, len); });
        }
      } else {
        items.push_back([this, &u, src] { ro_.copy_from_unit(u.overlap, src); });
      }
    }
  }

  const Array::Impl& a_;
  const ReadPlan& plan_;
  const ChainRoute& route_;
  RegionOutput ro_;
  GpuReadStaging& staging_;
  ReadDevice& dev_;
  const std::size_t unit_bytes_;
  Counters c_;
};

}  // namespace

GpuReadConfig GpuReadConfig::from_env() {
  GpuReadConfig c;
  c.wave_bytes = env_size("CUBESTREAM_GPU_READ_WAVE_MB", c.wave_bytes >> 20, 1, 4096) << 20;
  c.slots = env_size("CUBESTREAM_GPU_READ_SLOTS", c.slots, 2, 16);
  return c;
}

GpuReadStaging::GpuReadStaging(std::unique_ptr<ReadDevice> device, GpuReadConfig config)
    : device_(std::move(device)), config_(config) {
  if (config_.slots < 2) throw Error(ErrorCode::kInvalidArgument, "GPU reads need at least 2 staging slots");
  if (config_.max_buffers == 0) throw Error(ErrorCode::kInvalidArgument, "GPU reads need max_buffers >= 1");
  slots_.reserve(config_.slots);
  try {
    for (std::size_t i = 0; i < config_.slots; ++i) {
      slots_.push_back(std::make_unique<Slot>());
      Slot& s = *slots_.back();
      s.lane = device_->create_lane();
      s.h_meta = device_->alloc_host(meta_bytes());
      s.d_meta = device_->alloc_device(meta_bytes());
    }
  } catch (...) {
    for (auto& s : slots_) free_slot(*s);
    throw;
  }
}

GpuReadStaging::~GpuReadStaging() {
  drain();
  for (auto& s : slots_) free_slot(*s);
}

void GpuReadStaging::free_slot(Slot& s) noexcept {
  device_->free_host(s.h_comp);
  device_->free_device(s.d_comp);
  device_->free_host(s.h_decoded);
  device_->free_device(s.d_decoded);
  device_->free_host(s.h_meta);
  device_->free_device(s.d_meta);
  device_->free_device(static_cast<std::uint8_t*>(s.scratch));
  if (s.lane) device_->destroy_lane(s.lane);
  s.h_comp = s.d_comp = s.h_decoded = s.d_decoded = s.h_meta = s.d_meta = nullptr;
  s.scratch = s.lane = nullptr;
  s.comp_cap = s.decoded_cap = s.scratch_bytes = 0;
}

std::size_t GpuReadStaging::host_bytes() const {
  std::size_t n = 0;
  for (const auto& s : slots_) n += s->comp_cap + s->decoded_cap + meta_bytes();
  return n;
}

std::size_t GpuReadStaging::device_bytes() const {
  std::size_t n = 0;
  for (const auto& s : slots_) n += s->comp_cap + s->decoded_cap + meta_bytes() + s->scratch_bytes;
  return n;
}

std::size_t GpuReadStaging::status_offset() const { return 32 * config_.max_buffers; }
std::size_t GpuReadStaging::meta_bytes() const {
  return align_up(status_offset() + sizeof(DecodeStatus) * config_.max_buffers);
}

void GpuReadStaging::drain() noexcept {
  for (auto& s : slots_)
    if (s->lane) device_->wait_quietly(s->lane);
}

void GpuReadStaging::prepare(std::size_t decoded_cap, std::size_t units, cuda::BatchCodec codec, std::size_t slots) {
  if (units == 0 || units > config_.max_buffers) {
    throw Error(ErrorCode::kInternal, "GPU read: a wave of " + std::to_string(units) + " units");
  }
  if (slots < 2 || slots > slots_.size()) {
    throw Error(ErrorCode::kInternal, "GPU read: " + std::to_string(slots) + " of " + std::to_string(slots_.size()) +
                                          " slots");
  }
  decoded_cap = align_up(decoded_cap);
  // Compressed bytes may exceed the decoded ones a little (incompressible chunks); a fetch
  // that still does not fit is decoded on the host.
  const std::size_t comp_cap = align_up(decoded_cap + decoded_cap / 8 + (std::size_t{1} << 20));
  // host arithmetic: the decoder's scratch for a wave of this size (it only grows)
  const std::size_t need = std::max<std::size_t>(device_->decode_scratch_bytes(codec, units, decoded_cap), 1);
  for (std::size_t i = 0; i < slots; ++i) {
    Slot& s = *slots_[i];
    if (s.decoded_cap < decoded_cap) {
      device_->wait(s.lane);
      device_->free_host(s.h_comp);
      device_->free_device(s.d_comp);
      device_->free_host(s.h_decoded);
      device_->free_device(s.d_decoded);
      s.h_comp = s.d_comp = s.h_decoded = s.d_decoded = nullptr;
      s.comp_cap = s.decoded_cap = 0;
      s.h_comp = device_->alloc_host(comp_cap);
      s.d_comp = device_->alloc_device(comp_cap);
      s.comp_cap = comp_cap;
      s.h_decoded = device_->alloc_host(decoded_cap);
      s.d_decoded = device_->alloc_device(decoded_cap);
      s.decoded_cap = decoded_cap;
    }
    if (s.scratch_bytes < need) {
      device_->wait(s.lane);
      device_->free_device(static_cast<std::uint8_t*>(s.scratch));
      s.scratch = nullptr;
      s.scratch_bytes = 0;
      s.scratch = device_->alloc_device(need);
      s.scratch_bytes = need;
    }
  }
}

bool GpuReadStaging::oversized() const {
  for (const auto& s : slots_)
    if (s->decoded_cap > align_up(config_.wave_bytes)) return true;
  return false;
}

void read_on_device(const Array::Impl& a, const Region& region, const ReadPlan& plan, const ChainRoute& route,
                    std::uint8_t* out, const ForEach& for_each, GpuReadStaging& staging, ReadStats& stats) {
  if (route.route != UnitRoute::kGpuDecode) {
    throw Error(ErrorCode::kInternal, "read_on_device: the chain has no GPU decoder (" + route.why + ")");
  }
  // Whatever happens, no lane may still write into the staging once the read returns: the
  // next read (or the caller's output) would see it.
  struct Drain {
    GpuReadStaging& s;
    ~Drain() { s.drain(); }
  } drain{staging};
  DeviceRead(a, region, plan, route, out, staging).run(for_each, stats);
}

}  // namespace cubestream::zarr
