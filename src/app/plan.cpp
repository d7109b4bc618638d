#include "resident/app/plan.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "resident/app/error.hpp"
#include "resident/app/operator.hpp"

namespace resident {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}

std::string endpoint(const Operator* op, const std::string& port) {
  return op->name() + "." + port;
}

std::string flow_text(const flow& f) {
  return "add_flow(" + endpoint(f.src, f.src_port) + " -> " + endpoint(f.dst, f.dst_port) + ")";
}

const port_spec& require_port(const flow& f, const Operator* op, const std::string& name,
                              port_direction want) {
  const port_spec* p = op->spec().find_port(name);
  const bool output = want == port_direction::output;
  if (p == nullptr) {
    throw composition_error(flow_text(f) + ": operator '" + op->name() + "' has no " +
                            (output ? "output" : "input") + " port '" + name + "'; its " +
                            (output ? "outputs" : "inputs") + ": " +
                            join(op->spec().port_names(want)));
  }
  if (p->direction != want) {
    throw composition_error(flow_text(f) + ": '" + name + "' is an " +
                            (output ? "input" : "output") + " of operator '" + op->name() +
                            "', not an " + (output ? "output" : "input"));
  }
  return *p;
}

}  // namespace

void check_flow(const flow& f, const std::vector<flow>& existing) {
  if (f.src == nullptr || f.dst == nullptr) {
    throw composition_error("add_flow: an operator is null");
  }
  if (f.src == f.dst) {
    throw composition_error(flow_text(f) + ": an operator cannot feed itself");
  }
  const port_spec& out = require_port(f, f.src, f.src_port, port_direction::output);
  const port_spec& in = require_port(f, f.dst, f.dst_port, port_direction::input);
  if (out.image && in.image && *out.image != *in.image) {
    throw composition_error(flow_text(f) + ": output is image " + to_string(*out.image) +
                            ", input expects image " + to_string(*in.image));
  }
  if (out.bytes != in.bytes) {
    throw composition_error(flow_text(f) + ": output is " + std::to_string(out.bytes) +
                            " bytes, input expects " + std::to_string(in.bytes));
  }
  for (const auto& e : existing) {
    if (e.dst == f.dst && e.dst_port == f.dst_port) {
      if (e.src == f.src && e.src_port == f.src_port) {
        throw composition_error(flow_text(f) + ": this flow already exists");
      }
      throw composition_error(flow_text(f) + ": input " + endpoint(f.dst, f.dst_port) +
                              " is already fed by " + endpoint(e.src, e.src_port));
    }
  }
}

std::size_t dag_plan::buffer_of(const Operator& op, std::string_view port) const {
  const auto it = port_buffer.find(std::make_pair(&op, std::string(port)));
  if (it == port_buffer.end()) {
    throw composition_error("operator '" + op.name() + "' port '" + std::string(port) +
                            "' has no planned buffer");
  }
  return it->second;
}

std::size_t dag_plan::total_runtime_bytes() const {
  std::size_t total = 0;
  for (const auto& b : buffers) {
    if (b.external == nullptr) total += b.bytes;
  }
  return total;
}

