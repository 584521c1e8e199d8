// CF time decoding: "<unit> since <date>" on the CF calendars. The core shared by
// Dataset::decode_time and decode_cf_time. Private to src/zarr.
#pragma once

#include <cstdint>
#include <string>

#include "cubestream/dataset.hpp"

namespace cubestream::zarr {

// "<unit> since <reference date>" parsed, with the calendar resolved.
struct CFTimeUnits {
  enum class Calendar { kStandard, kProlepticGregorian, kNoLeap, kAllLeap, k360Day, kJulian };
  Calendar calendar = Calendar::kStandard;
  std::int64_t unit_ns = 0;         // nanoseconds per unit
  std::int64_t ref_day = 0;         // the reference date as a day number of the calendar
  std::int64_t ref_ns_of_day = 0;   // its time of day, UTC, in [0, 86400e9)
};

// Parses `units` and `calendar` (case-insensitive; empty means "standard"). Throws
// Error(kUnsupported) for unknown calendars and units, Error(kInvalidMetadata) for text that
// is not "<unit> since <date>" or a date that does not exist in the calendar.
CFTimeUnits parse_cf_time_units(const std::string& units, const std::string& calendar);

// The date `offset_ns` nanoseconds after the reference date. Throws Error(kInvalidArgument)
// when the date would lie millions of years away.
CFDateTime cf_time_at(const CFTimeUnits& u, __int128 offset_ns);

// Decodes a value in units of u.unit_ns: exact for integral values, fractions rounded to the
// nearest nanosecond; NaN and infinities give a missing date.
CFDateTime cf_time_of_value(const CFTimeUnits& u, double value);

}  // namespace cubestream::zarr
