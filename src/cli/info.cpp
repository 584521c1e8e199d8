// `cubestream info [PATH]`: version, what this build contains, the GPUs it can see, and how
// local files under PATH (default: the current directory) and device reads will be read.
#include <cstdio>

#include "cli/commands.hpp"
#include "codec/registry.hpp"
#include "core/thread_pool.hpp"
#include "cuda/device_info.hpp"
#include "store/file/device_tuning.hpp"
#include "store/file/io_settings.hpp"
#include "store/file/read_engine.hpp"
#include "store/gds/device_read.hpp"

namespace cubestream::cli {

int run_info(int argc, char** argv) {
  // The block device (and so the O_DIRECT depth and piece size) depends on where the data is.
  const std::string path = argc > 2 ? argv[2] : ".";
  std::printf("cubestream %s\n", CUBESTREAM_VERSION);
  std::printf("threads (default): %d\n", ThreadPool::default_threads());
  std::printf("codecs:");
  for (const auto& n : codec::known_codec_names()) std::printf(" %s", n.c_str());
  std::printf("\n");
  std::printf("cuda: %s\n", cuda::describe_devices().c_str());
  // The local read engine and the device-read path, with the reasons for the choice (settings
  // from the CUBESTREAM_IO_* and CUBESTREAM_GDS* variables; see src/store/file/io_settings.hpp).
  auto io = store_detail::IoSettings::for_path(path);
  std::string engine;
  store_detail::engine_for(io, &engine);
  std::printf("io engine (%s): %s\n", path.c_str(), engine.c_str());
  std::printf("io tuning: %s\n", io.tuning.c_str());
  std::printf("io_uring: %s\n", store_detail::probe_io_uring().why.c_str());
  std::printf("o_direct: CUBESTREAM_IO_DIRECT=%s\n", store_detail::to_string(io.direct));
  // What sysfs says and what O_DIRECT reads would use here, also when IO_DIRECT=0 leaves the
  // depth and pieces at their buffered defaults.
  auto facts = store_detail::block_device_facts_for_path(path);
  auto tuning = store_detail::choose_io_tuning(facts);
  std::printf("block device: %s\n", store_detail::describe(facts).c_str());
  std::printf("o_direct choice for this device: depth %d, %s pieces (%s)\n", tuning.depth,
              store_detail::format_bytes(tuning.block_bytes).c_str(), tuning.why.c_str());
  std::printf("device reads: %s\n", gds::choose_device_path(io.gds).why.c_str());
  return 0;
}

}  // namespace cubestream::cli
