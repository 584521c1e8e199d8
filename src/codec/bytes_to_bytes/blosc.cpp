// The `blosc` codec (Zarr v3 core codec; numcodecs "blosc"): the c-blosc 1.x container.
//
// The container parser and the unshuffles are our own (logic/blosc_format.hpp,
// logic/byte_shuffle.hpp, logic/bit_shuffle.hpp, logic/blosclz.hpp; the GPU decoder shares
// them); the streams inside are LZ4 blocks, zlib streams or Zstandard frames decoded with the
// field's libraries, or BloscLZ decoded by logic/blosclz.hpp. Snappy streams are not
// supported. libblosc itself is only a test oracle.
//
// Configurations: v3 {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4,
// "blocksize": 0}; numcodecs {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
// (shuffle -1 auto, 0 none, 1 byte, 2 bit). None of it is needed to decode: the header of each
// chunk says how it was written. Blocks are decoded one after another on the calling thread;
// the pipeline decodes chunks in parallel.
#include <climits>
#include <cstring>
#include <string>

#include <lz4.h>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/bytes_to_bytes/inflate.hpp"
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

// Scratch for shuffled blocks, kept per thread so that decoding many chunks does not allocate
// (and fault in fresh pages) for each one.
std::uint8_t* scratch(std::size_t bytes) {
  thread_local Bytes buf;
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

class BloscCodec final : public BytesToBytesCodec {
 public:
  explicit BloscCodec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return kName; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {decoded.bytes + kMaxOverhead, false};
  }

  std::size_t decode(ByteView in, MutableByteView out) const override {
    BloscHeader h;
    raise_if_bad(logic::blosc_parse_header(in.data(), in.size(), &h));
    if (h.nbytes == 0) return 0;
    CS_DECODE_CHECK(h.nbytes <= out.size(), kSizeMismatch, kName,
                    "header says " + std::to_string(h.nbytes) + " decoded bytes but only " +
                        std::to_string(out.size()) + " are expected",
                    4);
    const ByteView buf = in.first(h.cbytes);
    if (h.memcpyed()) {
      std::memcpy(out.data(), buf.data() + logic::kBloscHeaderSize, h.nbytes);
      return h.nbytes;
    }
    const std::uint8_t format = h.compressor_format();
    const std::size_t max_block = std::min(h.blocksize, h.nbytes);
    std::uint8_t* tmp = nullptr;
    if (h.byte_shuffled() || (h.flags & logic::kBloscFlagBitShuffle)) tmp = scratch(max_block);

    const std::uint32_t nblocks = h.nblocks();
    for (std::uint32_t j = 0; j < nblocks; ++j) {
      const std::size_t bsize = h.block_bytes(j);
      std::uint8_t* dest = out.data() + static_cast<std::size_t>(j) * h.blocksize;
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
        logic::unshuffle_block(tmp, dest, bsize, h.typesize);
      } else if (bit_shuffled) {
        logic::bitunshuffle_block(tmp, dest, bsize, h.typesize);
      }
    }
    return h.nbytes;
  }

 private:
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
