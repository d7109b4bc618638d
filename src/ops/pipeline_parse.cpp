// Reading a pipeline file (resident/ops/pipeline_config.hpp): YAML to a checked description,
// with the kinds looked up by the caller (the catalog, or the fuzz harness's table). Host code
// that makes no operator, so the fuzz harness builds it.

#include "resident/ops/pipeline_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "app/config.hpp"
#include "resident/app/error.hpp"

namespace resident::ops {

namespace {

using resident::detail::yaml_where;

std::string scalar(const YAML::Node& node, const std::string& origin, const std::string& what) {
  if (!node.IsScalar()) {
    throw config_error(yaml_where(origin, node.Mark()) + ": " + what +
                       " must be a single value, not a list or map");
  }
  return node.Scalar();
}

/// A count of the mailbox section: a whole number from `least` to 1 GiB.
std::size_t byte_count(const YAML::Node& section, const char* key, std::size_t least,
                       std::size_t fallback, const std::string& origin) {
  const YAML::Node node = section[key];
  if (!node) return fallback;
  const std::string text = scalar(node, origin, std::string("mailbox.") + key);
  constexpr std::size_t most = std::size_t{1} << 30;
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < least || value > most) {
    throw config_error(yaml_where(origin, node.Mark()) + ": mailbox." + key +
                       " must be a whole number from " + std::to_string(least) + " to " +
                       std::to_string(most) + ", not '" + text + "'");
  }
  return value;
}

io::mailbox::config parse_mailbox(const YAML::Node& section, const std::string& origin) {
  if (!section.IsMap()) {
    throw config_error(yaml_where(origin, section.Mark()) +
                       ": mailbox must map input_bytes, output_bytes and depth to numbers");
  }
  for (const auto& entry : section) {
    const std::string key = scalar(entry.first, origin, "a mailbox key");
    if (key != "input_bytes" && key != "output_bytes" && key != "depth") {
      throw config_error(yaml_where(origin, entry.first.Mark()) + ": mailbox has no setting '" +
                         key + "'; settings: input_bytes, output_bytes, depth");
    }
  }
  io::mailbox::config c;
  c.input_bytes = byte_count(section, "input_bytes", 1, c.input_bytes, origin);
  c.output_bytes = byte_count(section, "output_bytes", 0, c.output_bytes, origin);
  c.depth = byte_count(section, "depth", 2, c.depth, origin);
  if (c.depth > 4096) {
    throw config_error(yaml_where(origin, section["depth"].Mark()) +
                       ": mailbox.depth must be at most 4096 ring slots");
  }
  return c;
}

pipeline_operator parse_operator(const YAML::Node& name, const YAML::Node& body,
                                 const std::string& origin, const kind_input_lookup& lookup) {
  pipeline_operator op;
  op.name = scalar(name, origin, "an operator name");
  op.where = yaml_where(origin, name.Mark());
  if (op.name.empty() || op.name.find_first_of(". \t") != std::string::npos) {
    throw config_error(op.where + ": operator name '" + op.name +
                       "' must be a plain name (no dots or spaces: flows write name.port)");
  }
  if (!body.IsMap() || !body["kind"]) {
    throw config_error(yaml_where(origin, body.Mark()) + ": operator '" + op.name +
                       "' must be a map with its kind (e.g. {kind: ops.affine, elements: 1024})");
  }
  for (const auto& p : body) {
    const std::string key = scalar(p.first, origin, "a parameter name of '" + op.name + "'");
    if (p.second.IsNull()) {
      throw config_error(yaml_where(origin, p.first.Mark()) + ": '" + op.name + "." + key +
                         "' has no value");
    }
    const std::string value = scalar(p.second, origin, "'" + op.name + "." + key + "'");
    if (key == "kind") {
      op.kind = value;
    } else {
      op.params.push_back(arg::text(key, value, yaml_where(origin, p.second.Mark())));
    }
  }
  kind_input input = kind_input::none;
  try {
    input = lookup(op.kind);
  } catch (const composition_error& e) {
    throw config_error(yaml_where(origin, body["kind"].Mark()) + ": operator '" + op.name +
                       "': " + e.what());
  }
  if (input != kind_input::none && input != kind_input::mailbox) {
    throw config_error(yaml_where(origin, body["kind"].Mark()) + ": operator '" + op.name +
                       "': kind '" + op.kind + "' needs a " + std::string(to_string(input)) +
                       ", which a pipeline file cannot give; make it in C++ or Python (or use a "
                       "camera configuration for the camera's operators)");
  }
  return op;
}

/// "op.port" or "op": the operator and the port (empty: the operator's only one).
std::pair<std::string, std::string> split_end(const std::string& end) {
  const auto dot = end.find('.');
  if (dot == std::string::npos) return {end, ""};
  return {end.substr(0, dot), end.substr(dot + 1)};
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

pipeline_flow parse_flow(const YAML::Node& node, const pipeline_description& d) {
  const std::string at = yaml_where(d.origin, node.Mark());
  const std::string text = scalar(node, d.origin, "a flow");
  const auto arrow = text.find("->");
  if (arrow == std::string::npos || text.find("->", arrow + 2) != std::string::npos) {
    throw config_error(at + ": flow '" + text +
                       "' must read 'from.port -> to.port' (or 'from -> to' for the only ports)");
  }
  pipeline_flow f;
  f.where = at;
  std::tie(f.from, f.from_port) = split_end(trim(text.substr(0, arrow)));
  std::tie(f.to, f.to_port) = split_end(trim(text.substr(arrow + 2)));
  for (const auto* end : {&f.from, &f.to}) {
    if (d.find(*end) == nullptr) {
      std::string names;
      for (const auto& op : d.operators) names += (names.empty() ? "" : ", ") + op.name;
      throw config_error(at + ": flow '" + text + "' names operator '" + *end +
                         "', which the file does not define (operators: " + names + ")");
    }
  }
  if ((f.from_port.empty() && text.substr(0, arrow).find('.') != std::string::npos) ||
      (f.to_port.empty() && text.substr(arrow + 2).find('.') != std::string::npos)) {
    throw config_error(at + ": flow '" + text + "' has an empty port name after a dot");
  }
  return f;
}

void choose_handler(const YAML::Node& root, pipeline_description& d) {
  std::vector<std::string> receivers;
  for (const auto& op : d.operators) {
    if (op.kind == "io.mailbox_rx") receivers.push_back(op.name);
  }
  if (const YAML::Node h = root["handler"]) {
    d.handler = scalar(h, d.origin, "handler");
    if (std::find(receivers.begin(), receivers.end(), d.handler) == receivers.end()) {
      throw config_error(yaml_where(d.origin, h.Mark()) + ": handler '" + d.handler +
                         "' must name an io.mailbox_rx operator of the file");
    }
    return;
  }
  if (receivers.size() == 1) d.handler = receivers.front();
  if (receivers.size() > 1) {
    throw config_error(d.origin + ": " + std::to_string(receivers.size()) +
                       " io.mailbox_rx operators; say which is the data-ready handler "
                       "(handler: NAME)");
  }
}

}  // namespace

const pipeline_operator* pipeline_description::find(std::string_view name) const {
  const auto it = std::find_if(operators.begin(), operators.end(),
                               [&](const pipeline_operator& op) { return op.name == name; });
  return it == operators.end() ? nullptr : &*it;
}

pipeline_description parse_pipeline_text(std::string_view yaml, std::string origin,
                                         const kind_input_lookup& lookup) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw config_error(yaml_where(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
  pipeline_description d;
  d.origin = std::move(origin);
  if (!root.IsMap() || !root["operators"]) {
    throw config_error(d.origin +
                       ": a pipeline file is a map with 'operators' (and 'flows', "
                       "'mailbox', 'handler', 'loop')");
  }
  detail::reject_duplicate_keys(root, d.origin);
  for (const auto& entry : root) {
    const std::string key = scalar(entry.first, d.origin, "a top-level key");
    if (key != "operators" && key != "flows" && key != "mailbox" && key != "handler" &&
        key != detail::loop_section) {
      throw config_error(yaml_where(d.origin, entry.first.Mark()) + ": unknown section '" + key +
                         "'; sections: operators, flows, mailbox, handler, loop");
    }
  }
  const YAML::Node ops = root["operators"];
  if (!ops.IsMap() || ops.size() == 0) {
    throw config_error(yaml_where(d.origin, ops.Mark()) +
                       ": operators must map names to {kind: ..., parameters...}");
  }
  bool uses_mailbox = false;
  for (const auto& entry : ops) {
    d.operators.push_back(parse_operator(entry.first, entry.second, d.origin, lookup));
    uses_mailbox = uses_mailbox || lookup(d.operators.back().kind) == kind_input::mailbox;
  }
  if (const YAML::Node flows = root["flows"]) {
    if (!flows.IsSequence()) {
      throw config_error(yaml_where(d.origin, flows.Mark()) +
                         ": flows must be a list of 'from.port -> to.port'");
    }
    for (const auto& f : flows) d.flows.push_back(parse_flow(f, d));
  }
  if (const YAML::Node m = root["mailbox"]) {
    d.mailbox = parse_mailbox(m, d.origin);
  } else if (uses_mailbox) {
    throw config_error(d.origin +
                       ": io.mailbox_rx and io.mailbox_tx need a 'mailbox' section "
                       "(input_bytes, output_bytes, depth)");
  }
  choose_handler(root, d);
  return d;
}

pipeline_description parse_pipeline_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw config_error("cannot open pipeline file " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_pipeline_text(text.str(), file.string());
}

bool is_pipeline_config(const std::filesystem::path& file) {
  try {
    const YAML::Node root = YAML::LoadFile(file.string());
    return root.IsMap() && root["operators"];
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace resident::ops
