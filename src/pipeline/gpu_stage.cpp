#include "pipeline/gpu_stage.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/thread_pool.hpp"
#include "cubestream/error.hpp"
#include "cuda/memory.hpp"
#include "zarr/cf_decode.hpp"
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
  SourceRoute r;
  nlohmann::json codecs = source.array.metadata().codecs;
  if (codecs.size() == 1 && codecs[0].value("name", "") == "sharding_indexed") {
    codecs = codecs[0]["configuration"].value("codecs", nlohmann::json::array());
  }
  auto host = [&](std::string why) {
    r.route = UnitRoute::kHostDecode;
    r.why = std::move(why);
    return r;
  };
  if (codecs.empty() || codecs[0].value("name", "") != "bytes") {
    return host("its codec chain does not start with \"bytes\" (" + codecs.dump() + ")");
  }
  const auto cfg = codecs[0].value("configuration", nlohmann::json::object());
  if (cfg.value("endian", "little") == "big" && source.array.dtype().size > 1) {
    return host("big-endian values");
  }
  if (codecs.size() == 1) {
    r.route = UnitRoute::kRaw;
    return r;
  }
  if (codecs.size() > 2) return host("a chain of " + std::to_string(codecs.size()) + " codecs");
  const std::string id = codecs[1].value("name", "");
  try {
    r.codec = cuda::batch_codec_for_id(id);
  } catch (const Error&) {
    return host("codec \"" + id + "\" has no GPU decoder");
  }
  if (r.codec == cuda::BatchCodec::kZstd && !gpu_zstd) {
    return host("zstd decoding on the GPU is switched off");
  }
  r.route = UnitRoute::kGpuDecode;
  r.codec_config = codecs[1].dump();
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
  void* stream = nullptr;
  int device = 0;
  ~DeviceUnit() { cuda::free_device_async(ptr, stream, device); }  // after the kernels queued so far
};

GpuStage::GpuStage(const BatchPlanner& planner, const Selection& selection, const LoaderConfig& config, void* stream,
                   MemoryBudget& budget, std::uint64_t cache_bytes, bool gpu_zstd)
    : planner_(planner),
      selection_(selection),
      cfg_(config),
      stream_(stream),
      device_(config.device_index),
      budget_(budget),
      cache_capacity_(cache_bytes) {
  for (const auto& s : planner_.sources()) {
    routes_.push_back(route_of(s, gpu_zstd));
  }
}

