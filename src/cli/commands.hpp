// The subcommands of the `cubestream` program; each returns the process exit code.
#pragma once

namespace cubestream::cli {

int run_inspect(int argc, char** argv);  // cubestream inspect STORE [--json]
int run_bench(int argc, char** argv);    // cubestream bench read STORE [...]
int run_info(int argc, char** argv);     // cubestream info
int run_stats(int argc, char** argv);    // cubestream stats STORE [...]

}  // namespace cubestream::cli
