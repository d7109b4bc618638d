#pragma once

#include <array>
#include <string>
#include <string_view>

namespace resident {

/// Who releases each iteration (docs/design.md, "One iteration").
enum class execution_mode {
  eager,       // host thread: polls, launches each operator's work, synchronizes
  host_graph,  // host thread: polls, launches one captured graph per sample, synchronizes
  while_loop,  // GPU: a WHILE conditional node loops handler -> controller -> IF[DAG -> end]
  tail,        // GPU: device graphs M (handler, dispatcher) and W (DAG, end) tail-launch each other
  persistent,  // GPU: one kernel, launched once, runs the operators' device forms in a loop
};

/// The four modes every operator can run in (persistent needs device forms: docs/design.md).
inline constexpr std::array<execution_mode, 4> all_execution_modes{
    execution_mode::eager, execution_mode::host_graph, execution_mode::while_loop,
    execution_mode::tail};

/// Every mode, persistent included.
inline constexpr std::array<execution_mode, 5> every_execution_mode{
    execution_mode::eager, execution_mode::host_graph, execution_mode::while_loop,
    execution_mode::tail, execution_mode::persistent};

/// "eager", "host-graph", "while", "tail", "persistent".
[[nodiscard]] std::string_view to_string(execution_mode m) noexcept;
/// Parses the names above; throws std::invalid_argument listing them.
[[nodiscard]] execution_mode parse_execution_mode(std::string_view name);
/// True for the modes in which the GPU releases iterations without the host.
[[nodiscard]] constexpr bool is_resident(execution_mode m) noexcept {
  return m == execution_mode::while_loop || m == execution_mode::tail ||
         m == execution_mode::persistent;
}

}  // namespace resident
