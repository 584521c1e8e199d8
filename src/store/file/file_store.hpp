// The file store's internal face: what the device reads (src/store/gds) and the tests need
// beyond the Store interface: open a key as an OpenFile, and the read engine and settings
// the store was opened with.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "cubestream/store.hpp"
#include "store/file/io_settings.hpp"
#include "store/file/read_engine.hpp"

namespace cubestream::store_detail {

class LocalFileStore : public WritableStore {
 public:
  // The key opened for reading (buffered descriptor and size), or nullptr when it does not
  // exist or is a directory. `direct`: also open an O_DIRECT descriptor, unless this store
  // already learned that its file system refuses O_DIRECT.
  virtual std::unique_ptr<OpenFile> open_file(std::string_view key, bool direct) const = 0;
  // Opens f's O_DIRECT descriptor if it has none, unless this file system refused O_DIRECT
  // before (f.direct_fd stays -1 then).
  virtual void open_direct(OpenFile& f) const = 0;
  // How a read of `length` bytes uses O_DIRECT under this store's settings.
  virtual ReadOp::Direct direct_for(std::uint64_t length) const = 0;
  // Called after reads of `f`: remembers a refusal of O_DIRECT for the rest of the store.
  virtual void note_direct_refused(const OpenFile& f) const = 0;
  virtual ReadEngine& engine() const = 0;
  virtual const IoSettings& io_settings() const = 0;
  // One line: engine and O_DIRECT mode in use, and why ("io_uring, depth 32 (...)").
  virtual std::string io_description() const = 0;
};

// A file store with explicit settings (open_file_store reads them from the environment).
// `probe` replaces the process's io_uring probe (tests force "unavailable" with it).
std::shared_ptr<LocalFileStore> open_local_file_store(const std::string& root, const IoSettings& settings,
                                                      const UringProbe* probe = nullptr);

}  // namespace cubestream::store_detail
