// The `blosc` codec (Zarr v3 core codec; numcodecs "blosc"): the c-blosc 1.x container.
//
// The container parser and the unshuffles are our own (logic/blosc_format.hpp,
// logic/byte_shuffle.hpp, logic/bit_shuffle.hpp, logic/blosclz.hpp; the GPU decoder shares
// them; the byte unshuffle here is unshuffle_host.hpp, the same bytes with SSE2); the streams
// inside are LZ4 blocks, zlib streams or Zstandard frames decoded with the field's libraries,
// or BloscLZ decoded by logic/blosclz.hpp. Snappy streams are not
// supported. libblosc itself is only a test oracle.
//
// Configurations: v3 {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4,
// "blocksize": 0}; numcodecs {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
// (shuffle -1 auto, 0 none, 1 byte, 2 bit). None of it is needed to decode: the header of each
// chunk says how it was written. Blocks are decoded one after another on the calling thread;
// the pipeline decodes chunks in parallel.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include <lz4.h>
#include <lz4hc.h>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/inflate.hpp"
#include "codec/bytes_to_bytes/unshuffle_host.hpp"
#include "codec/bytes_to_bytes/zstd.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"
#include "codec/logic/bit_shuffle.hpp"
#include "codec/logic/blosc_format.hpp"
#include "codec/logic/blosclz.hpp"
#include "codec/logic/byte_shuffle.hpp"

namespace cubestream::codec {

namespace {

using logic::BloscCheck;
using logic::BloscCompressor;
using logic::BloscHeader;
using logic::BloscStatus;

constexpr const char* kName = "blosc";
// c-blosc never writes more than the data plus its 16-byte header (it stores raw instead).
constexpr std::size_t kMaxOverhead = 16;

void raise_if_bad(const BloscCheck& c) {
  if (c.ok()) return;
  ErrorCode code = ErrorCode::kCorruptData;
  switch (c.status) {
    case BloscStatus::kUnsupportedVersion:
    case BloscStatus::kReservedFlag:
    case BloscStatus::kUnsupportedCompressorVersion: code = ErrorCode::kUnsupported; break;
    case BloscStatus::kBlockStartOutOfRange:
    case BloscStatus::kStreamSizeOutOfRange: code = ErrorCode::kOutOfRange; break;
    default: break;
  }
  throw_decode_error(code, kName, logic::blosc_status_message(c.status), c.offset);
}

const char* compressor_name(std::uint8_t format) {
  switch (static_cast<BloscCompressor>(format)) {
    case BloscCompressor::kBlosclz: return "blosclz";
    case BloscCompressor::kLz4: return "lz4";
    case BloscCompressor::kSnappy: return "snappy";
    case BloscCompressor::kZlib: return "zlib";
    case BloscCompressor::kZstd: return "zstd";
  }
  return "?";
}

// Per-thread scratch, kept so that decoding many chunks does not allocate (and fault in fresh
// pages) for each one: slot 0 holds a shuffled block before its unshuffle, slot 1 the decoded
// block that decode_blocks() hands on.
std::uint8_t* scratch(int slot, std::size_t bytes) {
  thread_local Bytes bufs[2];
  Bytes& buf = bufs[slot];
  constexpr std::size_t kKeepAtMost = std::size_t{64} << 20;
  if (buf.size() < bytes || buf.size() > std::max(bytes, kKeepAtMost)) {
    Bytes fresh;
    fresh.resize(bytes);
    buf.swap(fresh);
  }
  return buf.data();
}

// Decodes one stream of `csize` bytes at `offset` of `buf` to exactly `size` bytes at `dst`.
void decode_stream(std::uint8_t format, ByteView buf, const logic::BloscStream& s, std::uint8_t* dst,
                   std::size_t size) {
  const std::uint8_t* src = buf.data() + s.data_offset;
  const std::uint64_t at = s.data_offset;
  if (s.raw) {
    std::memcpy(dst, src, size);
    return;
  }
  const auto wrong_size = [&](std::size_t got) {
    throw_decode_error(ErrorCode::kCorruptData, kName,
                       std::string(compressor_name(format)) + " stream decodes to " + std::to_string(got) +
                           " bytes instead of " + std::to_string(size),
                       at);
  };
  switch (static_cast<BloscCompressor>(format)) {
    case BloscCompressor::kBlosclz: {
      const logic::BlosclzResult r = logic::blosclz_decode(src, s.csize, dst, size);
      switch (r.status) {
        case logic::BlosclzStatus::kOk: break;
        case logic::BlosclzStatus::kTruncated:
          throw_decode_error(ErrorCode::kCorruptData, kName, "blosclz stream is truncated", at + r.input_offset);
        case logic::BlosclzStatus::kOutputFull:
          throw_decode_error(ErrorCode::kCorruptData, kName,
                             "blosclz stream decodes to more than " + std::to_string(size) + " bytes",
                             at + r.input_offset);
        case logic::BlosclzStatus::kBadDistance:
          throw_decode_error(ErrorCode::kCorruptData, kName,
                             "blosclz match refers to data before the start of the block", at + r.input_offset);
      }
      if (r.produced != size) wrong_size(r.produced);
      return;
    }
    case BloscCompressor::kLz4: {
      // both sizes are below 2^31 (checked by the container parser)
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(dst),
                                        static_cast<int>(s.csize), static_cast<int>(size));
      CS_DECODE_CHECK(n >= 0, kCorruptData, kName, "invalid lz4 stream", at);
      if (static_cast<std::size_t>(n) != size) wrong_size(static_cast<std::size_t>(n));
      return;
    }
    case BloscCompressor::kZlib:
    case BloscCompressor::kZstd: {
      std::size_t n = 0;
      try {
        const ByteView stream(src, s.csize);
        const MutableByteView target(dst, size);
        n = format == static_cast<std::uint8_t>(BloscCompressor::kZlib)
                ? inflate_decode(stream, target, InflateContainer::kZlib, kName, at)
                : zstd_decode_frames(stream, target, kName, at);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kSizeMismatch) throw;
        throw_decode_error(ErrorCode::kCorruptData, kName,
                           std::string(compressor_name(format)) + " stream decodes to more than " +
                               std::to_string(size) + " bytes",
                           at);
      }
      if (n != size) wrong_size(n);
      return;
    }
    case BloscCompressor::kSnappy:
      throw_decode_error(ErrorCode::kUnsupported, kName,
                         "chunk is compressed with snappy, which cubestream does not support "
                         "(rewrite the data with cname lz4, zstd, zlib or blosclz)",
                         2);
  }
  throw_decode_error(ErrorCode::kCorruptData, kName, "unknown compressor", 2);
}

