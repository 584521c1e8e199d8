// ConcatenatedTime: several Datasets (one store per year) read as one along the time dim.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "cubestream/error.hpp"
#include "cubestream/selection.hpp"

namespace cubestream {
namespace {

std::string part_name(const std::vector<Dataset>& parts, std::size_t p) {
  const auto store = parts[p].group().store();
  std::string s = "store #" + std::to_string(p) + " (" + (store ? store->describe() : std::string("?"));
  if (!parts[p].group().path().empty()) s += ", group " + parts[p].group().path();
  return s + ")";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

Region whole(const Variable& v) { return Region{std::vector<std::int64_t>(v.array.rank(), 0), v.array.shape()}; }

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] != b[i]) return false;
  }
  return true;
}

auto key(const CFDateTime& t) { return std::make_tuple(t.year, t.month, t.day, t.hour, t.minute, t.second); }

[[noreturn]] void refuse(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, msg); }

}  // namespace

ConcatenatedTime::ConcatenatedTime(Dataset single, std::string time_dim)
    : ConcatenatedTime(std::vector<Dataset>{std::move(single)}, std::move(time_dim)) {}

ConcatenatedTime::ConcatenatedTime(std::vector<Dataset> parts, std::string time_dim)
    : parts_(std::move(parts)), time_dim_(std::move(time_dim)) {
  if (parts_.empty()) refuse("ConcatenatedTime needs at least one dataset");
  const auto dims0 = parts_[0].dims();
  has_time_ = dims0.count(time_dim_) > 0;
  if (!has_time_ && parts_.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [d, n] : dims0) names.push_back(d);
    refuse("cannot concatenate along \"" + time_dim_ + "\": " + part_name(parts_, 0) + " has no such dim; its dims are " +
           join(names));
  }
  const auto vars0 = parts_[0].variable_names();
  starts_.push_back(0);
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    const Dataset& ds = parts_[p];
    const auto dims = ds.dims();
    if (p > 0) {
      // Same variables, same dims per variable, same non-time sizes.
      const auto vars = ds.variable_names();
      if (vars != vars0) {
        refuse("cannot concatenate along \"" + time_dim_ + "\": " + part_name(parts_, p) + " has variables " + join(vars) +
               " but " + part_name(parts_, 0) + " has " + join(vars0));
      }
      for (const auto& name : vars) {
        if (ds.variable(name).dims != parts_[0].variable(name).dims) {
          refuse("cannot concatenate along \"" + time_dim_ + "\": variable \"" + name + "\" has dims " +
                 join(ds.variable(name).dims) + " in " + part_name(parts_, p) + " but " +
                 join(parts_[0].variable(name).dims) + " in " + part_name(parts_, 0));
        }
      }
      for (const auto& [d, n] : dims0) {
        if (d == time_dim_) continue;
        auto it = dims.find(d);
        if (it == dims.end() || it->second != n) {
          refuse("cannot concatenate along \"" + time_dim_ + "\": dim \"" + d + "\" has size " +
                 (it == dims.end() ? std::string("(absent)") : std::to_string(it->second)) + " in " +
                 part_name(parts_, p) + " but " + std::to_string(n) + " in " + part_name(parts_, 0));
        }
      }
      // Same values of every non-time dimension coordinate.
      for (const auto& name : vars) {
        const Variable& v = ds.variable(name);
        if (!v.is_dimension_coordinate || name == time_dim_) continue;
        if (!same_values(ds.read_decoded(name, whole(v)), parts_[0].read_decoded(name, whole(parts_[0].variable(name))))) {
          refuse("cannot concatenate along \"" + time_dim_ + "\": the coordinate \"" + name + "\" differs between " +
                 part_name(parts_, p) + " and " + part_name(parts_, 0));
        }
      }
    }
    starts_.push_back(starts_.back() + (has_time_ ? dims.at(time_dim_) : 1));
  }
  dims_ = dims0;
  if (has_time_) dims_[time_dim_] = starts_.back();

  // The time coordinate: strictly increasing over the whole concatenation.
  const bool have_coord = parts_[0].has_variable(time_dim_);
  if (parts_.size() > 1 && !have_coord) {
    refuse("cannot concatenate along \"" + time_dim_ + "\": " + part_name(parts_, 0) +
           " has no coordinate variable \"" + time_dim_ + "\" to order the stores by");
  }
  if (!have_coord) return;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    auto t = parts_[p].decode_time(time_dim_);
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i].missing) {
        refuse("time " + std::to_string(i) + " of " + part_name(parts_, p) + " is missing (NaT)");
      }
      if (!times_.empty() && !(key(times_.back()) < key(t[i]))) {
        std::ostringstream m;
        m << "times must be strictly increasing across the concatenated stores: " << part_name(parts_, p) << " time "
          << i << " (" << t[i].iso() << ") is not after " << times_.back().iso()
          << (i == 0 && p > 0 ? " at the end of " + part_name(parts_, p - 1) + " (stores overlap or are out of order)"
                              : std::string(" (the time coordinate is not increasing)"));
        refuse(m.str());
      }
      times_.push_back(t[i]);
    }
  }
}

ConcatenatedTime::Location ConcatenatedTime::locate(std::int64_t t) const {
  if (t < 0 || t >= time_size()) {
    throw Error(ErrorCode::kOutOfRange,
                "time index " + std::to_string(t) + " outside [0, " + std::to_string(time_size()) + ")");
  }
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), t);
  const auto p = static_cast<std::size_t>(it - starts_.begin()) - 1;
  return {p, t - starts_[p]};
}

}  // namespace cubestream
