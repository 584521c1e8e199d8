// `cubestream stats STORE [STORE...] [--variables a,b] [--threads N] [--output PATH] [--print]`:
// computes the normalisation statistics (include/cubestream/stats.hpp) of the data variables
// of one dataset (several stores: one per year, joined along time) and writes them to
// cubestream_stats.json in the first store (or --output), where the loader finds them.
#include <cstdio>
#include <fstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "cubestream/stats.hpp"
#include "cubestream/store.hpp"

namespace cubestream::cli {

int run_stats(int argc, char** argv) {
  const Args args(argc, argv, 2, {"print"});
  if (auto u = args.unknown({"variables", "threads", "output", "print", "time-dim"}); !u.empty()) {
    throw std::invalid_argument("stats: unknown option --" + u.front());
  }
  if (args.positionals().empty()) throw std::invalid_argument("usage: cubestream stats STORE [STORE...] [--variables a,b]");
  std::vector<Dataset> parts;
  for (const auto& p : args.positionals()) parts.push_back(Dataset::open(open_store(p)));
  ConcatenatedTime source(parts, args.get("time-dim", "time"));
  std::vector<std::string> vars;
  if (args.has("variables")) {
    vars = comma_list(args.get("variables", ""));
  } else {
    vars = parts.front().data_variable_names();
  }
  const DatasetStats st = compute_stats(source, vars, static_cast<int>(args.get_int("threads", 0)));
  const std::string text = st.to_json().dump(2) + "\n";
  if (args.has("print")) std::fputs(text.c_str(), stdout);
  std::string out = args.get("output", "");
  if (out.empty()) {
    const std::string first = args.positionals().front();
    if (first.find("://") != std::string::npos && first.rfind("file://", 0) != 0) {
      throw Error(ErrorCode::kInvalidArgument, "stats: give --output for a store that is not a local directory");
    }
    out = (first.rfind("file://", 0) == 0 ? first.substr(7) : first) + "/" + kStatsFileName;
  }
  std::ofstream f(out);
  f << text;
  f.close();
  if (!f) throw Error(ErrorCode::kIo, "stats: cannot write " + out);
  std::fprintf(stderr, "cubestream stats: %zu variables, %zu channels -> %s\n", st.variables.size(), st.channels.size(),
               out.c_str());
  return 0;
}

}  // namespace cubestream::cli
