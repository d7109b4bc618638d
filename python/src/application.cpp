// Application, Operator and the ready-made operators, for Python. A Python subclass of
// Application overrides compose(), which the C++ plan() calls back (the trampoline below).

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "resident/app/application.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/display.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/io/sensor_bridge.hpp"
#include "resident/ops/captured_graph.hpp"
#include "resident/ops/catalog.hpp"

namespace py = pybind11;

namespace resident::python {
namespace {

class py_application : public Application {
 public:
  using Application::Application;
  void compose() override { PYBIND11_OVERRIDE_PURE(void, Application, compose); }
};

// A kind's factory inputs (ops::kind_inputs) from the constructor's keyword arguments, which
// it takes out of `kwargs` (the rest are parameters). What each kind needs is the catalog's
// (resident/ops/catalog.hpp).

template <class T>
std::shared_ptr<T> take_endpoint(py::dict& kwargs, const char* key, const char* type,
                                 const std::string& kind) {
  if (!kwargs.contains(key)) {
    throw py::type_error("make_operator(\"" + kind + "\"): needs " + key + "=<resident." + type +
                         ">");
  }
  if (!py::isinstance<T>(kwargs[key])) {
    throw py::type_error("make_operator(\"" + kind + "\"): " + key + "= takes a resident." + type);
  }
  auto endpoint = kwargs[key].template cast<std::shared_ptr<T>>();
  PyDict_DelItemString(kwargs.ptr(), key);
  return endpoint;
}

// external_source / external_sink: `bytes=` and an optional `address=` (a device pointer as an
// int, e.g. a tensor's data_ptr(); 0 or absent: the runtime allocates the port memory).
void take_memory(py::dict& kwargs, const std::string& kind, ops::kind_inputs& in) {
  if (!kwargs.contains("bytes")) {
    throw py::type_error("make_operator(\"" + kind + "\"): needs bytes=<port size>");
  }
  in.bytes = kwargs["bytes"].cast<std::size_t>();
  PyDict_DelItemString(kwargs.ptr(), "bytes");
  std::uintptr_t address = 0;
  if (kwargs.contains("address")) {
    address = kwargs["address"].cast<std::uintptr_t>();
    PyDict_DelItemString(kwargs.ptr(), "address");
  }
  in.memory = reinterpret_cast<void*>(address);
}

// ops.captured_graph: `graph=` a cudaGraph_t as an int (e.g. torch.cuda.CUDAGraph's
// raw_cuda_graph()), cloned when the operator is made; `inputs=` and `outputs=` lists of
// (name, device pointer as an int, bytes).
std::vector<ops::graph_port> take_graph_ports(py::dict& kwargs, const std::string& kind,
                                              const char* key) {
  std::vector<ops::graph_port> ports;
  if (!kwargs.contains(key)) return ports;
  const py::object list = kwargs[key];
  const std::string shape = "make_operator(\"" + kind + "\"): " + key +
                            "= takes a list of (name, device pointer, bytes) tuples";
  if (py::isinstance<py::str>(list) || !py::isinstance<py::sequence>(list)) {
    throw py::type_error(shape);
  }
  for (const auto& item : list) {
    if (py::isinstance<py::str>(item) || !py::isinstance<py::sequence>(item) ||
        py::len(item) != 3) {
      throw py::type_error(shape);
    }
    const auto t = item.cast<py::sequence>();
    if (!py::isinstance<py::str>(t[0]) || !py::isinstance<py::int_>(t[1]) ||
        !py::isinstance<py::int_>(t[2])) {
      throw py::type_error(shape);
    }
    ports.push_back({t[0].cast<std::string>(), reinterpret_cast<void*>(t[1].cast<std::uintptr_t>()),
                     t[2].cast<std::size_t>()});
  }
  PyDict_DelItemString(kwargs.ptr(), key);
  return ports;
}

void take_graph(py::dict& kwargs, const std::string& kind, ops::kind_inputs& in) {
  if (!kwargs.contains("graph") || !py::isinstance<py::int_>(kwargs["graph"])) {
    throw py::type_error("make_operator(\"" + kind + "\"): needs graph=<cudaGraph_t as an int>");
  }
  in.graph = reinterpret_cast<cudaGraph_t>(kwargs["graph"].cast<std::uintptr_t>());
  PyDict_DelItemString(kwargs.ptr(), "graph");
  in.ports = {take_graph_ports(kwargs, kind, "inputs"), take_graph_ports(kwargs, kind, "outputs")};
}

ops::kind_inputs take_inputs(const ops::operator_kind& k, py::dict& kwargs) {
  ops::kind_inputs in;
  switch (k.input) {
    case ops::kind_input::none:
      break;
    case ops::kind_input::mailbox:
      in.mailbox = take_endpoint<io::mailbox>(kwargs, "mailbox", "Mailbox", k.name);
      break;
    case ops::kind_input::sensor_bridge:
      in.bridge = take_endpoint<io::sensor_bridge>(kwargs, "bridge", "SensorBridge", k.name);
      break;
    case ops::kind_input::display:
      in.display = take_endpoint<io::display>(kwargs, "display", "Display", k.name);
      break;
    case ops::kind_input::memory:
      take_memory(kwargs, k.name, in);
      break;
    case ops::kind_input::captured_graph:
      take_graph(kwargs, k.name, in);
      break;
    case ops::kind_input::device_link:
      in.link = take_endpoint<io::device_link>(kwargs, "link", "DeviceLink", k.name);
      break;
  }
  return in;
}

std::vector<std::string> operator_kinds() {
  std::vector<std::string> kinds;
  for (const auto& k : ops::operator_catalog()) kinds.push_back(k.name);
  return kinds;
}

// Python values -> resident::arg. bool first: in Python, bool is an int.
arg to_arg(const std::string& op, const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return arg(name, value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return arg(name, value.cast<std::int64_t>());
  if (py::isinstance<py::float_>(value)) return arg(name, value.cast<double>());
  if (py::isinstance<py::str>(value)) return arg(name, value.cast<std::string>());
  // NumPy scalars and the like: integers by __index__, numbers by __float__.
  const auto object = py::reinterpret_borrow<py::object>(value);
  if (PyIndex_Check(object.ptr())) return arg(name, py::int_(object).cast<std::int64_t>());
  if (py::hasattr(object, "__float__")) return arg(name, py::float_(object).cast<double>());
  throw py::type_error("make_operator(\"" + op + "\"): parameter '" + name + "' is a " +
                       std::string(py::str(value.get_type().attr("__name__"))) +
                       "; parameters are bool, int, float or str");
}

std::shared_ptr<Operator> make_operator(Application& app, const std::string& kind,
                                        const std::string& name, py::kwargs kwargs) {
  const ops::operator_kind* k = nullptr;
  try {
    k = &ops::operator_kind_named(kind);
  } catch (const composition_error& e) {
    throw composition_error("make_operator(\"" + name + "\"): " + e.what());
  }
  py::dict rest(kwargs);  // this call's own dict: the inputs are taken out of it
  auto op = k->make(take_inputs(*k, rest));
  std::vector<arg> params;
  for (const auto& [key, value] : rest) params.push_back(to_arg(name, py::str(key), value));
  return app.add_operator(std::move(op), name, std::move(params));
}

std::vector<std::pair<std::string, std::string>> to_port_pairs(const py::object& ports) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (ports.is_none()) return pairs;
  if (py::isinstance<py::dict>(ports)) {
    for (const auto& [out, in] : ports.cast<py::dict>()) {
      pairs.emplace_back(py::str(out), py::str(in));
    }
    return pairs;
  }
  for (const auto& pair : ports) {
    if (py::isinstance<py::str>(pair) || !py::isinstance<py::sequence>(pair) ||
        py::len(pair) != 2) {
      throw py::type_error("add_flow: ports are (out, in) pairs or a dict {out: in}");
    }
    const auto t = pair.cast<py::sequence>();
    pairs.emplace_back(t[0].cast<std::string>(), t[1].cast<std::string>());
  }
  return pairs;
}

std::vector<std::string> names_of(const std::vector<Operator*>& ops) {
  std::vector<std::string> names;
  for (const auto* op : ops) names.push_back(op->name());
  return names;
}

// The plan as plain Python data; python/resident/__init__.py turns it into dataclasses.
py::dict plan_summary(Application& app) {
  const dag_plan& p = app.plan();
  py::list buffers;
  for (const auto& b : p.buffers) {
    buffers.append(py::dict(py::arg("bytes") = b.bytes, py::arg("producer") = b.producer,
                            py::arg("consumers") = b.consumers,
                            py::arg("external") = b.external != nullptr));
  }
  return py::dict(py::arg("handler_order") = names_of(p.handler_order),
                  py::arg("body_order") = names_of(p.body_order), py::arg("buffers") = buffers,
                  py::arg("runtime_bytes") = p.total_runtime_bytes());
}

std::vector<std::string> port_names(const Operator& op, port_direction d) {
  return op.spec().port_names(d);
}

py::list parameters_of(const Operator& op) {
  py::list out;
  for (const auto& p : op.spec().parameters()) {
    out.append(py::make_tuple(p.name, p.type, p.default_value, p.description));
  }
  return out;
}

void bind_operator(py::module_& m) {
  py::class_<Operator, std::shared_ptr<Operator>>(m, "Operator")
      .def_property_readonly("name", &Operator::name)
      .def_property_readonly(
          "inputs", [](const Operator& op) { return port_names(op, port_direction::input); })
      .def_property_readonly(
          "outputs", [](const Operator& op) { return port_names(op, port_direction::output); })
      .def_property_readonly("parameters", &parameters_of,
                             "(name, type, default, description) of each declared parameter")
      .def("port_bytes",
           [](const Operator& op, const std::string& port) {
             const port_spec* p = op.spec().find_port(port);
             if (p == nullptr) throw py::key_error(op.name() + " has no port '" + port + "'");
             return p->bytes;
           })
      .def("__repr__",
           [](const Operator& op) { return "<resident.Operator '" + op.name() + "'>"; });
  py::class_<data_ready_handler>(m, "DataReadyHandler")
      .def_property_readonly("operators", [](const data_ready_handler& h) { return h.operators; });
}

}  // namespace

void bind_application(py::module_& m) {
  bind_operator(m);
  m.def("operator_kinds", &operator_kinds, "Kinds make_operator() knows.");
  m.def(
      "operator_catalog",
      [] {
        py::list out;
        for (const auto& k : ops::operator_catalog()) {
          py::list params;
          for (const auto& p : ops::kind_parameters(k)) {
            params.append(py::make_tuple(p.name, p.type, p.default_value, p.description));
          }
          out.append(py::dict(py::arg("kind") = k.name, py::arg("summary") = k.summary,
                              py::arg("input") = std::string(ops::to_string(k.input)),
                              py::arg("device_form") = k.device_form,
                              py::arg("parameters") = params));
        }
        return out;
      },
      "Every operator kind: its summary, what make_operator needs besides parameters, whether "
      "it runs in persistent mode, and its parameters (name, type, default, description).");
  py::class_<Application, py_application>(m, "Application")
      .def(py::init<std::string>(), py::arg("name") = "app")
      .def("load_config", &Application::load_config, py::arg("path"))
      .def("load_config_text", &Application::load_config_text, py::arg("text"),
           py::arg("origin") = "<config>")
      .def("make_operator", &make_operator, py::arg("kind"), py::arg("name"))
      .def(
          "add_flow",
          [](Application& app, const std::shared_ptr<Operator>& src,
             const std::shared_ptr<Operator>& dst,
             const py::object& ports) { app.add_flow(src, dst, to_port_pairs(ports)); },
          py::arg("src"), py::arg("dst"), py::arg("ports") = py::none())
      .def("register_data_ready_handler", &Application::register_data_ready_handler,
           py::arg("handler"))
      .def("_plan_summary", &plan_summary)
      .def(
          "to_dot",
          [](Application& app, const std::string& capture) {
            return app.to_dot(parse_capture_order(capture));
          },
          py::arg("capture") = "chain")
      .def("find_operator",
           [](const Application& app, const std::string& name) {
             for (const auto& op : app.operators()) {
               if (op->name() == name) return op;
             }
             (void)app.find_operator(name);  // throws, naming the operators it has
             return std::shared_ptr<Operator>{};
           })
      .def_property_readonly("name", &Application::name)
      .def_property_readonly("operators", &Application::operators)
      .def_property_readonly("materialized", &Application::materialized)
      .def_property_readonly("has_data_ready_handler", &Application::has_data_ready_handler);
}

}  // namespace resident::python
