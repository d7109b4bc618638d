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
  // Each operator is labelled with its place in the capture order: every mode captures the
  // operators in topological order on one stream, so branches run one after another.
  dot << "  label=\"operators are captured in topological order (#n) on one stream: branches "
         "do not overlap\";\n  labelloc=b;\n";
  const auto node = [&](const Operator* op, std::size_t n, const char* indent) {
    dot << indent << quoted(op->name())
        << " [label=" << quoted("#" + std::to_string(n) + " " + op->name()) << "];\n";
  };
  std::size_t n = 0;
  if (!p.handler_order.empty()) {
    dot << "  subgraph cluster_handler {\n    label=\"data-ready handler\";\n    style=dashed;\n";
    for (const Operator* op : p.handler_order) node(op, ++n, "    ");
    dot << "  }\n";
  }
  for (const Operator* op : p.body_order) node(op, ++n, "  ");
  for (const auto& f : _flows) {
    const port_spec& out = *f.src->spec().find_port(f.src_port);
    const std::string image = out.image ? to_string(*out.image) + "; " : std::string();
    dot << "  " << quoted(f.src->name()) << " -> " << quoted(f.dst->name()) << " [label="
        << quoted(f.src_port + " -> " + f.dst_port + " (" + image + std::to_string(out.bytes) +
                  " B)")
        << "];\n";
  }
  dot << "}\n";
  return dot.str();
}

}  // namespace resident
