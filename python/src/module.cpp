// The thin binding: the C++ API one to one, with cubestream::Error translated once into
// cubestream.CubestreamError (defined in Python, python/cubestream/errors.py) and array
// data handed over as NumPy arrays. Long reads release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>

#include "cubestream/array.hpp"
#include "cubestream/dataset.hpp"
#include "cubestream/error.hpp"
#include "cubestream/group.hpp"
#include "cubestream/store.hpp"

namespace py = pybind11;
using namespace cubestream;

// The codec layer's functions for cubestream.codecs (python/src/codecs_binding.cpp).
namespace cubestream::python {
void bind_codecs(py::module_& m);
}

namespace {

py::object to_python(const nlohmann::json& j) {
  // Deliberately leaked: a static py::object would be destroyed after the interpreter.
  static py::object* loads = new py::object(py::module_::import("json").attr("loads"));
  return (*loads)(j.dump());
}

// NumPy dtype of an array's elements as they come out of a read (native byte order).
py::dtype numpy_dtype(const DataType& dt) { return py::dtype(dt.numpy_str(native_byte_order())); }

Region region_from(const Array& a, const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& shape) {
  Region r{start, shape};
  if (r.start.empty() && r.shape.empty()) {
    r.start.assign(a.rank(), 0);
    r.shape = a.shape();
  }
  return r;
}

// ReadOptions from the Python arguments: decode is "auto", "cpu" or "gpu".
ReadOptions read_options(int threads, const std::string& decode, int gpu_device) {
  ReadOptions opts;
  opts.threads = threads;
  opts.gpu_device = gpu_device;
  opts.decode = decode_backend_from_name(decode);
  return opts;
}

py::array read_array(const Array& a, const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& shape,
                     int threads, const std::string& decode, int gpu_device) {
  const ReadOptions opts = read_options(threads, decode, gpu_device);
  Region r = region_from(a, start, shape);
  if (r.shape.size() != a.rank() || r.start.size() != a.rank())
    throw Error(ErrorCode::kInvalidArgument, "region rank does not match the array's rank " + std::to_string(a.rank()));
  for (auto s : r.shape)
    if (s < 0) throw Error(ErrorCode::kInvalidArgument, "region shape must be non-negative");
  py::array out(numpy_dtype(a.dtype()), std::vector<py::ssize_t>(r.shape.begin(), r.shape.end()));
  auto* ptr = out.mutable_data();
  const auto bytes = static_cast<std::size_t>(out.nbytes());
  {
    py::gil_scoped_release release;
    a.read(r, ptr, bytes, opts);
  }
  return out;
}

void read_into(const Array& a, const std::vector<std::int64_t>& start, const std::vector<std::int64_t>& shape,
               py::buffer out, int threads, const std::string& decode, int gpu_device) {
  const ReadOptions opts = read_options(threads, decode, gpu_device);
  py::buffer_info info = out.request(true);
  // The buffer must be C-contiguous: check strides against the item size.
  py::ssize_t expect = info.itemsize;
  for (py::ssize_t d = info.ndim; d-- > 0;) {
    if (info.shape[d] > 1 && info.strides[d] != expect)
      throw Error(ErrorCode::kInvalidArgument, "output buffer must be C-contiguous");
    expect *= info.shape[d];
  }
  Region r = region_from(a, start, shape);
  if (!py::dtype(info).equal(numpy_dtype(a.dtype())))
    throw Error(ErrorCode::kInvalidArgument, "output buffer has dtype " + py::str(py::dtype(info)).cast<std::string>() +
                                                 ", the array has " + a.dtype().numpy_str());
  if (static_cast<std::size_t>(info.ndim) != r.shape.size() ||
      !std::equal(r.shape.begin(), r.shape.end(), info.shape.begin()))
    throw Error(ErrorCode::kInvalidArgument, "output buffer's shape does not match the region's shape");
  const auto bytes = static_cast<std::size_t>(info.size * info.itemsize);
  void* ptr = info.ptr;
  py::gil_scoped_release release;
  a.read(r, ptr, bytes, opts);
}

py::object cf_time_to_python(const std::vector<CFDateTime>& t) {
  bool all_ns = true;
  for (const auto& x : t) all_ns = all_ns && x.unix_ns.has_value();
  if (all_ns) {
    py::array_t<std::int64_t> ns(static_cast<py::ssize_t>(t.size()));
    auto* p = ns.mutable_data();
    for (std::size_t i = 0; i < t.size(); ++i) p[i] = *t[i].unix_ns;
    return ns.attr("view")("datetime64[ns]");
  }
  py::list out;
  for (const auto& x : t) out.append(x.iso());
  return std::move(out);
}

// Store.get / get_range: the store reads into a buffer kept per thread (Store::read_into), which
// is then copied into the returned bytes. A fresh buffer per call would be written page by page
// into new memory: a page fault per 4 KiB of every value, most of the time of a GET on loopback.
py::object read_bytes(const Store& s, const std::string& key, ByteRange range) {
  thread_local Bytes buffer;
  struct Trim {
    ~Trim() {
      constexpr std::size_t kKeepBytes = std::size_t{64} << 20;  // do not hold on to huge values
      if (buffer.capacity() > kKeepBytes) Bytes().swap(buffer);
    }
  } trim;
  if (!s.read_into(key, range, buffer)) return py::none();
  return py::bytes(reinterpret_cast<const char*>(buffer.data()), buffer.size());
}

}  // namespace

