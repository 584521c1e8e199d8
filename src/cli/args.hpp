// A small command-line parser for the `cubestream` subcommands: positionals plus
// "--name value" / "--name=value" options and "--flag" switches.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cubestream::cli {

// "a,b,,c" -> {"a", "b", "c"}: the items of a comma-separated option, empty ones dropped.
inline std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

class Args {
 public:
  // `flags` are options that take no value.
  Args(int argc, char** argv, int first, const std::set<std::string>& flags) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) == 0 && a.size() > 2) {
        std::string name = a.substr(2), value;
        auto eq = name.find('=');
        if (eq != std::string::npos) {
          value = name.substr(eq + 1);
          name = name.substr(0, eq);
        } else if (flags.count(name)) {
          value = "1";
        } else {
          if (i + 1 >= argc) throw std::invalid_argument("option --" + name + " needs a value");
          value = argv[++i];
        }
        options_[name] = value;
      } else {
        positionals_.push_back(a);
      }
    }
  }
  const std::vector<std::string>& positionals() const { return positionals_; }
  bool has(const std::string& name) const { return options_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback) const {
    auto it = options_.find(name);
    return it == options_.end() ? fallback : it->second;
  }
  long get_int(const std::string& name, long fallback) const {
    auto it = options_.find(name);
    if (it == options_.end()) return fallback;
    std::size_t used = 0;
    long v = std::stol(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("--" + name + " needs an integer");
    return v;
  }
  // Names of options given that are not in `known`.
  std::vector<std::string> unknown(const std::set<std::string>& known) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : options_)
      if (!known.count(k)) out.push_back(k);
    return out;
  }

 private:
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> options_;
};

}  // namespace cubestream::cli
