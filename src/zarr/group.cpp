// Zarr group discovery, with consolidated metadata (v2 .zmetadata, v3 inline) or by listing.
#include "cubestream/group.hpp"

#include <algorithm>
#include <map>

#include "cubestream/error.hpp"
#include "zarr/metadata.hpp"

namespace cubestream {

namespace {

// Metadata of every node below the root, keyed by node path ("" is the root).
struct Consolidated {
  int zarr_format = 0;
  struct Node {
    bool is_array = false;
    nlohmann::json metadata;                           // zarr.json (v3) or .zarray/.zgroup (v2)
    nlohmann::json attrs = nlohmann::json::object();   // .zattrs (v2); v3 keeps them in metadata
  };
  std::map<std::string, Node> nodes;
};

std::string parent_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? std::string() : p.substr(0, s);
}

std::string name_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::optional<nlohmann::json> read_json(const Store& store, const std::string& key) {
  auto bytes = store.get(key);
  if (!bytes) return std::nullopt;
  try {
    return zarr::parse_json_text(ByteView(bytes->data(), bytes->size()), key);
  } catch (const Error& e) {
    throw e.with_context(ErrorContext{store.describe(), key, std::nullopt});
  }
}

// Runs fn, turning a JSON type error (a field of the wrong type deep in some metadata) into
// Error(kInvalidMetadata) naming the store and key.
template <class Fn>
auto guard_json(const Store& store, const std::string& key, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidMetadata, std::string("malformed metadata: ") + e.what(),
                ErrorContext{store.describe(), key, std::nullopt});
  }
}

[[noreturn]] void bad_consolidated(const Store& store, const std::string& key, const std::string& why) {
  throw Error(ErrorCode::kInvalidMetadata, "consolidated metadata: " + why, ErrorContext{store.describe(), key, std::nullopt});
}

std::shared_ptr<Consolidated> load_v2_consolidated(const Store& store) {
  auto j = read_json(store, ".zmetadata");
  if (!j) return nullptr;
  if (!j->is_object() || !j->contains("metadata") || !(*j)["metadata"].is_object())
    bad_consolidated(store, ".zmetadata", "missing \"metadata\" object");
  auto c = std::make_shared<Consolidated>();
  c->zarr_format = 2;
  for (auto it = (*j)["metadata"].begin(); it != (*j)["metadata"].end(); ++it) {
    const std::string& key = it.key();
    const std::string node = parent_of(key);
    const std::string leaf = name_of(key);
    if (leaf == ".zarray") {
      c->nodes[node].is_array = true;
      c->nodes[node].metadata = it.value();
    } else if (leaf == ".zgroup") {
      c->nodes[node].metadata = it.value();
    } else if (leaf == ".zattrs") {
      c->nodes[node].attrs = it.value();
    }
  }
  return c;
}

std::shared_ptr<Consolidated> load_v3_consolidated(const Store& store, const nlohmann::json& root) {
  if (!root.contains("consolidated_metadata") || root["consolidated_metadata"].is_null()) return nullptr;
  const auto& cm = root["consolidated_metadata"];
  if (!cm.is_object() || !cm.contains("metadata") || !cm["metadata"].is_object())
    bad_consolidated(store, "zarr.json", "\"consolidated_metadata\" needs a \"metadata\" object");
  if (cm.contains("kind") && cm["kind"] != "inline")
    throw Error(ErrorCode::kUnsupported, "consolidated metadata of kind " + cm["kind"].dump() + " is not supported",
                ErrorContext{store.describe(), "zarr.json", std::nullopt});
  auto c = std::make_shared<Consolidated>();
  c->zarr_format = 3;
  c->nodes[""].metadata = root;
  for (auto it = cm["metadata"].begin(); it != cm["metadata"].end(); ++it) {
    const auto& v = it.value();
    if (!v.is_object()) bad_consolidated(store, "zarr.json", "entry \"" + it.key() + "\" is not an object");
    auto& n = c->nodes[it.key()];
    n.is_array = v.value("node_type", "") == "array";
    n.metadata = v;
  }
  return c;
}

}  // namespace

struct Group::Impl {
  std::shared_ptr<Store> store;
  std::string path;
  int zarr_format = 3;
  nlohmann::json attributes = nlohmann::json::object();
  std::shared_ptr<const Consolidated> consolidated;  // shared by every group of the store
  std::string consolidated_root;                     // path of the group that holds it

  // Path of a node relative to the consolidated root.
  std::string rel(const std::string& p) const {
    if (consolidated_root.empty()) return p;
    return p.size() > consolidated_root.size() ? p.substr(consolidated_root.size() + 1) : std::string();
  }
};

