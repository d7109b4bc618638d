// resident.TranslatedModel: a resident.translate plan in device memory as preemptible kernel
// calls (sched::translated_model), with an unpreempted inference for checking it.

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "resident/cuda/error.hpp"
#include "sched_bindings.hpp"

namespace py = pybind11;

namespace resident::python {

namespace {

using float_array = py::array_t<float, py::array::c_style | py::array::forcecast>;

std::vector<float> floats(const py::dict& layer, const char* key) {
  if (!layer.contains(key)) return {};
  const float_array a = layer[key].cast<float_array>();
  return {a.data(), a.data() + a.size()};
}

std::array<std::int32_t, 2> pair(const py::dict& layer, const char* key,
                                 std::array<std::int32_t, 2> fallback) {
  if (!layer.contains(key)) return fallback;
  const auto v = layer[key].cast<std::vector<std::int32_t>>();
  if (v.size() != 2) {
    throw py::value_error(std::string("TranslatedModel: '") + key + "' must hold two values");
  }
  return {v[0], v[1]};
}

sched::plan_layer to_layer(const py::handle& item) {
  const auto d = item.cast<py::dict>();
  sched::plan_layer l;
  const auto kind = d["kind"].cast<std::string>();
  l.name = d.contains("name") ? d["name"].cast<std::string>() : kind;
  const auto k = sched::parse_layer_kind(kind);
  if (!k)
    throw py::value_error("TranslatedModel: layer '" + l.name + "' has kind '" + kind +
                          "', which the kernels do not run");
  l.kind = *k;
  l.inputs = d["inputs"].cast<std::vector<std::int32_t>>();
  l.output = d["output"].cast<std::int32_t>();
  l.shape = d["shape"].cast<std::vector<std::int32_t>>();
  l.kernel = pair(d, "kernel", {1, 1});
  l.stride = pair(d, "stride", {1, 1});
  l.padding = pair(d, "padding", {0, 0});
  if (d.contains("groups")) l.groups = d["groups"].cast<std::int32_t>();
  const auto act = d.contains("act") ? d["act"].cast<std::string>() : std::string("none");
  const auto a = sched::parse_activation(act);
  if (!a)
    throw py::value_error("TranslatedModel: layer '" + l.name + "' has activation '" + act +
                          "', which the kernels do not apply");
  l.act = *a;
  if (d.contains("count_include_pad")) l.count_include_pad = d["count_include_pad"].cast<bool>();
  l.weight = floats(d, "weight");
  l.bias = floats(d, "bias");
  l.scale = floats(d, "scale");
  l.shift = floats(d, "shift");
  return l;
}

}  // namespace

translated::translated(std::vector<std::int32_t> input_shape, const py::list& layers,
                       std::int32_t output)
    : model(std::move(input_shape), convert(layers), output) {}

std::vector<sched::plan_layer> translated::convert(const py::list& layers) {
  std::vector<sched::plan_layer> out;
  for (const py::handle& item : layers) out.push_back(to_layer(item));
  return out;
}

namespace {

py::bytes infer(translated& t, const float_array& x) {
  std::vector<float> out;
  {
    const std::span<const float> in(x.data(), static_cast<std::size_t>(x.size()));
    py::gil_scoped_release release;
    t.model.set_input(in);
    t.model.run_unpreempted(t.s.get());
    out = t.model.read_output();
  }
  return {reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float)};
}

/// Milliseconds for `reps` unpreempted inferences enqueued back to back (CUDA events).
double time_inferences(translated& t, int reps) {
  if (reps < 1) throw py::value_error("time_inferences: reps must be >= 1");
  py::gil_scoped_release release;
  cudaEvent_t begin = nullptr;
  cudaEvent_t end = nullptr;
  RESIDENT_CUDA_TRY(cudaEventCreate(&begin));
  RESIDENT_CUDA_TRY(cudaEventCreate(&end));
  float ms = 0.0F;
  try {
    RESIDENT_CUDA_TRY(cudaEventRecord(begin, t.s.get()));
    for (int i = 0; i < reps; ++i) t.model.launch_unpreempted(t.s.get());
    RESIDENT_CUDA_TRY(cudaEventRecord(end, t.s.get()));
    RESIDENT_CUDA_TRY(cudaEventSynchronize(end));
    RESIDENT_CUDA_TRY(cudaEventElapsedTime(&ms, begin, end));
  } catch (...) {
    (void)cudaEventDestroy(begin);
    (void)cudaEventDestroy(end);
    throw;
  }
  RESIDENT_CUDA_TRY(cudaEventDestroy(begin));
  RESIDENT_CUDA_TRY(cudaEventDestroy(end));
  return ms;
}

}  // namespace

void bind_translated(py::module_& m) {
  py::class_<translated>(m, "TranslatedModel",
                         "A translated CNN plan (resident.translate) in device memory as "
                         "preemptible best-effort kernel calls.")
      .def(py::init<std::vector<std::int32_t>, const py::list&, std::int32_t>(),
           py::arg("input_shape"), py::arg("layers"), py::arg("output"),
           "Checks the plan (ValueError naming the layer), then allocates and uploads.")
      .def("infer", &infer, py::arg("x"),
           "One unpreempted inference of x (float32, input_shape's size); the output as "
           "float32 bytes.")
      .def("time_inferences", &time_inferences, py::arg("reps"),
           "Milliseconds for reps unpreempted inferences enqueued back to back (CUDA events).")
      .def_property_readonly("input_shape",
                             [](const translated& t) { return t.model.input_shape(); })
      .def_property_readonly("output_shape",
                             [](const translated& t) { return t.model.output_shape(); })
      .def_property_readonly("parameters", [](const translated& t) { return t.model.parameters(); })
      .def_property_readonly("device_bytes",
                             [](const translated& t) { return t.model.device_bytes(); })
      .def_property_readonly("calls", [](const translated& t) {
        std::vector<std::pair<std::string, std::int32_t>> out;
        for (const auto& c : t.model.calls()) out.emplace_back(c.name, c.blocks);
        return out;
      });
}

}  // namespace resident::python
