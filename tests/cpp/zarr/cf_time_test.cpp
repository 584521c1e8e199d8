// CF time decoding (decode_cf_time) on every calendar, against expectations computed by
// cftime 1.6.2 and numpy 1.24 (Debian's, /usr/bin/python3):
//
//   d = cftime.num2date(value, units, calendar, only_use_cftime_datetimes=True)
//   (d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond), d.isoformat()
//   unix_ns = np.datetime64(<that date as ISO text>, "ns").astype("int64")
//
// and hard-coded here. unix_ns is expected only for the standard and proleptic Gregorian
// calendars and only for dates numpy's datetime64[ns] can hold (1677-09-21 .. 2262-04-11).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"

namespace cubestream {
namespace {

struct Case {
  const char* units;
  const char* calendar;
  double value;
  int year, month, day, hour, minute;
  double second;
  const char* iso;
  std::optional<std::int64_t> unix_ns;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      // fixed-length-year calendars
      {"days since 2000-01-01", "noleap", 365, 2001, 1, 1, 0, 0, 0, "2001-01-01T00:00:00", std::nullopt},
      {"days since 2000-01-01", "365_day", 59, 2000, 3, 1, 0, 0, 0, "2000-03-01T00:00:00", std::nullopt},
      {"days since 2000-01-01", "noleap", -1, 1999, 12, 31, 0, 0, 0, "1999-12-31T00:00:00", std::nullopt},
      {"minutes since 2000-03-01 12:00", "noleap", -1441, 2000, 2, 28, 11, 59, 0, "2000-02-28T11:59:00", std::nullopt},
      {"common_years since 2000-01-01", "noleap", 3, 2003, 1, 1, 0, 0, 0, "2003-01-01T00:00:00", std::nullopt},
      {"days since 2000-01-01", "all_leap", 59, 2000, 2, 29, 0, 0, 0, "2000-02-29T00:00:00", std::nullopt},
      {"days since 2001-01-01", "366_day", 366, 2002, 1, 1, 0, 0, 0, "2002-01-01T00:00:00", std::nullopt},
      {"days since 2000-01-01", "360_day", 30, 2000, 2, 1, 0, 0, 0, "2000-02-01T00:00:00", std::nullopt},
      {"days since 2000-01-01", "360_day", 359, 2000, 12, 30, 0, 0, 0, "2000-12-30T00:00:00", std::nullopt},
      {"days since 2000-01-01", "360_day", 360, 2001, 1, 1, 0, 0, 0, "2001-01-01T00:00:00", std::nullopt},
      {"months since 2000-01-01", "360_day", 14, 2001, 3, 1, 0, 0, 0, "2001-03-01T00:00:00", std::nullopt},
      {"hrs since 2001-02-28", "360_day", 48, 2001, 2, 30, 0, 0, 0, "2001-02-30T00:00:00", std::nullopt},
      {"days since 2000-02-30", "360_day", 1, 2000, 3, 1, 0, 0, 0, "2000-03-01T00:00:00", std::nullopt},
      {"days since 2000-01-01 -03:00", "360_day", 0, 2000, 1, 1, 3, 0, 0, "2000-01-01T03:00:00", std::nullopt},
      // julian
      {"days since 2000-01-01", "julian", 0, 2000, 1, 1, 0, 0, 0, "2000-01-01T00:00:00", std::nullopt},
      {"d since 1600-02-28", "julian", 1, 1600, 2, 29, 0, 0, 0, "1600-02-29T00:00:00", std::nullopt},
      {"days since 1000-01-01", "julian", 1000000, 3737, 11, 7, 0, 0, 0, "3737-11-07T00:00:00", std::nullopt},
      {"days since 0001-01-01", "julian", -1, -1, 12, 31, 0, 0, 0, "-0001-12-31T00:00:00", std::nullopt},   // no year 0
      {"days since -0001-12-31", "julian", -366, -2, 12, 31, 0, 0, 0, "-0002-12-31T00:00:00", std::nullopt},  // 1 BC is leap
      // proleptic_gregorian
      {"days since 1850-01-01", "proleptic_gregorian", 56978.5, 2006, 1, 1, 12, 0, 0, "2006-01-01T12:00:00", 1136116800000000000},
      {"days since 1000-01-01", "proleptic_gregorian", 1000000, 3737, 11, 28, 0, 0, 0, "3737-11-28T00:00:00", std::nullopt},
      {"days since 0000-01-01", "proleptic_gregorian", -1, -1, 12, 31, 0, 0, 0, "-0001-12-31T00:00:00", std::nullopt},  // year 0 exists
      {"milliseconds since 2000-01-01", "proleptic_gregorian", 1234567, 2000, 1, 1, 0, 20, 34.567, "2000-01-01T00:20:34.567000", 946686034567000000},
      {"microseconds since 2000-01-01", "proleptic_gregorian", 1500, 2000, 1, 1, 0, 0, 0.0015, "2000-01-01T00:00:00.001500", 946684800001500000},
      {"s since 1970-01-01", "proleptic_gregorian", -1, 1969, 12, 31, 23, 59, 59, "1969-12-31T23:59:59", -1000000000},
      {"days since 1970-01-01", "proleptic_gregorian", 106751.5, 2262, 4, 11, 12, 0, 0, "2262-04-11T12:00:00", 9223329600000000000},
      // standard / gregorian (mixed Julian / Gregorian)
      {"hours since 1900-01-01", "standard", 1000000, 2014, 1, 29, 16, 0, 0, "2014-01-29T16:00:00", 1391011200000000000},
      {"hours since 1900-01-01 00:00:00", "gregorian", 1000000.5, 2014, 1, 29, 16, 30, 0, "2014-01-29T16:30:00", 1391013000000000000},
      {"seconds since 1970-01-01", "standard", 1700000000, 2023, 11, 14, 22, 13, 20, "2023-11-14T22:13:20", 1700000000000000000},
      {"days since 2000-01-01T06:30:15.5+05:30", "standard", 1, 2000, 1, 2, 1, 0, 15.5, "2000-01-02T01:00:15.500000", 946774815500000000},
      {"hours since 1990-01-01 00:00:00 UTC", "standard", 12.25, 1990, 1, 1, 12, 15, 0, "1990-01-01T12:15:00", 631196100000000000},
      {"days since 1582-10-04", "standard", 1, 1582, 10, 15, 0, 0, 0, "1582-10-15T00:00:00", std::nullopt},  // the reform
      {"days since 1582-10-15", "standard", -1, 1582, 10, 4, 0, 0, 0, "1582-10-04T00:00:00", std::nullopt},
      {"days since 1500-03-01", "standard", -1, 1500, 2, 29, 0, 0, 0, "1500-02-29T00:00:00", std::nullopt},  // Julian leap day
      {"days since 1000-01-01", "standard", 300000, 1821, 5, 22, 0, 0, 0, "1821-05-22T00:00:00", -4689792000000000000},
      {"days since 0001-01-01", "standard", -367, -2, 12, 31, 0, 0, 0, "-0002-12-31T00:00:00", std::nullopt},
      {"days since 1677-09-22", "standard", -1.5, 1677, 9, 20, 12, 0, 0, "1677-09-20T12:00:00", std::nullopt},  // before datetime64[ns]
  };
  return c;
}

TEST(CFTime, MatchesCftime) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::string(c.units) + " / " + c.calendar + " / " + std::to_string(c.value));
    auto t = decode_cf_time({c.value}, c.units, c.calendar);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_FALSE(t[0].missing);
    EXPECT_EQ(t[0].year, c.year);
    EXPECT_EQ(t[0].month, c.month);
    EXPECT_EQ(t[0].day, c.day);
    EXPECT_EQ(t[0].hour, c.hour);
    EXPECT_EQ(t[0].minute, c.minute);
    EXPECT_NEAR(t[0].second, c.second, 1e-9);
    EXPECT_EQ(t[0].iso(), c.iso);
    EXPECT_EQ(t[0].unix_ns, c.unix_ns);
  }
}

