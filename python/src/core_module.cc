// flexgraph._core: the C++ side of the Python package (python/flexgraph). Datasets built from
// NumPy arrays are registered as "memory:NAME" (graph::RegisterMemoryDataset), so training,
// prediction and embedding run the command line's own code: `train` parses the train command's
// flags (runtime/cli/train_flags.h) and runs a runtime::Trainer; `predict` and `embed` load a saved
// model as `flexgraph predict/embed` do (runtime/train/inference.h). Errors become flexgraph.Error
// (or flexgraph.InvalidArgumentError, also a ValueError) carrying the C++ message. Training and
// inference release the GIL; the per-epoch callback takes it back briefly for Ctrl-C and progress.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "flexgraph/graph/builder.h"
#include "flexgraph/graph/dataset.h"
#include "flexgraph/graph/io/cache.h"
#include "flexgraph/graph/io/ogb.h"
#include "nau/model.h"
#include "runtime/cli/flags.h"
#include "runtime/cli/train_flags.h"
#include "runtime/tasks/link_prediction.h"
#include "runtime/train/inference.h"
#include "runtime/train/saved_model.h"
#include "runtime/train/summary.h"
#include "runtime/train/trainer.h"

namespace py = pybind11;

namespace fg::python {
namespace {

// A failed absl::Status crossing into Python (translated in the module's init).
struct StatusError {
  absl::Status status;
};

[[noreturn]] void Throw(const absl::Status& s) { throw StatusError{s}; }

template <typename T>
T Unwrap(absl::StatusOr<T> v) {
  if (!v.ok()) Throw(v.status());
  return *std::move(v);
}

void Check(const absl::Status& s) {
  if (!s.ok()) Throw(s);
}

PyObject* g_error = nullptr;             // flexgraph.Error (RuntimeError)
PyObject* g_invalid_argument = nullptr;  // flexgraph.InvalidArgumentError (Error, ValueError)

// int64 copy of a 1-D integer array; `what` names it in errors.
std::vector<int64_t> Int64Vector(const py::array& a, const std::string& what) {
  if (a.ndim() != 1) Throw(absl::InvalidArgumentError(absl::StrCat(what, ": a 1-D array expected, got ", a.ndim(), " dimensions")));
  if (a.dtype().kind() != 'i' && a.dtype().kind() != 'u') {
    Throw(absl::InvalidArgumentError(absl::StrCat(what, ": an integer array expected, got dtype ", std::string(py::str(a.dtype())))));
  }
  auto c = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  return std::vector<int64_t>(c.data(), c.data() + c.size());
}

Tensor Int64Tensor(const std::vector<int64_t>& v) { return Tensor::FromVector(v); }

// A NumPy array over a host tensor without a copy (the array keeps the tensor's storage).
py::array ToNumpy(const Tensor& t) {
  Tensor host = t.To(Device::kCpu);
  auto* keep = new Tensor(host);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(host.shape().begin(), host.shape().end());
  switch (host.dtype()) {
    case DType::kFloat32: return py::array_t<float>(shape, host.f32(), owner);
    case DType::kInt32: return py::array_t<int32_t>(shape, host.i32(), owner);
    case DType::kInt64: return py::array_t<int64_t>(shape, host.i64(), owner);
  }
  return py::array();
}

std::atomic<int64_t> g_next_dataset{0};

// A dataset held by Python and registered for the trainer as "memory:NAME" while it lives.
class PyDataset {
 public:
  PyDataset(graph::Dataset ds, std::string origin) : origin_(std::move(origin)) {
    name_ = absl::StrCat("py", g_next_dataset.fetch_add(1));
    if (ds.name.empty()) ds.name = name_;
    graph::RegisterMemoryDataset(name_, ds);
    ds_ = std::move(ds);
  }
  ~PyDataset() { graph::UnregisterMemoryDataset(name_); }
  PyDataset(const PyDataset&) = delete;
  PyDataset& operator=(const PyDataset&) = delete;

  std::string spec() const { return graph::kMemoryDatasetPrefix + name_; }
  const graph::Dataset& dataset() const { return ds_; }
  const std::string& origin() const { return origin_; }