// ---- encoding: our own c-blosc 1.x container writer ---------------------------------------
//
// Writes container version 2 with versionlz 1 (what c-blosc 1.x writes for every compressor),
// always with the don't-split flag, so each block is one stream (c-blosc 1.x and our decoder
// honour the flag; c-blosc itself sets it for zstd and zlib). Per block: shuffle into a
// scratch buffer, compress; a stream that does not shrink is stored raw (csize == its size,
// which is how c-blosc marks raw streams). When the whole container would not be smaller
// than the data plus the header, the data is stored memcpyed (flag bit 1), as c-blosc does.
// Compressors: lz4 and lz4hc (liblz4: the same LZ4 block format and header code, lz4hc's
// slower search at level clevel finds fewer, longer matches), zstd (libzstd), zlib (zlib);
// blosclz and snappy are decode-only.
struct BloscEncodeParams {
  BloscCompressor compressor = BloscCompressor::kLz4;
  bool lz4hc = false;  // compressor kLz4 written by LZ4_compress_HC
  int clevel = 5;
  int shuffle = 1;            // 0 none, 1 byte, 2 bit
  std::size_t typesize = 1;
  std::size_t blocksize = 0;  // 0: chosen here
};

// The compressors the encoder below writes.
bool writes_cname(const std::string& cname) {
  return cname == "lz4" || cname == "lz4hc" || cname == "zstd" || cname == "zlib";
}

