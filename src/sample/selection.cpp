// Selection: variables and labels stacked into channels, broadcasting rules, and the
// reference read of one sample into a float32 buffer. See include/cubestream/selection.hpp.
#include "cubestream/selection.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "cubestream/error.hpp"

namespace cubestream {
namespace {

[[noreturn]] void refuse(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, msg); }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

std::string quoted_join(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const auto& x : v) q.push_back("\"" + x + "\"");
  return join(q);
}

// Shortest text that reads back to the same double ("500", "0.25").
std::string label_text(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

std::vector<std::string> label_texts(const std::vector<double>& v) {
  std::vector<std::string> out;
  for (double x : v) out.push_back(label_text(x));
  return out;
}

// The values of the coordinate variable of `dim` in `ds` (a variable named like the dim, 1-d
// over it), or nullopt.
std::optional<std::vector<double>> coordinate_of(const Dataset& ds, const std::string& dim) {
  if (!ds.has_variable(dim)) return std::nullopt;
  const Variable& v = ds.variable(dim);
  if (v.dims != std::vector<std::string>{dim}) return std::nullopt;
  return ds.read_decoded(dim, Region{{0}, v.array.shape()});
}

std::int64_t index_of(const std::vector<std::string>& v, const std::string& x) {
  auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : static_cast<std::int64_t>(it - v.begin());
}

}  // namespace