TEST(CFTime, UnitSpellingsAgree) {
  // cftime's spellings of each unit (UNIT_CONVERSION_FACTORS), case-insensitive.
  const std::vector<std::pair<std::string, double>> units = {
      {"days", 1},           {"day", 1},          {"d", 1},           {"DAYS", 1},
      {"hours", 24},         {"hour", 24},        {"hr", 24},         {"hrs", 24},      {"h", 24},
      {"minutes", 1440},     {"minute", 1440},    {"min", 1440},      {"mins", 1440},
      {"seconds", 86400},    {"second", 86400},   {"sec", 86400},     {"secs", 86400},  {"s", 86400},
      {"milliseconds", 864e5}, {"msec", 864e5},   {"ms", 864e5},
      {"microseconds", 864e8}, {"microsec", 864e8}, {"us", 864e8},
      {"nanoseconds", 864e11}, {"ns", 864e11},
  };
  for (const auto& [u, v] : units) {
    SCOPED_TRACE(u);
    auto t = decode_cf_time({v}, u + " since 2000-01-01", "standard");
    EXPECT_EQ(t[0].iso(), "2000-01-02T00:00:00");
    EXPECT_EQ(t[0].unix_ns, 946771200000000000);  // np.datetime64("2000-01-02", "ns")
  }
}

