// Datasets: a group's arrays as named variables over named dimensions, as xarray opens a
// Zarr store, with CF decoding of values (cf_decode.cpp) and times (cf_time.cpp).
#include "cubestream/dataset.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "cubestream/error.hpp"
#include "zarr/cf_decode.hpp"
#include "zarr/cf_time.hpp"

namespace cubestream {

struct Dataset::Impl {
  explicit Impl(Group g) : group(std::move(g)) {}
  Group group;
  std::map<std::string, Variable> variables;  // sorted by name

  // Where a variable's metadata lives, for error messages.
  ErrorContext where(const Variable& v, bool attrs) const {
    const char* file = v.array.metadata().zarr_format == 3 ? "zarr.json" : (attrs ? ".zattrs" : ".zarray");
    return ErrorContext{group.store()->describe(), join_key(v.array.path(), file), std::nullopt};
  }
};

namespace {

std::string axis_name(std::size_t axis) { return "dim_" + std::to_string(axis); }

// Dimension names of an array: v3 dimension_names or v2 _ARRAY_DIMENSIONS (the metadata
// parser puts both into dimension_names), "dim_<axis>" for axes without a name.
std::vector<std::string> dims_of(const Array& a, const Store& store) {
  const ArrayMetadata& m = a.metadata();
  const std::size_t rank = m.shape.size();
  if (m.zarr_format == 2 && m.attributes.contains("_ARRAY_DIMENSIONS")) {
    // The parser drops an _ARRAY_DIMENSIONS that does not name every axis; xarray refuses it.
    const auto& names = m.attributes["_ARRAY_DIMENSIONS"];
    bool ok = names.is_array() && names.size() == rank;
    for (std::size_t d = 0; ok && d < rank; ++d) ok = names[d].is_string();
    if (!ok) {
      throw Error(ErrorCode::kInvalidMetadata,
                  "_ARRAY_DIMENSIONS " + names.dump() + " must list one name (a string) for each of the " +
                      std::to_string(rank) + " dimensions",
                  ErrorContext{store.describe(), join_key(a.path(), ".zattrs"), std::nullopt});
    }
  }
  std::vector<std::string> dims(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    dims[d] = d < m.dimension_names.size() && !m.dimension_names[d].empty() ? m.dimension_names[d] : axis_name(d);
  }
  return dims;
}

// Names listed in a CF "coordinates" attribute (blank-separated); nothing for other types.
void add_coordinate_names(const nlohmann::json& attrs, std::set<std::string>* out) {
  auto it = attrs.find("coordinates");
  if (it == attrs.end() || !it->is_string()) return;
  const std::string& s = it->get_ref<const std::string&>();
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out->insert(s.substr(b, i - b));
  }
}

// Checks `region` against the array before a buffer is sized from it.
void check_region(const Variable& v, const Region& region, const ErrorContext& ctx) {
  const auto& shape = v.array.shape();
  if (region.start.size() != shape.size() || region.shape.size() != shape.size()) {
    throw Error(ErrorCode::kInvalidArgument, "region has rank " + std::to_string(region.start.size()) + "/" +
                                                 std::to_string(region.shape.size()) + " but variable \"" + v.name +
                                                 "\" has rank " + std::to_string(shape.size()),
                ctx);
  }
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (region.start[d] < 0 || region.shape[d] < 0 || region.start[d] > shape[d] || region.shape[d] > shape[d] - region.start[d]) {
      throw Error(ErrorCode::kInvalidArgument, "region [" + std::to_string(region.start[d]) + ", +" + std::to_string(region.shape[d]) +
                                                   ") is outside dimension " + std::to_string(d) + " (\"" + v.dims[d] +
                                                   "\") of size " + std::to_string(shape[d]),
                  ctx);
    }
  }
}

Region whole(const Array& a) {
  Region r;
  r.start.assign(a.rank(), 0);
  r.shape = a.shape();
  return r;
}

