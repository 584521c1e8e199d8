// The subcommands of the `cubestream` program; each returns the process exit code.
#pragma once

namespace cubestream::cli {

int run_inspect(int argc, char** argv);  // cubestream inspect STORE [--json]
int run_bench(int argc, char** argv);    // cubestream bench read STORE [...]
int run_info(int argc, char** argv);     // cubestream info
int run_stats(int argc, char** argv);    // cubestream stats STORE [...]
int run_rechunk(int argc, char** argv);  // cubestream rechunk SRC DST [...]
int run_convert(int argc, char** argv);  // cubestream convert FILE.nc [...] DST [...]
int run_advise(int argc, char** argv);   // cubestream advise STORE [...]
int run_synth(int argc, char** argv);    // cubestream synth DST [...]

}  // namespace cubestream::cli
