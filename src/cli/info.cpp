// `cubestream info`: version, what this build contains, the GPUs it can see, and how local
// files and device reads will be read.
#include <cstdio>

#include "cli/commands.hpp"
#include "codec/registry.hpp"
#include "core/thread_pool.hpp"
#include "cuda/device_info.hpp"
#include "store/file/io_settings.hpp"
#include "store/file/read_engine.hpp"
#include "store/gds/device_read.hpp"

namespace cubestream::cli {

int run_info(int, char**) {
  std::printf("cubestream %s\n", CUBESTREAM_VERSION);
  std::printf("threads (default): %d\n", ThreadPool::default_threads());
  std::printf("codecs:");
  for (const auto& n : codec::known_codec_names()) std::printf(" %s", n.c_str());
  std::printf("\n");
  std::printf("cuda: %s\n", cuda::describe_devices().c_str());
  // The local read engine and the device-read path, with the reasons for the choice (settings
  // from the CUBESTREAM_IO_* and CUBESTREAM_GDS* variables; see src/store/file/io_settings.hpp).
  auto io = store_detail::IoSettings::from_env();
  std::string engine;
  store_detail::engine_for(io, &engine);
  std::printf("io engine: %s\n", engine.c_str());
  std::printf("io_uring: %s\n", store_detail::probe_io_uring().why.c_str());
  std::printf("o_direct: CUBESTREAM_IO_DIRECT=%s\n", store_detail::to_string(io.direct));
  std::printf("device reads: %s\n", gds::choose_device_path(io.gds).why.c_str());
  return 0;
}

}  // namespace cubestream::cli
