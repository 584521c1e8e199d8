#include "pipeline/batch_plan.hpp"

#include <algorithm>
#include <map>

#include "cubestream/error.hpp"

namespace cubestream::pipeline {

namespace {

std::int64_t index_of(const std::vector<std::string>& v, const std::string& x) {
  auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : static_cast<std::int64_t>(it - v.begin());
}

}  // namespace

BatchPlanner::BatchPlanner(const Selection& selection, const Sampler& sampler) : sel_(selection), sampler_(sampler) {
  const auto& sdims = sel_.sampler_dims();
  const auto& shape = sel_.sample_shape();
  for (auto e : shape) block_ *= e;
  out_stride_.assign(shape.size(), 1);
  for (std::size_t l = shape.size(); l-- > 1;) out_stride_[l - 1] = out_stride_[l] * shape[l];
  for (std::size_t k = 0, l = 0; k < sdims.size(); ++k) {
    if (sel_.squeezed_dim() && sdims[k].name == *sel_.squeezed_dim()) {
      layout_pos_.push_back(-1);
    } else {
      layout_pos_.push_back(static_cast<std::int64_t>(l++));
    }
    if (sdims[k].name == sel_.source().time_dim()) time_k_ = static_cast<std::int64_t>(k);
  }
  // One source per (variable, part); several channels of a variable share it.
  std::map<std::pair<std::string, std::size_t>, std::size_t> made;  // (variable or "static:"+v, part)
  const auto& src = sel_.source();
  for (const Channel& ch : sel_.channels()) {
    std::vector<std::size_t> per_part;
    const std::size_t parts = ch.from_static ? 1 : src.num_parts();
    for (std::size_t p = 0; p < parts; ++p) {
      const auto key = std::make_pair((ch.from_static ? "static:" : "") + ch.variable, p);
      auto it = made.find(key);
      if (it == made.end()) {
        const Dataset& ds = ch.from_static ? *sel_.statics() : src.part(p);
        const Variable& v = ds.variable(ch.variable);
        std::string desc = ch.variable;
        if (ch.from_static) desc += " (static)";
        else if (parts > 1) desc += " (part " + std::to_string(p) + ")";
        sources_.push_back(UnitSource{v.array, ds.cf_encoding(ch.variable), desc, ch.from_static});
        it = made.emplace(key, sources_.size() - 1).first;
      }
      per_part.push_back(it->second);
    }
    source_index_.push_back(std::move(per_part));
  }
}

BatchPlan BatchPlanner::plan(const std::vector<Sample>& samples) const {
  const auto& sdims = sel_.sampler_dims();
  const std::size_t nd = sdims.size();
  const auto& shape = sel_.sample_shape();
  const std::size_t nl = shape.size();
  const auto& channels = sel_.channels();
  const std::int64_t nc = static_cast<std::int64_t>(channels.size());
  const auto& src = sel_.source();
  const std::string& time_dim = src.time_dim();

  BatchPlan plan;
  std::map<std::string, std::size_t> task_of;  // cache key -> task index

  plan.samples = samples.size();
  std::vector<std::size_t> touched_by;  // per task: 1 + the last sample that touched it
  for (std::size_t b = 0; b < samples.size(); ++b) {
    std::size_t units = 0;
    std::uint64_t bytes = 0;
    for (int tensor = 0; tensor < 2; ++tensor) {
      const std::vector<Region> steps =
          tensor == 0 ? sampler_.input_regions(samples[b]) : sampler_.target_regions(samples[b]);
      const auto nsteps = static_cast<std::int64_t>(steps.size());
      for (std::int64_t s = 0; s < nsteps; ++s) {
        const Region& r = steps[static_cast<std::size_t>(s)];
        for (std::int64_t c = 0; c < nc; ++c) {
          const Channel& ch = channels[static_cast<std::size_t>(c)];
          const std::int64_t block_base = ((static_cast<std::int64_t>(b) * nsteps + s) * nc + c) * block_;
          const Dataset& ds0 = ch.from_static ? *sel_.statics() : src.part(0);
          const Variable& v0 = ds0.variable(ch.variable);
          const std::int64_t time_axis = index_of(v0.dims, time_dim);
          // The time parts this step touches: [global_lo, global_hi) of part `part`,
          // starting at `local_lo` inside it. One piece without time or with one store.
          struct TimePiece { std::size_t part; std::int64_t global_lo, global_hi, local_lo; };
          std::vector<TimePiece> tpieces;
          const bool split_time = !ch.from_static && time_axis >= 0 && time_k_ >= 0 && src.has_time();
          if (split_time) {
            std::int64_t t = r.start[static_cast<std::size_t>(time_k_)];
            const std::int64_t end = t + r.shape[static_cast<std::size_t>(time_k_)];
            while (t < end) {
              const auto loc = src.locate(t);
              const std::int64_t hi = std::min(end, src.part_start(loc.part + 1));
              tpieces.push_back({loc.part, t, hi, loc.index});
              t = hi;
            }
          } else {
            tpieces.push_back({0, 0, 0, 0});
          }
          for (const TimePiece& tp : tpieces) {
            const std::size_t sid = source_index_[static_cast<std::size_t>(c)][tp.part];
            const UnitSource& us = sources_[sid];
            const Variable& v = (ch.from_static ? *sel_.statics() : src.part(tp.part)).variable(ch.variable);
            const std::size_t rank = v.dims.size();
            // The variable's region (array coordinates) for this step and channel.
            std::vector<std::int64_t> lo(rank), hi(rank);
            for (std::size_t a = 0; a < rank; ++a) {
              const std::string& dim = v.dims[a];
              if (split_time && static_cast<std::int64_t>(a) == time_axis) {
                lo[a] = tp.local_lo;
                hi[a] = tp.local_lo + (tp.global_hi - tp.global_lo);
                continue;
              }
              const std::int64_t k = [&] {
                for (std::size_t q = 0; q < nd; ++q)
                  if (sdims[q].name == dim) return static_cast<std::int64_t>(q);
                return std::int64_t{-1};
              }();
              if (k >= 0) {
                lo[a] = r.start[static_cast<std::size_t>(k)];
                hi[a] = lo[a] + r.shape[static_cast<std::size_t>(k)];
                continue;
              }
              bool found = false;
              for (const auto& [cd, idx] : ch.indices) {
                if (cd == dim) {
                  lo[a] = idx;
                  hi[a] = idx + 1;
                  found = true;
                  break;
                }
              }
              if (!found) {
                throw Error(ErrorCode::kInternal, "variable " + us.description + " has dim \"" + dim +
                                                      "\" that is neither a sample dim nor a channel dim");
              }
            }
            // Layout dim -> variable axis (or -1: broadcast), and the time piece's offset.
            std::vector<std::int64_t> axis_of(nl, -1), dst_start0(nl, 0);
            for (std::size_t k = 0; k < nd; ++k) {
              if (layout_pos_[k] < 0) continue;
              const auto l = static_cast<std::size_t>(layout_pos_[k]);
              axis_of[l] = index_of(v.dims, sdims[k].name);
              if (split_time && static_cast<std::int64_t>(k) == time_k_ && axis_of[l] >= 0) {
                dst_start0[l] = tp.global_lo - r.start[k];
              }
            }
            const auto& ushape = us.array.unit_shape();
            std::vector<std::int64_t> ustride(rank, 1);
            for (std::size_t a = rank; a-- > 1;) ustride[a - 1] = ustride[a] * ushape[a];
            // Walk the units the region touches.
            std::vector<std::int64_t> ulo(rank), uhi(rank);
            bool empty = false;
            for (std::size_t a = 0; a < rank; ++a) {
              if (hi[a] <= lo[a]) empty = true;
              ulo[a] = lo[a] / ushape[a];
              uhi[a] = empty ? ulo[a] : (hi[a] - 1) / ushape[a] + 1;
            }
            if (empty) continue;
            std::vector<std::int64_t> u(ulo);
            for (;;) {
              Piece pc;
              pc.tensor = tensor;
              pc.channel = static_cast<std::uint32_t>(c);
              pc.count.assign(nl, 0);
              pc.src_stride.assign(nl, 0);
              pc.dst_stride = out_stride_;
              std::int64_t so = 0, dofs = block_base;
              std::vector<std::int64_t> olo(rank), ohi(rank);
              for (std::size_t a = 0; a < rank; ++a) {
                olo[a] = std::max(lo[a], u[a] * ushape[a]);
                ohi[a] = std::min(hi[a], (u[a] + 1) * ushape[a]);
                so += (olo[a] - u[a] * ushape[a]) * ustride[a];
              }
              for (std::size_t l = 0; l < nl; ++l) {
                if (axis_of[l] < 0) {
                  pc.count[l] = shape[l];
                  continue;
                }
                const auto a = static_cast<std::size_t>(axis_of[l]);
                pc.count[l] = ohi[a] - olo[a];
                pc.src_stride[l] = ustride[a];
                dofs += (dst_start0[l] + olo[a] - lo[a]) * out_stride_[l];
              }
              pc.src_offset = so;
              pc.dst_offset = dofs;
              std::string key = std::to_string(sid);
              for (auto x : u) key += "," + std::to_string(x);
              auto it = task_of.find(key);
              if (it == task_of.end()) {
                it = task_of.emplace(key, plan.tasks.size()).first;
                plan.tasks.push_back(UnitTask{sid, u, key, {}});
              }
              plan.tasks[it->second].pieces.push_back(std::move(pc));
              touched_by.resize(plan.tasks.size(), 0);
              if (touched_by[it->second] != b + 1) {
                touched_by[it->second] = b + 1;
                ++units;
                bytes += us.array.unit_bytes();
              }
              std::size_t a = rank;
              while (a > 0 && ++u[a - 1] == uhi[a - 1]) {
                u[a - 1] = ulo[a - 1];
                --a;
              }
              if (a == 0) break;
            }
          }
        }
      }
    }
    plan.sample_units_max = std::max(plan.sample_units_max, units);
    plan.sample_bytes_max = std::max(plan.sample_bytes_max, bytes);
  }
  return plan;
}

}  // namespace cubestream::pipeline
