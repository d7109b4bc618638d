#include "resident/app/operator.hpp"

#include <algorithm>

#include "resident/app/error.hpp"

namespace resident {

namespace {
std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}
/// The port `name` of `op`, with its device memory; throws composition_error naming both.
const port_spec& bound_port(const Operator& op, std::string_view name) {
  if (!op.composed()) {
    throw composition_error("an operator's port '" + std::string(name) +
                            "' was asked for before an Application set the operator up");
  }
  const port_spec* p = op.spec().find_port(name);
  if (p == nullptr) {
    std::vector<std::string> names;
    for (const auto& q : op.spec().ports()) names.push_back(q.name);
    throw composition_error("operator '" + op.name() + "' has no port '" + std::string(name) +
                            "'; its ports: " + join(names));
  }
  if (p->bound == nullptr) {
    throw composition_error("operator '" + op.name() + "' port '" + std::string(name) +
                            "' has no device memory yet: the application was not materialized");
  }
  return *p;
}

}  // namespace

// ---- OperatorSpec ------------------------------------------------------------------------------

OperatorSpec::OperatorSpec(std::string operator_name, std::vector<arg> supplied)
    : _operator_name(std::move(operator_name)),
      _supplied(std::move(supplied)),
      _used(_supplied.size(), false) {
  for (std::size_t i = 0; i < _supplied.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (_supplied[i].name == _supplied[j].name && _supplied[i].origin == _supplied[j].origin) {
        throw composition_error("operator '" + _operator_name + "': parameter '" +
                                _supplied[i].name + "' is given twice (from " +
                                _supplied[i].origin + ")");
      }
    }
  }
}

void OperatorSpec::device_input(std::string name, std::size_t bytes, void* external) {
  add_port(std::move(name), port_direction::input, bytes, external);
}

void OperatorSpec::device_output(std::string name, std::size_t bytes, void* external) {
  add_port(std::move(name), port_direction::output, bytes, external);
}

void OperatorSpec::image_input(std::string name, const image_desc& image, void* external) {
  add_port(std::move(name), port_direction::input, image.bytes(), external, image);
}

void OperatorSpec::image_output(std::string name, const image_desc& image, void* external) {
  add_port(std::move(name), port_direction::output, image.bytes(), external, image);
}

void OperatorSpec::in_place(std::string_view output, std::string_view input) {
  auto find = [&](std::string_view name, port_direction d) -> port_spec* {
    for (auto& p : _ports) {
      if (p.name == name && p.direction == d) return &p;
    }
    throw composition_error("operator '" + _operator_name + "': in_place(\"" + std::string(output) +
                            "\", \"" + std::string(input) + "\"): no " +
                            (d == port_direction::input ? "input" : "output") + " port '" +
                            std::string(name) + "' declared before it");
  };
  port_spec* out = find(output, port_direction::output);
  const port_spec* in = find(input, port_direction::input);
  const std::string what =
      "operator '" + _operator_name + "': in_place(\"" + out->name + "\", \"" + in->name + "\"): ";
  if (out->bytes != in->bytes) {
    throw composition_error(what + "the output is " + std::to_string(out->bytes) +
                            " bytes, the input " + std::to_string(in->bytes));
  }
  if (out->image && in->image && *out->image != *in->image) {
    throw composition_error(what + "the output is image " + to_string(*out->image) +
                            ", the input " + to_string(*in->image));
  }
  if (out->external != nullptr) {
    throw composition_error(what + "the output supplies its own memory");
  }
  out->in_place_of = in->name;
}

