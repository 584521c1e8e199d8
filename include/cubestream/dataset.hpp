// Datasets: a group read as named variables over named dimensions, the way xarray reads
// a Zarr store, with optional CF decoding.
//
//   auto ds = cubestream::Dataset::open(cubestream::open_store("era5.zarr"));
//   const auto& t2m = ds.variable("2m_temperature");     // dims {"time","latitude","longitude"}
//   std::vector<double> v = ds.read_decoded("2m_temperature", region);  // CF-decoded values
//   auto times = ds.decode_time("time");                  // from "hours since 1959-01-01"
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/array.hpp"
#include "cubestream/group.hpp"

namespace cubestream {

struct Variable {
  std::string name;                  // path relative to the dataset's group
  // From _ARRAY_DIMENSIONS (v2, xarray's attribute) or dimension_names (v3); "dim_<axis>" for
  // an axis without a name.
  std::vector<std::string> dims;
  Array array;
  // A coordinate, as xarray's decode_coords=True sees it: a 1-d variable named like its
  // dimension (a dimension coordinate, the index), or a variable named in the CF
  // "coordinates" attribute of another variable or of the group (an auxiliary coordinate).
  bool is_coordinate = false;
  bool is_dimension_coordinate = false;  // the first kind only
  // The attributes as stored, CF encoding and _ARRAY_DIMENSIONS included.
  const nlohmann::json& attributes() const { return array.metadata().attributes; }
};

// A date and time on a CF calendar, resolved to the nanosecond. Years are as the calendar
// counts them: the standard and julian calendars have no year 0 (1 BC is year -1), the
// others do (astronomical numbering), as in cftime.
//
// `unix_ns` (standard, gregorian and proleptic_gregorian calendars only) holds nanoseconds
// since 1970-01-01T00:00:00 UTC, the value of numpy's datetime64[ns]; it is empty where the
// date lies outside int64 nanoseconds (before 1677-09-21 or after 2262-04-11). For dates of
// the standard calendar before its 1582-10-15 reform the fields are Julian dates, and
// unix_ns still counts the real time elapsed (numpy would show that instant as a proleptic
// Gregorian date).
struct CFDateTime {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0;
  double second = 0;                 // seconds and their fraction
  std::optional<std::int64_t> unix_ns;
  bool missing = false;              // NaT: the value was NaN or a missing value
  // "2005-01-16T12:00:00"; a fraction only where there is one (".500000" for whole
  // microseconds, as Python's isoformat, else nine digits); "NaT" when missing.
  std::string iso() const;
};

// CF decoding parameters of one variable, read from its attributes (and, for Zarr v2, from
// the array's fill_value, which is where xarray keeps _FillValue in v2 stores).
struct CFEncoding {
  // _FillValue and missing_value entries, in the stored type's domain: values equal to one
  // become NaN. A NaN entry (the usual _FillValue of float variables) changes nothing.
  std::vector<double> missing_values;
  std::optional<double> scale_factor;
  std::optional<double> add_offset;
  // The _Unsigned attribute (netCDF-3 convention, honoured by xarray): true reads signed
  // integers as unsigned ones of the same size, false reads unsigned integers as signed.
  std::optional<bool> is_unsigned;
  bool has_any() const { return !missing_values.empty() || scale_factor || add_offset || is_unsigned; }
};

class Dataset {
 public:
  // Opens the group at `path` of the store and every array directly in it as a variable.
  // A variable without dimension names gets "dim_0", "dim_1", ... (as xarray names them).
  static Dataset open(std::shared_ptr<Store> store, const std::string& path = "");

  const Group& group() const;
  const nlohmann::json& attributes() const;

  // Variable names, sorted; data variables only or coordinates only.
  std::vector<std::string> variable_names() const;
  std::vector<std::string> data_variable_names() const;
  std::vector<std::string> coordinate_names() const;
  const Variable& variable(const std::string& name) const;  // Error(kNotFound) if absent
  bool has_variable(const std::string& name) const;

  // Sizes of every dimension; Error(kInvalidMetadata) if two variables disagree on one.
  std::map<std::string, std::int64_t> dims() const;

  // CF encoding of a variable: _FillValue (incl. xarray's base64 form in Zarr v3, the raw
  // bytes of the value in the variable's dtype), missing_value, scale_factor, add_offset.
  CFEncoding cf_encoding(const std::string& name) const;

  // Reads `region` of a variable as float64 with CF decoding: values equal to a missing
  // value become NaN, then value * scale_factor + add_offset.
  std::vector<double> read_decoded(const std::string& name, const Region& region, const ReadOptions& options = {}) const;

  // Decodes a time coordinate with CF "units" ("<unit> since <date>") and "calendar"
  // (standard, gregorian, proleptic_gregorian, noleap/365_day, all_leap/366_day, 360_day,
  // julian). Throws Error(kUnsupported) for other calendars or units.
  std::vector<CFDateTime> decode_time(const std::string& name) const;

 private:
  struct Impl;
  explicit Dataset(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Converts CF time values to dates; exposed for testing. `units` like "hours since 1990-01-01 00:00:00".
std::vector<CFDateTime> decode_cf_time(const std::vector<double>& values, const std::string& units,
                                       const std::string& calendar);

}  // namespace cubestream
