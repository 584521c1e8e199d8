// The assemble stage: one decoded unit's piece into a batch tensor, with CF decoding,
// normalisation, the NaN policy and the output dtype (the per-element rules are
// decode_normalise's, so values equal Selection::read's bit for bit before the final cast).
// A piece is walked row by row (dims merged where contiguous) and each row converted in one
// fused pass (pipeline/assemble_rows.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "cubestream/loader.hpp"
#include "pipeline/assemble_rows.hpp"
#include "pipeline/batch_plan.hpp"

namespace cubestream::pipeline {

// `unit` holds a whole decoded unit of `source` (native byte order); `tensor` is the base of
// the batch tensor the piece names. Thread-safe for pieces that do not overlap.
void assemble_piece(const Piece& piece, const std::uint8_t* unit, const UnitSource& source,
                    const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor);

// The same with the row loops of one instruction set level (one of supported_row_isas()), so
// that tests compare the levels; the overload above takes the widest.
void assemble_piece(const Piece& piece, const std::uint8_t* unit, const UnitSource& source,
                    const Normalisation& norm, std::optional<float> nan_fill, OutputDType dtype, void* tensor,
                    RowIsa isa);

// Whether the piece's rows (its dims merged where contiguous) are runs of at least `min_run`
// elements that lie contiguously in the unit, as assemble_piece_band() needs. Not where the
// variable's axes are ordered otherwise than the layout, nor where a dim broadcasts innermost.
bool piece_rows_contiguous(const Piece& piece, std::int64_t min_run);

// The part of a piece that lies in unit elements [first, first + count), read from `band`,
// which holds exactly those elements (a block of a unit decoded block by block, see
// Array::decode_unit_blocks). Called for bands that tile the unit, it writes what
// assemble_piece() writes from the whole unit, bit for bit. Needs piece_rows_contiguous(piece,
// 1) (Error kInternal otherwise).
void assemble_piece_band(const Piece& piece, const std::uint8_t* band, std::int64_t first, std::int64_t count,
                         const UnitSource& source, const Normalisation& norm, std::optional<float> nan_fill,
                         OutputDType dtype, void* tensor);
void assemble_piece_band(const Piece& piece, const std::uint8_t* band, std::int64_t first, std::int64_t count,
                         const UnitSource& source, const Normalisation& norm, std::optional<float> nan_fill,
                         OutputDType dtype, void* tensor, RowIsa isa);

}  // namespace cubestream::pipeline