void bind_loader(py::module_& m);  // loader_binding.cpp

PYBIND11_MODULE(_cubestream, m) {
  m.doc() = "cubestream core: Zarr v2/v3 reader (binding layer; use the `cubestream` package)";
  m.attr("__version__") = CUBESTREAM_VERSION;

  // One translation for every cubestream::Error.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      // The class by code: invalid_argument errors are also ValueErrors.
      py::object cls = py::module_::import("cubestream.errors").attr("error_class")(std::string(error_code_name(e.code())));
      const auto& c = e.context();
      py::object err = cls(e.what(), std::string(error_code_name(e.code())), e.message(), c.store, c.key,
                           c.offset ? py::cast(*c.offset) : py::none());
      PyErr_SetObject(cls.ptr(), err.ptr());
    }
  });

  cubestream::python::bind_codecs(m);

  py::class_<Store, std::shared_ptr<Store>>(m, "Store")
      .def("describe", &Store::describe)
      .def("get", [](const Store& s, const std::string& key) { return read_bytes(s, key, ByteRange::all()); })
      .def("get_range", [](const Store& s, const std::string& key, std::int64_t offset, std::int64_t length) {
        return read_bytes(s, key, ByteRange{offset, length});
      }, py::arg("key"), py::arg("offset"), py::arg("length") = -1)
      .def("size", &Store::size)
      .def("list_dir", &Store::list_dir, py::arg("prefix") = "")
      .def("__repr__", [](const Store& s) { return "<cubestream.Store " + s.describe() + ">"; });

  py::class_<MemoryStore, Store, std::shared_ptr<MemoryStore>>(m, "MemoryStore")
      .def(py::init<std::string>(), py::arg("name") = "memory")
      .def("set", [](MemoryStore& s, const std::string& key, py::bytes value) { s.set(key, std::string_view(value)); })
      .def("erase", &MemoryStore::erase);

  m.def("open_store", &open_store, py::arg("url"), "Open a store by path or URL: file://, http://, https:// or s3://bucket/prefix.");

  py::class_<Array>(m, "Array")
      .def_static("open", &Array::open, py::arg("store"), py::arg("path") = "")
      .def_property_readonly("path", &Array::path)
      .def_property_readonly("shape", [](const Array& a) { return a.shape(); })
      .def_property_readonly("dtype", [](const Array& a) { return numpy_dtype(a.dtype()); })
      .def_property_readonly("chunks", [](const Array& a) { return a.metadata().chunk_shape; })
      .def_property_readonly("inner_chunks", [](const Array& a) { return a.metadata().inner_chunk_shape; })
      .def_property_readonly("zarr_format", [](const Array& a) { return a.metadata().zarr_format; })
      .def_property_readonly("dimension_names", [](const Array& a) { return a.metadata().dimension_names; })
      .def_property_readonly("attrs", [](const Array& a) { return to_python(a.metadata().attributes); })
      .def_property_readonly("codecs", [](const Array& a) { return to_python(a.metadata().codecs); })
      .def_property_readonly("fill_value", [](const Array& a) -> py::object {
        const auto& m = a.metadata();
        if (m.fill_value_is_null) return py::none();
        py::array v(numpy_dtype(m.dtype), std::vector<py::ssize_t>{});
        std::memcpy(v.mutable_data(), m.fill_value.data(), m.fill_value.size());
        return v[py::tuple()];
      })
      .def("chunk_key", &Array::chunk_key)
      .def("stored_bytes", &Array::stored_bytes)
      .def("read", &read_array, py::arg("start") = std::vector<std::int64_t>{}, py::arg("shape") = std::vector<std::int64_t>{},
           py::arg("threads") = 0, py::arg("decode") = "auto", py::arg("gpu_device") = -1,
           "Read a region (start, shape) into a new NumPy array; no arguments reads everything. decode: where the "
           "chunks are decoded, \"cpu\", \"gpu\" (an error where the GPU cannot) or \"auto\" (the GPU for zstd reads "
           "of 1 GiB or more when one is visible, 64 MiB once this process has read on it; "
           "CUBESTREAM_READ_DECODE=cpu|gpu|auto overrides it).")
      .def("read_into", &read_into, py::arg("start"), py::arg("shape"), py::arg("out"), py::arg("threads") = 0,
           py::arg("decode") = "auto", py::arg("gpu_device") = -1,
           "Read a region into a writable C-contiguous buffer of the array's dtype (decode as for read).");

  py::class_<Group>(m, "Group")
      .def_static("open", &Group::open, py::arg("store"), py::arg("path") = "")
      .def_property_readonly("path", &Group::path)
      .def_property_readonly("zarr_format", &Group::zarr_format)
      .def_property_readonly("consolidated", &Group::consolidated)
      .def_property_readonly("attrs", [](const Group& g) { return to_python(g.attributes()); })
      .def("array_names", &Group::array_names)
      .def("group_names", &Group::group_names)
      .def("all_array_paths", &Group::all_array_paths)
      .def("open_array", &Group::open_array)
      .def("open_group", &Group::open_group);

  py::class_<CFDateTime>(m, "CFDateTime")
      .def_readonly("year", &CFDateTime::year)
      .def_readonly("month", &CFDateTime::month)
      .def_readonly("day", &CFDateTime::day)
      .def_readonly("hour", &CFDateTime::hour)
      .def_readonly("minute", &CFDateTime::minute)
      .def_readonly("second", &CFDateTime::second)
      .def_readonly("unix_ns", &CFDateTime::unix_ns)
      .def("iso", &CFDateTime::iso)
      .def("__repr__", &CFDateTime::iso);

  py::class_<Dataset>(m, "Dataset")
      .def_static("open", &Dataset::open, py::arg("store"), py::arg("path") = "")
      .def_property_readonly("attrs", [](const Dataset& d) { return to_python(d.attributes()); })
      .def_property_readonly("dims", &Dataset::dims)
      .def("variable_names", &Dataset::variable_names)
      .def("data_variable_names", &Dataset::data_variable_names)
      .def("coordinate_names", &Dataset::coordinate_names)
      .def("has_variable", &Dataset::has_variable)
      .def("variable_dims", [](const Dataset& d, const std::string& n) { return d.variable(n).dims; })
      .def("variable_array", [](const Dataset& d, const std::string& n) { return d.variable(n).array; })
      .def("read_decoded", [](const Dataset& d, const std::string& name, std::vector<std::int64_t> start,
                              std::vector<std::int64_t> shape, int threads) {
        const Array& a = d.variable(name).array;
        Region r = region_from(a, start, shape);
        ReadOptions opts;
        opts.threads = threads;
        std::vector<double> v;
        {
          py::gil_scoped_release release;
          v = d.read_decoded(name, r, opts);
        }
        py::array_t<double> out(std::vector<py::ssize_t>(r.shape.begin(), r.shape.end()));
        std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(double));
        return out;
      }, py::arg("name"), py::arg("start") = std::vector<std::int64_t>{}, py::arg("shape") = std::vector<std::int64_t>{},
         py::arg("threads") = 0)
      .def("decode_time", [](const Dataset& d, const std::string& name) { return cf_time_to_python(d.decode_time(name)); });
  bind_loader(m);
}
