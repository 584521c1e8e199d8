// Writing Zarr arrays and groups (v3 and v2): the writer side of `cubestream rechunk` and
// `cubestream convert`.
//
//   auto store = cubestream::open_writable_file_store("/data/out.zarr");
//   cubestream::write_group(store, "", 3, {{"title", "ERA5"}});
//   cubestream::ArrayMetadata m;            // shape, dtype, chunk_shape, codecs, ...
//   m.codecs = cubestream::v3_codecs({.compressor = "zstd", .level = 3}, m.dtype, {1, 721, 1440});
//   auto w = cubestream::ArrayWriter::create(store, "t2m", m);
//   w.write_region({{0, 0, 0}, {24, 721, 1440}}, data, bytes);
//   cubestream::consolidate_metadata(store, "", 3);
//
// The metadata written is what the reader parses: create() parses its own zarr.json (or
// .zarray) back before writing it, so a store the writer produces always opens. Chunk values
// are written atomically through WritableStore (temporary key, then rename).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/array.hpp"
#include "cubestream/store.hpp"

namespace cubestream {

// A codec choice in the terms of the command line, turned into a Zarr chain by v3_codecs()
// and v2_codecs().
struct CodecChoice {
  // "zstd", "blosc-lz4", "blosc-zstd", "blosc-zlib", "gzip", "zlib", "lz4" (numcodecs, v2 and
  // "numcodecs.lz4" in v3), "none".
  std::string compressor = "zstd";
  int level = -1;          // -1: the codec's default (zstd 3, blosc 5, gzip/zlib 6)
  // Byte shuffle (or bit shuffle) before compression. Zarr v3 has no core shuffle codec, so
  // for zstd/lz4 the shuffle is carried by a blosc container (cname zstd/lz4), which every v3
  // reader (zarr-python, TensorStore, zarrita) decodes; gzip/zlib get a numcodecs shuffle
  // filter (v2 filters; "numcodecs.shuffle" in v3).
  bool shuffle = false;
  bool bitshuffle = false;
  bool checksum = false;   // v3: a crc32c codec after the compressor (on every chunk)
  // Sharding (v3 only): inner chunk shape; the array's chunk_shape is then the shard shape.
  std::optional<std::vector<std::int64_t>> inner_chunks;
  bool index_at_start = false;  // sharding_indexed "index_location": "start" (else "end")
};

// The Zarr v3 "codecs" list for `choice` (bytes little-endian, the compressor, crc32c; or
// sharding_indexed around them with a bytes + crc32c index). Error(kInvalidArgument) for an
// unknown compressor or a bad level.
nlohmann::json v3_codecs(const CodecChoice& choice, const DataType& dtype);
// The same chain for Zarr v2 (no sharding, no crc32c), as the v3-form list ArrayMetadata
// carries; ArrayWriter maps it to "filters" and "compressor".
nlohmann::json v2_codecs(const CodecChoice& choice, const DataType& dtype);

class ArrayWriter {
 public:
  // Writes the metadata of an array at `path` from `meta` (zarr_format, shape, dtype,
  // chunk_shape, fill_value / fill_value_is_null, dimension_names, attributes, codecs,
  // chunk_key_encoding and separator; inner_chunk_shape is derived from the codecs) and
  // returns a writer for its chunks. Error(kUnsupported) when a codec has no encoder,
  // Error(kInvalidArgument) when the metadata does not describe a valid array.
  static ArrayWriter create(std::shared_ptr<WritableStore> store, const std::string& path, const ArrayMetadata& meta);
  // A writer for an array that exists (to resume): its metadata is read from the store.
  static ArrayWriter open(std::shared_ptr<WritableStore> store, const std::string& path);

  const ArrayMetadata& metadata() const;
  const std::string& path() const;
  // The metadata documents as written: v3 {"zarr.json": ...}; v2 {".zarray": ..., ".zattrs": ...}.
  const nlohmann::json& metadata_documents() const;
  // Grid of outer chunks (shards when sharded) and the store key of one of them.
  std::vector<std::int64_t> chunk_grid() const;
  std::string chunk_key(const std::vector<std::int64_t>& index) const;
  // The region of the array that outer chunk `index` covers (clipped at the array's edge).
  Region chunk_region(const std::vector<std::int64_t>& index) const;

  // Encodes and writes outer chunk `index` from `data`: the elements of chunk_region(index)
  // (native byte order, C order). The part of the chunk past the array's edge is encoded as
  // the fill value, as Zarr requires edge chunks to be stored whole. Returns the bytes stored.
  std::uint64_t write_chunk(const std::vector<std::int64_t>& index, ByteView data) const;

  // Writes a region whose bounds lie on outer chunk boundaries (or the array's edge): every
  // chunk it covers, `threads` at a time (0: all cores). Error(kInvalidArgument) otherwise.
  void write_region(const Region& region, const void* data, std::size_t bytes, int threads = 1) const;

  // Builds one shard of a sharded array inner chunk by inner chunk, so that a shard never
  // has to be held decoded in memory. Inner chunks may come in any order; those never added
  // are recorded as empty (they read as the fill value). Nothing is visible until commit().
  class ShardStream {
   public:
    ShardStream(ShardStream&&) noexcept;
    ShardStream& operator=(ShardStream&&) noexcept;
    ~ShardStream();
    // `inner` is the inner chunk's position inside the shard; `data` the whole inner chunk
    // (its full shape, padded with the fill value past the array's edge).
    void add(const std::vector<std::int64_t>& inner, ByteView data);
    void commit();
    // Encoded bytes so far (inner chunks plus a reserved index at the start).
    std::uint64_t bytes_written() const;

    struct Impl;

   private:
    friend class ArrayWriter;
    explicit ShardStream(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
  };
  // Error(kInvalidArgument) for an array that is not sharded (a single sharding_indexed codec).
  ShardStream begin_shard(const std::vector<std::int64_t>& shard_index) const;

  struct Impl;

 private:
  explicit ArrayWriter(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Writes a group's metadata: v3 zarr.json {"node_type": "group"}; v2 .zgroup and .zattrs.
void write_group(const std::shared_ptr<WritableStore>& store, const std::string& path, int zarr_format,
                 const nlohmann::json& attributes = nlohmann::json::object());

// Consolidates the metadata of every array and group below the group at `path` (which must
// exist): v3 inlines it in the group's zarr.json as "consolidated_metadata" (kind "inline",
// must_understand false, as zarr-python 3 writes it); v2 writes ".zmetadata"
// (zarr_consolidated_format 1, as zarr-python 2 writes it; root group only).
void consolidate_metadata(const std::shared_ptr<WritableStore>& store, const std::string& path, int zarr_format);

// The JSON of one element's fill value in Zarr v3 form ("NaN", "Infinity", "0x7fc00001" for
// a NaN with a payload, [re, im] for complex) and in Zarr v2 form (no hex form).
nlohmann::json fill_value_json_v3(const Bytes& fill_value, const DataType& dtype);
nlohmann::json fill_value_json_v2(const Bytes& fill_value, const DataType& dtype);

}  // namespace cubestream
