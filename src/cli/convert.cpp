// `cubestream convert FILE.nc [FILE.nc...] DST [options]`: netCDF files (netCDF-4/HDF5, and
// classic netCDF-3, read through libnetcdf) into one Zarr store, in the layout xarray's
// to_zarr writes, so that xarray.open_zarr (and cubestream's Dataset) see the same dataset
// that xarray.open_mfdataset sees in the files.
//
//  - Several files are joined along the record dimension (--concat-dim, default: the first
//    file's unlimited dimension, else "time"), in the order given. Variables without that
//    dimension come from the first file. Every file must have the same variables, types and
//    other dimension sizes; the coordinate of the joined dimension must use the same "units"
//    and "calendar" in every file (the values are copied as stored, not re-encoded).
//  - Attributes are copied (CF attributes included: units, calendar, scale_factor,
//    add_offset, coordinates, ...); global attributes go to the root group. The CF _FillValue
//    follows xarray's Zarr conventions: v2 keeps it in the array's fill_value (and drops the
//    attribute); v3 keeps the attribute (a number for integers, base64 of the float64 for
//    floats) and uses the same value as the array's fill_value.
//  - Chunks, shards, codec, memory, threads, --overwrite/--resume and --part work as in
//    `cubestream rechunk` (one write engine, src/zarr/rechunk.hpp). Default chunks: 1 along
//    the joined dimension, whole along the others. String variables are skipped (reported).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/strided_copy.hpp"

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/write_options.hpp"
#include "cubestream/error.hpp"
#include "zarr/rechunk.hpp"

#ifdef CUBESTREAM_HAVE_NETCDF
#include <netcdf.h>
#endif