 private:
  std::string name_, origin_;
  graph::Dataset ds_;
};

// Borrows a C-contiguous float32 [n, f] array (no copy); anything else is an error (the Python
// side converts first).
Tensor BorrowFeatures(const py::array& a) {
  if (a.ndim() != 2) Throw(absl::InvalidArgumentError(absl::StrCat("features: a 2-D array [nodes, width] expected, got ", a.ndim(), " dimensions")));
  if (!py::isinstance<py::array_t<float>>(a) || !(a.flags() & py::array::c_style)) {
    Throw(absl::InvalidArgumentError("features: a C-contiguous float32 array expected"));
  }
  PyObject* owner = a.ptr();
  Py_INCREF(owner);
  return Tensor::Borrow(const_cast<void*>(a.data()), {a.shape(0), a.shape(1)}, DType::kFloat32, [owner] {
    py::gil_scoped_acquire gil;
    Py_DECREF(owner);
  });
}

std::unique_ptr<PyDataset> FromArrays(int64_t num_nodes, const py::array& src, const py::array& dst,
                                      const std::optional<py::array>& features,
                                      const std::optional<py::array>& labels,
                                      const std::optional<py::array>& train,
                                      const std::optional<py::array>& valid,
                                      const std::optional<py::array>& test, bool directed,
                                      const std::string& name) {
  const std::vector<int64_t> s = Int64Vector(src, "edges (sources)");
  const std::vector<int64_t> d = Int64Vector(dst, "edges (destinations)");
  if (s.size() != d.size()) Throw(absl::InvalidArgumentError("edges: as many sources as destinations expected"));
  graph::Dataset ds;
  ds.name = name;
  ds.split_name = "arrays";
  graph::LoadOptions load;
  load.add_reverse_edges = !directed;
  {
    py::gil_scoped_release release;
    ds.graph = Unwrap(graph::BuildHomogeneousGraph(num_nodes, s.data(), d.data(), static_cast<int64_t>(s.size()), Tensor(),
                                                   graph::HomogeneousBuildOptions(load)));
  }
  const std::string type = ds.graph.node_types[0];
  if (features.has_value()) {
    Tensor f = BorrowFeatures(*features);
    if (f.rows() != num_nodes) {
      Throw(absl::InvalidArgumentError(absl::StrCat("features: ", f.rows(), " rows for ", num_nodes, " nodes")));
    }
    ds.features[type] = f;
  }
  if (labels.has_value()) {
    std::vector<int64_t> y = Int64Vector(*labels, "labels");
    if (static_cast<int64_t>(y.size()) != num_nodes) {
      Throw(absl::InvalidArgumentError(absl::StrCat("labels: ", y.size(), " labels for ", num_nodes, " nodes")));
    }
    int64_t classes = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] < -1) Throw(absl::InvalidArgumentError(absl::StrCat("labels: ", y[i], " at node ", i, " (classes are 0.., -1 = unlabeled)")));
      classes = std::max(classes, y[i] + 1);
    }
    ds.labels[type] = Int64Tensor(y);
    ds.num_classes[type] = classes;
  }
  graph::Split split;
  auto ids = [&](const std::optional<py::array>& a, const char* what) {
    if (!a.has_value()) return Tensor::Empty({0}, DType::kInt64);
    std::vector<int64_t> v = Int64Vector(*a, what);
    for (int64_t id : v) {
      if (id < 0 || id >= num_nodes) {
        Throw(absl::InvalidArgumentError(absl::StrCat(what, ": node ", id, " outside [0, ", num_nodes, ")")));
      }
    }
    return Int64Tensor(v);
  };
  split.train = ids(train, "train");
  split.valid = ids(valid, "valid");
  split.test = ids(test, "test");
  if (train.has_value() || valid.has_value() || test.has_value()) ds.splits[type] = split;
  return std::make_unique<PyDataset>(std::move(ds), "arrays");
}

