// Binding of the streaming loader: cubestream::Loader one to one, its batch tensors exported
// through DLPack (zero-copy, stream-ordered for CUDA tensors: `__dlpack__(stream=s)` makes the
// consumer's stream s wait on the batch's copy event, as the DLPack protocol asks).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlpack/dlpack.h>

#include <limits>

#include "cubestream/error.hpp"
#include "cubestream/loader.hpp"
#include "cuda/memory.hpp"
#include "pipeline/buffer_pool.hpp"

namespace py = pybind11;
using namespace cubestream;

namespace {

// One exported tensor and what keeps its memory and its readiness alive.
struct ExportedTensor {
  Tensor tensor;
  std::shared_ptr<void> ready_event;  // CUDA tensors: recorded after the copy to the GPU
};

// The DLManagedTensor's context: owns the shape array and a reference to the storage.
struct DLContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  DLManagedTensor managed{};
};

DLDataType dl_dtype(OutputDType t) {
  switch (t) {
    case OutputDType::kFloat32: return DLDataType{kDLFloat, 32, 1};
    case OutputDType::kFloat16: return DLDataType{kDLFloat, 16, 1};
    case OutputDType::kBFloat16: return DLDataType{kDLBfloat, 16, 1};
  }
  return DLDataType{kDLFloat, 32, 1};
}

void delete_dl(DLManagedTensor* m) {
  if (m) delete static_cast<DLContext*>(m->manager_ctx);
}

// A capsule named "dltensor" that no consumer took must still free its tensor.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  }
}

py::capsule to_dlpack(const ExportedTensor& e, py::object stream) {
  const Tensor& t = e.tensor;
  if (t.device == DeviceKind::kCuda) {
    // DLPack: stream None means the legacy default stream; 1 and 2 are the legacy and
    // per-thread default streams' handles (cudaStreamLegacy, cudaStreamPerThread); any
    // other integer is a cudaStream_t. -1 asks for no synchronisation at all.
    std::intptr_t s = stream.is_none() ? 1 : stream.cast<std::intptr_t>();
    if (s != -1) {
      void* handle = reinterpret_cast<void*>(s);
      if (e.ready_event) cuda::stream_wait_event(handle, e.ready_event.get(), t.device_index);
      if (t.storage) {
        t.storage->consumer_stream = handle;
        t.storage->consumer_stream_known = true;
      }
    }
  }
  auto* ctx = new DLContext{t, std::vector<int64_t>(t.shape.begin(), t.shape.end()), {}};
  DLTensor& d = ctx->managed.dl_tensor;
  d.data = t.data;
  d.device = t.device == DeviceKind::kCuda ? DLDevice{kDLCUDA, t.device_index} : DLDevice{kDLCPU, 0};
  d.ndim = static_cast<int32_t>(ctx->shape.size());
  d.dtype = dl_dtype(t.dtype);
  d.shape = ctx->shape.data();
  d.strides = nullptr;  // C order
  d.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = delete_dl;
  return py::capsule(&ctx->managed, "dltensor", capsule_destructor);
}