BloscEncodeParams blosc_encode_params(const nlohmann::json& cfg) {
  BloscEncodeParams p;
  const std::string cname = config::get_string(cfg, kName, "cname").value_or("lz4");
  if (!writes_cname(cname)) {
    throw Error(ErrorCode::kUnsupported, "blosc: cubestream writes cname lz4, lz4hc, zstd or zlib, not \"" + cname + "\"");
  }
  if (cname == "lz4" || cname == "lz4hc") {
    p.compressor = BloscCompressor::kLz4;
    p.lz4hc = cname == "lz4hc";
  } else {
    p.compressor = cname == "zstd" ? BloscCompressor::kZstd : BloscCompressor::kZlib;
  }
  p.clevel = static_cast<int>(config::get_int(cfg, kName, "clevel").value_or(5));
  if (p.clevel < 0 || p.clevel > 9) config::fail(kName, "clevel", "must be 0..9");
  p.typesize = static_cast<std::size_t>(config::get_int(cfg, kName, "typesize").value_or(1));
  // c-blosc stores typesize in one byte and treats larger types as bytes.
  if (p.typesize < 1 || p.typesize > 255) p.typesize = 1;
  if (const nlohmann::json* s = config::find(cfg, "shuffle")) {
    if (s->is_string()) {  // Zarr v3 spelling
      if (*s == "noshuffle") p.shuffle = 0;
      else if (*s == "shuffle") p.shuffle = 1;
      else if (*s == "bitshuffle") p.shuffle = 2;
      else config::fail(kName, "shuffle", "must be \"noshuffle\", \"shuffle\" or \"bitshuffle\"");
    } else {  // numcodecs: -1 auto (bit-shuffle for 1-byte types, else byte), 0, 1, 2
      const auto v = s->get<std::int64_t>();
      if (v == -1) p.shuffle = p.typesize == 1 ? 2 : 1;
      else if (v >= 0 && v <= 2) p.shuffle = static_cast<int>(v);
      else config::fail(kName, "shuffle", "must be -1, 0, 1 or 2");
    }
  }
  const auto bs = config::get_int(cfg, kName, "blocksize").value_or(0);
  if (bs < 0) config::fail(kName, "blocksize", "must not be negative");
  p.blocksize = static_cast<std::size_t>(bs);
  return p;
}

void put_le32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Compresses one stream into `dst` (room `cap`); returns 0 when it does not shrink.
std::size_t compress_stream(const BloscEncodeParams& p, const std::uint8_t* src, std::size_t n, std::uint8_t* dst,
                            std::size_t cap) {
  switch (p.compressor) {
    case BloscCompressor::kLz4: {
      // lz4hc at level clevel, as c-blosc does; lz4 with acceleration 1.
      const int r = p.lz4hc ? LZ4_compress_HC(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(dst),
                                              static_cast<int>(n), static_cast<int>(cap), p.clevel)
                            : LZ4_compress_fast(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(dst),
                                                static_cast<int>(n), static_cast<int>(cap), 1);
      return r > 0 && static_cast<std::size_t>(r) < n ? static_cast<std::size_t>(r) : 0;
    }
    case BloscCompressor::kZstd:
    case BloscCompressor::kZlib: {
      Bytes c = p.compressor == BloscCompressor::kZstd ? zstd_encode_frame(ByteView(src, n), p.clevel, false)
                                                       : deflate_encode(ByteView(src, n), InflateContainer::kZlib, p.clevel);
      if (c.size() >= n || c.size() > cap) return 0;
      std::memcpy(dst, c.data(), c.size());
      return c.size();
    }
    default: break;
  }
  throw Error(ErrorCode::kUnsupported, "blosc: no encoder for this compressor");
}