// A heterogeneous dataset as the OGB raw loader builds one: node types with counts, relations
// (src_type, name, dst_type, sources, destinations; no reverse relations added, no
// deduplication), and per node type optional features (borrowed), labels and splits.
std::unique_ptr<PyDataset> FromHeteroArrays(
    const std::vector<std::pair<std::string, int64_t>>& node_types,
    const std::vector<std::tuple<std::string, std::string, std::string, py::array, py::array>>& relations,
    const std::map<std::string, py::array>& features, const std::map<std::string, py::array>& labels,
    const std::map<std::string, std::tuple<std::optional<py::array>, std::optional<py::array>,
                                           std::optional<py::array>>>& splits,
    const std::string& name) {
  graph::Dataset ds;
  ds.name = name;
  ds.split_name = "arrays";
  for (const auto& [type, n] : node_types) {
    if (ds.graph.TypeIndex(type) >= 0) Throw(absl::InvalidArgumentError(absl::StrCat("num_nodes: node type '", type, "' twice")));
    if (n < 0) Throw(absl::InvalidArgumentError(absl::StrCat("num_nodes['", type, "']: ", n, " nodes")));
    ds.graph.node_types.push_back(type);
    ds.graph.num_nodes.push_back(n);
  }
  auto type_size = [&](const std::string& type, const std::string& what) {
    if (ds.graph.TypeIndex(type) < 0) {
      Throw(absl::InvalidArgumentError(absl::StrCat(what, ": unknown node type '", type, "'")));
    }
    return ds.graph.NumNodes(type);
  };
  for (const auto& [src_type, rel, dst_type, src, dst] : relations) {
    const std::string key = src_type + "___" + rel + "___" + dst_type;
    const std::vector<int64_t> s = Int64Vector(src, "edges[" + key + "] (sources)");
    const std::vector<int64_t> d = Int64Vector(dst, "edges[" + key + "] (destinations)");
    if (s.size() != d.size()) Throw(absl::InvalidArgumentError(absl::StrCat("edges[", key, "]: as many sources as destinations expected")));
    const int64_t n_src = type_size(src_type, "edges[" + key + "]"), n_dst = type_size(dst_type, "edges[" + key + "]");
    if (ds.graph.FindRelation(key) != nullptr) Throw(absl::InvalidArgumentError(absl::StrCat("edges: relation ", key, " twice")));
    graph::CsrBuildOptions bo;
    bo.deduplicate = false;
    absl::StatusOr<graph::Relation> r;
    {
      py::gil_scoped_release release;
      r = graph::BuildRelation(src_type, rel, dst_type, n_src, n_dst, s.data(), d.data(), static_cast<int64_t>(s.size()),
                               nullptr, Tensor(), bo);
    }
    if (!r.ok()) Throw(absl::InvalidArgumentError(absl::StrCat("edges[", key, "]: ", r.status().message())));
    ds.graph.relations.push_back(*std::move(r));
  }
  for (const auto& [type, a] : features) {
    const int64_t n = type_size(type, "features");
    Tensor f = BorrowFeatures(a);
    if (f.rows() != n) Throw(absl::InvalidArgumentError(absl::StrCat("features['", type, "']: ", f.rows(), " rows for ", n, " nodes")));
    ds.features[type] = f;
  }
  for (const auto& [type, a] : labels) {
    const int64_t n = type_size(type, "labels");
    std::vector<int64_t> y = Int64Vector(a, "labels['" + type + "']");
    if (static_cast<int64_t>(y.size()) != n) Throw(absl::InvalidArgumentError(absl::StrCat("labels['", type, "']: ", y.size(), " labels for ", n, " nodes")));
    int64_t classes = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] < -1) Throw(absl::InvalidArgumentError(absl::StrCat("labels['", type, "']: ", y[i], " at node ", i, " (classes are 0.., -1 = unlabeled)")));
      classes = std::max(classes, y[i] + 1);
    }
    ds.labels[type] = Int64Tensor(y);
    ds.num_classes[type] = classes;
  }
  for (const auto& [type, parts] : splits) {
    const int64_t n = type_size(type, "splits");
    auto ids = [&](const std::optional<py::array>& a, const char* what) {
      const std::string where = absl::StrCat(what, "['", type, "']");
      if (!a.has_value()) return Tensor::Empty({0}, DType::kInt64);
      std::vector<int64_t> v = Int64Vector(*a, where);
      for (int64_t id : v) {
        if (id < 0 || id >= n) Throw(absl::InvalidArgumentError(absl::StrCat(where, ": node ", id, " outside [0, ", n, ")")));
      }
      return Int64Tensor(v);
    };
    graph::Split split;
    split.train = ids(std::get<0>(parts), "train");
    split.valid = ids(std::get<1>(parts), "valid");
    split.test = ids(std::get<2>(parts), "test");
    ds.splits[type] = split;
  }
  return std::make_unique<PyDataset>(std::move(ds), "arrays");
}