namespace cubestream::cli {

#ifndef CUBESTREAM_HAVE_NETCDF

int run_convert(int, char**) {
  throw Error(ErrorCode::kUnsupported, "this cubestream was built without libnetcdf (install libnetcdf-dev and rebuild) ");
}

#else

namespace {

const char* kConvertUsage =
    "usage: cubestream convert FILE.nc [FILE.nc...] DST [--concat-dim time] [--variables a,b]\n"
    "         [--chunks time=1] [--shards time=64] [--codec zstd:3] [--shuffle] [--format 3|2]\n"
    "         [--memory 2G] [--threads N] [--overwrite | --resume] [--part i/n] [--progress]\n";

// libnetcdf is not thread-safe: every call into it holds this lock.
std::mutex& nc_mutex() {
  static std::mutex m;
  return m;
}

void nc_check(int status, const std::string& file, const std::string& what) {
  if (status != NC_NOERR)
    throw Error(ErrorCode::kIo, what + ": " + nc_strerror(status), ErrorContext{"file://" + file, {}, std::nullopt});
}

struct NcFile {
  std::string path;
  int id = -1;
  explicit NcFile(std::string p) : path(std::move(p)) {
    std::lock_guard lock(nc_mutex());
    nc_check(nc_open(path.c_str(), NC_NOWRITE, &id), path, "cannot open as netCDF");
  }
  ~NcFile() {
    if (id >= 0) {
      std::lock_guard lock(nc_mutex());
      nc_close(id);
    }
  }
  NcFile(const NcFile&) = delete;
};

std::optional<DataType> nc_dtype(nc_type t) {
  switch (t) {
    case NC_BYTE: return DataType::int_(1);
    case NC_UBYTE: return DataType::uint_(1);
    case NC_SHORT: return DataType::int_(2);
    case NC_USHORT: return DataType::uint_(2);
    case NC_INT: return DataType::int_(4);
    case NC_UINT: return DataType::uint_(4);
    case NC_INT64: return DataType::int_(8);
    case NC_UINT64: return DataType::uint_(8);
    case NC_FLOAT: return DataType::float_(4);
    case NC_DOUBLE: return DataType::float_(8);
    default: return std::nullopt;  // NC_CHAR, NC_STRING, compound, vlen, enum, opaque
  }
}

// One attribute as JSON: text as a string, a single number as a number, else a list.
nlohmann::json nc_attribute(const NcFile& f, int varid, const char* name) {
  nc_type t;
  size_t len;
  nc_check(nc_inq_att(f.id, varid, name, &t, &len), f.path, std::string("attribute ") + name);
  if (t == NC_CHAR) {
    std::string s(len, '\0');
    if (len) nc_check(nc_get_att_text(f.id, varid, name, s.data()), f.path, name);
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  if (t == NC_STRING) {
    std::vector<char*> v(len);
    nc_check(nc_get_att_string(f.id, varid, name, v.data()), f.path, name);
    nlohmann::json out = nlohmann::json::array();
    for (auto* p : v) out.push_back(p ? std::string(p) : std::string());
    nc_free_string(len, v.data());
    return len == 1 ? out[0] : out;
  }
  nlohmann::json out = nlohmann::json::array();
  auto dt = nc_dtype(t);
  if (!dt) return nullptr;
  if (dt->kind == DTypeKind::kFloat) {
    std::vector<double> v(len);
    nc_check(nc_get_att_double(f.id, varid, name, v.data()), f.path, name);
    for (double d : v) {
      if (std::isnan(d)) out.push_back("NaN");  // JSON has no NaN; Zarr writers spell it so
      else if (std::isinf(d)) out.push_back(d > 0 ? "Infinity" : "-Infinity");
      else if (dt->size == 4) out.push_back(static_cast<double>(static_cast<float>(d)));
      else out.push_back(d);
    }
  } else if (dt->kind == DTypeKind::kUInt) {
    std::vector<unsigned long long> v(len);
    nc_check(nc_get_att_ulonglong(f.id, varid, name, v.data()), f.path, name);
    for (auto x : v) out.push_back(static_cast<std::uint64_t>(x));
  } else {
    std::vector<long long> v(len);
    nc_check(nc_get_att_longlong(f.id, varid, name, v.data()), f.path, name);
    for (auto x : v) out.push_back(static_cast<std::int64_t>(x));
  }
  return len == 1 ? out[0] : out;
}

nlohmann::json nc_attributes(const NcFile& f, int varid, int natts) {
  nlohmann::json a = nlohmann::json::object();
  for (int i = 0; i < natts; ++i) {
    char name[NC_MAX_NAME + 1];
    nc_check(nc_inq_attname(f.id, varid, i, name), f.path, "attribute name");
    if (!std::strcmp(name, "_NCProperties")) continue;  // libnetcdf's own provenance
    auto v = nc_attribute(f, varid, name);
    if (!v.is_null()) a[name] = v;
  }
  return a;
}

struct VarInfo {
  std::string name;
  int varid = -1;
  nc_type type = 0;
  DataType dtype;
  std::vector<std::string> dims;
  std::vector<std::int64_t> shape;  // in this file
  nlohmann::json attrs;
};

std::vector<VarInfo> variables_of(const NcFile& f, std::vector<std::string>* skipped) {
  std::lock_guard lock(nc_mutex());
  int nvars = 0;
  nc_check(nc_inq_nvars(f.id, &nvars), f.path, "variables");
  std::vector<VarInfo> out;
  for (int v = 0; v < nvars; ++v) {
    char name[NC_MAX_NAME + 1];
    nc_type t;
    int ndims, natts;
    int dimids[NC_MAX_VAR_DIMS];
    nc_check(nc_inq_var(f.id, v, name, &t, &ndims, dimids, &natts), f.path, "variable");
    auto dt = nc_dtype(t);
    if (!dt) {
      if (skipped) skipped->push_back(name);
      continue;
    }
    VarInfo vi;
    vi.name = name;
    vi.varid = v;
    vi.type = t;
    vi.dtype = *dt;
    for (int d = 0; d < ndims; ++d) {
      char dn[NC_MAX_NAME + 1];
      size_t len;
      nc_check(nc_inq_dim(f.id, dimids[d], dn, &len), f.path, "dimension");
      vi.dims.push_back(dn);
      vi.shape.push_back(static_cast<std::int64_t>(len));
    }
    vi.attrs = nc_attributes(f, v, natts);
    out.push_back(std::move(vi));
  }
  return out;
}

// The value of a numeric attribute as one element of `dt` (native order).
Bytes element_of(const nlohmann::json& v, const DataType& dt) {
  Bytes b(dt.size);
  auto put = [&](auto x) { std::memcpy(b.data(), &x, sizeof x); };
  double d = 0;
  if (v.is_string()) d = v == "NaN" ? NAN : (v == "Infinity" ? INFINITY : -INFINITY);
  else if (v.is_number()) d = v.get<double>();
  if (dt.kind == DTypeKind::kFloat) {
    if (dt.size == 4) put(static_cast<float>(d));
    else put(d);
  } else if (dt.kind == DTypeKind::kUInt) {
    const std::uint64_t u = v.is_number_unsigned() ? v.get<std::uint64_t>() : static_cast<std::uint64_t>(v.get<std::int64_t>());
    std::memcpy(b.data(), &u, dt.size);
  } else {
    const std::int64_t i = v.is_number_integer() ? v.get<std::int64_t>() : static_cast<std::int64_t>(d);
    std::memcpy(b.data(), &i, dt.size);
  }
  return b;
}

std::string b64_of_double(double d) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::uint8_t p[8];
  std::memcpy(p, &d, 8);
  std::string o;
  for (int i = 0; i < 8; i += 3) {
    std::uint32_t v = static_cast<std::uint32_t>(p[i]) << 16;
    if (i + 1 < 8) v |= static_cast<std::uint32_t>(p[i + 1]) << 8;
    if (i + 2 < 8) v |= p[i + 2];
    o += k[(v >> 18) & 63];
    o += k[(v >> 12) & 63];
    o += i + 1 < 8 ? k[(v >> 6) & 63] : '=';
    o += i + 2 < 8 ? k[v & 63] : '=';
  }
  return o;
}

}  // namespace

int run_convert(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kConvertUsage, stdout);
      return 0;
    }
  const Args args(argc, argv, 2, {"shuffle", "bitshuffle", "checksum", "overwrite", "resume", "progress", "no-progress"});
  if (auto u = args.unknown({"concat-dim", "variables", "chunks", "shards", "codec", "shuffle", "bitshuffle", "checksum", "index-location",
                             "format", "memory", "threads", "overwrite", "resume", "part", "progress", "no-progress"});
      !u.empty())
    throw std::invalid_argument("convert: unknown option --" + u.front() + "\n" + kConvertUsage);
  if (args.positionals().size() < 2) throw std::invalid_argument(kConvertUsage);
  std::vector<std::string> paths(args.positionals().begin(), args.positionals().end() - 1);
  const std::string dst_path = args.positionals().back();

  zarr::RechunkOptions o;
  o.zarr_format = static_cast<int>(args.get_int("format", 3));
  o.shards = parse_sizes(args.get("shards", ""), "--shards");
  parse_codec(args.get("codec", "zstd:3"), o.codec);
  o.codec.shuffle = args.has("shuffle");
  o.codec.bitshuffle = args.has("bitshuffle");
  o.codec.checksum = args.has("checksum");
  o.codec.index_at_start = args.get("index-location", "end") == "start";
  o.memory_bytes = parse_bytes(args.get("memory", "2G"), "--memory");
  o.threads = static_cast<int>(args.get_int("threads", 0));
  if (args.has("overwrite")) o.existing = zarr::ExistingTarget::kOverwrite;
  if (args.has("resume")) o.existing = zarr::ExistingTarget::kResume;
  if (args.has("part")) parse_part(args.get("part", ""), &o.part, &o.parts);

  std::vector<std::unique_ptr<NcFile>> files;
  for (const auto& p : paths) files.push_back(std::make_unique<NcFile>(p));
  std::vector<std::string> skipped;
  const auto first_vars = variables_of(*files[0], &skipped);
  nlohmann::json global;
  std::string concat = args.get("concat-dim", "");
  {
    std::lock_guard lock(nc_mutex());
    int natts = 0, unlim = -1;
    nc_check(nc_inq_natts(files[0]->id, &natts), paths[0], "global attributes");
    global = nc_attributes(*files[0], NC_GLOBAL, natts);
    nc_check(nc_inq_unlimdim(files[0]->id, &unlim), paths[0], "unlimited dimension");
    if (concat.empty() && unlim >= 0) {
      char dn[NC_MAX_NAME + 1];
      nc_check(nc_inq_dimname(files[0]->id, unlim, dn), paths[0], "dimension");
      concat = dn;
    }
  }
  if (concat.empty()) concat = "time";

  // Per variable, per file: the varid and the length along the joined dimension.
  const std::vector<std::string> wanted = comma_list(args.get("variables", ""));
  struct Joined {
    VarInfo first;
    int axis = -1;                       // the joined axis, or -1
    std::vector<int> varids;             // per file
    std::vector<std::int64_t> offsets;   // start of each file along the axis
  };
  std::vector<Joined> joined;
  for (const auto& v : first_vars) {
    // Coordinates a selected variable needs are kept: its dimensions' coordinates and the
    // variables named in its CF "coordinates" attribute.
    if (!wanted.empty()) {
      bool keep = std::find(wanted.begin(), wanted.end(), v.name) != wanted.end();
      for (const auto& w : first_vars) {
        if (std::find(wanted.begin(), wanted.end(), w.name) == wanted.end()) continue;
        keep |= std::find(w.dims.begin(), w.dims.end(), v.name) != w.dims.end();
        if (w.attrs.contains("coordinates") && w.attrs["coordinates"].is_string()) {
          std::stringstream cs(w.attrs["coordinates"].get<std::string>());
          for (std::string c; cs >> c;) keep |= c == v.name;
        }
      }
      if (!keep) continue;
    }
    Joined j;
    j.first = v;
    for (std::size_t d = 0; d < v.dims.size(); ++d)
      if (v.dims[d] == concat) j.axis = static_cast<int>(d);
    joined.push_back(std::move(j));
  }
  for (const auto& w : wanted)
    if (std::none_of(joined.begin(), joined.end(), [&](const Joined& j) { return j.first.name == w; }))
      throw Error(ErrorCode::kNotFound, "variable '" + w + "' is not in " + paths[0]);
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const auto vars = fi == 0 ? first_vars : variables_of(*files[fi], nullptr);
    for (auto& j : joined) {
      auto it = std::find_if(vars.begin(), vars.end(), [&](const VarInfo& v) { return v.name == j.first.name; });
      if (it == vars.end()) throw Error(ErrorCode::kInvalidArgument, "variable '" + j.first.name + "' is missing from " + paths[fi]);
      if (it->type != j.first.type || it->dims != j.first.dims)
        throw Error(ErrorCode::kInvalidArgument, "variable '" + j.first.name + "' has another type or other dimensions in " + paths[fi]);
      for (std::size_t d = 0; d < it->shape.size(); ++d)
        if (static_cast<int>(d) != j.axis && it->shape[d] != j.first.shape[d])
          throw Error(ErrorCode::kInvalidArgument, "variable '" + j.first.name + "' has another size along '" + it->dims[d] + "' in " + paths[fi]);
      if (j.axis >= 0 && j.first.name == concat) {
        for (const char* k : {"units", "calendar"})
          if (it->attrs.value(k, nlohmann::json()) != j.first.attrs.value(k, nlohmann::json()))
            throw Error(ErrorCode::kInvalidArgument, "coordinate '" + concat + "' has other " + k + " in " + paths[fi] +
                                                         " than in " + paths[0] + " (values are copied as stored: re-encode the files alike first)");
      }
      j.varids.push_back(it->varid);
      // offsets[fi]: where file fi starts along the joined axis; the total is the array's size.
      const std::int64_t len = j.axis >= 0 ? it->shape[static_cast<std::size_t>(j.axis)] : 0;
      const std::int64_t start = j.offsets.empty() ? 0 : j.offsets.back();
      if (j.offsets.empty()) j.offsets.push_back(0);
      j.offsets.push_back(start + len);
    }
  }
  for (auto& j : joined)
    if (j.axis >= 0) j.first.shape[static_cast<std::size_t>(j.axis)] = j.offsets.back();

  std::vector<zarr::SourceArray> sources;
  for (const auto& j : joined) {
    zarr::SourceArray s;
    const VarInfo& v = j.first;
    s.path = v.name;
    s.meta.zarr_format = o.zarr_format;
    s.meta.shape = v.shape;
    s.meta.dtype = v.dtype;
    s.meta.dimension_names = v.dims;
    s.meta.attributes = v.attrs;
    // Default chunks: 1 along the joined dimension, whole along the others (--chunks names
    // other sizes); the netCDF reads follow the target's chunks, so this is also the source's
    // natural read unit.
    s.meta.chunk_shape = v.shape;
    for (std::size_t d = 0; d < v.shape.size(); ++d) {
      if (static_cast<int>(d) == j.axis) s.meta.chunk_shape[d] = 1;
      s.meta.chunk_shape[d] = std::max<std::int64_t>(1, s.meta.chunk_shape[d]);
    }
    s.meta.fill_value.assign(v.dtype.size, 0);
    if (v.attrs.contains("_FillValue")) {
      // CF _FillValue, in xarray's Zarr conventions (see the top of this file).
      const nlohmann::json fv = v.attrs["_FillValue"];
      s.meta.fill_value = element_of(fv, v.dtype);
      if (o.zarr_format == 2) {
        s.meta.attributes.erase("_FillValue");
      } else if (v.dtype.kind == DTypeKind::kFloat) {
        double d = 0;
        if (v.dtype.size == 4) {
          float f;
          std::memcpy(&f, s.meta.fill_value.data(), 4);
          d = f;
        } else {
          std::memcpy(&d, s.meta.fill_value.data(), 8);
        }
        s.meta.attributes["_FillValue"] = b64_of_double(d);
      }
    } else if (o.zarr_format == 2) {
      s.meta.fill_value_is_null = true;  // no CF mask, as xarray writes it
    }
    s.read_scratch_bytes = 0;
    std::vector<const NcFile*> file_ptrs;
    for (auto& f : files) file_ptrs.push_back(f.get());
    s.read = [file_ptrs, j](const Region& region, std::uint8_t* out) {
      const std::size_t rank = region.shape.size(), elem = j.first.dtype.size;
      std::vector<size_t> start(rank), count(rank);
      for (std::size_t d = 0; d < rank; ++d) {
        start[d] = static_cast<size_t>(region.start[d]);
        count[d] = static_cast<size_t>(region.shape[d]);
      }
      if (j.axis < 0) {
        std::lock_guard lock(nc_mutex());
        nc_check(nc_get_vara(file_ptrs[0]->id, j.varids[0], start.data(), count.data(), out), file_ptrs[0]->path,
                 "reading variable '" + j.first.name + "'");
        return;
      }
      // The region along the joined axis spans one or more files: read each file's part into
      // a contiguous buffer and place it (the joined axis may not be the first).
      const auto ax = static_cast<std::size_t>(j.axis);
      const std::int64_t lo = region.start[ax], hi = lo + region.shape[ax];
      Bytes part;
      for (std::size_t fi = 0; fi + 1 < j.offsets.size(); ++fi) {
        const std::int64_t fs0 = std::max(lo, j.offsets[fi]), fe = std::min(hi, j.offsets[fi + 1]);
        if (fs0 >= fe) continue;
        std::vector<size_t> st = start, ct = count;
        st[ax] = static_cast<size_t>(fs0 - j.offsets[fi]);
        ct[ax] = static_cast<size_t>(fe - fs0);
        std::size_t n = elem;
        for (auto c : ct) n *= c;
        part.resize(n);
        {
          std::lock_guard lock(nc_mutex());
          nc_check(nc_get_vara(file_ptrs[fi]->id, j.varids[fi], st.data(), ct.data(), part.data()), file_ptrs[fi]->path,
                   "reading variable '" + j.first.name + "'");
        }
        std::vector<std::int64_t> part_shape(rank), zeros(rank, 0), at(rank, 0);
        for (std::size_t d = 0; d < rank; ++d) part_shape[d] = static_cast<std::int64_t>(ct[d]);
        at[ax] = fs0 - lo;
        copy_box(part.data(), part_shape, zeros, out, region.shape, at, part_shape, elem);
      }
    };
    sources.push_back(std::move(s));
  }
  // --chunks applies on top of the defaults: give the engine the defaults as the "source"
  // chunking and the user's sizes as overrides.
  o.chunks = parse_sizes(args.get("chunks", ""), "--chunks");

  const std::string local = dst_path.rfind("file://", 0) == 0 ? dst_path.substr(7) : dst_path;
  auto dst = open_writable_file_store(local);
  zarr::RechunkProgress progress;
  const bool show = args.has("progress") || (::isatty(2) && !args.has("no-progress"));
  {
    ProgressBar bar(progress.done_bytes, progress.total_bytes, show);
    zarr::write_arrays(sources, dst, global, {}, o, progress);
  }
  for (const auto& name : skipped) std::fprintf(stderr, "convert: skipped '%s' (text or non-numeric variable)\n", name.c_str());
  std::printf("convert: %zu files, %zu variables joined along '%s' -> %s (%s of data, %s stored)\n", files.size(), sources.size(),
              concat.c_str(), local.c_str(), human_bytes(static_cast<double>(progress.done_bytes.load())).c_str(),
              human_bytes(static_cast<double>(progress.stored_bytes.load())).c_str());
  return 0;
}

#endif

}  // namespace cubestream::cli