LoaderConfig config_from_json(const nlohmann::json& j) {
  LoaderConfig c;
  auto& s = c.sampler;
  if (j.contains("dims")) {
    for (const auto& d : j["dims"]) s.dims.push_back(SampleDim{d.at(0).get<std::string>(), d.at(1).get<std::int64_t>()});
  }
  if (j.contains("patch")) s.patch = j["patch"].get<std::map<std::string, std::int64_t>>();
  if (j.contains("overlap")) s.overlap = j["overlap"].get<std::map<std::string, std::int64_t>>();
  if (j.contains("batch_dims")) s.batch_dims = j["batch_dims"].get<std::vector<std::string>>();
  if (j.contains("window") && !j["window"].is_null()) {
    const auto& w = j["window"];
    s.window = ForecastWindow{w.at("time_dim").get<std::string>(), w.at("inputs").get<std::vector<std::int64_t>>(),
                              w.at("targets").get<std::vector<std::int64_t>>()};
  }
  const std::string shuffle = j.value("shuffle", "none");
  if (shuffle == "none") s.shuffle = ShuffleMode::kNone;
  else if (shuffle == "sample") s.shuffle = ShuffleMode::kSample;
  else if (shuffle == "chunk") s.shuffle = ShuffleMode::kChunk;
  else throw Error(ErrorCode::kInvalidArgument, "shuffle must be \"none\", \"sample\" or \"chunk\", not \"" + shuffle + "\"");
  s.seed = j.value("seed", std::uint64_t{0});
  if (j.contains("chunks")) s.chunks = j["chunks"].get<std::map<std::string, std::int64_t>>();
  s.buffer_size = j.value("buffer_size", std::int64_t{16});
  s.batch_size = j.value("batch_size", std::int64_t{1});
  s.drop_last = j.value("drop_last", false);
  s.rank = j.value("rank", std::int64_t{0});
  s.world_size = j.value("world_size", std::int64_t{1});
  auto& sel = c.selection;
  sel.variables = j.value("variables", std::vector<std::string>{});
  sel.static_variables = j.value("static_variables", std::vector<std::string>{});
  if (j.contains("select")) sel.select = j["select"].get<std::map<std::string, std::vector<double>>>();
  sel.extra_dims = j.value("extra_dims", std::string("channels")) == "refuse" ? ExtraDims::kRefuse : ExtraDims::kChannels;
  if (j.contains("normalisation")) {
    for (const auto& [k, v] : j["normalisation"].items()) {
      sel.normalisation[k] = Normalisation{v.at(0).get<double>(), v.at(1).get<double>()};
    }
  }
  sel.normalisation_is_table = j.value("normalisation_is_table", false);
  if (j.contains("nan_fill") && !j["nan_fill"].is_null()) sel.nan_fill = j["nan_fill"].get<float>();
  const std::string dtype = j.value("dtype", "float32");
  if (dtype == "float32") c.dtype = OutputDType::kFloat32;
  else if (dtype == "bfloat16") c.dtype = OutputDType::kBFloat16;
  else if (dtype == "float16") c.dtype = OutputDType::kFloat16;
  else throw Error(ErrorCode::kInvalidArgument, "dtype must be float32, bfloat16 or float16, not \"" + dtype + "\"");
  c.device = j.value("device", "cpu") == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
  c.device_index = j.value("device_index", 0);
  c.threads = j.value("threads", 0);
  c.prefetch = j.value("prefetch", 2);
  c.memory_limit = j.value("memory_limit", std::uint64_t{0});
  c.trace = j.value("trace", false);
  c.decode = decode_backend_from_name(j.value("decode", "auto"));
  c.gpu_cache_bytes = j.value("gpu_cache_bytes", std::uint64_t{0});
  c.host_decode_share = j.value("host_decode_share", -1.0);
  c.readahead_batches = j.value("readahead_batches", 1);
  const std::string pacing = j.value("gpu_pacing", "off");
  if (pacing == "off") c.gpu_pacing = GpuPacing::kOff;
  else if (pacing == "step") c.gpu_pacing = GpuPacing::kStep;
  else throw Error(ErrorCode::kInvalidArgument, "gpu_pacing must be \"off\" or \"step\", not \"" + pacing + "\"");
  return c;
}

py::object json_to_python(const nlohmann::json& j) {
  static py::object* loads = new py::object(py::module_::import("json").attr("loads"));
  return (*loads)(j.dump());
}

py::dict batch_to_python(Batch&& b, const std::vector<SampleDim>& dims) {
  py::dict d;
  d["epoch"] = b.epoch;
  d["batch"] = b.index;
  d["inputs"] = ExportedTensor{b.inputs, b.ready_event};
  if (b.targets) d["targets"] = ExportedTensor{*b.targets, b.ready_event};
  const auto n = static_cast<py::ssize_t>(b.samples.size());
  py::array_t<std::int64_t> ids(n), anchors(n), time(n);
  py::array_t<bool> repeat(n);
  py::array_t<std::int64_t> start({n, static_cast<py::ssize_t>(dims.size())});
  for (py::ssize_t i = 0; i < n; ++i) {
    const Sample& s = b.samples[static_cast<std::size_t>(i)];
    ids.mutable_at(i) = s.id;
    anchors.mutable_at(i) = s.anchor;
    repeat.mutable_at(i) = s.repeat;
    // NaT is the smallest int64 in numpy's datetime64.
    time.mutable_at(i) = b.time_ns[static_cast<std::size_t>(i)].value_or(std::numeric_limits<std::int64_t>::min());
    for (std::size_t k = 0; k < dims.size(); ++k) start.mutable_at(i, static_cast<py::ssize_t>(k)) = s.start[k];
  }
  d["sample_id"] = ids;
  d["anchor"] = anchors;
  d["repeat"] = repeat;
  d["time"] = time.attr("view")("datetime64[ns]");
  d["start"] = start;
  return d;
}

}  // namespace

