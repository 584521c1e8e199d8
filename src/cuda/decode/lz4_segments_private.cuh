// What the segmented LZ4 path's private headers share (lz4_segments_config.cuh,
// lz4_segment_queue.cuh, lz4_walk_buffer.cuh, lz4_table_walk.cuh, lz4_segment_worker.cuh): they
// are parts of one translation unit, cuda/decode/lz4_segments.cu, and define everything in its
// unnamed namespace, so that nvcc compiles the whole path at once (inlining and registers as
// when it was one file: the PTX was the same, byte for byte, after the split) while each part
// has a file of its own. Only that file, which defines CS_LZ4_SEGMENTS_TU, includes them.
#pragma once

#ifndef CS_LZ4_SEGMENTS_TU
#error "the segmented LZ4 path's private headers belong to cuda/decode/lz4_segments.cu alone"
#endif