Bytes blosc_encode(ByteView in, const BloscEncodeParams& p) {
  using logic::kBloscHeaderSize;
  if (in.size() > logic::kBloscMaxSize - kBloscHeaderSize)
    throw Error(ErrorCode::kInvalidArgument, "blosc: a chunk of " + std::to_string(in.size()) +
                                                 " bytes is larger than the c-blosc 1.x format allows (2 GiB)");
  const auto nbytes = static_cast<std::uint32_t>(in.size());
  std::uint8_t flags = logic::kBloscFlagDontSplit | static_cast<std::uint8_t>(static_cast<std::uint8_t>(p.compressor) << 5);
  if (p.shuffle == 1) flags |= logic::kBloscFlagShuffle;
  if (p.shuffle == 2) flags |= logic::kBloscFlagBitShuffle;
  auto header = [&](std::uint8_t* h, std::uint8_t f, std::uint32_t blocksize, std::uint32_t cbytes) {
    h[0] = 2;  // container format version
    h[1] = 1;  // compressor format version
    h[2] = f;
    h[3] = static_cast<std::uint8_t>(p.typesize);
    put_le32(h + 4, nbytes);
    put_le32(h + 8, blocksize);
    put_le32(h + 12, cbytes);
  };
  auto memcpyed = [&]() {
    Bytes out(kBloscHeaderSize + in.size());
    header(out.data(), static_cast<std::uint8_t>(flags | logic::kBloscFlagMemcpyed), nbytes, static_cast<std::uint32_t>(out.size()));
    if (!in.empty()) std::memcpy(out.data() + kBloscHeaderSize, in.data(), in.size());
    return out;
  };
  if (p.clevel == 0 || in.empty()) return memcpyed();
  // Blocks: a multiple of 8 elements (so bit-shuffle applies to every whole block); unless
  // configured, 128 KiB for lz4 and lz4hc and 1 MiB for zstd/zlib, which gain from longer
  // windows. Each lz4 block is one LZ4 stream that one GPU warp decodes alone
  // (docs/gpu_decoders.md, version 11), so the block sets how many units a batch offers and
  // how long the longest is. Against 256 KiB (H100, same run): 64 KiB-1 MiB chunks decode at
  // 134 GB/s instead of 92, the synth fields at 104 instead of 92 (lz4hc 104 instead of 82);
  // ratio 1.631 -> 1.628 on the bench's era5-like data, 1.839 -> 1.834 on the synth fields,
  // 2.16 -> 2.12 with lz4hc 9; liblz4 decodes as fast. 64 KiB would lose 3 % of ratio and a
  // quarter of liblz4's speed (inputs under 64 KiB take liblz4's other hash table).
  const std::size_t unit = 8 * p.typesize;
  const std::size_t default_block = p.compressor == BloscCompressor::kLz4 ? (128u << 10) : (1u << 20);
  std::size_t block = p.blocksize ? p.blocksize : default_block;
  block = std::max(unit, block / unit * unit);
  if (block > in.size()) block = in.size();
  const std::size_t nblocks = (in.size() + block - 1) / block;
  const std::size_t limit = kBloscHeaderSize + in.size();  // not smaller than this: memcpyed
  Bytes out(kBloscHeaderSize + 4 * nblocks + in.size() + 4 * nblocks + 64);
  Bytes shuffled(block);
  std::size_t pos = kBloscHeaderSize + 4 * nblocks;
  for (std::size_t j = 0; j < nblocks; ++j) {
    const std::size_t bsize = std::min(block, in.size() - j * block);
    const std::uint8_t* src = in.data() + j * block;
    if (p.shuffle == 1 && p.typesize > 1) {
      logic::shuffle_block(src, shuffled.data(), bsize, p.typesize);
      src = shuffled.data();
    } else if (p.shuffle == 2 && bsize >= p.typesize) {
      logic::bitshuffle_block(src, shuffled.data(), bsize, p.typesize);
      src = shuffled.data();
    }
    put_le32(out.data() + kBloscHeaderSize + 4 * j, static_cast<std::uint32_t>(pos));
    std::size_t csize = compress_stream(p, src, bsize, out.data() + pos + 4, out.size() - pos - 4);
    if (csize == 0) {  // raw stream
      std::memcpy(out.data() + pos + 4, src, bsize);
      csize = bsize;
    }
    put_le32(out.data() + pos, static_cast<std::uint32_t>(csize));
    pos += 4 + csize;
    // `out` has room for every block stored raw; once the container is no smaller than the
    // data plus its header, c-blosc's rule says store it memcpyed instead.
    if (pos >= limit) return memcpyed();
  }
  out.resize(pos);
  header(out.data(), flags, static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(pos));
  return out;
}