namespace {

// Kahn's algorithm, ties broken by creation order so the order (and the captured graph) is
// deterministic. Returns the operators left over when there is a cycle.
std::vector<Operator*> topological_order(const std::vector<Operator*>& ops,
                                         const std::vector<flow>& flows,
                                         std::vector<Operator*>& leftover) {
  std::unordered_map<const Operator*, std::size_t> index;
  for (std::size_t i = 0; i < ops.size(); ++i) index[ops[i]] = i;
  std::vector<std::set<std::size_t>> succ(ops.size());
  std::vector<std::size_t> indegree(ops.size(), 0);
  for (const auto& f : flows) {
    const auto s = index.find(f.src);
    const auto d = index.find(f.dst);
    if (s == index.end() || d == index.end()) continue;  // crosses the handler boundary
    if (succ[s->second].insert(d->second).second) ++indegree[d->second];
  }
  std::set<std::size_t> ready;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (indegree[i] == 0) ready.insert(i);
  }
  std::vector<Operator*> order;
  while (!ready.empty()) {
    const std::size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(ops[i]);
    for (const std::size_t j : succ[i]) {
      if (--indegree[j] == 0) ready.insert(j);
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (indegree[i] > 0) leftover.push_back(ops[i]);
  }
  return order;
}

[[noreturn]] void report_cycle(const std::vector<Operator*>& leftover,
                               const std::vector<flow>& flows) {
  // Every leftover operator has a predecessor among the leftovers: walk predecessors until an
  // operator repeats, then print that loop in flow direction.
  std::set<const Operator*> in_cycle_set(leftover.begin(), leftover.end());
  std::vector<const flow*> path;
  std::vector<const Operator*> seen;
  const Operator* at = leftover.front();
  for (;;) {
    const auto pos = std::find(seen.begin(), seen.end(), at);
    if (pos != seen.end()) {
      const auto first = static_cast<std::size_t>(pos - seen.begin());
      std::vector<std::string> edges;
      for (std::size_t k = path.size(); k-- > first;) {
        edges.push_back(endpoint(path[k]->src, path[k]->src_port) + " -> " +
                        endpoint(path[k]->dst, path[k]->dst_port));
      }
      throw composition_error("the operators form a cycle: " + join(edges) +
                              "; an application must be a DAG");
    }
    seen.push_back(at);
    const flow* into = nullptr;
    for (const auto& f : flows) {
      if (f.dst == at && in_cycle_set.count(f.src) != 0) {
        into = &f;
        break;
      }
    }
    path.push_back(into);
    at = into->src;
  }
}

}  // namespace

namespace {

void bind_in_place_outputs(dag_plan& plan, const Operator& op, const std::vector<flow>& flows) {
  for (const auto& p : op.spec().ports()) {
    if (p.direction != port_direction::output || p.in_place_of.empty()) continue;
    const std::size_t index = plan.buffer_of(op, p.in_place_of);
    planned_buffer& b = plan.buffers[index];
    const std::string input = endpoint(&op, p.in_place_of);
    if (b.consumers.size() != 1) {
      std::vector<std::string> others;
      for (const auto& c : b.consumers) {
        if (c != input) others.push_back(c);
      }
      throw composition_error("output " + endpoint(&op, p.name) + " transforms input " + input +
                              " in place, but the buffer of " + b.producer + " also feeds " +
                              join(others) +
                              ", which would see the transformed data; give that operator its "
                              "own copy or do not transform in place");
    }
    plan.port_buffer[{&op, p.name}] = index;
    for (const auto& f : flows) {
      if (f.src != &op || f.src_port != p.name) continue;
      void* own = f.dst->spec().find_port(f.dst_port)->external;
      if (own != nullptr && own != b.external) {
        throw composition_error("input " + endpoint(f.dst, f.dst_port) +
                                " supplies its own memory, but it is fed by " +
                                endpoint(&op, p.name) + ", which transforms " + input +
                                " in place and so lives in that input's buffer");
      }
      b.consumers.push_back(endpoint(f.dst, f.dst_port));
      plan.port_buffer[{f.dst, f.dst_port}] = index;
    }
    // The buffer now ends at this output's consumers: the in-place input has been used up.
    b.consumers.erase(std::find(b.consumers.begin(), b.consumers.end(), input));
    b.producer += " (in place: " + endpoint(&op, p.name) + ")";
  }
}

// For each operator of `order`, the positions in `order` of the operators feeding it.
std::vector<std::vector<std::size_t>> producers_in_order(const std::vector<Operator*>& order,
                                                         const std::vector<flow>& flows) {
  std::unordered_map<const Operator*, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::vector<std::vector<std::size_t>> producers(order.size());
  for (const auto& f : flows) {
    const auto s = position.find(f.src);
    const auto d = position.find(f.dst);
    if (s == position.end() || d == position.end()) continue;  // crosses the handler boundary
    producers[d->second].push_back(s->second);
  }
  for (auto& p : producers) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  return producers;
}

}  // namespace

