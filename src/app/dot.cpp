#include <sstream>

#include "resident/app/application.hpp"

namespace resident {

std::string Application::to_dot() {
  const dag_plan& p = plan();
  std::ostringstream dot;
  dot << "digraph \"" << _name << "\" {\n  rankdir=LR;\n  node [shape=box];\n";
  if (!p.handler_order.empty()) {
    dot << "  subgraph cluster_handler {\n    label=\"data-ready handler\";\n    style=dashed;\n";
    for (const Operator* op : p.handler_order) dot << "    \"" << op->name() << "\";\n";
    dot << "  }\n";
  }
  for (const Operator* op : p.body_order) dot << "  \"" << op->name() << "\";\n";
  for (const auto& f : _flows) {
    dot << "  \"" << f.src->name() << "\" -> \"" << f.dst->name() << "\" [label=\"" << f.src_port
        << " -> " << f.dst_port << " (" << f.src->spec().find_port(f.src_port)->bytes
        << " B)\"];\n";
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace resident
