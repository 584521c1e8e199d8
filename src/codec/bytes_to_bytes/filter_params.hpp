// The numeric parameters of the numcodecs filters from their configurations, in the form the
// shared per-element logic (codec/logic/numcodecs_filters.hpp) takes: what the CPU codecs use
// and what a caller of the GPU filters (src/cuda/decode/batch_decode.hpp) passes.
#pragma once

#include <nlohmann/json.hpp>

#include "codec/logic/numcodecs_filters.hpp"

namespace cubestream::codec {

// {"scale", "offset", "dtype", "astype"}: throws Error(kInvalidMetadata / kUnsupported) as
// make_fixedscaleoffset_codec does.
logic::FixedScaleOffsetParams fixedscaleoffset_params(const nlohmann::json& configuration);

// {"dtype", "astype"}: throws as make_delta_codec does.
logic::DeltaParams delta_params(const nlohmann::json& configuration);

}  // namespace cubestream::codec