Group::Group(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Group Group::open(std::shared_ptr<Store> store, const std::string& path) {
  return guard_json(*store, path.empty() ? "/" : path, [&] { return open_unguarded(store, path); });
}

Group Group::open_unguarded(std::shared_ptr<Store> store, const std::string& path) {
  auto impl = std::make_shared<Impl>();
  impl->store = store;
  impl->path = path;
  const std::string v3_key = join_key(path, "zarr.json");
  if (auto j = read_json(*store, v3_key)) {
    try {
      zarr::check_v3_group(*j);
    } catch (const Error& e) {
      throw e.with_context(ErrorContext{store->describe(), v3_key, std::nullopt});
    }
    impl->zarr_format = 3;
    if (j->contains("attributes")) impl->attributes = (*j)["attributes"];
    impl->consolidated = load_v3_consolidated(*store, *j);
    impl->consolidated_root = path;
    return Group(impl);
  }
  const std::string v2_key = join_key(path, ".zgroup");
  if (auto j = read_json(*store, v2_key)) {
    if (!j->is_object() || j->value("zarr_format", 0) != 2)
      throw Error(ErrorCode::kInvalidMetadata, ".zgroup must hold {\"zarr_format\": 2}", ErrorContext{store->describe(), v2_key, std::nullopt});
    impl->zarr_format = 2;
    if (auto a = read_json(*store, join_key(path, ".zattrs"))) impl->attributes = *a;
    if (path.empty()) impl->consolidated = load_v2_consolidated(*store);
    return Group(impl);
  }
  throw Error(ErrorCode::kNotFound, "no group here (neither zarr.json nor .zgroup)",
              ErrorContext{store->describe(), path.empty() ? "/" : path, std::nullopt});
}

int Group::zarr_format() const { return impl_->zarr_format; }
const std::string& Group::path() const { return impl_->path; }
const nlohmann::json& Group::attributes() const { return impl_->attributes; }
bool Group::consolidated() const { return impl_->consolidated != nullptr; }
std::shared_ptr<Store> Group::store() const { return impl_->store; }

namespace {

void list_children(const Group::Impl& g, std::vector<std::string>* arrays, std::vector<std::string>* groups) {
  if (g.consolidated) {
    const std::string me = g.rel(g.path);
    for (const auto& [p, node] : g.consolidated->nodes) {
      if (p.empty() || parent_of(p) != me) continue;
      (node.is_array ? arrays : groups)->push_back(name_of(p));
    }
  } else {
    for (const auto& name : g.store->list_dir(g.path)) {
      if (name.empty() || name[0] == '.' || name == "zarr.json") continue;
      const std::string child = join_key(g.path, name);
      if (g.zarr_format == 3) {
        auto j = read_json(*g.store, join_key(child, "zarr.json"));
        if (!j || !j->is_object()) continue;
        const auto type = j->value("node_type", "");
        if (type == "array") arrays->push_back(name);
        else if (type == "group") groups->push_back(name);
      } else {
        if (g.store->exists(join_key(child, ".zarray"))) arrays->push_back(name);
        else if (g.store->exists(join_key(child, ".zgroup"))) groups->push_back(name);
      }
    }
  }
  std::sort(arrays->begin(), arrays->end());
  std::sort(groups->begin(), groups->end());
}

}  // namespace

std::vector<std::string> Group::array_names() const {
  std::vector<std::string> a, g;
  guard_json(*impl_->store, impl_->path, [&] { list_children(*impl_, &a, &g); });
  return a;
}

std::vector<std::string> Group::group_names() const {
  std::vector<std::string> a, g;
  guard_json(*impl_->store, impl_->path, [&] { list_children(*impl_, &a, &g); });
  return g;
}

Array Group::open_array(const std::string& name) const {
  const std::string p = join_key(impl_->path, name);
  validate_key(p, impl_->store->describe());  // consolidated metadata may name anything
  if (impl_->consolidated) {
    auto it = impl_->consolidated->nodes.find(impl_->rel(p));
    if (it != impl_->consolidated->nodes.end() && it->second.is_array) {
      return Array::from_json(impl_->store, p, it->second.metadata, impl_->consolidated->zarr_format, it->second.attrs);
    }
  }
  return Array::open(impl_->store, p);
}

Group Group::open_group(const std::string& name) const {
  const std::string p = join_key(impl_->path, name);
  validate_key(p, impl_->store->describe());
  return guard_json(*impl_->store, p, [&] { return open_group_unguarded(p); });
}

Group Group::open_group_unguarded(const std::string& p) const {
  if (impl_->consolidated) {
    auto it = impl_->consolidated->nodes.find(impl_->rel(p));
    if (it != impl_->consolidated->nodes.end() && !it->second.is_array) {
      auto impl = std::make_shared<Impl>(*impl_);
      impl->path = p;
      const auto& md = it->second.metadata;
      impl->attributes = impl->zarr_format == 3 ? md.value("attributes", nlohmann::json::object()) : it->second.attrs;
      return Group(impl);
    }
  }
  return open(impl_->store, p);
}

std::vector<std::string> Group::all_array_paths() const {
  std::vector<std::string> out;
  for (const auto& a : array_names()) out.push_back(a);
  for (const auto& g : group_names()) {
    for (const auto& sub : open_group(g).all_array_paths()) out.push_back(g + "/" + sub);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cubestream
