// Option parsing shared by the writing commands (rechunk, convert): "name=size" lists, codec
// specifications, byte sizes with suffixes, "i/n" parts, and a progress bar on stderr.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "cli/format.hpp"
#include "cubestream/writer.hpp"

namespace cubestream::cli {

inline std::int64_t parse_int(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) throw std::invalid_argument(what + ": \"" + s + "\" is not an integer");
  return v;
}

// "time=1,level=1" -> {time: 1, level: 1}; "-1" means the whole axis.
inline std::map<std::string, std::int64_t> parse_sizes(const std::string& text, const std::string& option) {
  std::map<std::string, std::int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw std::invalid_argument(option + ": expected name=size, got \"" + item + "\"");
    out[item.substr(0, eq)] = parse_int(item.substr(eq + 1), option);
  }
  return out;
}

// "zstd:3", "blosc-lz4:5", "gzip", "none".
inline void parse_codec(const std::string& text, CodecChoice& c) {
  const auto colon = text.find(':');
  c.compressor = text.substr(0, colon);
  c.level = colon == std::string::npos ? -1 : static_cast<int>(parse_int(text.substr(colon + 1), "--codec level"));
}

// "4G", "512M", "100000" (bytes); K/M/G/T are powers of 1024.
inline std::uint64_t parse_bytes(const std::string& text, const std::string& option) {
  if (text.empty()) throw std::invalid_argument(option + " needs a size");
  std::uint64_t mult = 1;
  std::string num = text;
  const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  const std::string suffixes = "KMGT";
  if (auto p = suffixes.find(last); p != std::string::npos) {
    mult = std::uint64_t{1} << (10 * (p + 1));
    num.pop_back();
  }
  const auto v = parse_int(num, option);
  if (v <= 0) throw std::invalid_argument(option + " must be positive");
  return static_cast<std::uint64_t>(v) * mult;
}

inline void parse_part(const std::string& text, int* part, int* parts) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw std::invalid_argument("--part: expected i/n (e.g. 0/4)");
  *part = static_cast<int>(parse_int(text.substr(0, slash), "--part"));
  *parts = static_cast<int>(parse_int(text.substr(slash + 1), "--part"));
  if (*parts < 1 || *part < 0 || *part >= *parts) throw std::invalid_argument("--part: need 0 <= i < n");
}

inline std::string clock_text(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "--:--";
  const auto s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Draws "[#####.....] 1.2 GB / 4.5 GB  210 MB/s  ETA 0:15" on stderr from counters another
// thread advances: redrawn in place on a terminal, one line every few seconds otherwise.
class ProgressBar {
 public:
  ProgressBar(const std::atomic<std::uint64_t>& done, const std::atomic<std::uint64_t>& total, bool enabled)
      : done_(done), total_(total), enabled_(enabled), tty_(::isatty(2) != 0) {
    if (enabled_) thread_ = std::thread([this] { loop(); });
  }
  ~ProgressBar() { finish(); }
  void finish() {
    if (!enabled_ || stopped_.exchange(true)) return;
    thread_.join();
    draw(true);
    if (tty_) std::fputc('\n', stderr);
  }

 private:
  void loop() {
    int ticks = 0;
    while (!stopped_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (tty_ || ++ticks % 25 == 0) draw(false);
    }
  }
  void draw(bool final_line) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double d = static_cast<double>(done_.load()), n = static_cast<double>(total_.load());
    const double rate = t > 0 ? d / t : 0;
    const double frac = n > 0 ? std::min(1.0, d / n) : 0;
    std::string bar(30, '.');
    for (int i = 0; i < static_cast<int>(frac * 30); ++i) bar[static_cast<std::size_t>(i)] = '#';
    const std::string eta = final_line ? "done in " + clock_text(t) : "ETA " + clock_text(rate > 0 ? (n - d) / rate : -1);
    std::fprintf(stderr, "%s[%s] %5.1f%%  %s / %s  %s/s  %s%s", tty_ ? "\r" : "", bar.c_str(), 100 * frac, human_bytes(d).c_str(),
                 human_bytes(n).c_str(), human_bytes(rate).c_str(), eta.c_str(), tty_ ? "   " : "\n");
    std::fflush(stderr);
  }
  const std::atomic<std::uint64_t>& done_;
  const std::atomic<std::uint64_t>& total_;
  bool enabled_, tty_;
  std::atomic<bool> stopped_{false};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::thread thread_;
};

}  // namespace cubestream::cli
