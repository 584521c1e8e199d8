// Zarr groups: the hierarchy of a store, with or without consolidated metadata.
//
// A Group lists its child arrays and groups and opens them. When the store has consolidated
// metadata (Zarr v2 ".zmetadata", or Zarr v3 "consolidated_metadata" inlined in the root
// zarr.json), children are found and opened from it without touching the store again;
// otherwise the store is listed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cubestream/array.hpp"
#include "cubestream/store.hpp"

namespace cubestream {

class Group {
 public:
  // Opens the group at `path` ("" for the store root). Zarr v3 (zarr.json with node_type
  // "group") is tried first, then v2 (.zgroup). Throws Error(kNotFound) when there is none.
  static Group open(std::shared_ptr<Store> store, const std::string& path = "");

  int zarr_format() const;
  const std::string& path() const;
  const nlohmann::json& attributes() const;
  bool consolidated() const;  // children come from consolidated metadata
  std::shared_ptr<Store> store() const;

  // Names of the direct children, sorted.
  std::vector<std::string> array_names() const;
  std::vector<std::string> group_names() const;

  // Opens a direct child (or a '/'-separated path below this group).
  Array open_array(const std::string& name) const;
  Group open_group(const std::string& name) const;

  // Paths (relative to this group) of every array below it, depth first, sorted.
  std::vector<std::string> all_array_paths() const;

  struct Impl;

 private:
  explicit Group(std::shared_ptr<const Impl> impl);
  static Group open_unguarded(std::shared_ptr<Store> store, const std::string& path);
  Group open_group_unguarded(const std::string& path) const;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cubestream
