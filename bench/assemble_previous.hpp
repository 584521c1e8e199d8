// The CPU assemble stage before the fused row loops, for bench/assemble_bench.cpp only.
#pragma once

#include <optional>

#include "pipeline/assemble.hpp"

namespace cubestream::bench {

// Same contract as pipeline::assemble_piece.
void assemble_piece_previous(const pipeline::Piece& piece, const std::uint8_t* unit, const pipeline::UnitSource& source,
                             const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor);

}  // namespace cubestream::bench
