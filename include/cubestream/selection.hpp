// What goes into a sample: which variables and labels become channels, how variables of
// different dims broadcast, several stores along time read as one, and the reference
// (host, synchronous) read of one sample into a float32 buffer.
//
//   std::vector<cubestream::Dataset> years = {open(1979), open(1980), open(1981)};
//   cubestream::ConcatenatedTime era5(years, "time");      // one store per year, checked
//   cubestream::SelectionConfig sel;
//   sel.variables = {"2m_temperature", "temperature"};
//   sel.select = {{"level", {500, 850}}};                   // by coordinate value
//   sel.static_variables = {"land_sea_mask"};               // from `statics`, another store
//   sel.normalisation = {{"2m_temperature", {278.0, 21.0}}};
//   cubestream::Selection selection(era5, sel, sampler.config(), statics);
//   selection.channel_names();  // {"2m_temperature", "temperature@level=500",
//                               //  "temperature@level=850", "land_sea_mask"}
//   std::vector<float> x(selection.input_elements());
//   selection.read(sampler.input_regions(s), x.data(), x.size());
//
// ---- Channels ----------------------------------------------------------------------------
// The sample dims are the sampler's dims (SamplerConfig::dims). Every other dim of a variable
// is a channel dim. Channels are ordered:
//  1. variables in the order of `variables`, then those of `static_variables` in their order;
//  2. within a variable, the product of its channel dims, row-major in the order the
//     variable's axes list them (the first channel dim varies slowest); along one channel dim
//     the indices are the labels of `select[dim]` in the order given, or, for a dim without
//     selection, every index 0..n-1 in index order (ExtraDims::kChannels, the default;
//     ExtraDims::kRefuse refuses such a variable instead);
//  3. a variable without channel dims contributes one channel.
// Names: the variable name, then "@" and "dim=label" per channel dim joined by ",", e.g.
// "temperature@level=500" or "q@level=850,member=3". The label is the value of the dim's
// coordinate variable (a variable named like the dim, 1-d over it), CF-decoded, printed
// in the shortest form that reads back exactly ("500", "0.25", "1e-05"); a dim without
// coordinate variable prints the index in brackets: "q@member[3]".
//
// Label selection (`select`): the labels are looked up by exact equality of the decoded
// coordinate value (no tolerance, no nearest neighbour); an unknown label is refused with
// the available labels listed. A selection on a sample dim, on a dim none of the selected
// variables has, on a dim without coordinate variable, or naming a label twice is refused.
//
// ---- Broadcasting ------------------------------------------------------------------------
// Every sample dim must be a dim of every variable, with the sampler's size, except the time
// dim (ConcatenatedTime::time_dim): a variable without it is a static field (land-sea mask,
// orography) and is repeated along time. A variable missing any other sample dim is refused.
// Static variables from the static dataset must not have the time dim at all; their sample
// dims must have the sampler's sizes, and where both stores carry a dimension coordinate of a
// shared dim (latitude, longitude) its values must be equal. Every refusal is an
// Error(kInvalidArgument) from the constructor that names the variable, its dims and the
// sample dims.
//
// ---- Several stores along time -----------------------------------------------------------
// ConcatenatedTime joins Datasets along `time_dim` in the order given. It checks that the
// parts have the same variables with the same dims, the same sizes of every other dim, the
// same values of every dimension coordinate other than time, and that the decoded time
// coordinate (Dataset::decode_time) is strictly increasing over the whole concatenation (so
// stores overlapping in time or given out of order are refused). A part may store a variable
// in another dtype or CF encoding: each part is decoded with its own. Variables without the
// time dim (static ones, coordinates) are read from the first part. One Dataset is a
// ConcatenatedTime of one part, and then the time dim may be absent.
//
// ---- The sample buffer -------------------------------------------------------------------
// read() fills, for a list of step Regions (Sampler::input_regions or target_regions of one
// sample; regions are in the sampler's dims order), a C-order float32 tensor
//     [steps, channels, d_1, ..., d_k]
// where d_1..d_k are the sampler's dims in their order, without the forecast window's time
// dim (each step is one time index there, so it is squeezed out); without a window every
// sampler dim is kept, time included. Each d_i has the region's extent: the patch size on a
// patched dim, 1 on a batch dim, the whole dim elsewhere (all samples of a sampler have the
// same shape: sample_shape()). Each value is read in its native dtype (Array::read), CF-decoded
// (Dataset::cf_encoding: _Unsigned, masking of _FillValue / missing_value to NaN,
// scale_factor, add_offset; in float64), normalised as (x - mean) / std with the channel's
// Normalisation, rounded once to float32, and then NaN (masked or stored) is kept or
// replaced by `nan_fill`. Conversions to bfloat16 and float16 (round to nearest even) are the
// functions at the bottom.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cubestream/array.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/sampler.hpp"

