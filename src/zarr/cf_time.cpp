// CF time decoding: "<unit> since <reference date>" on the CF calendars.
//
// Every calendar maps a date to a day number and back; a time is a day number plus the
// nanoseconds into that day (UTC). Decoding adds value * unit to the reference date.
//  - proleptic_gregorian: Gregorian leap years (every 4th, not centuries, but every 400th)
//    for all dates; year 0 exists (astronomical numbering). Day numbers are Julian Day
//    Numbers (JDN; 1970-01-01 is JDN 2440588).
//  - julian: a leap year every 4th year; no year 0 (1 BC is year -1), as cftime. JDN.
//  - standard / gregorian: Julian dates up to 1582-10-04, Gregorian dates from the next day,
//    1582-10-15 (JDN 2299161); the ten days between do not exist. No year 0. JDN.
//  - noleap / 365_day, all_leap / 366_day: every year has 365 (366) days, months as in a
//    common (leap) Gregorian year; 360_day: twelve months of 30 days. Day number = days
//    since 0000-01-01 of that calendar. Year 0 exists (cftime's default for these).
// Units and their spellings follow cftime (UNIT_CONVERSION_FACTORS), plus nanoseconds:
// "months" (30 days) only in the 360_day calendar and "common_years" (365 days) only in
// noleap, as cftime allows.
#include "zarr/cf_time.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "cubestream/error.hpp"

