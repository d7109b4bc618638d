#pragma once
// YAML operator configuration:
//
//   affine:          # operator name
//     scale: 3.0     # parameter: scalar value
//     offset: -1
//
// Values stay text until the operator declares the parameter's type in setup().

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "resident/app/parameters.hpp"

namespace YAML {
class Node;
struct Mark;
}  // namespace YAML

namespace resident::detail {

struct config_values {
  std::string origin;  // the file name, for messages
  std::map<std::string, std::vector<arg>> operators;
  std::map<std::string, std::string> operator_where;  // "file:line:col" of each operator's name

  /// Where operator `op` is named in the file ("file:line:col"), or the file alone.
  [[nodiscard]] const std::string& where_of(const std::string& op) const {
    const auto it = operator_where.find(op);
    return it == operator_where.end() ? origin : it->second;
  }
};

/// "origin:line:col" of a YAML position (1-based), or the origin alone where yaml-cpp has none:
/// how every configuration error names its place.
[[nodiscard]] std::string yaml_where(const std::string& origin, const YAML::Mark& mark);

/// yaml-cpp keeps both entries of a map that gives a key twice (and a lookup finds the first):
/// a config_error "origin:line:col: key 'k' is given twice (first at line L)" for the first
/// such key in `node` or any map or list below it. Keys are compared as scalars.
void reject_duplicate_keys(const YAML::Node& node, const std::string& origin);

/// The top-level key that is not an operator: the loop's settings for whoever runs the
/// application (`resident run` reads deadline_us and wcet_us there); operators skip it.
inline constexpr const char* loop_section = "loop";

config_values parse_config_file(const std::filesystem::path& file);
config_values parse_config_text(std::string_view yaml, std::string origin);

}  // namespace resident::detail
