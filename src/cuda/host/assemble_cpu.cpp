// The CPU-only build's GPU assemble entry point (the CUDA build compiles assemble/assemble.cu).
#ifndef CUBESTREAM_WITH_CUDA
#include "cubestream/error.hpp"
#include "cuda/assemble/assemble.hpp"

namespace cubestream::cuda {

void assemble_batch(const AssemblePiece*, const AssembleItem*, std::size_t, const ConvertParams*, void* const*, OutKind,
                    CUstream_st*) {
  throw Error(ErrorCode::kUnsupported, "GPU assembly: this cubestream was built without CUDA (CPU-only build)");
}

}  // namespace cubestream::cuda
#endif
