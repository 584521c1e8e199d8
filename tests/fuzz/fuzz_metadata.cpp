// libFuzzer target: arbitrary bytes as array and group metadata (zarr.json, .zarray,
// .zmetadata), then a read of the array when it is small. Anything but a cubestream::Error
// escaping, a crash, a leak or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cubestream/array.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"

using namespace cubestream;

namespace {

void try_read(const Array& a) {
  std::int64_t n = 1;
  for (auto s : a.shape()) {
    if (s > 64) return;
    n *= s;
  }
  if (n * a.dtype().size > (1 << 20)) return;
  Bytes out(static_cast<std::size_t>(n) * a.dtype().size);
  Region r;
  r.start.assign(a.rank(), 0);
  r.shape = a.shape();
  a.read(r, out.data(), out.size(), ReadOptions{1});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0] % 4;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto store = std::make_shared<MemoryStore>("fuzz");
  // A few chunk values for whatever the metadata describes (keys of small v2 and v3 arrays).
  static const char* kChunkKeys[] = {"a/0", "a/0.0", "a/0/0", "a/c/0", "a/c/0/0", "a/c/0/0/0", "a/0.0.0"};
  for (const char* k : kChunkKeys) store->set(k, text.substr(0, text.size() / 2));
  try {
    switch (mode) {
      case 0:
        store->set("a/zarr.json", text);
        try_read(Array::open(store, "a"));
        break;
      case 1:
        store->set("a/.zarray", text);
        try_read(Array::open(store, "a"));
        break;
      case 2: {
        store->set("zarr.json", text);
        Group g = Group::open(store);
        for (const auto& p : g.all_array_paths()) try_read(g.open_array(p));
        break;
      }
      case 3: {
        store->set(".zgroup", std::string_view("{\"zarr_format\": 2}"));
        store->set(".zmetadata", text);
        Group g = Group::open(store);
        for (const auto& p : g.all_array_paths()) try_read(g.open_array(p));
        break;
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
