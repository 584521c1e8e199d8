// A read-only store over another that records every will_need hint it is given (and the keys
// read), for the tests of readahead hints (zarr sharding, the loader). Reads can be slowed
// down, so that a test's producer does not outrun the loader's hint thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cubestream/store.hpp"

namespace cubestream::test_stores {

class HintRecordingStore final : public Store {
 public:
  struct Hint {
    std::string key;
    ByteRange range;
  };

  explicit HintRecordingStore(std::shared_ptr<Store> inner, std::chrono::microseconds read_delay = {})
      : inner_(std::move(inner)), delay_(read_delay) {}

  std::string describe() const override { return inner_->describe(); }
  std::optional<Bytes> get(std::string_view key) const override {
    note_read(key);
    return inner_->get(key);
  }
  std::optional<Bytes> get_range(std::string_view key, ByteRange range) const override {
    note_read(key);
    return inner_->get_range(key, range);
  }
  bool read_into(std::string_view key, ByteRange range, Bytes& out) const override {
    note_read(key);
    return inner_->read_into(key, range, out);
  }
  std::optional<std::uint64_t> size(std::string_view key) const override { return inner_->size(key); }
  std::vector<std::string> list_dir(std::string_view prefix) const override { return inner_->list_dir(prefix); }

  void will_need(std::string_view key, ByteRange range) const noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    hints_.push_back(Hint{std::string(key), range});
  }

  std::vector<Hint> hints() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hints_;
  }
  std::vector<std::string> reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    hints_.clear();
    reads_.clear();
  }

 private:
  void note_read(std::string_view key) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      reads_.emplace_back(key);
    }
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
  }

  std::shared_ptr<Store> inner_;
  std::chrono::microseconds delay_;
  mutable std::mutex mu_;
  mutable std::vector<Hint> hints_;
  mutable std::vector<std::string> reads_;
};

}  // namespace cubestream::test_stores