Selection::Selection(ConcatenatedTime source, SelectionConfig config, const SamplerConfig& sampler,
                     std::optional<Dataset> statics)
    : source_(std::move(source)), statics_(std::move(statics)), config_(std::move(config)),
      sampler_dims_(sampler.dims) {
  const std::string& time_dim = source_.time_dim();
  std::vector<std::string> sample_names;
  for (const auto& d : sampler_dims_) sample_names.push_back(d.name);
  if (sampler.window) {
    squeezed_ = sampler.window->time_dim;
    num_inputs_ = sampler.window->input_offsets.size();
    num_targets_ = sampler.window->target_leads.size();
    if (source_.has_time() && *squeezed_ != time_dim) {
      refuse("the sampler's window runs along \"" + *squeezed_ + "\" but the data's time dim is \"" + time_dim + "\"");
    }
  }
  if (source_.num_parts() > 1 && index_of(sample_names, time_dim) < 0) {
    refuse("the time dim \"" + time_dim + "\" along which " + std::to_string(source_.num_parts()) +
           " stores are concatenated must be a sample dim; the sample dims are " + quoted_join(sample_names));
  }
  if (config_.variables.empty() && config_.static_variables.empty()) refuse("no variables selected");
  if (!config_.static_variables.empty() && !statics_) {
    refuse("static_variables " + quoted_join(config_.static_variables) + " given but no static dataset");
  }
  // Every sample dim must be known (to the main source or the static store) with its size.
  for (const auto& d : sampler_dims_) {
    auto check = [&](const std::map<std::string, std::int64_t>& dims, const std::string& where) {
      auto it = dims.find(d.name);
      if (it == dims.end()) return false;
      if (it->second != d.size) {
        refuse("sample dim \"" + d.name + "\" has size " + std::to_string(d.size) + " in the sampler but " +
               std::to_string(it->second) + " in " + where);
      }
      return true;
    };
    bool known = check(source_.dims(), "the dataset");
    if (statics_ && d.name != time_dim) known = check(statics_->dims(), "the static dataset") || known;
    if (!known) {
      std::vector<std::string> names;
      for (const auto& [n, s] : source_.dims()) names.push_back(n);
      refuse("sample dim \"" + d.name + "\" is not a dim of the dataset; its dims are " + quoted_join(names));
    }
  }
  // The static store must lie on the same grid: equal dimension coordinates where both have one.
  if (statics_) {
    for (const auto& d : sampler_dims_) {
      if (d.name == time_dim) continue;
      auto a = coordinate_of(source_.part(0), d.name);
      auto b = coordinate_of(*statics_, d.name);
      if (!a || !b) continue;
      bool same = a->size() == b->size();
      for (std::size_t i = 0; same && i < a->size(); ++i) {
        same = (*a)[i] == (*b)[i] || (std::isnan((*a)[i]) && std::isnan((*b)[i]));
      }
      if (!same) {
        refuse("the coordinate \"" + d.name + "\" of the static dataset differs from the dataset's: " +
               join(label_texts(*b)) + " against " + join(label_texts(*a)));
      }
    }
  }
  // Selections: never on a sample dim, never empty, no repeated labels.
  for (const auto& [dim, labels] : config_.select) {
    if (index_of(sample_names, dim) >= 0) {
      refuse("cannot select labels on \"" + dim + "\": it is a sample dim (sample dims " + quoted_join(sample_names) + ")");
    }
    if (labels.empty()) refuse("the selection on \"" + dim + "\" is empty");
    std::set<double> seen;
    for (double l : labels) {
      if (!std::isfinite(l)) refuse("label " + label_text(l) + " on \"" + dim + "\" is not a finite number");
      if (!seen.insert(l).second) refuse("label " + label_text(l) + " is selected twice on \"" + dim + "\"");
    }
  }
  std::set<std::string> used_selects;

  auto add_variable = [&](const std::string& name, bool from_static) {
    const Dataset& ds = from_static ? *statics_ : source_.part(0);
    if (!ds.has_variable(name)) {
      refuse("unknown variable \"" + name + "\"" + (from_static ? " in the static dataset" : "") +
             "; the data variables are " + quoted_join(ds.data_variable_names()));
    }
    const Variable& v = ds.variable(name);
    const auto describe = [&] {
      return "variable \"" + name + "\" with dims " + quoted_join(v.dims) + " (sample dims " + quoted_join(sample_names) +
             ")";
    };
    if (from_static && index_of(v.dims, time_dim) >= 0) {
      refuse("static " + describe() + " has the time dim \"" + time_dim + "\"; static fields must not");
    }
    for (const auto& d : sampler_dims_) {
      const auto axis = index_of(v.dims, d.name);
      if (axis < 0) {
        if (d.name == time_dim) continue;  // a static field: broadcast along time
        refuse(describe() + " lacks the sample dim \"" + d.name +
               "\"; only the time dim \"" + time_dim + "\" may be missing (static fields)");
      }
      const std::int64_t size =
          (!from_static && d.name == time_dim && source_.has_time()) ? source_.time_size() : v.array.shape()[axis];
      if (size != d.size) {
        refuse(describe() + " has size " + std::to_string(size) + " along \"" + d.name + "\" but the sampler has " +
               std::to_string(d.size));
      }
    }
    // Channel dims: the product, row-major in axis order.
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> axes;   // dim, indices
    std::vector<std::vector<std::string>> labels;                          // per axis, per index
    for (std::size_t a = 0; a < v.dims.size(); ++a) {
      const std::string& dim = v.dims[a];
      if (index_of(sample_names, dim) >= 0) continue;
      const std::int64_t n = v.array.shape()[a];
      auto sel = config_.select.find(dim);
      std::vector<std::int64_t> idx;
      std::vector<std::string> text;
      if (sel != config_.select.end()) {
        used_selects.insert(dim);
        auto coord = coordinate_of(ds, dim);
        if (!coord) {
          refuse("cannot select labels on \"" + dim + "\" of " + describe() + ": the " +
                 (from_static ? "static " : "") + "dataset has no coordinate variable \"" + dim + "\"");
        }
        for (double l : sel->second) {
          auto it = std::find(coord->begin(), coord->end(), l);
          if (it == coord->end()) {
            refuse("label " + label_text(l) + " not found on \"" + dim + "\" (for " + describe() +
                   "); the available labels are " + join(label_texts(*coord)));
          }
          idx.push_back(it - coord->begin());
          text.push_back(dim + "=" + label_text(l));
        }
      } else {
        if (config_.extra_dims == ExtraDims::kRefuse) {
          refuse(describe() + " has the dim \"" + dim + "\", which is neither a sample dim nor selected (select[\"" +
                 dim + "\"]), and extra dims are refused");
        }
        auto coord = coordinate_of(ds, dim);
        for (std::int64_t i = 0; i < n; ++i) {
          idx.push_back(i);
          text.push_back(coord ? dim + "=" + label_text((*coord)[i]) : dim + "[" + std::to_string(i) + "]");
        }
      }
      axes.emplace_back(dim, std::move(idx));
      labels.push_back(std::move(text));
    }
    std::vector<std::size_t> pos(axes.size(), 0);
    for (;;) {
      Channel c;
      c.variable = name;
      c.from_static = from_static;
      c.name = name;
      for (std::size_t k = 0; k < axes.size(); ++k) {
        if (axes[k].second.empty()) return;  // a zero-sized channel dim: no channels
        c.indices.emplace_back(axes[k].first, axes[k].second[pos[k]]);
        c.name += (k == 0 ? "@" : ",") + labels[k][pos[k]];
      }
      channels_.push_back(std::move(c));
      std::size_t k = axes.size();
      while (k > 0 && ++pos[k - 1] == axes[k - 1].second.size()) pos[--k] = 0;
      if (k == 0) return;
    }
  };
  std::set<std::string> names_seen;
  for (const auto& n : config_.variables) {
    if (!names_seen.insert(n).second) refuse("variable \"" + n + "\" is selected twice");
    add_variable(n, false);
  }
  for (const auto& n : config_.static_variables) {
    if (!names_seen.insert(n).second) refuse("variable \"" + n + "\" is selected twice");
    add_variable(n, true);
  }
  for (const auto& [dim, labels] : config_.select) {
    if (!used_selects.count(dim)) {
      refuse("the selection on \"" + dim + "\" matches no dim of the selected variables " +
             quoted_join(config_.variables) + (config_.static_variables.empty() ? "" : " + " + quoted_join(config_.static_variables)));
    }
  }
  // Normalisation, by channel name then by variable.
  std::set<std::string> used_norm;
  for (auto& c : channels_) {
    auto it = config_.normalisation.find(c.name);
    if (it == config_.normalisation.end()) it = config_.normalisation.find(c.variable);
    if (it != config_.normalisation.end()) {
      c.norm = it->second;
      used_norm.insert(it->first);
    }
  }
  for (const auto& [key, n] : config_.normalisation) {
    if (!used_norm.count(key) && !config_.normalisation_is_table) {
      refuse("normalisation given for \"" + key + "\", which is no channel or variable; the channels are " +
             quoted_join(channel_names()));
    }
    if (!(n.std > 0) || !std::isfinite(n.std) || !std::isfinite(n.mean)) {
      refuse("normalisation of \"" + key + "\" needs a finite mean and a finite std > 0, got mean " +
             label_text(n.mean) + ", std " + label_text(n.std));
    }
  }
  // The buffer layout.
  for (const auto& d : sampler_dims_) {
    if (squeezed_ && d.name == *squeezed_) continue;
    std::int64_t extent = d.size;
    if (auto p = sampler.patch.find(d.name); p != sampler.patch.end()) extent = p->second;
    if (index_of(sampler.batch_dims, d.name) >= 0) extent = 1;
    layout_dims_.push_back(d.name);
    layout_shape_.push_back(extent);
  }
}