std::unique_ptr<PyDataset> LoadFromPath(const std::string& path, const std::string& split) {
  graph::LoadOptions load;
  load.split = split;
  graph::Dataset ds;
  {
    py::gil_scoped_release release;
    ds = Unwrap(graph::LoadDataset(path, load));
  }
  return std::make_unique<PyDataset>(std::move(ds), path);
}

// .fgc: the binary cache; otherwise a directory in the OGB raw layout.
void Save(const PyDataset& d, const std::string& path) {
  py::gil_scoped_release release;
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".fgc") == 0) {
    Check(graph::io::WriteCache(d.dataset(), path));
  } else {
    Check(graph::io::WriteOgb(d.dataset(), path));
  }
}

// The train command's flags (`args`, as `flexgraph train` takes them) over the resolved
// configuration.
flexgraph::RunConfig TrainConfig(const std::vector<std::string>& args) {
  cli::FlagSet flags("train", "");
  cli::AddTrainFlags(&flags);
  Check(flags.Parse(args));
  if (!flags.positional().empty()) Throw(absl::InvalidArgumentError(absl::StrCat("unexpected argument '", flags.positional()[0], "'")));
  return Unwrap(cli::RunConfigFromFlags(flags));
}

py::dict MetricsDict(const runtime::EpochRecord& e) {
  py::dict m;
  if (e.evaluated) {
    for (const auto& [key, value] : runtime::NamedMetrics(e.metrics)) m[py::str(key)] = value;
  }
  return m;
}

// Trains as `flexgraph train ARGS` does and returns the summary JSON. `progress(epoch, loss,
// metrics)` runs after each epoch; Ctrl-C (or an exception from `progress`) ends the run and is
// raised here.
std::string Train(const std::vector<std::string>& args, const py::object& progress) {
  flexgraph::RunConfig config = TrainConfig(args);
  Check(cli::PrepareOutputs(config));
  std::optional<py::error_already_set> raised;
  absl::StatusOr<runtime::TrainResult> result;
  {
    py::gil_scoped_release release;
    auto trainer = runtime::Trainer::Create(config);
    if (!trainer.ok()) {
      result = trainer.status();
    } else {
      (*trainer)->set_epoch_callback([&](const runtime::EpochRecord& e) -> absl::Status {
        py::gil_scoped_acquire gil;
        try {
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          if (!progress.is_none()) progress(e.epoch, e.loss, MetricsDict(e));
        } catch (py::error_already_set& err) {
          raised.emplace(std::move(err));
          return absl::CancelledError(absl::StrCat("stopped after epoch ", e.epoch));
        }
        return absl::OkStatus();
      });
      result = (*trainer)->Run();
      trainer->reset();  // freed without the GIL (a borrowed tensor's release takes it)
    }
  }
  if (raised.has_value()) throw std::move(*raised);
  return runtime::SummaryJson(Unwrap(std::move(result)));
}

// The model saved in `model_dir` over the dataset `dataset_spec` (its saved configuration with the
// dataset replaced, as `flexgraph predict --dataset` does).
std::unique_ptr<runtime::LoadedModel> LoadModel(const std::string& model_dir, const std::string& dataset_spec) {
  flexgraph::SavedModel saved = Unwrap(runtime::ReadSavedModel(model_dir));
  cli::FlagSet flags("predict", "");
  cli::AddModelFlags(&flags);
  Check(flags.Parse({"--dataset", dataset_spec}));
  flexgraph::RunConfig config = Unwrap(cli::RunConfigFromFlags(flags, saved.config()));
  config.mutable_output()->set_quiet(true);
  return Unwrap(runtime::LoadModel(model_dir, saved, config));
}

