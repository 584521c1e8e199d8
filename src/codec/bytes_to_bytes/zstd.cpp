// The `zstd` codec (Zarr v3 core codec; numcodecs "zstd"): Zstandard frames (RFC 8878).
//
// v3 configuration {"level": int, "checksum": bool}; numcodecs {"level": int} (newer
// numcodecs also "checksum"). Neither matters for decoding: a frame describes itself.
//
// Decoding is frame by frame, each frame in one shot straight into the output with
// ZSTD_decompressDCtx bounded by the room left: one-shot decoding needs no window buffer,
// copies nothing twice, handles frames with or without a content size, and fails with
// dstSize_tooSmall rather than write past the output. ZSTD_findFrameCompressedSize finds
// frame boundaries (skippable frames included), so several concatenated frames decode in
// order and an error can name the offset of the frame it is in.
#include "codec/bytes_to_bytes/zstd.hpp"

#include <memory>
#include <string>

#include <zstd.h>
#include <zstd_errors.h>

#include "codec/bytes_to_bytes/config.hpp"
#include "codec/decode_check.hpp"
#include "codec/factories.hpp"

namespace cubestream::codec {

namespace {

struct DctxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

// One decompression context per thread, reused across calls (creating one allocates).
ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DctxDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) throw Error(ErrorCode::kInternal, "zstd: cannot allocate a decompression context");
  return ctx.get();
}

[[noreturn]] void throw_zstd_error(std::size_t code, std::string_view codec, std::uint64_t offset,
                                   std::size_t room) {
  const std::string what = ZSTD_getErrorName(code);
  const std::string name(codec);
  switch (ZSTD_getErrorCode(code)) {
    case ZSTD_error_dstSize_tooSmall:
      throw_decode_error(ErrorCode::kSizeMismatch, name,
                         "zstd frame decodes to more than the " + std::to_string(room) +
                             " bytes left in the output",
                         offset);
    case ZSTD_error_checksum_wrong:
      throw_decode_error(ErrorCode::kChecksumMismatch, name, "zstd frame checksum mismatch", offset);
    case ZSTD_error_dictionary_wrong:
      throw_decode_error(ErrorCode::kUnsupported, name,
                         "zstd frame needs a dictionary, which Zarr does not provide", offset);
    case ZSTD_error_memory_allocation:
      throw_decode_error(ErrorCode::kInternal, name, "zstd: out of memory", offset);
    default:
      throw_decode_error(ErrorCode::kCorruptData, name, "invalid zstd frame: " + what, offset);
  }
}

class ZstdCodec final : public BytesToBytesCodec {
 public:
  explicit ZstdCodec(nlohmann::json cfg) : cfg_(std::move(cfg)) {}
  std::string name() const override { return "zstd"; }
  nlohmann::json configuration() const override { return cfg_; }
  SizeBound encoded_size(SizeBound decoded) const override {
    return {ZSTD_compressBound(decoded.bytes), false};
  }
  std::size_t decode(ByteView in, MutableByteView out) const override {
    return zstd_decode_frames(in, out, "zstd", 0);
  }
  bool can_encode() const override { return true; }
  // One frame with the content size in its header (what numcodecs and zarr-python write), at
  // "level" (0 = libzstd's default, 3), with a content checksum when "checksum" is true.
  Bytes encode(ByteView in) const override {
    const int level = static_cast<int>(config::get_int(cfg_, "zstd", "level").value_or(0));
    const bool checksum = config::get_bool(cfg_, "zstd", "checksum").value_or(false);
    return zstd_encode_frame(in, level, checksum);
  }

 private:
  nlohmann::json cfg_;
};

}  // namespace

std::size_t zstd_decode_frames(ByteView in, MutableByteView out, std::string_view codec,
                               std::uint64_t base_offset) {
  ZSTD_DCtx* dctx = thread_dctx();
  std::size_t pos = 0, written = 0;
  while (pos < in.size()) {
    const std::size_t frame = ZSTD_findFrameCompressedSize(in.data() + pos, in.size() - pos);
    if (ZSTD_isError(frame)) {
      throw_decode_error(ErrorCode::kCorruptData, std::string(codec),
                         std::string("invalid or truncated zstd frame: ") + ZSTD_getErrorName(frame),
                         base_offset + pos);
    }
    const std::size_t room = out.size() - written;
    const std::size_t n =
        ZSTD_decompressDCtx(dctx, out.data() + written, room, in.data() + pos, frame);
    if (ZSTD_isError(n)) throw_zstd_error(n, codec, base_offset + pos, room);
    written += n;
    pos += frame;
  }
  return written;
}

Bytes zstd_encode_frame(ByteView in, int level, bool checksum) {
  struct CctxDeleter {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  thread_local std::unique_ptr<ZSTD_CCtx, CctxDeleter> ctx(ZSTD_createCCtx());
  if (!ctx) throw Error(ErrorCode::kResourceExhausted, "zstd: cannot allocate a compression context");
  ZSTD_CCtx* c = ctx.get();
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  auto check = [](std::size_t r) {
    if (ZSTD_isError(r)) throw Error(ErrorCode::kInternal, std::string("zstd: compression failed: ") + ZSTD_getErrorName(r));
  };
  check(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level));
  check(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0));
  check(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1));
  Bytes out(ZSTD_compressBound(in.size()));
  const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  check(n);
  out.resize(n);
  return out;
}

CodecPtr make_zstd_codec(const nlohmann::json& configuration) {
  config::require_object(configuration, "zstd");
  config::get_int(configuration, "zstd", "level");
  config::get_bool(configuration, "zstd", "checksum");
  return std::make_shared<ZstdCodec>(configuration);
}

}  // namespace cubestream::codec
