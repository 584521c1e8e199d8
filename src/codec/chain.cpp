#include "codec/chain.hpp"

#include <cstring>

#include "codec/array_to_array/filter_as_array.hpp"
#include "codec/array_to_bytes/sharding.hpp"
#include "codec/registry.hpp"
#include "cubestream/error.hpp"

namespace cubestream::codec {

void Codec::no_encoder() const {
  throw Error(ErrorCode::kUnsupported, "codec '" + name() + "' has no encoder in cubestream (it can be read, not written)");
}

CodecChain::CodecChain(std::vector<CodecPtr> codecs) : all_(std::move(codecs)) {
  // A bytes->bytes filter listed before the array->bytes codec works on the array's elements
  // (Zarr v3 writers put numcodecs filters there): wrap it as an array->array codec.
  bool seen_a2b = false;
  for (auto& c : all_) {
    if (c->kind() == CodecKind::kArrayToBytes) seen_a2b = true;
    if (!seen_a2b && c->kind() == CodecKind::kBytesToBytes &&
        static_cast<const BytesToBytesCodec*>(c.get())->is_elementwise_filter())
      c = std::make_shared<FilterAsArrayCodec>(std::static_pointer_cast<const BytesToBytesCodec>(c));
  }
  for (const auto& c : all_) {
    switch (c->kind()) {
      case CodecKind::kArrayToArray:
        if (a2b_) throw Error(ErrorCode::kInvalidMetadata, "codec '" + c->name() + "' (array->array) comes after the array->bytes codec");
        a2a_.push_back(static_cast<const ArrayToArrayCodec*>(c.get()));
        break;
      case CodecKind::kArrayToBytes:
        if (a2b_) throw Error(ErrorCode::kInvalidMetadata, "codec chain has two array->bytes codecs ('" + a2b_->name() + "' and '" + c->name() + "')");
        a2b_ = static_cast<const ArrayToBytesCodec*>(c.get());
        break;
      case CodecKind::kBytesToBytes:
        if (!a2b_) throw Error(ErrorCode::kInvalidMetadata, "codec '" + c->name() + "' (bytes->bytes) comes before the array->bytes codec");
        b2b_.push_back(static_cast<const BytesToBytesCodec*>(c.get()));
        break;
    }
  }
  if (!a2b_) throw Error(ErrorCode::kInvalidMetadata, "codec chain has no array->bytes codec (such as \"bytes\")");
}

CodecChain CodecChain::from_json(const nlohmann::json& codecs) {
  if (!codecs.is_array()) throw Error(ErrorCode::kInvalidMetadata, "\"codecs\" must be an array");
  std::vector<CodecPtr> list;
  for (const auto& entry : codecs) {
    if (entry.is_string()) {
      list.push_back(make_codec(entry.get<std::string>(), nlohmann::json::object()));
      continue;
    }
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      throw Error(ErrorCode::kInvalidMetadata, "codec entry must be an object with a string \"name\": " + entry.dump());
    }
    nlohmann::json config = entry.value("configuration", nlohmann::json::object());
    if (!config.is_object()) throw Error(ErrorCode::kInvalidMetadata, "codec \"configuration\" must be an object: " + entry.dump());
    list.push_back(make_codec(entry["name"].get<std::string>(), config));
  }
  return CodecChain(std::move(list));
}

nlohmann::json CodecChain::to_json() const {
  auto out = nlohmann::json::array();
  for (const auto& c : all_) out.push_back({{"name", c->name()}, {"configuration", c->configuration()}});
  return out;
}

const ShardingCodec* CodecChain::sole_sharding_codec() const {
  if (all_.size() != 1) return nullptr;
  return dynamic_cast<const ShardingCodec*>(a2b_);
}

namespace {

// Per-thread scratch buffers reused across chunks: decoded chunks are megabytes, and a fresh
// allocation per chunk costs page faults on every page. A chain may decode another chain
// inside it (a sharding codec decodes its inner chunks), so each nesting depth has its own set.
struct ScratchSet {
  Bytes buf[3];
};

class ScratchScope {
 public:
  ScratchScope() {
    if (levels().size() <= static_cast<std::size_t>(depth())) levels().push_back(std::make_unique<ScratchSet>());
    set_ = levels()[depth()++].get();
  }
  ~ScratchScope() {
    // Keep at most this much per buffer between chunks; larger ones are given back.
    constexpr std::size_t kKeepBytes = std::size_t{256} << 20;
    for (auto& b : set_->buf)
      if (b.capacity() > kKeepBytes) Bytes().swap(b);
    --depth();
  }
  Bytes& operator[](int i) { return set_->buf[i]; }

 private:
  static std::vector<std::unique_ptr<ScratchSet>>& levels() {
    thread_local std::vector<std::unique_ptr<ScratchSet>> l;
    return l;
  }
  static int& depth() {
    thread_local int d = 0;
    return d;
  }
  ScratchSet* set_;
};

std::vector<ChunkSpec> array_specs(const std::vector<const ArrayToArrayCodec*>& a2a, const ChunkSpec& spec) {
  std::vector<ChunkSpec> specs{spec};
  for (auto* c : a2a) specs.push_back(c->encoded_spec(specs.back()));
  return specs;
}

}  // namespace