py::array Predict(const std::string& model_dir, const PyDataset& d) {
  Tensor probs;
  {
    py::gil_scoped_release release;
    std::unique_ptr<runtime::LoadedModel> model = LoadModel(model_dir, d.spec());
    probs = Unwrap(runtime::PredictProbabilities(*model, {}));
  }
  return ToNumpy(probs);
}

// `layer`: -2 for the default embedding (runtime::DefaultEmbedding), else as `embed --layer`.
py::array Embed(const std::string& model_dir, const PyDataset& d, int layer, bool before_output,
                const std::string& node_type) {
  Tensor rows;
  {
    py::gil_scoped_release release;
    std::unique_ptr<runtime::LoadedModel> model = LoadModel(model_dir, d.spec());
    const std::string type = node_type.empty() ? model->trainer->task().target_type() : node_type;
    if (model->trainer->vertices().TypeIndex(type) < 0) {
      Throw(absl::InvalidArgumentError(absl::StrCat("node_type: no node type '", type, "'")));
    }
    runtime::EmbeddingSource source =
        layer == -2 ? runtime::DefaultEmbedding(*model) : runtime::EmbeddingSource{layer, before_output};
    rows = Unwrap(runtime::Embeddings(*model, source, type, {}));
  }
  return ToNumpy(rows);
}

// A link-prediction model's top `k` unseen destinations per source vertex, as `flexgraph embed
// --recommend` computes them: (ids [sources, k] int32, -1 past a source's candidates; scores
// [sources, k] float32; test recall@k; source type; destination type).
py::tuple Recommend(const std::string& model_dir, const PyDataset& d, int64_t k) {
  runtime::LinkPredictionTask::Recommendations rec;
  std::string src_type, dst_type;
  {
    py::gil_scoped_release release;
    std::unique_ptr<runtime::LoadedModel> model = LoadModel(model_dir, d.spec());
    const auto* lp = dynamic_cast<const runtime::LinkPredictionTask*>(&model->trainer->task());
    if (lp == nullptr) {
      Throw(absl::InvalidArgumentError(
          "recommend: the model classifies nodes; recommendations need a link-prediction model"));
    }
    const nau::VertexSpace& space = model->trainer->vertices();
    const int64_t candidates = space.type_size(space.TypeIndex(lp->target_type()));
    if (k < 1 || k > candidates) {
      Throw(absl::InvalidArgumentError(absl::StrFormat(
          "recommend: k must lie in [1, %d] (the '%s' vertices a source can be recommended), got %d", candidates,
          lp->target_type(), k)));
    }
    Tensor ids;
    const int last = model->trainer->model().num_layers() - 1;
    const Tensor out = Unwrap(model->trainer->Infer(model->epoch, last, &ids));
    rec = lp->Recommend(out, static_cast<int>(k));
    src_type = lp->src_type();
    dst_type = lp->target_type();
  }
  const py::ssize_t rows = static_cast<py::ssize_t>(rec.dst.size()) / k;
  py::array_t<int32_t> dst({rows, static_cast<py::ssize_t>(k)});
  py::array_t<float> score({rows, static_cast<py::ssize_t>(k)});
  std::memcpy(dst.mutable_data(), rec.dst.data(), rec.dst.size() * sizeof(int32_t));
  std::memcpy(score.mutable_data(), rec.score.data(), rec.score.size() * sizeof(float));
  return py::make_tuple(dst, score, rec.test_recall, src_type, dst_type);
}

// The feature matrix of `type` (a view of the dataset's tensor, or of the borrowed array).
py::object Features(const PyDataset& d, const std::string& type) {
  auto it = d.dataset().features.find(type);
  if (it == d.dataset().features.end() || !it->second.defined()) return py::none();
  return ToNumpy(it->second);
}

}  // namespace
}  // namespace fg::python

