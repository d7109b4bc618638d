#include <sstream>

#include "resident/app/application.hpp"
#include "resident/app/stream_plan.hpp"

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

const char* order_label(capture_order order) {
  if (order == capture_order::forked) {
    return "operators are captured in topological order (#n), each independent branch on a "
           "forked stream (sN): branches overlap and join before the end marker";
  }
  return "operators are captured in topological order (#n) on one stream: branches do not "
         "overlap";
}
}  // namespace

std::string Application::to_dot(capture_order order) {
  const dag_plan& p = plan();
  const stream_plan streams = plan_streams(p.body_producers, order);
  std::ostringstream dot;
  dot << "digraph " << quoted(_name) << " {\n  rankdir=LR;\n  node [shape=box];\n";
  // Each operator is labelled with its place in the capture order (and, forked, its stream).
  dot << "  label=" << quoted(order_label(order)) << ";\n  labelloc=b;\n";
  const auto node = [&](const Operator* op, std::size_t n, const std::string& where,
                        const char* indent) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "#" + string.
    std::string label = "#";
    label += std::to_string(n);
    label += ' ';
    label += op->name();
    label += where;
    dot << indent << quoted(op->name()) << " [label=" << quoted(label) << "];\n";
  };
  std::size_t n = 0;
  if (!p.handler_order.empty()) {
    dot << "  subgraph cluster_handler {\n    label=\"data-ready handler\";\n    style=dashed;\n";
    for (const Operator* op : p.handler_order) node(op, ++n, "", "    ");
    dot << "  }\n";
  }
  for (std::size_t i = 0; i < p.body_order.size(); ++i) {
    const std::string where = order == capture_order::forked
                                  ? " (s" + std::to_string(streams.steps[i].stream) + ")"
                                  : std::string();
    node(p.body_order[i], ++n, where, "  ");
  }
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
