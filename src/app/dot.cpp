#include <sstream>

#include "resident/app/application.hpp"

namespace resident {

namespace {
// Names go inside double quotes in DOT: escape what would end or break the string.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (const char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string Application::to_dot() {
  const dag_plan& p = plan();
  std::ostringstream dot;
  dot << "digraph " << quoted(_name) << " {\n  rankdir=LR;\n  node [shape=box];\n";
  if (!p.handler_order.empty()) {
    dot << "  subgraph cluster_handler {\n    label=\"data-ready handler\";\n    style=dashed;\n";
    for (const Operator* op : p.handler_order) dot << "    " << quoted(op->name()) << ";\n";
    dot << "  }\n";
  }
  for (const Operator* op : p.body_order) dot << "  " << quoted(op->name()) << ";\n";
  for (const auto& f : _flows) {
    dot << "  " << quoted(f.src->name()) << " -> " << quoted(f.dst->name()) << " [label="
        << quoted(f.src_port + " -> " + f.dst_port + " (" +
                  std::to_string(f.src->spec().find_port(f.src_port)->bytes) + " B)")
        << "];\n";
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace resident
