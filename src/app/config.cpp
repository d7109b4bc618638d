#include "app/config.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "resident/app/error.hpp"

namespace resident::detail {

std::string yaml_where(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null()) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

void reject_duplicate_keys(const YAML::Node& node, const std::string& origin) {
  if (node.IsSequence()) {
    for (const auto& item : node) reject_duplicate_keys(item, origin);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& entry : node) {
    if (entry.first.IsScalar()) {
      const auto [it, inserted] = seen.emplace(entry.first.Scalar(), entry.first.Mark());
      if (!inserted) {
        throw config_error(yaml_where(origin, entry.first.Mark()) + ": key '" +
                           entry.first.Scalar() + "' is given twice (first at line " +
                           std::to_string(it->second.line + 1) + ")");
      }
    }
    reject_duplicate_keys(entry.second, origin);
  }
}

config_values parse_config_text(std::string_view yaml, std::string origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw config_error(yaml_where(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
  config_values config;
  config.origin = origin;
  if (root.IsNull()) return config;  // an empty file configures nothing
  reject_duplicate_keys(root, origin);
  if (!root.IsMap()) {
    throw config_error(yaml_where(origin, root.Mark()) +
                       ": expected a map of operator names to parameter maps");
  }
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {  // as<std::string>() would throw a bare YAML exception
      throw config_error(yaml_where(origin, entry.first.Mark()) +
                         ": an operator name must be a plain name, not a list or map");
    }
    const std::string op = entry.first.as<std::string>();
    if (op == loop_section) continue;  // the runner's, not an operator's (read_loop_section)
    config.operator_where.emplace(op, yaml_where(origin, entry.first.Mark()));
    const YAML::Node& params = entry.second;
    if (params.IsNull()) continue;
    if (!params.IsMap()) {
      throw config_error(yaml_where(origin, params.Mark()) + ": operator '" + op +
                         "' must map parameter names to values");
    }
    auto& args = config.operators[op];
    for (const auto& p : params) {
      if (!p.first.IsScalar()) {
        throw config_error(yaml_where(origin, p.first.Mark()) + ": operator '" + op +
                           "': a parameter name must be a plain name, not a list or map");
      }
      const std::string name = p.first.as<std::string>();
      if (p.second.IsNull()) {
        throw config_error(yaml_where(origin, p.first.Mark()) + ": parameter '" + op + "." + name +
                           "' has no value");
      }
      if (!p.second.IsScalar()) {
        throw config_error(yaml_where(origin, p.second.Mark()) + ": parameter '" + op + "." + name +
                           "' must be a single value, not a list or map");
      }
      args.push_back(arg::text(name, p.second.Scalar(), yaml_where(origin, p.second.Mark())));
    }
  }
  return config;
}

config_values parse_config_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw config_error("cannot open configuration file " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_config_text(text.str(), file.string());
}

}  // namespace resident::detail
