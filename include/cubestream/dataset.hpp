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
  // Opens the group at `path` of the store and every array directly in it as a variable
  // (arrays of sub-groups are not). A variable without dimension names gets "dim_0",
  // "dim_1", ... by axis (as xarray names them); two such variables of different sizes make
  // dims() fail, not open(). Throws Error(kNotFound) without a group there, and
  // Error(kInvalidMetadata) for a v2 _ARRAY_DIMENSIONS that does not list one string per axis.
  static Dataset open(std::shared_ptr<Store> store, const std::string& path = "");

  const Group& group() const;
  const nlohmann::json& attributes() const;

  // Variable names, sorted; data variables only or coordinates only.
  std::vector<std::string> variable_names() const;
  std::vector<std::string> data_variable_names() const;
  std::vector<std::string> coordinate_names() const;
  const Variable& variable(const std::string& name) const;  // Error(kNotFound) if absent
  bool has_variable(const std::string& name) const;

  // Sizes of every dimension; Error(kInvalidMetadata) naming both variables if two
  // disagree on one.
  std::map<std::string, std::int64_t> dims() const;

  // CF encoding of a variable, as xarray reads it:
  //  - _FillValue: Zarr v2 keeps it in the array's fill_value (xarray writes it there and
  //    masks with it; a "_FillValue" attribute counts only when fill_value is null). Zarr v3
  //    keeps it in the "_FillValue" attribute: a JSON number for integers, and for floats
  //    base64 of the value's little-endian bytes (xarray packs a float64 whatever the
  //    variable's size; the variable's own size is accepted too); the v3 array's fill_value
  //    is no CF mask.
  //  - missing_value (a number or a list), scale_factor, add_offset, _Unsigned.
  // Error(kInvalidMetadata) for CF attributes of the wrong type; Error(kUnsupported) for
  // complex variables.
  CFEncoding cf_encoding(const std::string& name) const;

  // Reads `region` of a variable as float64 with CF decoding, as xarray's decode_cf: with
  // _Unsigned the integers are reinterpreted; values equal to a missing value become NaN;
  // then value * scale_factor + add_offset. Computed in float64 throughout (xarray computes
  // small types in float32, so its results may differ in the last float32 digit). Every
  // real dtype is read (bool as 0/1; datetime64/timedelta64 as their counts, NaT as NaN);
  // complex gives Error(kUnsupported). valid_min / valid_max / valid_range are not applied
  // (xarray does not apply them either).
  std::vector<double> read_decoded(const std::string& name, const Region& region, const ReadOptions& options = {}) const;

  // Decodes a whole time variable with its CF "units" ("<unit> since <date>") and
  // "calendar" (default standard; see decode_cf_time), after masking (NaN and missing values
  // give missing dates) and scale/offset. Integer counts are decoded exactly, not through
  // float64. A numpy datetime64 array decodes on the proleptic Gregorian calendar.
  // Error(kInvalidMetadata) without a string "units"; Error(kUnsupported) for other
  // calendars or units.
  std::vector<CFDateTime> decode_time(const std::string& name) const;

 private:
  struct Impl;
  explicit Dataset(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Converts CF time values to dates, as cftime.num2date does (also exposed for testing).
// `units`: "<unit> since <date>[(T| )hh:mm[:ss[.fraction]]][ (Z|UTC|GMT|+hh[:mm]|-hh[:mm])]",
// e.g. "hours since 1990-01-01 00:00:00"; the reference date must exist in the calendar.
// Units (case-insensitive, cftime's spellings): days/day/d, hours/hour/hrs/hr/h,
// minutes/minute/mins/min, seconds/second/secs/sec/s, milliseconds/msec/ms,
// microseconds/usec/us, nanoseconds/nsec/ns; months (30 days) in 360_day only and
// common_years (365 days) in noleap only. Calendars (case-insensitive; "" = standard):
// standard/gregorian (Julian before 1582-10-15), proleptic_gregorian, noleap/365_day,
// all_leap/366_day, 360_day, julian. Integral values decode exactly; fractions round to the
// nearest nanosecond; NaN and infinities give missing dates. Error(kUnsupported) for other
// calendars or units, Error(kInvalidMetadata) for malformed units, Error(kInvalidArgument)
// for a value millions of years away.
std::vector<CFDateTime> decode_cf_time(const std::vector<double>& values, const std::string& units,
                                       const std::string& calendar);

}  // namespace cubestream