std::vector<std::string> Selection::channel_names() const {
  std::vector<std::string> out;
  for (const auto& c : channels_) out.push_back(c.name);
  return out;
}

std::int64_t Selection::elements(std::size_t steps) const {
  std::int64_t n = static_cast<std::int64_t>(steps) * num_channels();
  for (auto e : layout_shape_) n *= e;
  return n;
}

std::vector<float> Selection::read(const std::vector<Region>& steps, const ReadOptions& options) const {
  std::vector<float> out(static_cast<std::size_t>(elements(steps.size())));
  read(steps, out.data(), out.size(), options);
  return out;
}

void Selection::read(const std::vector<Region>& steps, float* out, std::size_t out_elements,
                     const ReadOptions& options) const {
  if (out_elements != static_cast<std::size_t>(elements(steps.size()))) {
    refuse("sample buffer of " + std::to_string(out_elements) + " elements, but " + std::to_string(steps.size()) +
           " steps of " + std::to_string(num_channels()) + " channels need " + std::to_string(elements(steps.size())));
  }
  const std::size_t nd = sampler_dims_.size();
  const std::string& time_dim = source_.time_dim();
  std::int64_t block = 1;
  for (auto e : layout_shape_) block *= e;
  // Layout position of each sampler dim (-1: squeezed).
  std::vector<std::int64_t> layout_pos(nd, -1);
  for (std::size_t k = 0, l = 0; k < nd; ++k) {
    if (squeezed_ && sampler_dims_[k].name == *squeezed_) continue;
    layout_pos[k] = static_cast<std::int64_t>(l++);
  }
  for (const Region& r : steps) {
    if (r.start.size() != nd || r.shape.size() != nd) {
      refuse("a step region has " + std::to_string(r.start.size()) + " dims, the sampler " + std::to_string(nd));
    }
    for (std::size_t k = 0; k < nd; ++k) {
      const std::int64_t want = layout_pos[k] < 0 ? 1 : layout_shape_[static_cast<std::size_t>(layout_pos[k])];
      if (r.shape[k] != want || r.start[k] < 0 || r.start[k] > sampler_dims_[k].size - r.shape[k]) {
        refuse("step region [" + std::to_string(r.start[k]) + ", +" + std::to_string(r.shape[k]) + ") along \"" +
               sampler_dims_[k].name + "\" does not fit (size " + std::to_string(sampler_dims_[k].size) +
               ", sample extent " + std::to_string(want) + ")");
      }
    }
  }
  const std::size_t nl = layout_dims_.size();
  std::int64_t time_k = -1;  // the time dim's position among the sampler dims
  for (std::size_t k = 0; k < nd; ++k) {
    if (sampler_dims_[k].name == time_dim) time_k = static_cast<std::int64_t>(k);
  }
  std::vector<float> tmp;
  Bytes raw;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Region& r = steps[s];
    for (std::size_t c = 0; c < channels_.size(); ++c) {
      const Channel& ch = channels_[c];
      float* dst = out + (static_cast<std::int64_t>(s * channels_.size() + c)) * block;
      const Dataset& ds0 = ch.from_static ? *statics_ : source_.part(0);
      const Variable& v0 = ds0.variable(ch.variable);
      const std::int64_t time_axis = index_of(v0.dims, time_dim);
      // Pieces: the stores the time range touches (one piece without time or with one store).
      struct Piece { std::size_t part; std::int64_t global_lo, global_hi, local_lo; };
      std::vector<Piece> pieces;
      if (!ch.from_static && time_axis >= 0 && time_k >= 0 && source_.has_time()) {
        std::int64_t t = r.start[time_k];
        const std::int64_t end = t + r.shape[time_k];
        while (t < end) {
          const auto loc = source_.locate(t);
          const std::int64_t hi = std::min(end, source_.part_start(loc.part + 1));
          pieces.push_back({loc.part, t, hi, loc.index});
          t = hi;
        }
      } else {
        pieces.push_back({0, 0, 0, 0});
      }
      for (const Piece& pc : pieces) {
        const Dataset& ds = ch.from_static ? *statics_ : source_.part(pc.part);
        const Variable& v = ds.variable(ch.variable);
        Region vr;
        for (std::size_t a = 0; a < v.dims.size(); ++a) {
          const std::string& dim = v.dims[a];
          if (static_cast<std::int64_t>(a) == time_axis && time_k >= 0 && !ch.from_static && source_.has_time()) {
            vr.start.push_back(pc.local_lo);
            vr.shape.push_back(pc.global_hi - pc.global_lo);
            continue;
          }
          bool found = false;
          for (std::size_t k = 0; k < nd; ++k) {
            if (sampler_dims_[k].name == dim) {
              vr.start.push_back(r.start[k]);
              vr.shape.push_back(r.shape[k]);
              found = true;
              break;
            }
          }
          if (found) continue;
          for (const auto& [cd, idx] : ch.indices) {
            if (cd == dim) {
              vr.start.push_back(idx);
              vr.shape.push_back(1);
              break;
            }
          }
        }
        const std::int64_t n = vr.num_elements();
        raw.resize(static_cast<std::size_t>(n) * v.array.dtype().size);
        v.array.read(vr, raw.data(), raw.size(), options);
        tmp.resize(static_cast<std::size_t>(n));
        decode_normalise(raw.data(), v.array.dtype(), tmp.size(), ds.cf_encoding(ch.variable), ch.norm,
                         config_.nan_fill, tmp.data());
        // Scatter into the layout: per layout dim, the source stride (0 to broadcast) and the
        // range of layout indices this piece covers.
        std::vector<std::int64_t> vstride(v.dims.size(), 1);
        for (std::size_t a = v.dims.size(); a-- > 1;) vstride[a - 1] = vstride[a] * vr.shape[a];
        std::vector<std::int64_t> sstride(nl, 0), lo(nl, 0), hi(layout_shape_);
        std::vector<std::int64_t> ostride(nl, 1);
        for (std::size_t l = nl; l-- > 1;) ostride[l - 1] = ostride[l] * layout_shape_[l];
        for (std::size_t k = 0; k < nd; ++k) {
          if (layout_pos[k] < 0) continue;
          const auto l = static_cast<std::size_t>(layout_pos[k]);
          const std::int64_t a = index_of(v.dims, sampler_dims_[k].name);
          if (a >= 0) sstride[l] = vstride[static_cast<std::size_t>(a)];
          if (static_cast<std::int64_t>(k) == time_k && a >= 0 && pieces.size() > 1) {
            lo[l] = pc.global_lo - r.start[k];
            hi[l] = pc.global_hi - r.start[k];
          }
        }
        std::vector<std::int64_t> idx(lo);
        bool empty = false;
        for (std::size_t l = 0; l < nl; ++l) empty = empty || lo[l] >= hi[l];
        if (empty) continue;
        for (;;) {
          std::int64_t so = 0, oo = 0;
          for (std::size_t l = 0; l < nl; ++l) {
            so += (idx[l] - lo[l]) * sstride[l];
            oo += idx[l] * ostride[l];
          }
          dst[oo] = tmp[static_cast<std::size_t>(so)];
          std::size_t l = nl;
          while (l > 0 && ++idx[l - 1] == hi[l - 1]) {
            idx[l - 1] = lo[l - 1];
            --l;
          }
          if (l == 0) break;
        }
      }
    }
  }
}

}  // namespace cubestream
