// `cubestream info`: version, what this build contains, and the GPUs it can see.
#include <cstdio>

#include "cli/commands.hpp"
#include "codec/registry.hpp"
#include "core/thread_pool.hpp"
#include "cuda/device_info.hpp"

namespace cubestream::cli {

int run_info(int, char**) {
  std::printf("cubestream %s\n", CUBESTREAM_VERSION);
  std::printf("threads (default): %d\n", ThreadPool::default_threads());
  std::printf("codecs:");
  for (const auto& n : codec::known_codec_names()) std::printf(" %s", n.c_str());
  std::printf("\n");
  std::printf("cuda: %s\n", cuda::describe_devices().c_str());
  return 0;
}

}  // namespace cubestream::cli