namespace cubestream {

// Several Datasets read as one along the time dim. Immutable; const methods are thread-safe.
class ConcatenatedTime {
 public:
  // Throws Error(kInvalidArgument) naming the parts (store and index) when they disagree:
  // no parts, missing time dim or time coordinate (with more than one part), other variables
  // or dims, other sizes or coordinate values of a non-time dim, times not strictly
  // increasing (overlap or wrong order).
  explicit ConcatenatedTime(std::vector<Dataset> parts, std::string time_dim = "time");
  ConcatenatedTime(Dataset single, std::string time_dim = "time");  // one part

  const std::string& time_dim() const { return time_dim_; }
  std::size_t num_parts() const { return parts_.size(); }
  const Dataset& part(std::size_t p) const { return parts_.at(p); }
  // Global index of the first time step of part p; part_start(num_parts()) is time_size().
  std::int64_t part_start(std::size_t p) const { return starts_.at(p); }
  std::int64_t time_size() const { return starts_.back(); }
  bool has_time() const { return has_time_; }
  // Every dim, with the time dim's total size.
  const std::map<std::string, std::int64_t>& dims() const { return dims_; }
  // The decoded time coordinate of every part, concatenated (empty without time coordinate).
  const std::vector<CFDateTime>& times() const { return times_; }

  struct Location {
    std::size_t part = 0;
    std::int64_t index = 0;   // time index inside that part
    bool operator==(const Location&) const = default;
  };
  // Error(kOutOfRange) outside [0, time_size()).
  Location locate(std::int64_t t) const;

  // A variable as the first part has it (its dims; the array is part 0's).
  const Variable& variable(const std::string& name) const { return parts_.front().variable(name); }
  bool has_variable(const std::string& name) const { return parts_.front().has_variable(name); }

 private:
  std::vector<Dataset> parts_;
  std::string time_dim_;
  bool has_time_ = false;
  std::vector<std::int64_t> starts_;
  std::map<std::string, std::int64_t> dims_;
  std::vector<CFDateTime> times_;
};

struct Normalisation {
  double mean = 0;
  double std = 1;
};

// What to do with variables' dims that are neither sample dims nor selected by label.
enum class ExtraDims { kChannels, kRefuse };

struct SelectionConfig {
  std::vector<std::string> variables;          // from the (concatenated) main source
  std::vector<std::string> static_variables;   // from the static dataset given to Selection
  // Label selection per channel dim: coordinate values, in the order the channels take.
  std::map<std::string, std::vector<double>> select;
  ExtraDims extra_dims = ExtraDims::kChannels;
  // Per channel: looked up by the channel name first ("temperature@level=500"), then by
  // the variable name (all of its channels); absent: mean 0, std 1. std must be > 0 and
  // finite. Keys matching no channel or variable are refused (typos).
  std::map<std::string, Normalisation> normalisation;
  // True when `normalisation` is a stored table for the whole dataset (cubestream stats):
  // keys that match no selected channel or variable are then ignored instead of refused.
  bool normalisation_is_table = false;
  // nullopt: NaN stays NaN; a value: NaN becomes that value (after normalisation).
  std::optional<float> nan_fill;
};

// One channel of the sample buffer.
struct Channel {
  std::string name;        // "temperature@level=500"
  std::string variable;    // "temperature"
  bool from_static = false;  // from the static dataset
  // The index along each channel dim of the variable, in the variable's axis order.
  std::vector<std::pair<std::string, std::int64_t>> indices;
  Normalisation norm;
};

class Selection {
 public:
  // Validates everything (see the header comment); every bad config is an
  // Error(kInvalidArgument), unknown variables and dims listing the available ones. Reads the
  // coordinate variables of the channel dims (labels) once, here.
  Selection(ConcatenatedTime source, SelectionConfig config, const SamplerConfig& sampler,
            std::optional<Dataset> statics = std::nullopt);