TEST(CFTime, ReferenceDateForms) {
  // Every form denotes 2000-01-01T00:00:00 UTC (946684800 s since 1970).
  for (const char* u : {"hours since 2000-01-01", "hours since 2000-1-1", "hours since 2000-01-01 00:00",
                        "hours since 2000-01-01 00:00:00", "hours since 2000-01-01T00:00:00Z", "hours since 2000-01-01 00:00:00.000",
                        "hours  since  2000-01-01  00:00:00  UTC", "hours since 2000-01-01 01:30:00 +01:30",
                        "hours since 2000-01-01T01:30+0130", "hours since 1999-12-31 22:00:00-02", "Hours Since 2000-01-01"}) {
    SCOPED_TRACE(u);
    auto t = decode_cf_time({0}, u, "proleptic_gregorian");
    EXPECT_EQ(t[0].unix_ns, 946684800000000000);
  }
}

TEST(CFTime, CalendarNamesAreCaseInsensitiveAndDefaultToStandard) {
  EXPECT_EQ(decode_cf_time({1}, "days since 1582-10-04", "")[0].iso(), "1582-10-15T00:00:00");
  EXPECT_EQ(decode_cf_time({1}, "days since 1582-10-04", "Gregorian")[0].iso(), "1582-10-15T00:00:00");
  EXPECT_EQ(decode_cf_time({365}, "days since 2000-01-01", "NOLEAP")[0].iso(), "2001-01-01T00:00:00");
}

TEST(CFTime, NonFiniteValuesAreMissing) {
  auto t = decode_cf_time({std::nan(""), std::numeric_limits<double>::infinity(), 0}, "days since 2000-01-01", "standard");
  EXPECT_TRUE(t[0].missing);
  EXPECT_TRUE(t[1].missing);
  EXPECT_EQ(t[0].iso(), "NaT");
  EXPECT_FALSE(t[0].unix_ns.has_value());
  EXPECT_FALSE(t[2].missing);
}

TEST(CFTime, FractionsRoundToTheNanosecond) {
  // 0.1 days = 8640 s exactly, though 0.1 is not exact in binary.
  EXPECT_EQ(decode_cf_time({0.1}, "days since 1970-01-01", "standard")[0].unix_ns, 8640000000000);
  // Negative fractions go back in time.
  EXPECT_EQ(decode_cf_time({-0.5}, "hours since 1970-01-01", "standard")[0].unix_ns, -1800000000000);
  auto t = decode_cf_time({1.6e-9}, "seconds since 1970-01-01", "standard")[0];
  EXPECT_EQ(t.unix_ns, 2);  // 1.6 ns rounds to 2
  EXPECT_EQ(t.iso(), "1970-01-01T00:00:00.000000002");
}

TEST(CFTime, LargeIntegralValuesAreExact) {
  // 2^53 + 2 days is representable as a double; the result must not go through ns in double.
  const double v = 9007199254740994.0;
  EXPECT_THROW(decode_cf_time({v}, "days since 2000-01-01", "standard"), Error);  // ~2.5e13 years away
  // Nanoseconds counted in a double near 1.7e18 are exact integers when the double is.
  auto t = decode_cf_time({1.7e18}, "nanoseconds since 1970-01-01", "standard")[0];
  EXPECT_EQ(t.unix_ns, 1700000000000000000);
}

