// Opening a Zarr array (v2 or v3) and reading any region of it into host memory.
//
//   auto store = cubestream::open_store("/data/era5.zarr");
//   auto t2m = cubestream::Array::open(store, "2m_temperature");
//   std::vector<float> buf(24 * 721 * 1440);
//   t2m.read({{0, 0, 0}, {24, 721, 1440}}, buf.data(), buf.size() * sizeof(float));
//
// Reads are thread-safe: one Array may serve reads from many threads at once. Copies of an
// Array share its state, including the cache of shard indexes it has read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/bytes.hpp"
#include "cubestream/dtype.hpp"
#include "cubestream/store.hpp"

namespace cubestream {

// A hyper-rectangle of an array: `start` and `shape` per dimension. Any alignment to chunk
// boundaries is allowed; a zero-sized dimension reads nothing.
struct Region {
  std::vector<std::int64_t> start;
  std::vector<std::int64_t> shape;

  std::int64_t num_elements() const;
};

// Everything parsed from an array's metadata, in one format-independent form.
struct ArrayMetadata {
  int zarr_format = 3;                           // 2 or 3
  std::vector<std::int64_t> shape;
  DataType dtype;
  std::vector<std::int64_t> chunk_shape;         // the outer grid (the shard shape if sharded)
  std::optional<std::vector<std::int64_t>> inner_chunk_shape;  // sharded arrays only
  Bytes fill_value;                              // one element, native byte order; zeros for null
  bool fill_value_is_null = false;               // v2 "fill_value": null
  std::vector<std::string> dimension_names;      // "" where unnamed; empty if none given
  nlohmann::json attributes = nlohmann::json::object();
  nlohmann::json codecs = nlohmann::json::array();  // the chain as v3 codec objects (v2 mapped)
  // Key of a chunk: v3 "default" gives "c/0/1", v3 "v2" and Zarr v2 give "0.1" or "0/1".
  std::string chunk_key_encoding = "default";    // "default" or "v2"
  char chunk_key_separator = '/';
};

// Where chunks are decoded: on the host (kCpu), on a GPU (kGpu), or chosen per call (kAuto).
// Array reads and the Loader (cubestream/loader.hpp) both take it; each says what kAuto means
// for it.
enum class DecodeBackend { kAuto, kCpu, kGpu };
// "auto", "cpu" or "gpu" as a DecodeBackend; Error(kInvalidArgument) naming them otherwise.
DecodeBackend decode_backend_from_name(std::string_view name);

struct ReadOptions {
  // Threads that fetch and decode chunks in parallel. 0: the CUBESTREAM_THREADS environment
  // variable, else the number of hardware threads. 1: everything on the calling thread.
  int threads = 0;
  // Where the chunks of a read are decoded. The output is the same bits either way.
  //  kCpu:  on the read's threads.
  //  kGpu:  on GPU `gpu_device` (-1: the calling thread's current CUDA device, which the read
  //         leaves current when it returns): the threads fetch the encoded chunks into pinned
  //         staging, the batched GPU decoders decode them in waves (copied over, decoded, copied
  //         back while the threads fetch the next wave and place the last), and the threads copy
  //         each decoded chunk into its place. Needs a CUDA build, a visible GPU and a codec chain
  //         the GPU decodes (`bytes` little-endian, then one of zstd, lz4 or blosc, possibly
  //         inside sharding_indexed); otherwise Error(kUnsupported) saying which is missing. A
  //         chunk the GPU refuses (a feature it leaves to the host, or bad data) is decoded on
  //         the host, so that errors are the host codec's, with their byte offsets.
  //  kAuto: the CUBESTREAM_READ_DECODE environment variable: "cpu" never uses the GPU; "gpu"
  //         uses it for every read whose chain it decodes, the rest on the host; unset or
  //         "auto" uses it only where it pays on the machines we measured: zstd chains (libzstd
  //         is the slowest host decoder by far) in reads of at least 1 GiB decoded, or 64 MiB
  //         once this process has read on the GPU (a first GPU read pays ~0.8 s to start CUDA
  //         and pin its staging), when a GPU is visible and a staging set is free (at most two
  //         reads at once use the GPU; the others decode on the host). A GPU that fails (no
  //         memory, a CUDA error) sends the read back to the host path; with kGpu that failure
  //         is the caller's error. The staging is kept for later reads: with the defaults
  //         (CUBESTREAM_GPU_READ_WAVE_MB=64 decoded MiB a wave, CUBESTREAM_GPU_READ_SLOTS=8 waves
  //         in the pipeline) ~1.1 GB of pinned host memory and ~2.2 GB of device memory for
  //         zstd (its scratch included); a read of chunks larger than a wave uses fewer slots
  //         and frees what it grew when it ends.
  DecodeBackend decode = DecodeBackend::kAuto;
  int gpu_device = -1;
};

// Counters of one read, for benchmarks and tests.
struct ReadStats {
  std::uint64_t chunks_read = 0;        // chunk (or inner chunk) values fetched and decoded
  std::uint64_t chunks_missing = 0;     // chunks absent from the store, filled with fill_value
  std::uint64_t bytes_fetched = 0;      // encoded bytes read from the store (incl. shard indexes)
  std::uint64_t chunks_decoded_in_place = 0;  // decoded straight into the output buffer
  std::uint64_t shard_index_cache_hits = 0;   // shard indexes found in the array's cache
  std::uint64_t chunk_requests = 0;           // store reads for chunk data (several inner
                                              // chunks of a shard may share one)
  std::uint64_t chunks_decoded_on_gpu = 0;    // of chunks_read: decoded by the GPU
  std::uint64_t gpu_refused = 0;              // chunks the GPU refused, decoded on the host
};

class Array {
 public:
  // Opens the array at `path` ("" for the root) of `store`: reads zarr.json (v3), or .zarray
  // and .zattrs (v2). Throws Error(kNotFound) when neither exists.
  static Array open(std::shared_ptr<Store> store, const std::string& path);
  // Builds an array from already-parsed metadata JSON (consolidated metadata). `v2_attrs` is
  // the .zattrs object for v2 (ignored for v3).
  static Array from_json(std::shared_ptr<Store> store, const std::string& path,
                         const nlohmann::json& metadata, int zarr_format,
                         const nlohmann::json& v2_attrs = nlohmann::json::object());