  const std::vector<Channel>& channels() const { return channels_; }
  std::vector<std::string> channel_names() const;
  std::int64_t num_channels() const { return static_cast<std::int64_t>(channels_.size()); }
  // Names and extents of d_1..d_k of the buffer layout (see above).
  const std::vector<std::string>& sample_dims() const { return layout_dims_; }
  const std::vector<std::int64_t>& sample_shape() const { return layout_shape_; }
  // Elements of [steps, channels, sample_shape...].
  std::int64_t elements(std::size_t steps) const;
  std::int64_t input_elements() const { return elements(num_inputs_); }
  std::int64_t target_elements() const { return elements(num_targets_); }
  const ConcatenatedTime& source() const { return source_; }
  const std::optional<Dataset>& statics() const { return statics_; }
  const SelectionConfig& config() const { return config_; }
  const std::vector<SampleDim>& sampler_dims() const { return sampler_dims_; }
  // The window's time dim, squeezed out of the layout (nullopt without a window).
  const std::optional<std::string>& squeezed_dim() const { return squeezed_; }

  // Reads one sample's steps into `out` (out_elements must equal elements(steps.size())).
  // Each Region has one entry per sampler dim and must lie inside the dims. Throws
  // Error(kInvalidArgument) for a wrong size or region; read errors pass through.
  void read(const std::vector<Region>& steps, float* out, std::size_t out_elements,
            const ReadOptions& options = {}) const;
  std::vector<float> read(const std::vector<Region>& steps, const ReadOptions& options = {}) const;

 private:
  ConcatenatedTime source_;
  std::optional<Dataset> statics_;
  SelectionConfig config_;
  std::vector<SampleDim> sampler_dims_;
  std::optional<std::string> squeezed_;   // the window's time dim
  std::vector<Channel> channels_;
  std::vector<std::string> layout_dims_;
  std::vector<std::int64_t> layout_shape_;
  std::size_t num_inputs_ = 1, num_targets_ = 0;
};

// Decodes `count` values of `dtype` (native byte order) with CF `enc`, normalises with `norm`
// and applies `nan_fill`, into float32: the per-element step of Selection::read, exposed for
// the pipeline's assemble stage. Error(kUnsupported) for complex types.
void decode_normalise(const void* raw, const DataType& dtype, std::size_t count, const CFEncoding& enc,
                      const Normalisation& norm, std::optional<float> nan_fill, float* out);

// float32 -> bfloat16 / float16 bits, round to nearest, ties to even; NaN stays a (quiet)
// NaN of the same sign, overflow gives infinity, float16 underflow gives subnormals or zero.
std::uint16_t float_to_bfloat16(float x);
std::uint16_t float_to_float16(float x);
float bfloat16_to_float(std::uint16_t b);
float float16_to_float(std::uint16_t h);
void float_to_bfloat16(const float* in, std::uint16_t* out, std::size_t n);
void float_to_float16(const float* in, std::uint16_t* out, std::size_t n);

}  // namespace cubestream