TEST(CFTime, RefusesWhatItCannotDecode) {
  auto code = [](const char* units, const char* cal) {
    try {
      decode_cf_time({0}, units, cal);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  // cftime refuses these too (ValueError).
  EXPECT_EQ(code("days since 2000-01-01", "none"), ErrorCode::kUnsupported);
  EXPECT_EQ(code("days since 2000-01-01", "martian"), ErrorCode::kUnsupported);
  EXPECT_EQ(code("weeks since 2000-01-01", "standard"), ErrorCode::kUnsupported);
  EXPECT_EQ(code("months since 2000-01-01", "noleap"), ErrorCode::kUnsupported);
  EXPECT_EQ(code("common_years since 2000-01-01", "standard"), ErrorCode::kUnsupported);
  EXPECT_EQ(code("days since 1582-10-10", "standard"), ErrorCode::kInvalidMetadata);  // lost in the reform
  EXPECT_EQ(code("days since 2001-02-29", "noleap"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2000-02-29", "noleap"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2001-02-29", "proleptic_gregorian"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2000-02-31", "360_day"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 0000-01-01", "standard"), ErrorCode::kInvalidMetadata);  // no year 0
  EXPECT_EQ(code("days since 0000-01-01", "julian"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2000-13-01", "standard"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2000-01-01 24:00", "standard"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2000-01-01 6", "standard"), ErrorCode::kInvalidMetadata);  // hour without minutes
  EXPECT_EQ(code("days since 2000-01-01 garbage", "standard"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days since 2000", "standard"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days after 2000-01-01", "standard"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("days", "standard"), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("", "standard"), ErrorCode::kInvalidMetadata);
}

TEST(CFTime, CalendarsAgreeWithEachOtherOnLongRuns) {
  // Day by day over 3 000 years, the proleptic Gregorian decode must match Hinnant's
  // civil_from_days (an independent algorithm), and the noleap/360_day ones must be
  // consecutive dates of their calendars.
  auto civil = [](std::int64_t z, int* y, int* m, int* d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const std::int64_t doe = z - era * 146097;
    const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const std::int64_t mp = (5 * doy + 2) / 153;
    *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    *y = static_cast<int>(yoe + era * 400 + (*m <= 2));
  };
  std::vector<double> days;
  for (std::int64_t z = -800000; z < 400000; z += 7) days.push_back(static_cast<double>(z));
  auto pg = decode_cf_time(days, "days since 1970-01-01", "proleptic_gregorian");
  for (std::size_t i = 0; i < days.size(); ++i) {
    int y, m, d;
    civil(static_cast<std::int64_t>(days[i]), &y, &m, &d);
    ASSERT_EQ(pg[i].year, y) << days[i];
    ASSERT_EQ(pg[i].month, m) << days[i];
    ASSERT_EQ(pg[i].day, d) << days[i];
  }
  std::vector<double> seq;
  for (int i = 0; i < 365 * 40; ++i) seq.push_back(i);
  for (const char* cal : {"noleap", "all_leap", "360_day", "julian", "standard"}) {
    SCOPED_TRACE(cal);
    auto t = decode_cf_time(seq, "days since 1570-01-01", cal);
    for (std::size_t i = 1; i < t.size(); ++i) {
      const auto& a = t[i - 1];
      const auto& b = t[i];
      const bool next_day = b.year == a.year && b.month == a.month && b.day == a.day + 1;
      const bool next_month = b.year == a.year && b.month == a.month + 1 && b.day == 1;
      const bool next_year = b.year == a.year + 1 && a.month == 12 && b.month == 1 && b.day == 1;
      const bool reform = std::string(cal) == "standard" && a.year == 1582 && a.month == 10 && a.day == 4 && b.day == 15;
      ASSERT_TRUE(next_day || next_month || next_year || reform) << a.iso() << " -> " << b.iso();
    }
  }
}

}  // namespace
}  // namespace cubestream
