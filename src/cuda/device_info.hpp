// What the CUDA side of this build can see: compiled in or not, and the visible devices.
#pragma once

#include <string>

namespace cubestream::cuda {

// True when this build contains the CUDA sources.
bool compiled_with_cuda();

// One line: "not compiled in", "compiled for sm_90; no device visible (...)", or the
// devices with name, compute capability, memory and multiprocessor count.
std::string describe_devices();

}  // namespace cubestream::cuda
