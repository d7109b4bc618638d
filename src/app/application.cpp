#include "resident/app/application.hpp"

#include <algorithm>

#include "app/config.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/stream.hpp"

namespace resident {

Application::Application(std::string name) : _name(std::move(name)) {}

Application::~Application() = default;

void Application::load_config(const std::filesystem::path& yaml_file) {
  if (_plan != nullptr || _composing) {
    throw config_error("load_config(" + yaml_file.string() + "): application '" + _name +
                       "' is already composed; load the configuration before plan() or a run");
  }
  _config = std::make_unique<detail::config_values>(detail::parse_config_file(yaml_file));
}

void Application::load_config_text(std::string_view yaml, std::string origin) {
  if (_plan != nullptr || _composing) {
    throw config_error("load_config(" + origin + "): application '" + _name +
                       "' is already composed; load the configuration before plan() or a run");
  }
  _config =
      std::make_unique<detail::config_values>(detail::parse_config_text(yaml, std::move(origin)));
}

std::vector<arg> Application::config_args_for(const std::string& op_name) {
  if (_config == nullptr) return {};
  const auto it = _config->operators.find(op_name);
  return it == _config->operators.end() ? std::vector<arg>{} : it->second;
}

void Application::check_config_names() const {
  if (_config == nullptr) return;
  for (const auto& entry : _config->operators) {
    const std::string& op_name = entry.first;  // a structured binding: clang 14 cannot capture it
    const bool exists = std::any_of(_operators.begin(), _operators.end(),
                                    [&](const auto& op) { return op->name() == op_name; });
    if (exists) continue;
    std::string names;
    for (const auto& op : _operators) names += (names.empty() ? "" : ", ") + op->name();
    throw config_error(_config->where_of(op_name) + ": names operator '" + op_name +
                       "', which application '" + _name +
                       "' does not create; its operators: " + names);
  }
}

std::shared_ptr<Operator> Application::add_operator(std::shared_ptr<Operator> op, std::string name,
                                                    std::vector<arg> args) {
  if (!_composing) {
    throw composition_error("make_operator(\"" + name +
                            "\"): operators are created inside compose()");
  }
  if (name.empty()) throw composition_error("make_operator: an operator needs a name");
  if (std::any_of(_operators.begin(), _operators.end(),
                  [&](const auto& o) { return o->name() == name; })) {
    throw composition_error("make_operator(\"" + name + "\"): application '" + _name +
                            "' already has an operator named '" + name + "'");
  }
  for (auto& a : config_args_for(name)) args.push_back(std::move(a));  // config wins: last
  op->_name = name;
  op->_spec = std::make_unique<OperatorSpec>(name, std::move(args));
  op->setup(*op->_spec);
  op->_spec->check_all_supplied_used();
  _operators.push_back(op);
  return op;
}

void Application::add_flow(const std::shared_ptr<Operator>& src,
                           const std::shared_ptr<Operator>& dst,
                           std::vector<std::pair<std::string, std::string>> ports) {
  if (!_composing) throw composition_error("add_flow: flows are made inside compose()");
  if (src == nullptr || dst == nullptr) throw composition_error("add_flow: an operator is null");
  for (const auto* op : {src.get(), dst.get()}) {
    if (std::none_of(_operators.begin(), _operators.end(),
                     [&](const auto& o) { return o.get() == op; })) {
      throw composition_error("add_flow: operator '" + op->name() +
                              "' was not created by this application's make_operator()");
    }
  }
  if (ports.empty()) {
    const auto outs = src->spec().port_names(port_direction::output);
    const auto ins = dst->spec().port_names(port_direction::input);
    if (outs.size() != 1 || ins.size() != 1) {
      throw composition_error("add_flow(" + src->name() + " -> " + dst->name() +
                              "): name the ports, e.g. {{\"out\", \"in\"}}: '" + src->name() +
                              "' has " + std::to_string(outs.size()) + " outputs and '" +
                              dst->name() + "' has " + std::to_string(ins.size()) + " inputs");
    }
    ports.emplace_back(outs.front(), ins.front());
  }
  for (auto& [out, in] : ports) {
    flow f{src.get(), std::move(out), dst.get(), std::move(in)};
    check_flow(f, _flows);
    _flows.push_back(std::move(f));
  }
}

void Application::register_data_ready_handler(data_ready_handler handler) {
  // After plan() a handler would not be in the plan yet the executors would wait for it.
  if (!_composing) {
    throw composition_error(
        "register_data_ready_handler: the data-ready handler is registered inside compose()");
  }
  if (_handler_registered) {
    throw composition_error("register_data_ready_handler: application '" + _name +
                            "' already has a data-ready handler");
  }
  if (handler.operators.empty()) {
    throw composition_error("register_data_ready_handler: the handler needs at least one operator");
  }
  for (const auto& op : handler.operators) {
    if (op == nullptr || std::none_of(_operators.begin(), _operators.end(),
                                      [&](const auto& o) { return o == op; })) {
      throw composition_error("register_data_ready_handler: operator '" +
                              (op ? op->name() : std::string("null")) +
                              "' was not created by this application's make_operator()");
    }
  }
  _handler = std::move(handler);
  _handler_registered = true;
}

void Application::reset_composition() {
  _operators.clear();
  _flows.clear();
  _handler = {};
  _handler_registered = false;
}

const dag_plan& Application::plan() {
  if (_plan != nullptr) return *_plan;
  _composing = true;
  try {
    compose();
    _composing = false;
    check_config_names();
    std::vector<Operator*> ops;
    for (const auto& op : _operators) ops.push_back(op.get());
    std::vector<Operator*> handler_ops;
    for (const auto& op : _handler.operators) handler_ops.push_back(op.get());
    _plan = std::make_unique<dag_plan>(build_plan(ops, _flows, handler_ops));
  } catch (...) {
    _composing = false;
    reset_composition();  // a later plan() starts from a clean slate
    throw;
  }
  return *_plan;
}

void Application::materialize() { materialize(current_device()); }

void Application::materialize(int device) {
  if (_materialized) {
    if (device != _device) {
      throw composition_error("application '" + _name + "' was materialized on device " +
                              std::to_string(_device) + "; it cannot run on device " +
                              std::to_string(device) + " (its port memory lives on the first)");
    }
    return;
  }
  const current_device_guard on_device(device);
  const dag_plan& p = plan();
  auto buffers = std::make_shared<std::vector<device_buffer>>();
  std::vector<void*> pointers;
  // Port memory starts as zeros: a port read before anything wrote it (an egress in an
  // iteration that took no sample, a kernel reading a tail it does not use) reads zeros, not
  // what the allocator left there. On a stream of its own: a loop may run meanwhile.
  const stream zeroing;
  for (const auto& b : p.buffers) {
    if (b.external != nullptr) {
      pointers.push_back(b.external);
    } else {
      buffers->emplace_back(b.bytes);
      buffers->back().fill_bytes(0, zeroing);
      pointers.push_back(buffers->back().data());
    }
  }
  zeroing.synchronize();
  for (const auto& op : _operators) {
    for (auto& port : op->spec().ports()) {
      port.bound = pointers.at(p.buffer_of(*op, port.name));
    }
  }
  _port_memory = std::move(buffers);
  for (Operator* op : p.handler_order) op->initialize();
  for (Operator* op : p.body_order) op->initialize();
  _device = device;
  _materialized = true;
}

Operator& Application::find_operator(std::string_view name) const {
  for (const auto& op : _operators) {
    if (op->name() == name) return *op;
  }
  throw composition_error("application '" + _name + "' has no operator '" + std::string(name) +
                          "'");
}

Application::run_guard::run_guard(Application& app, std::string mode) {
  bool expected = false;
  if (!app._running.compare_exchange_strong(expected, true)) {
    throw composition_error("application '" + app._name + "' is already running (mode " +
                            app._running_mode + "); tear that run down before starting another");
  }
  app._running_mode = std::move(mode);
  _app = &app;
}

Application::run_guard::run_guard(run_guard&& other) noexcept
    : _app(std::exchange(other._app, nullptr)) {}

Application::run_guard& Application::run_guard::operator=(run_guard&& other) noexcept {
  if (this != &other) {
    if (_app != nullptr) _app->_running.store(false);
    _app = std::exchange(other._app, nullptr);
  }
  return *this;
}

Application::run_guard::~run_guard() {
  if (_app != nullptr) _app->_running.store(false);
}

}  // namespace resident