PYBIND11_MODULE(_core, m) {
  using namespace fg::python;  // NOLINT: the module's own functions
  using fg::OutOfMemory;
  m.doc() = "FlexGraph's C++ core (use the flexgraph package)";
  g_error = PyErr_NewExceptionWithDoc("flexgraph.Error", "An error of FlexGraph's C++ core, with its message.",
                                      PyExc_RuntimeError, nullptr);
  py::tuple bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError));
  g_invalid_argument = PyErr_NewExceptionWithDoc("flexgraph.InvalidArgumentError",
                                                 "A bad argument, option or input (also a ValueError).",
                                                 bases.ptr(), nullptr);
  m.add_object("Error", py::handle(g_error));
  m.add_object("InvalidArgumentError", py::handle(g_invalid_argument));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const bool invalid = e.status.code() == absl::StatusCode::kInvalidArgument ||
                           e.status.code() == absl::StatusCode::kOutOfRange;
      PyErr_SetString(invalid ? g_invalid_argument : g_error, std::string(e.status.message()).c_str());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });

  py::class_<PyDataset>(m, "_Dataset")
      .def_property_readonly("spec", &PyDataset::spec)
      .def_property_readonly("origin", &PyDataset::origin)
      .def_property_readonly("name", [](const PyDataset& d) { return d.dataset().name; })
      .def_property_readonly("node_types", [](const PyDataset& d) { return d.dataset().graph.node_types; })
      .def_property_readonly("num_nodes", [](const PyDataset& d) { return d.dataset().graph.num_nodes; })
      .def_property_readonly("num_edges", [](const PyDataset& d) { return d.dataset().graph.TotalEdges(); })
      .def_property_readonly("num_classes", [](const PyDataset& d) { return d.dataset().num_classes; })
      .def_property_readonly("labeled_type", [](const PyDataset& d) { return d.dataset().LabeledType(); })
      .def("features", &Features, py::arg("type"))
      .def("labels", [](const PyDataset& d, const std::string& type) -> py::object {
        auto it = d.dataset().labels.find(type);
        return it == d.dataset().labels.end() ? py::object(py::none()) : py::object(ToNumpy(it->second));
      }, py::arg("type"))
      .def("split", [](const PyDataset& d, const std::string& type) -> py::object {
        auto it = d.dataset().splits.find(type);
        if (it == d.dataset().splits.end()) return py::none();
        return py::make_tuple(ToNumpy(it->second.train), ToNumpy(it->second.valid), ToNumpy(it->second.test));
      }, py::arg("type"))
      .def("save", &Save, py::arg("path"));

  m.def("from_arrays", &FromArrays, py::arg("num_nodes"), py::arg("src"), py::arg("dst"), py::arg("features"),
        py::arg("labels"), py::arg("train"), py::arg("valid"), py::arg("test"), py::arg("directed"),
        py::arg("name"));
  m.def("from_hetero_arrays", &FromHeteroArrays, py::arg("node_types"), py::arg("relations"), py::arg("features"),
        py::arg("labels"), py::arg("splits"), py::arg("name"));
  m.def("load", &LoadFromPath, py::arg("path"), py::arg("split") = "");
  m.def("train", &Train, py::arg("args"), py::arg("progress") = py::none());
  m.def("predict", &Predict, py::arg("model_dir"), py::arg("dataset"));
  m.def("embed", &Embed, py::arg("model_dir"), py::arg("dataset"), py::arg("layer") = -2,
        py::arg("before_output") = false, py::arg("node_type") = "");
  m.def("recommend", &Recommend, py::arg("model_dir"), py::arg("dataset"), py::arg("k"));
  m.def("models", [] { return fg::nau::ModelRegistry::Get().Names(); });
  m.def("tensor_address", [](const PyDataset& d, const std::string& type) -> uintptr_t {
    auto it = d.dataset().features.find(type);
    return it == d.dataset().features.end() ? 0 : reinterpret_cast<uintptr_t>(it->second.raw());
  }, "The address of a node type's feature matrix inside the dataset (0: none).");
}