namespace cubestream::zarr {

namespace {

using Calendar = CFTimeUnits::Calendar;

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr std::int64_t kNsPerDay = 86'400 * kNsPerSecond;
constexpr std::int64_t kJdnUnixEpoch = 2'440'588;        // 1970-01-01 (Gregorian)
constexpr std::int64_t kJdnGregorianStart = 2'299'161;   // 1582-10-15 (Gregorian) = day after 1582-10-04 (Julian)
// Dates further than this from day 0 are refused: it keeps every year in an int and all
// day arithmetic far from overflow (about 270 million years).
constexpr std::int64_t kMaxDays = 100'000'000'000;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

[[noreturn]] void bad_units(const std::string& units, const std::string& why) {
  throw Error(ErrorCode::kInvalidMetadata, "CF time units \"" + units + "\": " + why);
}

bool has_year_zero(Calendar c) { return c != Calendar::kStandard && c != Calendar::kJulian; }

bool gregorian_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
bool julian_leap(std::int64_t y) { return floor_div(y, 4) * 4 == y; }

constexpr int kMonthDays[2][12] = {{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
                                   {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}};

// Days in month `m` of astronomical year `y`.
int days_in_month(Calendar c, std::int64_t y, int m) {
  switch (c) {
    case Calendar::k360Day: return 30;
    case Calendar::kNoLeap: return kMonthDays[0][m - 1];
    case Calendar::kAllLeap: return kMonthDays[1][m - 1];
    case Calendar::kJulian: return kMonthDays[julian_leap(y)][m - 1];
    case Calendar::kProlepticGregorian: return kMonthDays[gregorian_leap(y)][m - 1];
    case Calendar::kStandard: return kMonthDays[y < 1582 ? julian_leap(y) : gregorian_leap(y)][m - 1];
  }
  return 0;
}

// JDN of a date (astronomical year) under Gregorian or Julian rules: the classic
// March-based formulas, with floor division so that they hold for negative years too.
std::int64_t jdn_of(std::int64_t y, int m, int d, bool gregorian) {
  const std::int64_t a = (14 - m) / 12;
  const std::int64_t yy = y + 4800 - a;
  const std::int64_t mm = m + 12 * a - 3;
  std::int64_t j = d + (153 * mm + 2) / 5 + 365 * yy + floor_div(yy, 4);
  return gregorian ? j - floor_div(yy, 100) + floor_div(yy, 400) - 32045 : j - 32083;
}

void date_of_jdn(std::int64_t j, bool gregorian, std::int64_t* y, int* m, int* d) {
  std::int64_t b = 0, c = 0;
  if (gregorian) {
    const std::int64_t a = j + 32044;
    b = floor_div(4 * a + 3, 146097);
    c = a - floor_div(146097 * b, 4);
  } else {
    c = j + 32082;
  }
  const std::int64_t dd = floor_div(4 * c + 3, 1461);
  const std::int64_t e = c - floor_div(1461 * dd, 4);
  const std::int64_t mm = (5 * e + 2) / 153;
  *d = static_cast<int>(e - (153 * mm + 2) / 5 + 1);
  *m = static_cast<int>(mm + 3 - 12 * (mm / 10));
  *y = 100 * b + dd - 4800 + mm / 10;
}

// Day number of a valid date (astronomical year) in calendar c.
std::int64_t day_number(Calendar c, std::int64_t y, int m, int d) {
  switch (c) {
    case Calendar::k360Day: return y * 360 + (m - 1) * 30 + (d - 1);
    case Calendar::kNoLeap:
    case Calendar::kAllLeap: {
      const int leap = c == Calendar::kAllLeap;
      std::int64_t n = y * (365 + leap) + (d - 1);
      for (int k = 1; k < m; ++k) n += kMonthDays[leap][k - 1];
      return n;
    }
    case Calendar::kJulian: return jdn_of(y, m, d, false);
    case Calendar::kProlepticGregorian: return jdn_of(y, m, d, true);
    case Calendar::kStandard: {
      // Julian up to 1582-10-04, Gregorian from 1582-10-15 (the caller refused the gap).
      const bool gregorian = y > 1582 || (y == 1582 && (m > 10 || (m == 10 && d >= 15)));
      return jdn_of(y, m, d, gregorian);
    }
  }
  return 0;
}

void date_of_day(Calendar c, std::int64_t n, std::int64_t* y, int* m, int* d) {
  switch (c) {
    case Calendar::k360Day: {
      *y = floor_div(n, 360);
      const std::int64_t r = n - *y * 360;
      *m = static_cast<int>(r / 30) + 1;
      *d = static_cast<int>(r % 30) + 1;
      return;
    }
    case Calendar::kNoLeap:
    case Calendar::kAllLeap: {
      const int leap = c == Calendar::kAllLeap;
      *y = floor_div(n, 365 + leap);
      int r = static_cast<int>(n - *y * (365 + leap));
      int k = 0;
      while (r >= kMonthDays[leap][k]) r -= kMonthDays[leap][k++];
      *m = k + 1;
      *d = r + 1;
      return;
    }
    case Calendar::kJulian: return date_of_jdn(n, false, y, m, d);
    case Calendar::kProlepticGregorian: return date_of_jdn(n, true, y, m, d);
    case Calendar::kStandard: return date_of_jdn(n, n >= kJdnGregorianStart, y, m, d);
  }
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

Calendar parse_calendar(const std::string& name) {
  const std::string c = lower(name);
  if (c.empty() || c == "standard" || c == "gregorian") return Calendar::kStandard;
  if (c == "proleptic_gregorian") return Calendar::kProlepticGregorian;
  if (c == "noleap" || c == "365_day") return Calendar::kNoLeap;
  if (c == "all_leap" || c == "366_day") return Calendar::kAllLeap;
  if (c == "360_day") return Calendar::k360Day;
  if (c == "julian") return Calendar::kJulian;
  throw Error(ErrorCode::kUnsupported, "CF calendar \"" + name + "\" is not supported (standard, gregorian, "
                                       "proleptic_gregorian, noleap, 365_day, all_leap, 366_day, 360_day, julian are)");
}

std::int64_t parse_unit(const std::string& word, Calendar cal, const std::string& units) {
  const std::string w = lower(word);
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (w == n) return true;
    return false;
  };
  if (is({"nanoseconds", "nanosecond", "nanosec", "nanosecs", "nsec", "nsecs", "ns"})) return 1;
  if (is({"microseconds", "microsecond", "microsec", "microsecs", "usec", "usecs", "us"})) return 1'000;
  if (is({"milliseconds", "millisecond", "millisec", "millisecs", "msec", "msecs", "ms"})) return 1'000'000;
  if (is({"seconds", "second", "sec", "secs", "s"})) return kNsPerSecond;
  if (is({"minutes", "minute", "min", "mins"})) return 60 * kNsPerSecond;
  if (is({"hours", "hour", "hr", "hrs", "h"})) return 3600 * kNsPerSecond;
  if (is({"days", "day", "d"})) return kNsPerDay;
  if (is({"months", "month"})) {
    if (cal == Calendar::k360Day) return 30 * kNsPerDay;
    throw Error(ErrorCode::kUnsupported, "CF time units \"" + units + "\": months are only defined in the 360_day calendar");
  }
  if (is({"common_years", "common_year"})) {
    if (cal == Calendar::kNoLeap) return 365 * kNsPerDay;
    throw Error(ErrorCode::kUnsupported, "CF time units \"" + units + "\": common_years are only defined in the noleap calendar");
  }
  throw Error(ErrorCode::kUnsupported, "CF time unit \"" + word + "\" (in \"" + units + "\") is not supported");
}

// A cursor over the reference date text.
struct Cursor {
  const std::string& s;
  std::size_t i = 0;
  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i;
    return true;
  }
  void skip_spaces() {
    while (!done() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  // 1..max_digits decimal digits; false (nothing consumed) if there is no digit.
  bool digits(int max_digits, std::int64_t* out, int* count = nullptr) {
    std::int64_t v = 0;
    int n = 0;
    while (n < max_digits && !done() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = v * 10 + (s[i] - '0');
      ++i;
      ++n;
    }
    if (count) *count = n;
    *out = v;
    return n > 0;
  }
};

// Parses "<date>[(T| +)<hh>:<mm>[:<ss>[.<frac>]]][ *(Z|UTC|GMT|(+|-)hh[[:]mm])]" into
// the reference day number and time of day (UTC).
void parse_reference(const std::string& units, const std::string& text, Calendar cal, CFTimeUnits* out) {
  Cursor c{text};
  c.skip_spaces();
  bool neg = false;
  if (c.eat('-')) neg = true;
  else c.eat('+');
  std::int64_t year = 0, month = 0, day = 0;
  if (!c.digits(9, &year) || !c.eat('-') || !c.digits(2, &month) || !c.eat('-') || !c.digits(2, &day)) {
    bad_units(units, "the reference date must be written year-month-day");
  }
  if (neg) year = -year;
  std::int64_t hour = 0, minute = 0, second = 0, frac_ns = 0;
  const std::size_t after_date = c.i;
  if (c.peek() == 'T' || c.peek() == 't' || c.peek() == ' ') {
    ++c.i;
    c.skip_spaces();
    if (c.digits(2, &hour)) {
      if (!c.eat(':') || !c.digits(2, &minute)) bad_units(units, "a time of day must be written hh:mm[:ss[.fraction]]");
      if (c.eat(':')) {
        if (!c.digits(2, &second)) bad_units(units, "a time of day must be written hh:mm[:ss[.fraction]]");
        if (c.eat('.')) {
          std::int64_t digit = 0;
          std::int64_t scale = kNsPerSecond / 10;
          bool any = false;
          while (c.digits(1, &digit)) {  // digits past nanoseconds are dropped
            frac_ns += digit * scale;
            scale /= 10;
            any = true;
          }
          if (!any) bad_units(units, "a fraction of a second needs digits");
        }
      }
    } else {
      c.i = after_date;  // no time: what follows may be a time zone
    }
  }
  // Time zone: the reference time is local time at that offset from UTC.
  std::int64_t tz_minutes = 0;
  c.skip_spaces();
  if (c.eat('Z') || c.eat('z')) {
  } else if (lower(text.substr(c.i, 3)) == "utc" || lower(text.substr(c.i, 3)) == "gmt") {
    c.i += 3;
  } else if (c.peek() == '+' || c.peek() == '-') {
    const int sign = c.peek() == '-' ? -1 : 1;
    ++c.i;
    std::int64_t th = 0, tm = 0;
    int n = 0;
    if (!c.digits(2, &th, &n)) bad_units(units, "a time zone must be written +hh[:mm] or -hh[:mm]");
    if (c.eat(':')) {
      if (!c.digits(2, &tm)) bad_units(units, "a time zone must be written +hh[:mm] or -hh[:mm]");
    } else if (n == 2) {
      c.digits(2, &tm);  // +hhmm
    }
    if (th > 23 || tm > 59) bad_units(units, "time zone offset out of range");
    tz_minutes = sign * (th * 60 + tm);
  }
  c.skip_spaces();
  if (!c.done()) bad_units(units, "unexpected \"" + text.substr(c.i) + "\" after the reference date");

  // Validate in the calendar.
  if (!has_year_zero(cal)) {
    if (year == 0) bad_units(units, "year 0 does not exist in the " + std::string(cal == Calendar::kJulian ? "julian" : "standard") + " calendar");
    if (year < 0) ++year;  // to astronomical numbering: 1 BC = year 0
  }
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(cal, year, static_cast<int>(month))) {
    bad_units(units, "the reference date does not exist in this calendar");
  }
  if (cal == Calendar::kStandard && year == 1582 && month == 10 && day > 4 && day < 15) {
    bad_units(units, "1582-10-05 to 1582-10-14 do not exist in the standard calendar (the Gregorian reform)");
  }
  if (hour > 23 || minute > 59 || second > 59) bad_units(units, "the reference time of day is out of range");
  if (std::abs(year) > 100'000'000) bad_units(units, "the reference year is out of range");
  std::int64_t ns = ((hour * 60 + minute) * 60 + second) * kNsPerSecond + frac_ns - tz_minutes * 60 * kNsPerSecond;
  std::int64_t d = day_number(cal, year, static_cast<int>(month), static_cast<int>(day));
  const std::int64_t shift = floor_div(ns, kNsPerDay);
  out->ref_day = d + shift;
  out->ref_ns_of_day = ns - shift * kNsPerDay;
}

}  // namespace

CFTimeUnits parse_cf_time_units(const std::string& units, const std::string& calendar) {
  CFTimeUnits u;
  u.calendar = parse_calendar(calendar);
  // "<unit> since <date>": split at the first whitespace-delimited "since".
  std::size_t p = 0;
  auto skip = [&] {
    while (p < units.size() && std::isspace(static_cast<unsigned char>(units[p]))) ++p;
  };
  auto word = [&] {
    skip();
    const std::size_t b = p;
    while (p < units.size() && !std::isspace(static_cast<unsigned char>(units[p]))) ++p;
    return units.substr(b, p - b);
  };
  const std::string unit = word();
  const std::string since = word();
  if (unit.empty() || lower(since) != "since") bad_units(units, "expected \"<unit> since <date>\"");
  u.unit_ns = parse_unit(unit, u.calendar, units);
  parse_reference(units, units.substr(p), u.calendar, &u);
  return u;
}

CFDateTime cf_time_at(const CFTimeUnits& u, __int128 offset_ns) {
  const __int128 total = static_cast<__int128>(u.ref_ns_of_day) + offset_ns;
  __int128 days = total / kNsPerDay;
  __int128 tod = total % kNsPerDay;
  if (tod < 0) {
    tod += kNsPerDay;
    --days;
  }
  const __int128 day = days + u.ref_day;
  if (day > kMaxDays || day < -kMaxDays) {
    throw Error(ErrorCode::kInvalidArgument, "CF time value lies too far (millions of years) from its reference date");
  }
  CFDateTime t;
  std::int64_t y = 0;
  date_of_day(u.calendar, static_cast<std::int64_t>(day), &y, &t.month, &t.day);
  if (!has_year_zero(u.calendar) && y <= 0) --y;  // astronomical year 0 is 1 BC
  t.year = static_cast<int>(y);
  const auto ns = static_cast<std::int64_t>(tod);
  t.hour = static_cast<int>(ns / (3600 * kNsPerSecond));
  t.minute = static_cast<int>(ns / (60 * kNsPerSecond) % 60);
  t.second = static_cast<double>(ns % (60 * kNsPerSecond)) / 1e9;
  if (u.calendar == Calendar::kStandard || u.calendar == Calendar::kProlepticGregorian) {
    // Day numbers of both are JDNs: elapsed time since the Unix epoch.
    const __int128 unix_ns = (day - kJdnUnixEpoch) * kNsPerDay + tod;
    // INT64_MIN is numpy's NaT, so it is no valid instant either.
    if (unix_ns > std::numeric_limits<std::int64_t>::min() && unix_ns <= std::numeric_limits<std::int64_t>::max()) {
      t.unix_ns = static_cast<std::int64_t>(unix_ns);
    }
  }
  return t;
}

CFDateTime cf_time_of_value(const CFTimeUnits& u, double value) {
  if (!std::isfinite(value)) {
    CFDateTime t;
    t.missing = true;
    return t;
  }
  // Integral part exactly (through 128 bits), the fraction rounded to the nanosecond.
  const double whole = std::trunc(value);
  if (std::fabs(whole) >= 9.2e18) {
    throw Error(ErrorCode::kInvalidArgument, "CF time value " + std::to_string(value) + " is out of range");
  }
  const double frac = value - whole;  // exact
  const __int128 offset = static_cast<__int128>(static_cast<std::int64_t>(whole)) * u.unit_ns +
                          static_cast<std::int64_t>(std::llround(frac * static_cast<double>(u.unit_ns)));
  return cf_time_at(u, offset);
}

}  // namespace cubestream::zarr

namespace cubestream {

std::string CFDateTime::iso() const {
  if (missing) return "NaT";
  char buf[64];
  // Python's isoformat: four-digit years, a sign for negative ones.
  int n = year < 0 ? std::snprintf(buf, sizeof buf, "-%04d", -year) : std::snprintf(buf, sizeof buf, "%04d", year);
  std::string s(buf, static_cast<std::size_t>(n));
  const auto ns = static_cast<std::int64_t>(std::llround(second * 1e9));
  const auto whole = ns / 1'000'000'000;
  const auto frac = ns % 1'000'000'000;
  n = std::snprintf(buf, sizeof buf, "-%02d-%02dT%02d:%02d:%02lld", month, day, hour, minute, static_cast<long long>(whole));
  s.append(buf, static_cast<std::size_t>(n));
  if (frac != 0) {
    n = frac % 1000 == 0 ? std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(frac / 1000))
                         : std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(frac));
    s.append(buf, static_cast<std::size_t>(n));
  }
  return s;
}

std::vector<CFDateTime> decode_cf_time(const std::vector<double>& values, const std::string& units,
                                       const std::string& calendar) {
  const zarr::CFTimeUnits u = zarr::parse_cf_time_units(units, calendar);
  std::vector<CFDateTime> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(zarr::cf_time_of_value(u, v));
  return out;
}

}  // namespace cubestream
