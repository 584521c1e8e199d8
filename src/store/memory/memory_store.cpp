// A Store held in memory: for tests, fuzzing and small generated data.
#include <map>
#include <mutex>
#include <set>

#include "cubestream/error.hpp"
#include "cubestream/store.hpp"
#include "store/range_math.hpp"

namespace cubestream {

struct MemoryStore::Impl {
  mutable std::mutex mu;
  std::map<std::string, Bytes, std::less<>> values;
};

MemoryStore::MemoryStore(std::string name) : name_(std::move(name)), impl_(std::make_shared<Impl>()) {}

std::string MemoryStore::describe() const { return "memory://" + name_; }

void MemoryStore::set(std::string key, Bytes value) {
  validate_key(key, describe());
  std::lock_guard lock(impl_->mu);
  impl_->values[std::move(key)] = std::move(value);
}

void MemoryStore::set(std::string key, std::string_view value) {
  set(std::move(key), Bytes(value.begin(), value.end()));
}

void MemoryStore::erase(std::string_view key) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->values.find(key);
  if (it != impl_->values.end()) impl_->values.erase(it);
}

std::optional<Bytes> MemoryStore::get(std::string_view key) const {
  validate_key(key, describe());
  std::lock_guard lock(impl_->mu);
  auto it = impl_->values.find(key);
  if (it == impl_->values.end()) return std::nullopt;
  return it->second;
}

std::optional<Bytes> MemoryStore::get_range(std::string_view key, ByteRange range) const {
  validate_key(key, describe());
  std::lock_guard lock(impl_->mu);
  auto it = impl_->values.find(key);
  if (it == impl_->values.end()) return std::nullopt;
  auto r = store_detail::resolve_range(range, it->second.size(), describe(), key);
  return Bytes(it->second.begin() + static_cast<std::ptrdiff_t>(r.offset),
               it->second.begin() + static_cast<std::ptrdiff_t>(r.offset + r.length));
}

std::optional<std::uint64_t> MemoryStore::size(std::string_view key) const {
  validate_key(key, describe());
  std::lock_guard lock(impl_->mu);
  auto it = impl_->values.find(key);
  if (it == impl_->values.end()) return std::nullopt;
  return it->second.size();
}

std::vector<std::string> MemoryStore::list_dir(std::string_view prefix) const {
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::set<std::string> names;
  std::lock_guard lock(impl_->mu);
  for (const auto& [key, value] : impl_->values) {
    if (key.size() <= p.size() || key.compare(0, p.size(), p) != 0) continue;
    std::string rest = key.substr(p.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  return {names.begin(), names.end()};
}

void MemoryStore::put(std::string_view key, ByteView value) { set(std::string(key), Bytes(value.begin(), value.end())); }

namespace {
// Buffers the value and publishes it with one set() under the store's lock: atomic.
class MemoryValueWriter final : public WritableStore::ValueWriter {
 public:
  MemoryValueWriter(MemoryStore* store, std::string key) : store_(store), key_(std::move(key)) {}
  void append(ByteView bytes) override { buf_.insert(buf_.end(), bytes.begin(), bytes.end()); }
  void write_at(std::uint64_t offset, ByteView bytes) override {
    if (offset + bytes.size() > buf_.size()) throw Error(ErrorCode::kInvalidArgument, "write_at past the end of the value");
    std::copy(bytes.begin(), bytes.end(), buf_.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  std::uint64_t size() const override { return buf_.size(); }
  void commit() override { store_->set(key_, std::move(buf_)); }

 private:
  MemoryStore* store_;
  std::string key_;
  Bytes buf_;
};
}  // namespace

std::unique_ptr<WritableStore::ValueWriter> MemoryStore::open_writer(std::string_view key) {
  validate_key(key, describe());
  return std::make_unique<MemoryValueWriter>(this, std::string(key));
}

void MemoryStore::erase_prefix(std::string_view prefix) {
  std::lock_guard lock(impl_->mu);
  const std::string p = prefix.empty() ? "" : std::string(prefix) + "/";
  for (auto it = impl_->values.begin(); it != impl_->values.end();) {
    if (it->first == prefix || it->first.compare(0, p.size(), p) == 0) it = impl_->values.erase(it);
    else ++it;
  }
}

}  // namespace cubestream