dag_plan build_plan(const std::vector<Operator*>& operators, const std::vector<flow>& flows,
                    const std::vector<Operator*>& handler_ops) {
  const std::set<const Operator*> handler(handler_ops.begin(), handler_ops.end());
  const std::set<const Operator*> known(operators.begin(), operators.end());

  std::vector<flow> checked;
  for (const auto& f : flows) {
    if (known.count(f.src) == 0 || known.count(f.dst) == 0) {
      throw composition_error(flow_text(f) + ": both operators must belong to the application");
    }
    check_flow(f, checked);
    if (handler.count(f.dst) != 0 && handler.count(f.src) == 0) {
      throw composition_error(
          flow_text(f) + ": data-ready handler operator '" + f.dst->name() +
          "' cannot take input from '" + f.src->name() +
          "', which is not part of the handler (the handler runs before the DAG each iteration)");
    }
    checked.push_back(f);
  }

  for (const Operator* op : operators) {
    for (const auto& p : op->spec().ports()) {
      if (p.direction != port_direction::input) continue;
      const bool fed = std::any_of(flows.begin(), flows.end(), [&](const flow& f) {
        return f.dst == op && f.dst_port == p.name;
      });
      if (!fed) {
        throw composition_error("operator '" + op->name() + "' input '" + p.name +
                                "' is not connected; feed it with add_flow(<producer>, " +
                                op->name() + ", {{\"<output>\", \"" + p.name + "\"}})");
      }
    }
  }

  dag_plan plan;
  std::vector<Operator*> handler_list;
  std::vector<Operator*> body_list;
  for (Operator* op : operators) (handler.count(op) != 0 ? handler_list : body_list).push_back(op);
  for (auto* list : {&handler_list, &body_list}) {
    std::vector<Operator*> leftover;
    auto order = topological_order(*list, flows, leftover);
    if (!leftover.empty()) report_cycle(leftover, flows);
    (list == &handler_list ? plan.handler_order : plan.body_order) = std::move(order);
  }

  plan.body_producers = producers_in_order(plan.body_order, flows);

  for (const Operator* op : operators) {
    for (const auto& p : op->spec().ports()) {
      if (p.direction != port_direction::output || !p.in_place_of.empty()) continue;
      planned_buffer b;
      b.bytes = p.bytes;
      b.external = p.external;
      b.producer = endpoint(op, p.name);
      std::string external_from = p.external != nullptr ? b.producer : std::string{};
      const std::size_t index = plan.buffers.size();
      plan.port_buffer[{op, p.name}] = index;
      for (const auto& f : flows) {
        if (f.src != op || f.src_port != p.name) continue;
        const std::string consumer = endpoint(f.dst, f.dst_port);
        b.consumers.push_back(consumer);
        plan.port_buffer[{f.dst, f.dst_port}] = index;
        void* dst_external = f.dst->spec().find_port(f.dst_port)->external;
        if (dst_external == nullptr || p.external != nullptr) continue;  // the source's wins
        if (b.external != nullptr && b.external != dst_external) {
          throw composition_error("output " + b.producer + " feeds " + external_from + " and " +
                                  consumer +
                                  ", which each supply their own memory; supply it on the "
                                  "output instead");
        }
        b.external = dst_external;
        external_from = consumer;
      }
      plan.buffers.push_back(std::move(b));
    }
  }
  // In-place outputs take their input's buffer; in execution order, so a chain of in-place
  // operators resolves front to back.
  for (const auto* order : {&plan.handler_order, &plan.body_order}) {
    for (const Operator* op : *order) bind_in_place_outputs(plan, *op, flows);
  }
  return plan;
}

}  // namespace resident