// numpy datetime64 / timedelta64 unit ("ns", "s", "10ms", "D") in nanoseconds.
std::int64_t numpy_time_unit_ns(const std::string& unit, const ErrorContext& ctx) {
  std::size_t i = 0;
  std::int64_t mult = 0;
  while (i < unit.size() && std::isdigit(static_cast<unsigned char>(unit[i])) && mult < 1'000'000'000) mult = mult * 10 + (unit[i++] - '0');
  if (i == 0) mult = 1;
  const std::string base = unit.substr(i);
  std::int64_t ns = 0;
  if (base == "ns") ns = 1;
  else if (base == "us") ns = 1'000;
  else if (base == "ms") ns = 1'000'000;
  else if (base == "s") ns = 1'000'000'000;
  else if (base == "m") ns = 60'000'000'000;
  else if (base == "h") ns = 3'600'000'000'000;
  else if (base == "D") ns = 86'400'000'000'000;
  else if (base == "W") ns = 7 * 86'400'000'000'000;
  if (ns == 0 || mult == 0 || mult > std::numeric_limits<std::int64_t>::max() / ns) {
    throw Error(ErrorCode::kUnsupported, "datetime64 unit \"" + unit + "\" is not supported (only fixed-length units)", ctx);
  }
  return ns * mult;
}

}  // namespace