ChunkSpec CodecChain::array_to_bytes_spec(const ChunkSpec& spec) const { return array_specs(a2a_, spec).back(); }

SizeBound CodecChain::encoded_size(const ChunkSpec& spec) const {
  auto specs = array_specs(a2a_, spec);
  SizeBound s = a2b_->encoded_size(specs.back());
  for (auto* c : b2b_) s = c->encoded_size(s);
  return s;
}

void CodecChain::decode(ByteView encoded, const ChunkSpec& spec, MutableByteView out) const {
  if (out.size() != spec.num_bytes()) throw Error(ErrorCode::kInternal, "decode: output size does not match the chunk");
  auto specs = array_specs(a2a_, spec);
  // Sizes on the bytes side: sizes[0] is what the array->bytes codec consumes, sizes[j+1]
  // what bytes->bytes codec j produces when encoding.
  std::vector<SizeBound> sizes{a2b_->encoded_size(specs.back())};
  for (auto* c : b2b_) sizes.push_back(c->encoded_size(sizes.back()));

  const bool array_side_is_copy = a2a_.empty() && a2b_->is_identity_on_host(specs.back());
  ScratchScope scratch;
  ByteView cur = encoded;
  int ping = 0;  // bytes->bytes stages alternate between scratch[0] and scratch[1]
  for (std::size_t j = b2b_.size(); j-- > 0;) {
    const SizeBound want = sizes[j];
    MutableByteView dst;
    if (j == 0 && array_side_is_copy && want.exact && want.bytes == out.size()) {
      dst = out;  // the last bytes->bytes stage writes straight into the output
    } else {
      Bytes& buf = scratch[ping];
      ping ^= 1;
      buf.resize(want.bytes);
      dst = MutableByteView(buf.data(), buf.size());
    }
    std::size_t n = b2b_[j]->decode(cur, dst);
    if (want.exact && n != want.bytes) {
      throw Error(ErrorCode::kSizeMismatch, b2b_[j]->name() + ": decoded to " + std::to_string(n) +
                                                " bytes, expected " + std::to_string(want.bytes));
    }
    cur = ByteView(dst.data(), n);
  }
  // Array side: bytes -> array, then array->array codecs in reverse.
  if (a2a_.empty()) {
    // cur may already be `out` (decoded in place above): the bytes codec then only swaps.
    a2b_->decode(cur, specs.back(), out);
    return;
  }
  int arr = 2;  // the array being decoded lives in scratch[arr]
  scratch[arr].resize(specs.back().num_bytes());
  a2b_->decode(cur, specs.back(), MutableByteView(scratch[arr].data(), scratch[arr].size()));
  for (std::size_t i = a2a_.size(); i-- > 0;) {
    ByteView src(scratch[arr].data(), scratch[arr].size());
    if (i == 0) {
      a2a_[i]->decode(src, specs[i], out);
    } else {
      int next = arr == 2 ? 0 : (arr == 0 ? 1 : 0);
      scratch[next].resize(specs[i].num_bytes());
      a2a_[i]->decode(src, specs[i], MutableByteView(scratch[next].data(), scratch[next].size()));
      arr = next;
    }
  }
}

bool CodecChain::decode_blocks(ByteView encoded, const ChunkSpec& spec, const BlockSink& sink) const {
  if (!a2a_.empty() || b2b_.size() != 1 || !a2b_->is_identity_on_host(spec)) return false;
  const SizeBound serialised = a2b_->encoded_size(spec);
  if (!serialised.exact || serialised.bytes != spec.num_bytes()) return false;
  return b2b_[0]->decode_blocks(encoded, spec.num_bytes(), spec.dtype.size, sink);
}

std::string CodecChain::first_without_encoder() const {
  for (const auto& c : all_)
    if (!c->can_encode()) return c->name();
  return "";
}

bool CodecChain::can_encode() const { return first_without_encoder().empty(); }

Bytes CodecChain::encode(ByteView decoded, const ChunkSpec& spec) const {
  if (decoded.size() != spec.num_bytes()) throw Error(ErrorCode::kInternal, "encode: input size does not match the chunk");
  auto specs = array_specs(a2a_, spec);
  // Array side in list order: each array->array codec maps specs[i] to specs[i + 1].
  Bytes arr_a, arr_b;
  ByteView cur = decoded;
  for (std::size_t i = 0; i < a2a_.size(); ++i) {
    Bytes& dst = (i % 2 == 0) ? arr_a : arr_b;
    dst.resize(specs[i + 1].num_bytes());
    a2a_[i]->encode(cur, specs[i], MutableByteView(dst.data(), dst.size()));
    cur = ByteView(dst.data(), dst.size());
  }
  Bytes bytes = a2b_->encode(cur, specs.back());
  for (auto* c : b2b_) bytes = c->encode(ByteView(bytes.data(), bytes.size()));
  return bytes;
}

}  // namespace cubestream::codec
