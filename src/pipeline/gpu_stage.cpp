#include "pipeline/gpu_stage.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/thread_pool.hpp"
#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "zarr/cf_decode.hpp"
#include "pipeline/host_decode_share.hpp"
#include "pipeline/trace.hpp"

namespace cubestream::pipeline {

namespace {

constexpr std::size_t kAlign = 256;
constexpr std::int64_t kItemElements = std::int64_t{1} << 16;

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The element type CF decoding reads, after _Unsigned; nullopt for types the kernel lacks.
std::optional<cuda::ElemKind> elem_kind(const DataType& stored, const CFEncoding& enc) {
  const DataType dt = zarr::effective_dtype(stored, enc.is_unsigned);
  switch (dt.kind) {
    case DTypeKind::kBool: return cuda::ElemKind::kBool;
    case DTypeKind::kInt: return cuda::ElemKind::kInt;
    case DTypeKind::kUInt: return cuda::ElemKind::kUInt;
    case DTypeKind::kFloat:
      if (dt.size == 2 || dt.size == 4 || dt.size == 8) return cuda::ElemKind::kFloat;
      return std::nullopt;
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta:
      if (dt.size == 8) return cuda::ElemKind::kTime;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

SourceRoute route_of(const UnitSource& source, bool gpu_zstd) {
  SourceRoute r = zarr::chain_route(source.array);
  if (r.route == UnitRoute::kGpuDecode && r.codec == cuda::BatchCodec::kZstd && !gpu_zstd) {
    r.route = UnitRoute::kHostDecode;
    r.why = "zstd decoding on the GPU is switched off";
  }
  return r;
}

std::optional<std::string> gpu_assemble_refusal(const UnitSource& source, std::size_t layout_dims) {
  if (layout_dims > static_cast<std::size_t>(cuda::kAssembleMaxDims)) {
    return std::to_string(layout_dims) + " sample dims (the GPU assembly takes up to " +
           std::to_string(cuda::kAssembleMaxDims) + ")";
  }
  if (!elem_kind(source.array.dtype(), source.encoding)) return "element type " + source.array.dtype().name();
  std::size_t missing = 0;
  for (double m : source.encoding.missing_values) missing += !std::isnan(m);
  if (missing > static_cast<std::size_t>(cuda::kAssembleMaxMissing)) {
    return std::to_string(missing) + " missing values (the GPU assembly takes up to " +
           std::to_string(cuda::kAssembleMaxMissing) + ")";
  }
  return std::nullopt;
}

struct GpuStage::DeviceUnit {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  void* stream = nullptr;  // the assemble stream: freed after the kernels queued there so far
  int device = 0;
  ~DeviceUnit() { cuda::free_device_async(ptr, stream, device); }
};

// A slot's GPU side: device staging, meta buffers and the events that guard their reuse.
struct GpuStage::SlotGpu {
  void* dstage = nullptr;
  std::size_t dstage_cap = 0;
  void* hmeta = nullptr;  // pinned
  std::size_t hmeta_cap = 0;
  void* dmeta = nullptr;
  std::size_t dmeta_cap = 0;
  void* copied = nullptr;     // the compressed bytes are in the device staging
  void* units_copied = nullptr;  // raw and host-decoded units are in their device units
  void* decoded = nullptr;    // decoders and statuses done (the device staging is free again)
  void* assembled = nullptr;  // the assembly read its meta
  void* last = nullptr;       // the event after which nothing of this slot is in use; null: never used
  bool staging_sized = false; // fetch() sized the slot's arena for a decoded batch (once)
  bool meta_sized = false;    // launch() sized the meta buffers for an unshared batch (once)
};

// One unit fetched by this batch: where its bytes lie in the staging arena.
struct GpuStage::Staged {
  Array::EncodedUnit enc;     // key, offset, missing; the bytes only while they wait for settle()
  UnitRoute route = UnitRoute::kHostDecode;
  std::size_t offset = 0, length = 0;
  std::size_t slot = 0;       // index of the buffer within its GPU decode group
  bool to_host = false;       // GPU-decodable, but decoded by its fetch thread (HostDecodeShare)
  bool pending = false;       // enc.bytes (or `decoded`) still to be written at `offset`
  Bytes decoded;              // a host-decoded unit that did not fit the arena as it was
  std::uint64_t charged = 0;  // budget held for the pending bytes
};

namespace {
constexpr int kGroups = 3;  // lz4, blosc, zstd (cuda::BatchCodec order)
}  // namespace

struct GpuStage::Flight {
  GpuStage* stage = nullptr;
  std::size_t slot = 0;
  enum class State { kOpen, kLaunched, kFinished } state = State::kOpen;
  bool decode_queued = false;  // launch() queued every decoder and status copy
  BatchPlan plan;
  std::vector<std::shared_ptr<DeviceUnit>> units;  // per task
  std::vector<std::size_t> miss;                   // tasks fetched by this batch
  std::vector<Staged> staged;                      // per miss
  std::vector<std::size_t> group[kGroups];         // GPU-decoded staged units per codec
  // Meta layout (offsets into the slot's meta buffers).
  std::size_t group_at[kGroups] = {};
  std::size_t pieces_at = 0, items_at = 0, params_at = 0, tensors_at = 0, meta_bytes = 0;
  std::size_t npieces = 0, nitems = 0;
};

void GpuStage::FlightDeleter::operator()(Flight* f) const noexcept {
  if (f->state != Flight::State::kFinished) f->stage->abandon(*f);
  delete f;
}

GpuStage::GpuStage(const BatchPlanner& planner, const Selection& selection, const LoaderConfig& config,
                   MemoryBudget& budget, std::uint64_t cache_bytes, bool gpu_zstd, std::size_t max_in_flight)
    : planner_(planner),
      selection_(selection),
      cfg_(config),
      device_(config.device_index),
      budget_(budget),
      slots_(budget,
             StagingMemory{[this](std::size_t n) { return pinned_alloc(n); }, [this](void* p) { pinned_free(p); }},
             max_in_flight),
      cache_capacity_(cache_bytes) {
  for (const auto& s : planner_.sources()) {
    routes_.push_back(route_of(s, gpu_zstd));
    host_routes_ = host_routes_ || routes_.back().route == UnitRoute::kHostDecode;
  }
  copy_stream_ = cuda::create_stream(device_);
  decode_stream_ = cuda::create_stream(device_);
  assemble_stream_ = cuda::create_stream(device_);
  const char* copy = std::getenv("CUBESTREAM_GPU_COPY");
  batched_unit_copies_ = !(copy && std::strcmp(copy, "per-unit") == 0);
  const char* pool = std::getenv("CUBESTREAM_GPU_POOL");
  if (!(pool && std::strcmp(pool, "default") == 0)) device_pool_ = cuda::create_device_pool(device_);
}

GpuStage::~GpuStage() {
  // The loader drops every flight before the stage; wait for the work they queued.
  for (void* s : {copy_stream_, decode_stream_, assemble_stream_}) {
    try {
      cuda::stream_synchronize(s, device_);
    } catch (...) {
    }
  }
  lru_.clear();
  index_.clear();
  for (auto& g : slot_gpu_) {
    for (void* e : {g->copied, g->units_copied, g->decoded, g->assembled}) cuda::destroy_event(e, device_);
    pinned_free(g->hmeta);
    budget_.release(g->hmeta_cap);
    // Pool memory (grow_device), returned to the pool on a stream that is idle by now.
    cuda::free_device_async(g->dstage, assemble_stream_, device_);
    cuda::free_device_async(g->dmeta, assemble_stream_, device_);
  }
  cuda::free_device_async(scratch_, assemble_stream_, device_);
  for (void* s : {copy_stream_, decode_stream_, assemble_stream_}) {
    try {
      cuda::stream_synchronize(s, device_);  // the frees just queued
    } catch (...) {
    }
    cuda::destroy_stream(s, device_);
  }
  cuda::destroy_device_pool(device_pool_, device_);
}

std::shared_ptr<GpuStage::DeviceUnit> GpuStage::cache_find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void GpuStage::cache_insert(const std::string& key, std::shared_ptr<DeviceUnit> unit) {
  if (unit->bytes > cache_capacity_ || index_.count(key)) return;
  lru_.emplace_front(key, std::move(unit));
  index_[key] = lru_.begin();
  cache_bytes_ += lru_.front().second->bytes;
  while (cache_bytes_ > cache_capacity_ && !lru_.empty()) {
    cache_bytes_ -= lru_.back().second->bytes;
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void GpuStage::cache_forget(const std::string& key, const DeviceUnit* unit) {
  auto it = index_.find(key);
  if (it == index_.end() || it->second->second.get() != unit) return;
  cache_bytes_ -= unit->bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

// Grow-only device buffers, reallocated stream-ordered: the caller knows the old one idle.
void GpuStage::grow_device(void*& buf, std::size_t& cap, std::size_t bytes, void* stream) {
  if (bytes <= cap) return;
  cuda::free_device_async(buf, stream, device_);
  buf = nullptr;
  cap = 0;
  const std::size_t want = bytes + bytes / 8;  // headroom: the next batch is about as large
  buf = cuda::alloc_device_async(want, stream, device_, device_pool_);
  cap = want;
}

void* GpuStage::pinned_alloc(std::size_t bytes) {
  const std::int64_t t0 = now_ns();
  void* p = cuda::alloc_pinned(bytes);
  ns_pinned_ += now_ns() - t0;
  ++pinned_calls_;
  return p;
}

void GpuStage::pinned_free(void* p) noexcept {
  if (!p) return;
  const std::int64_t t0 = now_ns();
  cuda::free_pinned(p);
  ns_pinned_ += now_ns() - t0;
  ++pinned_calls_;
}

void GpuStage::take_pinned_counts(GpuStageStats& st) {
  st.pinned_calls += pinned_calls_.exchange(0);
  st.ns_pinned += ns_pinned_.exchange(0);
}

std::uint8_t* GpuStage::grow_pinned(void*& buf, std::size_t& cap, std::size_t bytes) {
  if (bytes > cap) {
    pinned_free(buf);
    budget_.release(cap);
    buf = nullptr;
    cap = 0;
    // Headroom as in grow_device: the next batch's meta is about as large, and every pinned
    // (re)allocation costs a device-wide synchronisation of cudaFreeHost.
    const std::size_t want = bytes + bytes / 8;
    budget_.force(want);
    try {
      buf = pinned_alloc(want);
    } catch (...) {
      budget_.release(want);
      throw;
    }
    cap = want;
  }
  return static_cast<std::uint8_t*>(buf);
}

// ---- open: a staging slot --------------------------------------------------------------------

void GpuStage::ensure_slot_gpu(std::size_t slots) {
  while (slot_gpu_.size() < slots) {
    auto g = std::make_unique<SlotGpu>();
    g->copied = cuda::create_event(device_);
    g->units_copied = cuda::create_event(device_);
    g->decoded = cuda::create_event(device_);
    g->assembled = cuda::create_event(device_);
    slot_gpu_.push_back(std::move(g));
  }
}

GpuStage::FlightPtr GpuStage::open() {
  const std::optional<std::size_t> slot = slots_.acquire();
  if (!slot) return nullptr;
  FlightPtr f(new Flight);
  f->stage = this;
  f->slot = *slot;
  try {
    ensure_slot_gpu(*slot + 1);
    // The slot's last batch (finished or abandoned) may still be on the GPU: its arena,
    // staging and meta are rewritten from here on. Usually long done (one wait per slot).
    if (void* last = slot_gpu_[*slot]->last) cuda::event_synchronize(last);
  } catch (...) {
    slots_.release(*slot);
    f->state = Flight::State::kFinished;  // nothing to abandon
    throw;
  }
  return f;
}

// ---- fetch: host threads, straight into the pinned arena --------------------------------------

void GpuStage::fetch_unit(Flight& f, std::size_t j, std::int64_t& ns_fetch, std::int64_t& ns_decode) {
  const UnitTask& t = f.plan.tasks[f.miss[j]];
  const UnitSource& src = planner_.sources()[t.source];
  StagingArena& arena = slots_.arena(f.slot);
  Staged& s = f.staged[j];
  Array::EncodedUnit enc = reads_.take();
  const std::int64_t t0 = now_ns();
  src.array.fetch_unit(t.unit, enc);
  const std::int64_t t1 = now_ns();
  ns_fetch += t1 - t0;
  // The encoded bytes are charged while this task holds them.
  const std::uint64_t held = enc.bytes.size();
  budget_.force(held);
  struct Release {
    MemoryBudget& b;
    std::uint64_t n;
    ~Release() { b.release(n); }
  } release{budget_, held};
  s.route = routes_[t.source].route;
  if (enc.missing || s.route == UnitRoute::kHostDecode || s.to_host) {
    s.route = UnitRoute::kHostDecode;
    const std::size_t ub = src.array.unit_bytes();
    const StagingArena::Claim c = arena.claim(ub);
    s.offset = c.offset;
    s.length = ub;
    if (c.ptr) {
      src.array.decode_unit(enc, c.ptr, ub);
    } else {
      budget_.force(ub);
      s.charged = ub;
      s.decoded.resize(ub);
      s.pending = true;
      src.array.decode_unit(enc, s.decoded.data(), ub);
    }
    ns_decode += now_ns() - t1;
  } else {
    const StagingArena::Claim c = arena.claim(enc.bytes.size());
    s.offset = c.offset;
    s.length = enc.bytes.size();
    if (c.ptr) {
      if (s.length) std::memcpy(c.ptr, enc.bytes.data(), s.length);
    } else {
      // Written after settle(); these bytes stay with the unit (and charged) until then.
      budget_.force(s.length);
      s.charged = s.length;
      s.pending = true;
      s.enc.bytes = std::move(enc.bytes);
      enc.bytes = Bytes();
    }
  }
  s.enc.key = enc.key;
  s.enc.offset = enc.offset;
  s.enc.missing = enc.missing;
  s.enc.bytes_fetched = enc.bytes_fetched;
  reads_.give(std::move(enc));
}

void GpuStage::fetch(Flight& f, BatchPlan plan, ThreadPool& pool, int threads, double host_share,
                     bool room_for_decoded, GpuStageStats& st) {
  f.plan = std::move(plan);
  const auto& tasks = f.plan.tasks;
  f.units.assign(tasks.size(), nullptr);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    f.units[i] = cache_find(tasks[i].cache_key);
    if (f.units[i]) ++st.hits;
    else f.miss.push_back(i);
  }
  f.staged.assign(f.miss.size(), Staged{});
  if (host_share > 0) {
    std::size_t n = 0;
    for (std::size_t i : f.miss) n += routes_[tasks[i].source].route == UnitRoute::kGpuDecode;
    for (std::size_t j = 0, g = 0; j < f.miss.size(); ++j) {
      if (routes_[tasks[f.miss[j]].source].route != UnitRoute::kGpuDecode) continue;
      f.staged[j].to_host = HostDecodeShare::picks(g++, n, host_share);
    }
  }
  StagingArena& arena = slots_.arena(f.slot);
  SlotGpu& g = *slot_gpu_[f.slot];
  // Sources decoded on the host (host_routes_) always stage decoded units, whatever the share.
  if ((room_for_decoded || host_routes_) && !g.staging_sized) {
    // Room for every unit of the batch decoded, cache hits included: full batches have the
    // same tasks, so a slot is sized once, at its first batch, whatever the share does later.
    // Growing it mid-run would pin hundreds of MB at once: a cudaHostAlloc of that size took
    // ~0.3 s on the H100 machine and held the training thread's step up for as long. Only
    // where the memory limit has room: otherwise settle() grows the arena as needed.
    std::size_t room = 0;
    for (const UnitTask& t : tasks) {
      const std::size_t ub = planner_.sources()[t.source].array.unit_bytes();
      room += (ub + StagingArena::kAlign - 1) / StagingArena::kAlign * StagingArena::kAlign;
    }
    // Better: the same batch with no unit shared between its samples (a shuffled batch may
    // share fewer units than this first one did; a GPU test caught a later epoch pinning so).
    // That bound counts a unit once per sample that touches it (static fields too), so it is
    // tried first and the batch's own size is the fallback where the limit has no room for it.
    const std::size_t unshared =
        f.plan.samples * (static_cast<std::size_t>(f.plan.sample_bytes_max) + f.plan.sample_units_max * StagingArena::kAlign);
    // Once per slot, with settle()'s eighth of headroom (batches with patches or a short last
    // batch vary in tasks): trying again at every batch would pin whenever the budget happened
    // to free up, mid-run. Later growth, if any, is settle()'s.
    g.staging_sized = true;
    const std::size_t own = room + room / 8;
    const std::size_t widest = std::max(room, unshared);
    const std::size_t wide = widest + widest / 8;
    // What the budget could grant at all: asking for more only makes it evict the host cache.
    const std::uint64_t free_now = budget_.limit() - std::min(budget_.limit(), budget_.in_use());
    const auto could_fit = [&](std::size_t bytes) { return bytes <= free_now; };
    if (!staging_planned_) {
      std::size_t sized = 0;  // this slot's arena size, when it got one
      for (const std::size_t want : {wide, own}) {
        if (want <= arena.capacity()) {
          sized = arena.capacity();
          break;
        }
        if (could_fit(want) && budget_.try_acquire(want)) {
          arena.reserve(want, /*charged=*/true);
          sized = want;
          break;
        }
      }
      if (sized) {
        // The run's first batch: the other slots are made now, at this size, where the budget
        // has room. Made later, when a batch first finds the others busy (which depends on
        // timing: it happened in a second epoch in a GPU test), each would pin mid-run.
        staging_planned_ = true;
        staging_room_ = sized;
        while (slots_.add_idle(sized)) {
        }
      }
    } else {
      // A slot made after the run's first batch (the budget had no room then): the planned
      // size, where it lacks it.
      const std::size_t want = std::max(own, staging_room_);
      if (want > arena.capacity() && could_fit(want) && budget_.try_acquire(want)) arena.reserve(want, /*charged=*/true);
    }
  }
  arena.begin();
  std::atomic<std::int64_t> ns_fetch{0}, ns_decode{0};
  auto one = [&](std::size_t j) {
    std::int64_t a = 0, b = 0;
    fetch_unit(f, j, a, b);
    ns_fetch += a;
    ns_decode += b;
  };
  if (threads <= 1 || f.miss.size() <= 1) {
    for (std::size_t j = 0; j < f.miss.size(); ++j) one(j);
  } else {
    pool.parallel_for(f.miss.size(), one);
  }
  // Units that did not fit the arena as it was: grow it, then write them at their offsets.
  std::uint8_t* base = arena.settle();
  for (Staged& s : f.staged) {
    if (!s.pending) continue;
    const Bytes& b = s.route == UnitRoute::kHostDecode ? s.decoded : s.enc.bytes;
    if (s.length) std::memcpy(base + s.offset, b.data(), s.length);
    s.decoded = Bytes();
    s.enc.bytes = Bytes();
    s.pending = false;
    budget_.release(s.charged);
    s.charged = 0;
  }
  for (const Staged& s : f.staged) st.host_chosen += s.to_host && !s.enc.missing;
  take_pinned_counts(st);
  st.ns_fetch += ns_fetch;
  st.ns_decode += ns_decode;
}

// ---- launch: copy, device units, decoders; nothing waits -------------------------------------

void GpuStage::launch(Flight& f, GpuStageStats& st) {
  const auto& tasks = f.plan.tasks;
  const auto& sources = planner_.sources();
  SlotGpu& g = *slot_gpu_[f.slot];
  StagingArena& arena = slots_.arena(f.slot);

  // Meta layout: per decode group src ptrs, src sizes, dst ptrs, dst sizes, statuses; then
  // the assembly's pieces, items, params (at most one per piece) and the two tensor pointers.
  for (std::size_t j = 0; j < f.staged.size(); ++j) {
    if (f.staged[j].route != UnitRoute::kGpuDecode) continue;
    auto& grp = f.group[static_cast<int>(routes_[tasks[f.miss[j]].source].codec)];
    f.staged[j].slot = grp.size();
    grp.push_back(j);
  }
  for (const auto& t : tasks) {
    for (const auto& pc : t.pieces) {
      std::int64_t n = 1;
      for (auto c : pc.count) n *= c;
      ++f.npieces;
      f.nitems += static_cast<std::size_t>((n + kItemElements - 1) / kItemElements);
    }
  }
  std::size_t at = 0;
  for (int k = 0; k < kGroups; ++k) {
    f.group_at[k] = at;
    at += align_up(f.group[k].size() * (4 * sizeof(std::uint64_t) + sizeof(std::uint32_t)));
  }
  f.pieces_at = at;
  f.items_at = align_up(f.pieces_at + f.npieces * sizeof(cuda::AssemblePiece));
  f.params_at = align_up(f.items_at + f.nitems * sizeof(cuda::AssembleItem));
  f.tensors_at = align_up(f.params_at + f.npieces * sizeof(cuda::ConvertParams));
  f.meta_bytes = align_up(f.tensors_at + 2 * sizeof(void*));

  // What crosses PCIe where. The compressed bytes of GPU-decoded units go to the device
  // staging at their arena offsets, in runs of neighbouring claims (one copy per run); a raw
  // or host-decoded unit goes straight from the pinned arena into its own device unit, so its
  // bytes cross once and are not copied again on the device. Claims interleave in fetch
  // order, so the runs are cut where a host-decoded unit lies between compressed ones.
  std::vector<std::size_t> compressed;
  std::size_t stage_bytes = 0;
  for (std::size_t j = 0; j < f.staged.size(); ++j) {
    if (f.staged[j].route != UnitRoute::kGpuDecode) continue;
    compressed.push_back(j);
    stage_bytes = std::max(stage_bytes, f.staged[j].offset + f.staged[j].length);
  }
  std::sort(compressed.begin(), compressed.end(),
            [&](std::size_t a, std::size_t b) { return f.staged[a].offset < f.staged[b].offset; });

  // The slot is idle (open() waited for its last batch): its buffers may be replaced.
  // The first batch of a slot sizes its meta for the batch's samples sharing no unit (see
  // BatchPlan; the meta grows with the units a batch touches), so that later batches of a
  // shuffled run do not pin again.
  std::size_t meta_want = f.meta_bytes;
  if (!g.meta_sized) {
    g.meta_sized = true;
    const std::size_t unshared = f.plan.samples * f.plan.sample_units_max;
    if (!tasks.empty() && unshared > tasks.size()) {
      meta_want = align_up((f.meta_bytes + tasks.size() - 1) / tasks.size() * unshared);
    }
    meta_want = std::max(meta_want, meta_room_);
    if (meta_room_ == 0) {
      // The run's first batch: every slot made so far gets its pinned meta now (see fetch).
      meta_room_ = meta_want;
      ensure_slot_gpu(slots_.size());
      for (std::size_t k = 0; k < slot_gpu_.size(); ++k) {
        if (k == f.slot) continue;
        SlotGpu& o = *slot_gpu_[k];
        try {  // ahead of need: where pinning fails, the slot's first batch tries again
          grow_pinned(o.hmeta, o.hmeta_cap, meta_want);
          o.meta_sized = true;
        } catch (const std::exception&) {
        }
      }
    }
  }
  std::uint8_t* hmeta = grow_pinned(g.hmeta, g.hmeta_cap, meta_want);
  grow_device(g.dmeta, g.dmeta_cap, meta_want, decode_stream_);
  grow_device(g.dstage, g.dstage_cap, std::max<std::size_t>(stage_bytes, 1), copy_stream_);
  auto* dstage = static_cast<std::uint8_t*>(g.dstage);
  auto* dmeta = static_cast<std::uint8_t*>(g.dmeta);
  const std::uint8_t* hstage = arena.data();

  // From here on the batch has GPU work queued: a failure abandons it (see FlightDeleter).
  f.state = Flight::State::kLaunched;
  // A gap up to this size between two compressed claims is copied along rather than cutting
  // the run: a call costs a few microseconds, about what 64 KiB takes over PCIe.
  constexpr std::size_t kRunGap = 64 << 10;
  for (std::size_t r = 0; r < compressed.size();) {
    const std::size_t begin = f.staged[compressed[r]].offset;
    std::size_t end = begin + f.staged[compressed[r]].length;
    std::size_t q = r + 1;
    while (q < compressed.size() && f.staged[compressed[q]].offset <= end + kRunGap) {
      end = std::max(end, f.staged[compressed[q]].offset + f.staged[compressed[q]].length);
      ++q;
    }
    if (end > begin) cuda::copy_to_device_async(dstage + begin, hstage + begin, end - begin, copy_stream_, device_);
    r = q;
  }
  cuda::record_event(g.copied, copy_stream_, device_);
  cuda::stream_wait_event(decode_stream_, g.copied, device_);

  // Device units: GPU-decoded ones are written by the decoders (allocated on the decode
  // stream); raw and host-decoded ones are filled by their copy (allocated on the copy stream,
  // after the compressed runs, so the decoders need not wait for them), all in one batched
  // copy (CUBESTREAM_GPU_COPY=per-unit: one call each, for A/B runs).
  std::vector<void*> copy_dst;
  std::vector<const void*> copy_src;
  std::vector<std::size_t> copy_bytes;
  for (std::size_t j = 0; j < f.staged.size(); ++j) {
    const UnitSource& src = sources[tasks[f.miss[j]].source];
    const Staged& s = f.staged[j];
    const bool gpu = s.route == UnitRoute::kGpuDecode;
    auto u = std::make_shared<DeviceUnit>();
    u->bytes = src.array.unit_bytes();
    u->stream = assemble_stream_;
    u->device = device_;
    if (!gpu && s.length != u->bytes) {
      throw Error(ErrorCode::kSizeMismatch,
                  "stored chunk holds " + std::to_string(s.length) + " bytes, the unit " + std::to_string(u->bytes),
                  ErrorContext{src.array.store().describe(), s.enc.key, std::nullopt});
    }
    u->ptr = cuda::alloc_device_async(u->bytes, gpu ? decode_stream_ : copy_stream_, device_, device_pool_);
    f.units[f.miss[j]] = u;
    ++st.units;
    st.missing += s.enc.missing;
    st.bytes_fetched += s.enc.bytes_fetched;
    st.bytes_decoded += u->bytes;
    if (!gpu) {
      copy_dst.push_back(u->ptr);
      copy_src.push_back(hstage + s.offset);
      copy_bytes.push_back(u->bytes);
      ++st.host_decoded;
    }
  }
  if (batched_unit_copies_) {
    cuda::copy_batch_to_device_async(copy_dst.data(), copy_src.data(), copy_bytes.data(), copy_dst.size(), copy_stream_,
                                     device_);
  } else {
    for (std::size_t i = 0; i < copy_dst.size(); ++i) {
      cuda::copy_to_device_async(copy_dst[i], copy_src[i], copy_bytes[i], copy_stream_, device_);
    }
  }
  cuda::record_event(g.units_copied, copy_stream_, device_);

  // Batched GPU decode, one launch per codec, statuses back into the pinned meta.
  for (int k = 0; k < kGroups; ++k) {
    const std::size_t n = f.group[k].size();
    if (!n) continue;
    auto* h = hmeta + f.group_at[k];
    auto* d = dmeta + f.group_at[k];
    auto* src_ptr = reinterpret_cast<std::uint64_t*>(h);
    auto* src_len = src_ptr + n;
    auto* dst_ptr = src_len + n;
    auto* dst_len = dst_ptr + n;
    std::size_t total = 0;
    for (std::size_t q = 0; q < n; ++q) {
      const Staged& x = f.staged[f.group[k][q]];
      const auto& u = f.units[f.miss[f.group[k][q]]];
      src_ptr[q] = reinterpret_cast<std::uint64_t>(dstage + x.offset);
      src_len[q] = x.length;
      dst_ptr[q] = reinterpret_cast<std::uint64_t>(u->ptr);
      dst_len[q] = u->bytes;
      total += u->bytes;
    }
    cuda::copy_to_device_async(d, h, n * 4 * sizeof(std::uint64_t), decode_stream_, device_);
    const auto codec = static_cast<cuda::BatchCodec>(k);
    const std::size_t sb = cuda::batch_decode_scratch_bytes(codec, n, total);
    // Earlier decodes on this stream used the old scratch: freeing it stream-ordered is safe.
    grow_device(scratch_, scratch_cap_, std::max<std::size_t>(sb, 1), decode_stream_);
    cuda::DeviceBatch b;
    b.src = reinterpret_cast<const std::uint8_t* const*>(d);
    b.src_bytes = reinterpret_cast<const std::size_t*>(d + n * sizeof(std::uint64_t));
    b.dst = reinterpret_cast<std::uint8_t* const*>(d + 2 * n * sizeof(std::uint64_t));
    b.dst_bytes = reinterpret_cast<const std::size_t*>(d + 3 * n * sizeof(std::uint64_t));
    b.status = reinterpret_cast<cuda::DecodeStatus*>(d + 4 * n * sizeof(std::uint64_t));
    b.num_buffers = n;
    cuda::batch_decode(codec, b, scratch_, scratch_cap_, reinterpret_cast<cuda::StreamHandle>(decode_stream_));
    cuda::copy_to_host_async(h + 4 * n * sizeof(std::uint64_t), b.status, n * sizeof(std::uint32_t), decode_stream_,
                             device_);
  }
  // "decoded" means every unit of the batch is complete, the copied ones included.
  cuda::stream_wait_event(decode_stream_, g.units_copied, device_);
  cuda::record_event(g.decoded, decode_stream_, device_);
  f.decode_queued = true;
  take_pinned_counts(st);
  // Cached from now on, so that the next batch in flight finds them; finish() or abandon()
  // settles whether they stay.
  for (std::size_t j = 0; j < f.miss.size(); ++j) cache_insert(tasks[f.miss[j]].cache_key, f.units[f.miss[j]]);
}

bool GpuStage::done(const Flight& f) const {
  return f.state != Flight::State::kLaunched || cuda::event_query(slot_gpu_[f.slot]->decoded);
}

// ---- finish: statuses, host fallback, assembly ----------------------------------------------

void GpuStage::check_statuses(Flight& f, GpuStageStats& st) {
  const auto& sources = planner_.sources();
  SlotGpu& g = *slot_gpu_[f.slot];
  const auto* hmeta = static_cast<const std::uint8_t*>(g.hmeta);
  std::vector<std::size_t> unsupported;
  for (int k = 0; k < kGroups; ++k) {
    const std::size_t n = f.group[k].size();
    const auto* status = reinterpret_cast<const std::uint32_t*>(hmeta + f.group_at[k] + 4 * n * sizeof(std::uint64_t));
    for (std::size_t q = 0; q < n; ++q) {
      const std::size_t j = f.group[k][q];
      const auto s = static_cast<cuda::DecodeStatus>(status[q]);
      if (s == cuda::DecodeStatus::kOk) {
        ++st.gpu_decoded;
      } else if (s == cuda::DecodeStatus::kUnsupported) {
        unsupported.push_back(j);
      } else {
        const UnitSource& src = sources[f.plan.tasks[f.miss[j]].source];
        throw Error(s == cuda::DecodeStatus::kWrongSize ? ErrorCode::kSizeMismatch : ErrorCode::kCorruptData,
                    std::string("GPU ") + cuda::batch_codec_name(static_cast<cuda::BatchCodec>(k)) +
                        " decode: " + codec::logic::decode_status_name(s),
                    ErrorContext{src.array.store().describe(), f.staged[j].enc.key, f.staged[j].enc.offset});
      }
    }
  }
  if (unsupported.empty()) return;
  // The CPU path decodes what the GPU leaves, buffer by buffer, to the same bytes: from the
  // staged copy (the arena is the slot's until finish ends), all before any copy is queued.
  const std::uint8_t* base = slots_.arena(f.slot).data();
  std::vector<Bytes> out(unsupported.size());
  for (std::size_t i = 0; i < unsupported.size(); ++i) {
    const std::size_t j = unsupported[i];
    const UnitSource& src = sources[f.plan.tasks[f.miss[j]].source];
    Array::EncodedUnit enc = f.staged[j].enc;
    enc.bytes.assign(base + f.staged[j].offset, base + f.staged[j].offset + f.staged[j].length);
    out[i].resize(src.array.unit_bytes());
    src.array.decode_unit(enc, out[i].data(), out[i].size());
  }
  for (std::size_t i = 0; i < unsupported.size(); ++i) {
    cuda::copy_to_device_async(f.units[f.miss[unsupported[i]]]->ptr, out[i].data(), out[i].size(), assemble_stream_,
                               device_);
    ++st.fallbacks;
  }
  // The copies read pageable memory that goes away here; rare path: wait for them.
  cuda::stream_synchronize(assemble_stream_, device_);
}

void GpuStage::enqueue_assembly(Flight& f, void* d_inputs, void* d_targets) {
  const auto& tasks = f.plan.tasks;
  const auto& sources = planner_.sources();
  SlotGpu& g = *slot_gpu_[f.slot];
  auto* hmeta = static_cast<std::uint8_t*>(g.hmeta);
  auto* dmeta = static_cast<std::uint8_t*>(g.dmeta);
  auto* hp = reinterpret_cast<cuda::AssemblePiece*>(hmeta + f.pieces_at);
  auto* hi = reinterpret_cast<cuda::AssembleItem*>(hmeta + f.items_at);
  auto* hpar = reinterpret_cast<cuda::ConvertParams*>(hmeta + f.params_at);
  std::map<std::pair<std::size_t, std::uint32_t>, std::uint32_t> pidx;
  std::size_t p = 0, it = 0;
  const auto& channels = selection_.channels();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const UnitSource& src = sources[tasks[i].source];
    for (const auto& pc : tasks[i].pieces) {
      const auto key = std::make_pair(tasks[i].source, pc.channel);
      auto found = pidx.find(key);
      if (found == pidx.end()) {
        cuda::ConvertParams c;
        const DataType& dt = src.array.dtype();
        c.kind = *elem_kind(dt, src.encoding);
        c.size = static_cast<std::uint8_t>(dt.size);
        for (double m : src.encoding.missing_values) {
          if (!std::isnan(m)) c.missing[c.num_missing++] = m;
        }
        c.affine = src.encoding.scale_factor.has_value() || src.encoding.add_offset.has_value();
        c.scale = src.encoding.scale_factor.value_or(1.0);
        c.offset = src.encoding.add_offset.value_or(0.0);
        c.mean = channels[pc.channel].norm.mean;
        c.std = channels[pc.channel].norm.std;
        c.has_fill = cfg_.selection.nan_fill.has_value();
        c.fill = cfg_.selection.nan_fill.value_or(0.0f);
        const auto idx = static_cast<std::uint32_t>(pidx.size());
        hpar[idx] = c;
        found = pidx.emplace(key, idx).first;
      }
      cuda::AssemblePiece& a = hp[p];
      a = cuda::AssemblePiece{};
      a.src = static_cast<const std::uint8_t*>(f.units[i]->ptr);
      a.src_offset = pc.src_offset;
      a.dst_offset = pc.dst_offset;
      a.ndims = static_cast<std::int32_t>(pc.count.size());
      std::int64_t n = 1;
      for (std::size_t l = 0; l < pc.count.size(); ++l) {
        a.count[l] = pc.count[l];
        a.src_stride[l] = pc.src_stride[l];
        a.dst_stride[l] = pc.dst_stride[l];
        n *= pc.count[l];
      }
      a.tensor = static_cast<std::uint32_t>(pc.tensor);
      a.params = found->second;
      for (std::int64_t b = 0; b < n; b += kItemElements) {
        hi[it++] = cuda::AssembleItem{static_cast<std::uint32_t>(p), b, std::min(n, b + kItemElements)};
      }
      ++p;
    }
  }
  auto* htens = reinterpret_cast<void**>(hmeta + f.tensors_at);
  htens[0] = d_inputs;
  htens[1] = d_targets;
  cuda::copy_to_device_async(dmeta + f.pieces_at, hmeta + f.pieces_at, f.meta_bytes - f.pieces_at, assemble_stream_,
                             device_);
  const cuda::OutKind out = cfg_.dtype == OutputDType::kFloat32    ? cuda::OutKind::kFloat32
                            : cfg_.dtype == OutputDType::kBFloat16 ? cuda::OutKind::kBFloat16
                                                                   : cuda::OutKind::kFloat16;
  cuda::assemble_batch(reinterpret_cast<const cuda::AssemblePiece*>(dmeta + f.pieces_at),
                       reinterpret_cast<const cuda::AssembleItem*>(dmeta + f.items_at), it,
                       reinterpret_cast<const cuda::ConvertParams*>(dmeta + f.params_at),
                       reinterpret_cast<void* const*>(dmeta + f.tensors_at), out,
                       reinterpret_cast<CUstream_st*>(assemble_stream_));
}

void GpuStage::finish(Flight& f, void* d_inputs, void* d_targets, void* buffer_free, void* ready, GpuStageStats& st) {
  SlotGpu& g = *slot_gpu_[f.slot];
  const std::int64_t t0 = now_ns();
  // The one wait of a batch: its own decode event, usually passed while later batches fetched.
  cuda::event_synchronize(g.decoded);
  check_statuses(f, st);
  const std::int64_t t1 = now_ns();
  st.ns_decode += t1 - t0;
  // Units of this batch (and cached ones from batches still decoding, whose decode event
  // came earlier on the same decode stream) are complete once g.decoded has passed.
  cuda::stream_wait_event(assemble_stream_, g.decoded, device_);
  if (buffer_free) cuda::stream_wait_event(assemble_stream_, buffer_free, device_);
  enqueue_assembly(f, d_inputs, d_targets);
  cuda::record_event(ready, assemble_stream_, device_);
  cuda::record_event(g.assembled, assemble_stream_, device_);
  g.last = g.assembled;
  st.ns_assemble += now_ns() - t1;
  f.state = Flight::State::kFinished;
  slots_.release(f.slot);
  // The units' references go here: a unit no longer cached is freed stream-ordered, after
  // the assembly kernel just queued.
  f.units.clear();
}

// A batch dropped before finish() (stop, restart, an error in it or before it): the units it
// decoded stay cached only where the GPU said kOk (a restart at the same place, as set_epoch
// at each epoch start gives, finds them again); the others, or all of them when launch()
// stopped half-way, leave the cache. Their frees and the slot's reuse wait for its GPU work.
void GpuStage::abandon(Flight& f) noexcept {
  if (f.state == Flight::State::kLaunched) {
    std::vector<bool> keep(f.miss.size(), false);
    try {
      if (f.decode_queued) {
        SlotGpu& g = *slot_gpu_[f.slot];
        cuda::event_synchronize(g.decoded);
        const auto* hmeta = static_cast<const std::uint8_t*>(g.hmeta);
        for (int k = 0; k < kGroups; ++k) {
          const std::size_t n = f.group[k].size();
          const auto* status =
              reinterpret_cast<const std::uint32_t*>(hmeta + f.group_at[k] + 4 * n * sizeof(std::uint64_t));
          for (std::size_t q = 0; q < n; ++q) keep[f.group[k][q]] = status[q] == static_cast<std::uint32_t>(cuda::DecodeStatus::kOk);
        }
        // Raw and host-decoded units: their copies came before g.decoded.
        for (std::size_t j = 0; j < f.staged.size(); ++j) keep[j] = keep[j] || f.staged[j].route != UnitRoute::kGpuDecode;
      }
    } catch (...) {
      keep.assign(f.miss.size(), false);
    }
    for (std::size_t j = 0; j < f.miss.size(); ++j) {
      if (!keep[j] && f.units[f.miss[j]]) cache_forget(f.plan.tasks[f.miss[j]].cache_key, f.units[f.miss[j]].get());
    }
  }
  try {
    if (f.state == Flight::State::kLaunched) {
      SlotGpu& g = *slot_gpu_[f.slot];
      // Launch may have stopped half-way: mark the end of whatever it queued on both streams.
      cuda::record_event(g.copied, copy_stream_, device_);
      cuda::stream_wait_event(decode_stream_, g.copied, device_);
      cuda::record_event(g.decoded, decode_stream_, device_);
      cuda::stream_wait_event(assemble_stream_, g.decoded, device_);
      g.last = g.decoded;
    }
  } catch (...) {
    // The context is failing: nothing can use these units any more.
  }
  for (Staged& s : f.staged) {
    budget_.release(s.charged);
    s.charged = 0;
  }
  f.units.clear();
  slots_.release(f.slot);
}

}  // namespace cubestream::pipeline