Dataset::Dataset(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Dataset Dataset::open(std::shared_ptr<Store> store, const std::string& path) {
  auto impl = std::make_shared<Impl>(Group::open(store, path));
  const Group& g = impl->group;
  std::set<std::string> aux;  // auxiliary coordinates named by "coordinates" attributes
  add_coordinate_names(g.attributes(), &aux);
  for (const auto& name : g.array_names()) {
    Array a = g.open_array(name);
    std::vector<std::string> dims = dims_of(a, *store);
    add_coordinate_names(a.metadata().attributes, &aux);
    const bool dim_coord = dims.size() == 1 && dims[0] == name;
    impl->variables.emplace(name, Variable{name, std::move(dims), std::move(a), dim_coord, dim_coord});
  }
  for (const auto& name : aux) {
    auto it = impl->variables.find(name);
    if (it != impl->variables.end()) it->second.is_coordinate = true;
  }
  return Dataset(std::move(impl));
}

const Group& Dataset::group() const { return impl_->group; }
const nlohmann::json& Dataset::attributes() const { return impl_->group.attributes(); }

std::vector<std::string> Dataset::variable_names() const {
  std::vector<std::string> out;
  for (const auto& [name, v] : impl_->variables) out.push_back(name);
  return out;
}

std::vector<std::string> Dataset::data_variable_names() const {
  std::vector<std::string> out;
  for (const auto& [name, v] : impl_->variables)
    if (!v.is_coordinate) out.push_back(name);
  return out;
}

std::vector<std::string> Dataset::coordinate_names() const {
  std::vector<std::string> out;
  for (const auto& [name, v] : impl_->variables)
    if (v.is_coordinate) out.push_back(name);
  return out;
}

bool Dataset::has_variable(const std::string& name) const { return impl_->variables.count(name) > 0; }

const Variable& Dataset::variable(const std::string& name) const {
  auto it = impl_->variables.find(name);
  if (it == impl_->variables.end()) {
    throw Error(ErrorCode::kNotFound, "no variable \"" + name + "\" in this dataset",
                ErrorContext{impl_->group.store()->describe(), join_key(impl_->group.path(), name), std::nullopt});
  }
  return it->second;
}

std::map<std::string, std::int64_t> Dataset::dims() const {
  std::map<std::string, std::int64_t> sizes;
  std::map<std::string, std::string> first_user;  // the variable that set each size
  for (const auto& [name, v] : impl_->variables) {
    for (std::size_t d = 0; d < v.dims.size(); ++d) {
      const std::int64_t n = v.array.shape()[d];
      auto [it, inserted] = sizes.emplace(v.dims[d], n);
      if (inserted) {
        first_user[v.dims[d]] = name;
      } else if (it->second != n) {
        throw Error(ErrorCode::kInvalidMetadata,
                    "dimension \"" + v.dims[d] + "\" has size " + std::to_string(it->second) + " in variable \"" +
                        first_user[v.dims[d]] + "\" but " + std::to_string(n) + " in variable \"" + name + "\"",
                    ErrorContext{impl_->group.store()->describe(), impl_->group.path().empty() ? "/" : impl_->group.path(), std::nullopt});
      }
    }
  }
  return sizes;
}

CFEncoding Dataset::cf_encoding(const std::string& name) const {
  const Variable& v = variable(name);
  try {
    return zarr::cf_encoding_of(v.array.metadata());
  } catch (const Error& e) {
    throw e.with_context(impl_->where(v, true));
  }
}

std::vector<double> Dataset::read_decoded(const std::string& name, const Region& region, const ReadOptions& options) const {
  const Variable& v = variable(name);
  check_region(v, region, impl_->where(v, false));
  const CFEncoding enc = cf_encoding(name);
  const auto n = static_cast<std::size_t>(region.num_elements());
  const DataType& dt = v.array.dtype();
  Bytes raw(n * dt.size);
  v.array.read(region, raw.data(), raw.size(), options);
  std::vector<double> out(n);
  try {
    zarr::cf_decode_values(raw.data(), dt, n, enc, out.data());
  } catch (const Error& e) {
    throw e.with_context(impl_->where(v, false));
  }
  return out;
}

std::vector<CFDateTime> Dataset::decode_time(const std::string& name) const {
  const Variable& v = variable(name);
  const ArrayMetadata& m = v.array.metadata();
  const ErrorContext attrs_ctx = impl_->where(v, true);
  const auto n = static_cast<std::size_t>(whole(v.array).num_elements());
  std::vector<CFDateTime> out;
  out.reserve(n);

  if (m.dtype.kind == DTypeKind::kDateTime) {
    // numpy datetime64 stored as such: counts of the unit since 1970-01-01, NaT = INT64_MIN.
    zarr::CFTimeUnits u = zarr::parse_cf_time_units("days since 1970-01-01", "proleptic_gregorian");
    const std::int64_t unit_ns = numpy_time_unit_ns(m.dtype.time_unit, impl_->where(v, false));
    Bytes raw = v.array.read_all();
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t c;
      std::memcpy(&c, raw.data() + i * 8, 8);
      if (c == std::numeric_limits<std::int64_t>::min()) {
        out.emplace_back().missing = true;
      } else {
        out.push_back(zarr::cf_time_at(u, static_cast<__int128>(c) * unit_ns));
      }
    }
    return out;
  }

  auto units = m.attributes.find("units");
  if (units == m.attributes.end() || !units->is_string()) {
    throw Error(ErrorCode::kInvalidMetadata, "variable \"" + name + "\" has no string \"units\" attribute to decode times with", attrs_ctx);
  }
  std::string calendar = "standard";  // the CF default
  if (auto c = m.attributes.find("calendar"); c != m.attributes.end() && !c->is_null()) {
    if (!c->is_string()) throw Error(ErrorCode::kInvalidMetadata, "\"calendar\" must be a string, got " + c->dump(), attrs_ctx);
    calendar = c->get<std::string>();
  }
  zarr::CFTimeUnits u;
  try {
    u = zarr::parse_cf_time_units(units->get<std::string>(), calendar);
  } catch (const Error& e) {
    throw e.with_context(attrs_ctx);
  }
  const CFEncoding enc = cf_encoding(name);
  const bool integers = (m.dtype.kind == DTypeKind::kInt || m.dtype.kind == DTypeKind::kUInt) && !enc.scale_factor &&
                        !enc.add_offset && !enc.is_unsigned;
  try {
    if (integers) {
      // Integer counts exactly: through double, int64 counts past 2^53 (nanoseconds since
      // 1970, say) would lose their last digits.
      Bytes raw = v.array.read_all();
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t* p = raw.data() + i * m.dtype.size;
        __int128 c = 0;
        if (m.dtype.kind == DTypeKind::kInt) {
          switch (m.dtype.size) {
            case 1: { std::int8_t x; std::memcpy(&x, p, 1); c = x; break; }
            case 2: { std::int16_t x; std::memcpy(&x, p, 2); c = x; break; }
            case 4: { std::int32_t x; std::memcpy(&x, p, 4); c = x; break; }
            default: { std::int64_t x; std::memcpy(&x, p, 8); c = x; break; }
          }
        } else {
          switch (m.dtype.size) {
            case 1: { std::uint8_t x; std::memcpy(&x, p, 1); c = x; break; }
            case 2: { std::uint16_t x; std::memcpy(&x, p, 2); c = x; break; }
            case 4: { std::uint32_t x; std::memcpy(&x, p, 4); c = x; break; }
            default: { std::uint64_t x; std::memcpy(&x, p, 8); c = x; break; }
          }
        }
        bool masked = false;
        for (double mv : enc.missing_values) masked |= static_cast<double>(c) == mv;
        if (masked) out.emplace_back().missing = true;
        else out.push_back(zarr::cf_time_at(u, c * u.unit_ns));
      }
    } else {
      for (double x : read_decoded(name, whole(v.array))) out.push_back(zarr::cf_time_of_value(u, x));
    }
  } catch (const Error& e) {
    throw e.with_context(impl_->where(v, false));
  }
  return out;
}

}  // namespace cubestream
