#pragma once
// The validated shape of an application: execution order and port-buffer assignment.
// Built on the CPU (no GPU needed), so every validation rule is unit-testable.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace resident {

class Operator;

/// One connection: src.src_port -> dst.dst_port.
struct flow {
  Operator* src{};
  std::string src_port;
  Operator* dst{};
  std::string dst_port;
};

/// One device buffer: an output port and every input it feeds share it.
struct planned_buffer {
  std::size_t bytes{};
  void* external{};                    // endpoint-supplied memory (the producer's wins), or nullptr
  std::string producer;                // "affine.out"
  std::vector<std::string> consumers;  // "square.in", ...
};

struct dag_plan {
  std::vector<Operator*> handler_order;  // topological order of the data-ready handler
  std::vector<Operator*> body_order;     // topological order of the operator DAG
  /// body_producers[i]: positions in body_order of the operators feeding body_order[i]
  /// (ascending, each once; flows from the handler are not among them).
  std::vector<std::vector<std::size_t>> body_producers;
  std::vector<planned_buffer> buffers;
  /// (operator, port) -> index into `buffers`
  std::map<std::pair<const Operator*, std::string>, std::size_t, std::less<>> port_buffer;

  [[nodiscard]] std::size_t buffer_of(const Operator& op, std::string_view port) const;
  [[nodiscard]] std::size_t total_runtime_bytes() const;  // bytes the runtime allocates
};

/// Validates the operators and flows and orders them. `handler_ops` are the data-ready
/// handler's operators. Throws composition_error naming operators and ports.
[[nodiscard]] dag_plan build_plan(const std::vector<Operator*>& operators,
                                  const std::vector<flow>& flows,
                                  const std::vector<Operator*>& handler_ops);

}  // namespace resident

namespace resident {
/// Checks one flow against the ports its operators declared and the flows made so far.
void check_flow(const flow& f, const std::vector<flow>& existing);
}  // namespace resident
