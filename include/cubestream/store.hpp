// The byte source under every array: a key-value store with byte-range reads.
//
// Keys are '/'-separated relative paths ("t2m/c/0/0/0", ".zmetadata"). Every implementation
// validates keys through validate_key(): a key that is empty, absolute, contains "..", ".",
// backslashes or NUL is refused with Error(kPathEscape), so metadata can never steer a read
// outside the store root.
//
// Byte ranges are at the heart of the interface (sharded stores read a few inner chunks out
// of large shard objects); a whole-key get is the special case.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cubestream/bytes.hpp"

namespace cubestream {

// A range of bytes inside one value. offset >= 0: `length` bytes from `offset` (length < 0
// means to the end). offset < 0: the last -offset bytes (a suffix; length is ignored).
struct ByteRange {
  std::int64_t offset = 0;
  std::int64_t length = -1;

  static ByteRange all() { return {0, -1}; }
  static ByteRange suffix(std::int64_t n) { return {-n, -1}; }
};

class Store {
 public:
  virtual ~Store() = default;

  // A URL-like description for messages ("file:///data/era5.zarr", "memory://tests").
  virtual std::string describe() const = 0;

  // The whole value, or nullopt when the key does not exist.
  virtual std::optional<Bytes> get(std::string_view key) const = 0;

  // A part of the value, or nullopt when the key does not exist. A range that starts past the
  // end of the value or is longer than what is left is Error(kOutOfRange).
  virtual std::optional<Bytes> get_range(std::string_view key, ByteRange range) const = 0;

  // Like get_range, but into `out` (resized to the range's length), so that a caller reading
  // many values can reuse one buffer's memory. Returns false when the key does not exist.
  virtual bool read_into(std::string_view key, ByteRange range, Bytes& out) const;

  // Several ranges of one key. Implementations may coalesce neighbouring ranges into one read.
  // nullopt when the key does not exist.
  virtual std::optional<std::vector<Bytes>> get_ranges(std::string_view key,
                                                       const std::vector<ByteRange>& ranges) const;

  // Size of the value in bytes, or nullopt when the key does not exist.
  virtual std::optional<std::uint64_t> size(std::string_view key) const = 0;

  bool exists(std::string_view key) const { return size(key).has_value(); }

  // A hint that `range` of `key` (ByteRange::all() for the whole value) will be read soon, so
  // that a store can start bringing it closer (the local file store asks the kernel to read
  // it into the page cache) while the caller does other work. The contract:
  //   - it is only a hint: it never throws and reports nothing (a missing key, a bad key, a
  //     range past the end: nothing happens), and it changes no value that get() returns;
  //   - a store may ignore it (the default does);
  //   - it does not wait for the data to arrive: it returns once the read is asked for. It
  //     may still take a little time to ask (a system call that queues the reads), so callers
  //     on a latency-critical path give hints from a thread of their own.
  virtual void will_need(std::string_view key, ByteRange range) const noexcept {}

  // Names directly below `prefix` ("" for the root): keys and "directories", sorted, without
  // the prefix. Used to discover arrays and groups when no consolidated metadata exists.
  virtual std::vector<std::string> list_dir(std::string_view prefix) const = 0;
};

// A store that can also be written: what `cubestream rechunk` and `convert` write into. The
// read interface above is unchanged; writers add these operations.
//
// Every value appears atomically: put() and ValueWriter::commit() write the bytes under a
// temporary key beside the final one and rename it into place, so a reader (or a writer that
// resumes after a crash) sees either no value or the whole value, never a part of one.
class WritableStore : public Store {
 public:
  // Streams one value in pieces; nothing is visible under the key until commit(). Destroying
  // a writer that was not committed discards what it wrote.
  class ValueWriter {
   public:
    virtual ~ValueWriter() = default;
    virtual void append(ByteView bytes) = 0;
    // Overwrites bytes already appended (offset + size <= size()): used to fill in a shard
    // index placed at the start of a shard once its inner chunks are written.
    virtual void write_at(std::uint64_t offset, ByteView bytes) = 0;
    virtual std::uint64_t size() const = 0;
    virtual void commit() = 0;
  };

  // Stores `value` under `key`, replacing any value there, atomically.
  virtual void put(std::string_view key, ByteView value);
  virtual std::unique_ptr<ValueWriter> open_writer(std::string_view key) = 0;
  // Removes the value under `key`; a key that does not exist is not an error.
  virtual void erase(std::string_view key) = 0;
  // Removes every value whose key starts with `prefix` + "/" (everything for ""), and the
  // value under `prefix` itself.
  virtual void erase_prefix(std::string_view prefix) = 0;
  // Removes temporaries that interrupted writers left behind (see above); returns how many.
  virtual std::size_t remove_temporaries() { return 0; }
};

// Throws Error(kPathEscape) naming `store` when `key` is not a safe relative key.
void validate_key(std::string_view key, std::string_view store_description);

// Joins two key parts with '/', skipping empty parts.
std::string join_key(std::string_view a, std::string_view b);

// A store over a directory of the local file system.
std::shared_ptr<Store> open_file_store(const std::string& root);

// A writable store over a directory of the local file system; `root` is created (with its
// parents) when it does not exist. Writes go to "<dir>/.<name>.tmp-<pid>-<n>" and are renamed
// into place; errors (ENOSPC, EACCES, ...) are Error(kIo) naming the key.
std::shared_ptr<WritableStore> open_writable_file_store(const std::string& root);

// A store held in memory (tests, fuzzing, small generated data).
class MemoryStore : public WritableStore {
 public:
  explicit MemoryStore(std::string name = "memory");
  void set(std::string key, Bytes value);
  void set(std::string key, std::string_view value);
  void erase(std::string_view key) override;
  void put(std::string_view key, ByteView value) override;
  std::unique_ptr<ValueWriter> open_writer(std::string_view key) override;
  void erase_prefix(std::string_view prefix) override;

  std::string describe() const override;
  std::optional<Bytes> get(std::string_view key) const override;
  std::optional<Bytes> get_range(std::string_view key, ByteRange range) const override;
  std::optional<std::uint64_t> size(std::string_view key) const override;
  std::vector<std::string> list_dir(std::string_view prefix) const override;

 private:
  struct Impl;
  std::string name_;
  std::shared_ptr<Impl> impl_;
};

// Opens a store by URL or path: a plain path or file:// URL gives a file store; http:// and
// https:// a read-only store of ranged GETs below that URL (no list_dir: open groups through
// consolidated metadata); s3://bucket/prefix an S3 store (credentials, region and endpoint from
// the environment as the AWS tools read them). The environment variables that tune the object
// stores are listed in src/store/http/transport.hpp and src/store/s3/s3_config.hpp.
std::shared_ptr<Store> open_store(const std::string& url);

}  // namespace cubestream