void bind_loader(py::module_& m) {
  py::class_<ExportedTensor>(m, "Tensor", "A batch tensor; hand it to torch/cupy/jax/numpy.from_dlpack.")
      .def_property_readonly("shape", [](const ExportedTensor& e) { return py::tuple(py::cast(e.tensor.shape)); })
      .def_property_readonly("dtype",
                             [](const ExportedTensor& e) {
                               switch (e.tensor.dtype) {
                                 case OutputDType::kFloat32: return "float32";
                                 case OutputDType::kBFloat16: return "bfloat16";
                                 case OutputDType::kFloat16: return "float16";
                               }
                               return "float32";
                             })
      .def_property_readonly("device",
                             [](const ExportedTensor& e) {
                               return e.tensor.device == DeviceKind::kCuda ? "cuda:" + std::to_string(e.tensor.device_index)
                                                                           : std::string("cpu");
                             })
      .def("__dlpack__", &to_dlpack, py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const ExportedTensor& e) -> py::tuple {
        const bool cuda = e.tensor.device == DeviceKind::kCuda;
        return py::make_tuple(static_cast<int>(cuda ? kDLCUDA : kDLCPU), cuda ? e.tensor.device_index : 0);
      })
      .def("synchronize", [](const ExportedTensor& e) {
        if (e.ready_event) cuda::event_synchronize(e.ready_event.get());
      });

  py::class_<Loader>(m, "Loader")
      .def(py::init([](std::vector<Dataset> parts, std::optional<Dataset> statics, const std::string& time_dim,
                       const std::string& config) {
             LoaderConfig cfg;
             try {
               cfg = config_from_json(nlohmann::json::parse(config));
             } catch (const nlohmann::json::exception& e) {
               throw Error(ErrorCode::kInvalidArgument, std::string("loader config: ") + e.what());
             }
             py::gil_scoped_release release;
             return std::make_unique<Loader>(ConcatenatedTime(std::move(parts), time_dim), std::move(cfg),
                                             std::move(statics));
           }),
           py::arg("parts"), py::arg("statics"), py::arg("time_dim"), py::arg("config"))
      .def("next",
           [](Loader& l) -> py::object {
             std::optional<Batch> b;
             {
               py::gil_scoped_release release;
               b = l.next();
             }
             if (!b) return py::none();
             return batch_to_python(std::move(*b), l.sampler().dims());
           })
      .def("__len__", &Loader::len)
      .def_property_readonly("epoch", &Loader::epoch)
      .def("set_epoch", [](Loader& l, std::int64_t e) {
        py::gil_scoped_release release;
        l.set_epoch(e);
      })
      .def_property_readonly("channel_names", &Loader::channel_names)
      .def_property_readonly("input_shape", &Loader::input_shape)
      .def_property_readonly("target_shape", &Loader::target_shape)
      .def_property_readonly("dims", [](const Loader& l) {
        std::vector<std::pair<std::string, std::int64_t>> out;
        for (const auto& d : l.sampler().dims()) out.emplace_back(d.name, d.size);
        return out;
      })
      .def_property_readonly("sample_dims", [](const Loader& l) { return l.selection().sample_dims(); })
      .def("state", [](const Loader& l) { return to_json(l.state()).dump(); })
      .def("load_state", [](Loader& l, const std::string& s) {
        SamplerState st;
        try {
          st = sampler_state_from_json(nlohmann::json::parse(s));
        } catch (const nlohmann::json::exception& e) {
          throw Error(ErrorCode::kInvalidArgument, std::string("loader state: ") + e.what());
        }
        py::gil_scoped_release release;
        l.load_state(st);
      })
      .def("stats", [](const Loader& l) { return json_to_python(l.stats().to_json()); })
      .def("reset_stats", &Loader::reset_stats)
      .def("trace_json", [](const Loader& l) { return l.trace_json().dump(); });
}