GpuStage::~GpuStage() {
  try {
    cuda::stream_synchronize(stream_, device_);
  } catch (...) {
  }
  lru_.clear();
  index_.clear();
  cuda::free_pinned(host_stage_);
  cuda::free_pinned(host_meta_);
  cuda::free_device(dev_stage_, device_);
  cuda::free_device(dev_meta_, device_);
  cuda::free_device(scratch_, device_);
  budget_.release(pinned_charged_);
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

void* GpuStage::device_scratch(std::size_t bytes, void*& buf, std::size_t& cap) {
  if (bytes > cap) {
    cuda::free_device(buf, device_);  // the stream is idle here (run() synchronised it)
    buf = nullptr;
    cap = 0;
    buf = cuda::alloc_device(std::max(bytes, cap * 5 / 4), device_);
    cap = std::max(bytes, cap * 5 / 4);
  }
  return buf;
}

std::uint8_t* GpuStage::pinned(std::size_t bytes, void*& buf, std::size_t& cap) {
  if (bytes > cap) {
    cuda::free_pinned(buf);
    budget_.release(cap);
    pinned_charged_ -= cap;
    buf = nullptr;
    cap = 0;
    budget_.force(bytes);  // pinned staging: one batch's worth, charged to the memory bound
    pinned_charged_ += bytes;
    buf = cuda::alloc_pinned(bytes);
    cap = bytes;
  }
  return static_cast<std::uint8_t*>(buf);
}

void GpuStage::run(const BatchPlan& plan, void* d_inputs, void* d_targets, ThreadPool& pool, int threads,
                   GpuStageStats& st) {
  const auto& tasks = plan.tasks;
  const auto& sources = planner_.sources();
  std::vector<std::shared_ptr<DeviceUnit>> units(tasks.size());
  std::vector<std::size_t> miss;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    units[i] = cache_find(tasks[i].cache_key);
    if (units[i]) ++st.hits;
    else miss.push_back(i);
  }

  // ---- fetch (host threads); host decode for units the GPU does not take -------------------
  struct Fetched {
    Array::EncodedUnit enc;
    Bytes decoded;       // kHostDecode (and missing units: the fill value)
    UnitRoute route = UnitRoute::kHostDecode;
    std::size_t offset = 0, length = 0;
    std::size_t slot = 0;  // index of the buffer within its GPU decode group
  };
  std::vector<Fetched> f(miss.size());
  std::atomic<std::uint64_t> charged{0};
  std::atomic<std::int64_t> ns_fetch{0}, ns_host_decode{0};
  auto fetch = [&](std::size_t j) {
    const UnitTask& t = tasks[miss[j]];
    const UnitSource& src = sources[t.source];
    const std::int64_t t0 = now_ns();
    f[j].enc = src.array.fetch_unit(t.unit);
    const std::int64_t t1 = now_ns();
    ns_fetch += t1 - t0;
    budget_.force(f[j].enc.bytes.size());
    charged += f[j].enc.bytes.size();
    f[j].route = routes_[t.source].route;
    if (f[j].enc.missing || f[j].route == UnitRoute::kHostDecode) {
      f[j].route = UnitRoute::kHostDecode;
      budget_.force(src.array.unit_bytes());
      charged += src.array.unit_bytes();
      f[j].decoded.resize(src.array.unit_bytes());
      src.array.decode_unit(f[j].enc, f[j].decoded.data(), f[j].decoded.size());
      ns_host_decode += now_ns() - t1;
    }
  };
  struct Release {
    MemoryBudget& b;
    std::atomic<std::uint64_t>& n;
    ~Release() { b.release(n.load()); }
  } release{budget_, charged};
  if (threads <= 1 || miss.size() <= 1) {
    for (std::size_t j = 0; j < miss.size(); ++j) fetch(j);
  } else {
    pool.parallel_for(miss.size(), fetch);
  }
  st.ns_fetch += ns_fetch;
  st.ns_decode += ns_host_decode;
  // The fetch above overlapped the previous batch's assembly on the GPU; from here on the
  // staging and meta buffers are reused, so that work must be done.
  cuda::stream_synchronize(stream_, device_);

  // ---- layout of the staging area and of the two meta areas ----------------------------------
  std::size_t stage_bytes = 0;
  constexpr int kGroups = 3;  // lz4, blosc, zstd
  std::vector<std::size_t> group[kGroups];
  for (std::size_t j = 0; j < f.size(); ++j) {
    const Bytes& payload = f[j].route == UnitRoute::kHostDecode ? f[j].decoded : f[j].enc.bytes;
    f[j].offset = stage_bytes;
    f[j].length = payload.size();
    stage_bytes = align_up(stage_bytes + payload.size());
    if (f[j].route == UnitRoute::kGpuDecode) {
      auto& g = group[static_cast<int>(routes_[tasks[miss[j]].source].codec)];
      f[j].slot = g.size();
      g.push_back(j);
    }
  }
  std::size_t npieces = 0, nitems = 0;
  for (const auto& t : tasks) {
    for (const auto& pc : t.pieces) {
      std::int64_t n = 1;
      for (auto c : pc.count) n *= c;
      ++npieces;
      nitems += static_cast<std::size_t>((n + kItemElements - 1) / kItemElements);
    }
  }
  // Decode meta per group: src ptrs, src sizes, dst ptrs, dst sizes, statuses.
  std::size_t decode_meta = 0;
  std::size_t group_at[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    group_at[g] = decode_meta;
    decode_meta += align_up(group[g].size() * (4 * sizeof(std::uint64_t) + sizeof(std::uint32_t)));
  }
  const std::size_t pieces_at = decode_meta;
  const std::size_t items_at = align_up(pieces_at + npieces * sizeof(cuda::AssemblePiece));
  const std::size_t params_at = align_up(items_at + nitems * sizeof(cuda::AssembleItem));
  // Params are built below per (source, channel) met in this batch: at most one per piece.
  const std::size_t tensors_at = align_up(params_at + npieces * sizeof(cuda::ConvertParams));
  const std::size_t meta_bytes = align_up(tensors_at + 2 * sizeof(void*));

  std::uint8_t* hstage = pinned(std::max<std::size_t>(stage_bytes, 1), host_stage_, host_stage_cap_);
  std::uint8_t* hmeta = pinned(meta_bytes, host_meta_, host_meta_cap_);
  auto* dstage = static_cast<std::uint8_t*>(device_scratch(std::max<std::size_t>(stage_bytes, 1), dev_stage_, dev_stage_cap_));
  auto* dmeta = static_cast<std::uint8_t*>(device_scratch(meta_bytes, dev_meta_, dev_meta_cap_));

  auto stage_copy = [&](std::size_t j) {
    const Bytes& payload = f[j].route == UnitRoute::kHostDecode ? f[j].decoded : f[j].enc.bytes;
    if (!payload.empty()) std::memcpy(hstage + f[j].offset, payload.data(), payload.size());
  };
  if (threads <= 1 || f.size() <= 1) {
    for (std::size_t j = 0; j < f.size(); ++j) stage_copy(j);
  } else {
    pool.parallel_for(f.size(), stage_copy);
  }
  const std::int64_t td0 = now_ns();
  if (stage_bytes) cuda::copy_to_device_async(dstage, hstage, stage_bytes, stream_, device_);

  // ---- device units; raw and host-decoded ones are copies of their staged bytes ---------------
  for (std::size_t j = 0; j < f.size(); ++j) {
    const UnitSource& src = sources[tasks[miss[j]].source];
    auto u = std::make_shared<DeviceUnit>();
    u->bytes = src.array.unit_bytes();
    u->stream = stream_;
    u->device = device_;
    u->ptr = cuda::alloc_device_async(u->bytes, stream_, device_);
    units[miss[j]] = u;
    ++st.units;
    st.missing += f[j].enc.missing;
    st.bytes_fetched += f[j].enc.bytes_fetched;
    st.bytes_decoded += u->bytes;
    if (f[j].route != UnitRoute::kGpuDecode) {
      if (f[j].length != u->bytes) {
        throw Error(ErrorCode::kSizeMismatch,
                    "stored chunk holds " + std::to_string(f[j].length) + " bytes, the unit " + std::to_string(u->bytes),
                    ErrorContext{src.array.store().describe(), f[j].enc.key, std::nullopt});
      }
      cuda::copy_device_to_device_async(u->ptr, dstage + f[j].offset, u->bytes, stream_, device_);
      ++st.host_decoded;
    }
  }

  // ---- batched GPU decode, one launch per codec ----------------------------------------------
  bool any_gpu = false;
  for (int g = 0; g < kGroups; ++g) {
    const std::size_t n = group[g].size();
    if (!n) continue;
    any_gpu = true;
    auto* h = hmeta + group_at[g];
    auto* d = dmeta + group_at[g];
    auto* src_ptr = reinterpret_cast<std::uint64_t*>(h);
    auto* src_len = src_ptr + n;
    auto* dst_ptr = src_len + n;
    auto* dst_len = dst_ptr + n;
    std::size_t total = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const Fetched& x = f[group[g][k]];
      const auto& u = units[miss[group[g][k]]];
      src_ptr[k] = reinterpret_cast<std::uint64_t>(dstage + x.offset);
      src_len[k] = x.length;
      dst_ptr[k] = reinterpret_cast<std::uint64_t>(u->ptr);
      dst_len[k] = u->bytes;
      total += u->bytes;
    }
    cuda::copy_to_device_async(d, h, n * 4 * sizeof(std::uint64_t), stream_, device_);
    const auto codec = static_cast<cuda::BatchCodec>(g);
    const std::size_t sb = cuda::batch_decode_scratch_bytes(codec, n, total);
    void* scratch = device_scratch(sb, scratch_, scratch_cap_);
    cuda::DeviceBatch b;
    b.src = reinterpret_cast<const std::uint8_t* const*>(d);
    b.src_bytes = reinterpret_cast<const std::size_t*>(d + n * sizeof(std::uint64_t));
    b.dst = reinterpret_cast<std::uint8_t* const*>(d + 2 * n * sizeof(std::uint64_t));
    b.dst_bytes = reinterpret_cast<const std::size_t*>(d + 3 * n * sizeof(std::uint64_t));
    b.status = reinterpret_cast<cuda::DecodeStatus*>(d + 4 * n * sizeof(std::uint64_t));
    b.num_buffers = n;
    cuda::batch_decode(codec, b, scratch, sb, reinterpret_cast<cuda::StreamHandle>(stream_));
    cuda::copy_to_host_async(h + 4 * n * sizeof(std::uint64_t), b.status, n * sizeof(std::uint32_t), stream_, device_);
  }
  if (any_gpu) {
    cuda::stream_synchronize(stream_, device_);
    std::vector<Bytes> fallback_bytes;  // alive until the copies below are done
    for (int g = 0; g < kGroups; ++g) {
      const std::size_t n = group[g].size();
      const auto* status = reinterpret_cast<const std::uint32_t*>(hmeta + group_at[g] + 4 * n * sizeof(std::uint64_t));
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t j = group[g][k];
        const UnitSource& src = sources[tasks[miss[j]].source];
        const auto s = static_cast<cuda::DecodeStatus>(status[k]);
        if (s == cuda::DecodeStatus::kOk) {
          ++st.gpu_decoded;
          continue;
        }
        if (s == cuda::DecodeStatus::kUnsupported) {
          // The CPU path decodes what the GPU leaves, buffer by buffer, to the same bytes.
          Bytes out(src.array.unit_bytes());
          src.array.decode_unit(f[j].enc, out.data(), out.size());
          cuda::copy_to_device_async(units[miss[j]]->ptr, out.data(), out.size(), stream_, device_);
          fallback_bytes.push_back(std::move(out));
          ++st.fallbacks;
          continue;
        }
        throw Error(s == cuda::DecodeStatus::kWrongSize ? ErrorCode::kSizeMismatch : ErrorCode::kCorruptData,
                    std::string("GPU ") + cuda::batch_codec_name(static_cast<cuda::BatchCodec>(g)) +
                        " decode: " + codec::logic::decode_status_name(s),
                    ErrorContext{src.array.store().describe(), f[j].enc.key, f[j].enc.offset});
      }
    }
    if (!fallback_bytes.empty()) cuda::stream_synchronize(stream_, device_);
  }
  st.ns_decode += now_ns() - td0;
  for (std::size_t j = 0; j < f.size(); ++j) cache_insert(tasks[miss[j]].cache_key, units[miss[j]]);

  // ---- assembly ------------------------------------------------------------------------------
  const std::int64_t ta0 = now_ns();
  auto* hp = reinterpret_cast<cuda::AssemblePiece*>(hmeta + pieces_at);
  auto* hi = reinterpret_cast<cuda::AssembleItem*>(hmeta + items_at);
  auto* hpar = reinterpret_cast<cuda::ConvertParams*>(hmeta + params_at);
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
      a.src = static_cast<const std::uint8_t*>(units[i]->ptr);
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
  auto* htens = reinterpret_cast<void**>(hmeta + tensors_at);
  htens[0] = d_inputs;
  htens[1] = d_targets;
  cuda::copy_to_device_async(dmeta + pieces_at, hmeta + pieces_at, meta_bytes - pieces_at, stream_, device_);
  cuda::OutKind out = cfg_.dtype == OutputDType::kFloat32    ? cuda::OutKind::kFloat32
                      : cfg_.dtype == OutputDType::kBFloat16 ? cuda::OutKind::kBFloat16
                                                             : cuda::OutKind::kFloat16;
  cuda::assemble_batch(reinterpret_cast<const cuda::AssemblePiece*>(dmeta + pieces_at),
                       reinterpret_cast<const cuda::AssembleItem*>(dmeta + items_at), it,
                       reinterpret_cast<const cuda::ConvertParams*>(dmeta + params_at),
                       reinterpret_cast<void* const*>(dmeta + tensors_at), out,
                       reinterpret_cast<CUstream_st*>(stream_));
  st.ns_assemble += now_ns() - ta0;
  // `units` drops its references here: a unit no longer cached is freed stream-ordered, after
  // the assembly kernel just queued.
}

}  // namespace cubestream::pipeline
