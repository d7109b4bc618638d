// The _resident extension module: the C++ runtime as seen from Python. The pure-Python package
// `resident` (python/resident/__init__.py) re-exports it with Python habits on top.

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/exec/mode.hpp"
#include "resident/exec/run_options.hpp"
#include "resident/version.hpp"

namespace py = pybind11;

namespace resident::python {

namespace {

// What a CUDA error raised in Python adds when the machine has no usable GPU: the CLI's
// explanation (explain_no_device) and what still works from Python.
std::string no_gpu_note(const std::string& reason) {
  return "resident: " + explain_no_device(reason) +
         ". Without a GPU, resident can still compose, check and plan an application "
         "(Application.load_config, Application.plan()), list the operator kinds "
         "(resident.operator_catalog()) and read receipts (resident report RECEIPT..., "
         "resident.bench.report).";
}

}  // namespace

void bind_errors(py::module_& m) {
  // Static: the translator below outlives this call (pybind11 2.10 idiom).
  static py::exception<composition_error> composition(m, "CompositionError", PyExc_ValueError);
  static py::exception<config_error> config(m, "ConfigError", composition.ptr());
  static py::exception<execution_error> execution(m, "ExecutionError", PyExc_RuntimeError);
  static py::exception<cuda_error> cuda(m, "CudaError", PyExc_RuntimeError);
  // One translator, most derived first: config_error is a composition_error.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config_error& e) {
      PyErr_SetString(config.ptr(), e.what());
    } catch (const composition_error& e) {
      PyErr_SetString(composition.ptr(), e.what());
    } catch (const execution_error& e) {
      PyErr_SetString(execution.ptr(), e.what());
    } catch (const cuda_error& e) {
      std::string message = e.what();
      if (device_count() == 0) message += "\n" + no_gpu_note(no_device_reason());
      PyErr_SetString(cuda.ptr(), message.c_str());
    }
  });
}

namespace {

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const auto m : every_execution_mode) names.emplace_back(to_string(m));
  return names;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto p :
       {sample_policy::newest, sample_policy::every, sample_policy::skip_duplicate}) {
    names.emplace_back(to_string(p));
  }
  return names;
}

}  // namespace

}  // namespace resident::python

PYBIND11_MODULE(_resident, m) {
  using namespace resident::python;
  m.doc() = "resident: GPU-resident sensor -> GPU -> actuator loops (C++ runtime bindings)";
  m.attr("__version__") = RESIDENT_VERSION;
  m.attr("__git_commit__") = std::string(resident::git_commit());
  // As the C++ programs do first in main(): a kernel loaded lazily while a resident loop holds
  // the GPU can wait for that loop forever. Only takes effect before the process's first CUDA
  // call (import resident before torch), and keeps a mode the environment chose.
  resident::request_eager_module_loading();
  bind_errors(m);
  m.def("device_count", &resident::device_count,
        "Number of usable CUDA devices; 0 without a GPU or driver (never raises).");
  m.def("no_device_reason", &resident::no_device_reason,
        "Why no device is usable; empty when one is.");
  m.def("_no_gpu_note", &no_gpu_note, py::arg("reason"),
        "What a CUDA error adds on a machine without a usable GPU (for tests).");
  m.def("modes", &mode_names,
        "Every execution mode's name, in the order of the C++ enum (persistent runs operators "
        "with a device form only).");
  m.def("policies", &policy_names, "Sample policy names.");
  bind_application(m);
  bind_mailbox(m);
  bind_camera(m);
  bind_drive(m);
  bind_translated(m);
  bind_sched(m);
  bind_run(m);
}