  const ArrayMetadata& metadata() const;
  const std::string& path() const;
  const Store& store() const;
  std::size_t rank() const { return metadata().shape.size(); }
  const std::vector<std::int64_t>& shape() const { return metadata().shape; }
  const DataType& dtype() const { return metadata().dtype; }

  // Reads `region` into `out`: out_bytes must equal region.num_elements() * dtype().size.
  // Values are native byte order, C order. Missing chunks read as the fill value.
  ReadStats read(const Region& region, void* out, std::size_t out_bytes,
                 const ReadOptions& options = {}) const;

  // Reads the whole array into a new buffer.
  Bytes read_all(const ReadOptions& options = {}) const;

  // The store key of the chunk at grid position `index` (outer grid: the shard if sharded).
  std::string chunk_key(const std::vector<std::int64_t>& index) const;

  // Sum of the stored sizes of all chunk (or shard) values that exist; walks the store.
  std::uint64_t stored_bytes() const;

  // ---- Decode units: fetching and decoding as separate steps -------------------------------
  // A decode unit is what one run of the codec chain yields: a chunk, or for a sharded array
  // an inner chunk. Units tile the array on the grid unit_shape(); units at the upper edges
  // reach past the array's shape (the codecs always decode whole units). A pipeline that
  // caches decoded data, or decodes elsewhere (a GPU), fetches with fetch_unit() and decodes
  // with decode_unit(); read() is the same two steps fused.
  const std::vector<std::int64_t>& unit_shape() const;
  std::size_t unit_bytes() const;  // product of unit_shape() times the dtype size
  // The encoded bytes of one unit. `missing` units (no chunk value, or an empty inner chunk)
  // decode to the fill value. For a sharded array the shard index is read once and cached.
  struct EncodedUnit {
    std::string key;                 // the store key (the shard's, if sharded)
    std::uint64_t offset = 0;        // where the bytes start inside that key's value
    bool missing = false;
    Bytes bytes;
    std::uint64_t bytes_fetched = 0; // bytes read from the store, shard index included
  };
  // Error(kInvalidArgument) for an index outside the unit grid; store errors pass through.
  EncodedUnit fetch_unit(const std::vector<std::int64_t>& unit) const;
  // The same into `out`, whose byte buffer's capacity is reused (a loader thread fetching
  // unit after unit then allocates, and faults in, no fresh buffer per unit).
  void fetch_unit(const std::vector<std::int64_t>& unit, EncodedUnit& out) const;
  // Tells the store that fetch_unit(unit) will come soon (Store::will_need), so that its bytes
  // can be on their way meanwhile. Does no I/O of its own: an unsharded array hints the
  // chunk's whole value; a sharded one hints the inner chunk's byte range only when the
  // shard's index is already in the array's cache (otherwise nothing: reading the index
  // would be I/O on the caller's thread). Returns whether a hint was given. Never throws.
  bool will_need_unit(const std::vector<std::int64_t>& unit) const noexcept;
  // Decodes a fetched unit into `out` (unit_bytes() bytes, native byte order, C order).
  // Errors carry the store, key and the byte offset inside the key's value.
  void decode_unit(const EncodedUnit& encoded, void* out, std::size_t out_bytes) const;
  // Decodes a fetched unit block by block: `sink` gets consecutive pieces of the decoded unit
  // (byte offset, data valid during the call, byte count; whole elements, native byte order,
  // C order) that together cover it once. Only where the codec chain has independent blocks
  // whose bytes are the unit's as they are (one blosc codec, no transpose, no byte swap), so
  // that a caller converting the values onwards needs no buffer of the whole unit. Returns
  // false, having called nothing, for any other unit (a missing one included): decode_unit()
  // then serves. Errors as decode_unit(), also after some pieces went to `sink`.
  using BlockSink = std::function<void(std::size_t offset, const std::uint8_t* data, std::size_t bytes)>;
  bool decode_unit_blocks(const EncodedUnit& encoded, const BlockSink& sink) const;

  struct Impl;

 private:
  explicit Array(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cubestream