void OperatorSpec::add_port(std::string name, port_direction d, std::size_t bytes, void* external,
                            std::optional<image_desc> image) {
  const char* kind = image ? (d == port_direction::input ? "image_input" : "image_output")
                           : (d == port_direction::input ? "device_input" : "device_output");
  if (image) {
    const std::size_t tight = std::size_t{image->width} * bytes_per_pixel(image->format);
    if (image->width == 0 || image->height == 0 || image->pitch() < tight) {
      throw composition_error("operator '" + _operator_name + "': " + kind + "(\"" + name +
                              "\") declares image " + to_string(*image) +
                              "; width and height must be positive and the pitch at least " +
                              std::to_string(tight) + " bytes");
    }
  }
  if (name.empty()) {
    throw composition_error("operator '" + _operator_name + "': " + kind + " needs a name");
  }
  if (bytes == 0) {
    throw composition_error("operator '" + _operator_name + "': " + kind + "(\"" + name +
                            "\") has size 0 bytes; a port must hold at least one byte");
  }
  if (find_port(name) != nullptr) {
    throw composition_error("operator '" + _operator_name + "': port '" + name +
                            "' is declared twice");
  }
  _ports.push_back(port_spec{std::move(name), d, bytes, external, nullptr, image, {}});
}

const port_spec* OperatorSpec::find_port(std::string_view name) const noexcept {
  const auto it = std::find_if(_ports.begin(), _ports.end(),
                               [&](const port_spec& p) { return p.name == name; });
  return it == _ports.end() ? nullptr : &*it;
}

std::vector<std::string> OperatorSpec::port_names(port_direction d) const {
  std::vector<std::string> names;
  for (const auto& p : _ports) {
    if (p.direction == d) names.push_back(p.name);
  }
  return names;
}

void OperatorSpec::declare(std::string name, const char* type, std::string default_value,
                           std::string description) {
  for (const auto& p : _parameters) {
    if (p.name == name) {
      throw composition_error("operator '" + _operator_name + "': parameter '" + name +
                              "' is declared twice in setup()");
    }
  }
  _parameters.push_back(
      parameter_info{std::move(name), type, std::move(default_value), std::move(description)});
}

const arg* OperatorSpec::take(std::string_view name) {
  // Configuration-file values override values given in code, so a deployment can retune
  // parameters without rebuilding; hence the last supplied value with this name wins.
  const arg* found = nullptr;
  for (std::size_t i = 0; i < _supplied.size(); ++i) {
    if (_supplied[i].name == name) {
      _used[i] = true;
      found = &_supplied[i];
    }
  }
  return found;
}

void OperatorSpec::check_all_supplied_used() const {
  for (std::size_t i = 0; i < _supplied.size(); ++i) {
    if (_used[i]) continue;
    std::vector<std::string> known;
    for (const auto& p : _parameters) known.push_back(p.name);
    const std::string message = "operator '" + _operator_name + "' has no parameter '" +
                                _supplied[i].name + "' (from " + _supplied[i].origin +
                                "); its parameters: " + join(known);
    // A misspelled name in a configuration file is the file's mistake.
    if (_supplied[i].from_text) throw config_error(message);
    throw composition_error(message);
  }
}

// ---- Operator
// ------------------------------------------------------------------------------------

Operator::~Operator() = default;

std::optional<device_form> Operator::persistent_form() const { return std::nullopt; }

void* Operator::bound_memory(std::string_view port) const { return bound_port(*this, port).bound; }

std::size_t Operator::bound_pitch(std::string_view image_port) const {
  const port_spec& p = bound_port(*this, image_port);
  if (!p.image) {
    throw composition_error("operator '" + name() + "' port '" + std::string(image_port) +
                            "' is not an image port");
  }
  return p.image->pitch();
}

// ---- CaptureContext
// ------------------------------------------------------------------------------

CaptureContext::CaptureContext(const Operator& op, cudaStream_t stream, loop_state* loop,
                               bool capturing, bool programmatic, graph_kind target) noexcept
    : _op(op),
      _stream(stream),
      _loop(loop),
      _capturing(capturing),
      _programmatic(programmatic),
      _target(target) {}

const std::string& CaptureContext::operator_name() const noexcept { return _op.name(); }

const port_spec& CaptureContext::port(std::string_view name) const { return bound_port(_op, name); }

}  // namespace resident