class BloscCodec final : public BytesToBytesCodec {
 public:
  explicit BloscCodec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  bool can_encode() const override {
    return writes_cname(config::get_string(cfg_, kName, "cname").value_or("lz4"));
  }
  // Zarr v2 configurations carry no typesize (numcodecs takes it from the array's itemsize):
  // the writer adds "typesize" to the configuration it encodes with.
  Bytes encode(ByteView in) const override { return blosc_encode(in, blosc_encode_params(cfg_)); }
  std::string name() const override { return kName; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes + kMaxOverhead, false};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    BloscHeader h;
    raise_if_bad(logic::blosc_parse_header(in.data(), in.size(), &h));
    return run(h, in, out.size(), out.data(), nullptr);
  }

  // Blocks are independent in the format, so each is decoded (and unshuffled) into a per-thread
  // buffer of one block and handed on: a 4 MiB chunk of 512 KiB blocks never exists whole.
  bool decode_blocks(ByteView in, std::size_t out_size, std::size_t align, const BlockSink& sink) const override {
    BloscHeader h;
    raise_if_bad(logic::blosc_parse_header(in.data(), in.size(), &h));
    CS_DECODE_CHECK(h.nbytes == out_size, kSizeMismatch, kName,
                    "header says " + std::to_string(h.nbytes) + " decoded bytes, the chunk has " +
                        std::to_string(out_size),
                    4);
    if (align == 0) align = 1;
    // Blocks start at multiples of blocksize and the last one ends at nbytes (a memcpyed
    // buffer goes on as one piece).
    if (h.nbytes % align != 0 || (!h.memcpyed() && h.blocksize % align != 0)) return false;
    run(h, in, out_size, nullptr, &sink);
    return true;
  }

 private:
  // The decode loop over `in`, whose header is `h`: every block into its place in `out`, or
  // (sink given, out null) each block into one per-thread block buffer that goes to `sink`
  // before the next is decoded.
  std::size_t run(const BloscHeader& h, ByteView in, std::size_t out_size, std::uint8_t* out,
                  const BlockSink* sink) const {
    if (h.nbytes == 0) return 0;
    CS_DECODE_CHECK(h.nbytes <= out_size, kSizeMismatch, kName,
                    "header says " + std::to_string(h.nbytes) + " decoded bytes but only " +
                        std::to_string(out_size) + " are expected",
                    4);
    const ByteView buf = in.first(h.cbytes);
    if (h.memcpyed()) {
      const std::uint8_t* raw = buf.data() + logic::kBloscHeaderSize;
      if (sink) (*sink)(0, raw, h.nbytes);
      else std::memcpy(out, raw, h.nbytes);
      return h.nbytes;
    }
    const std::uint8_t format = h.compressor_format();
    const std::size_t max_block = std::min(h.blocksize, h.nbytes);
    std::uint8_t* tmp = nullptr;
    if (h.byte_shuffled() || (h.flags & logic::kBloscFlagBitShuffle)) tmp = scratch(0, max_block);
    std::uint8_t* block = sink ? scratch(1, max_block) : nullptr;

    const std::uint32_t nblocks = h.nblocks();
    for (std::uint32_t j = 0; j < nblocks; ++j) {
      const std::size_t bsize = h.block_bytes(j);
      std::uint8_t* dest = sink ? block : out + static_cast<std::size_t>(j) * h.blocksize;
      const bool byte_shuffled = h.byte_shuffled();
      const bool bit_shuffled = h.bit_shuffled(bsize);
      std::uint8_t* target = (byte_shuffled || bit_shuffled) ? tmp : dest;

      std::size_t offset = 0;
      raise_if_bad(logic::blosc_block_start(buf.data(), h, j, &offset));
      const bool split = logic::blosc_block_is_split(h, bsize, h.is_leftover_block(j));
      const std::size_t nsplits = split ? h.typesize : 1;
      if (split && bsize % h.typesize != 0) raise_if_bad({BloscStatus::kSplitBlockNotWhole, 8});
      const std::size_t stream_bytes = bsize / nsplits;
      for (std::size_t k = 0; k < nsplits; ++k) {
        logic::BloscStream s;
        raise_if_bad(logic::blosc_read_stream(buf.data(), h, offset, stream_bytes, &s));
        decode_stream(format, buf, s, target + k * stream_bytes, stream_bytes);
        offset = s.data_offset + s.csize;
      }
      if (byte_shuffled) {
        unshuffle_host(tmp, dest, bsize, h.typesize);
      } else if (bit_shuffled) {
        logic::bitunshuffle_block(tmp, dest, bsize, h.typesize);
      }
      if (sink) (*sink)(static_cast<std::size_t>(j) * h.blocksize, block, bsize);
    }
    return h.nbytes;
  }

  nlohmann::json cfg_;
};

}  // namespace

CodecPtr make_blosc_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, kName);
  config::get_string(configuration, kName, "cname");
  config::get_int(configuration, kName, "clevel");
  config::get_int(configuration, kName, "typesize");
  config::get_int(configuration, kName, "blocksize");
  if (const nlohmann::json* s = config::find(configuration, "shuffle")) {
    if (!s->is_string() && !s->is_number_integer()) {
      config::fail(kName, "shuffle", "must be a string (v3) or an integer (numcodecs), got " + s->dump());
    }
  }
  return std::make_shared<BloscCodec>(configuration);
}

}  // namespace cubestream::codec
