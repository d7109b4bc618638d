#pragma once
// Which stream each operator of the DAG is captured on (or launched on, in eager mode), and which
// operators of other streams it waits for: the capture order of docs/design.md, as a pure
// function of the DAG's shape. CPU only, so every rule is unit-testable.
//
//   chain   every operator on stream 0, in topological order: branches never overlap.
//   forked  an operator continues the stream of a producer that was the last operator there;
//           otherwise it starts a stream of its own (a fork). It waits for its producers on other
//           streams (a fan-in joins). Every stream is a path of the DAG, so no operator waits for
//           anything it does not depend on.
//
// Stream 0 is the loop's own: every stream begins where the DAG begins (after the controller),
// and the end marker runs on stream 0 after `join`, so it follows every branch.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace resident {

/// How the operator DAG is captured (run_options::capture).
enum class capture_order : std::uint8_t {
  chain,   // one stream, topological order: a branch waits for the branches before it
  forked,  // independent branches on forked streams, joined before the end marker
};

[[nodiscard]] std::string_view to_string(capture_order c) noexcept;
/// "chain", "forked"; throws std::invalid_argument listing them.
[[nodiscard]] capture_order parse_capture_order(std::string_view name);

/// Where one operator goes (operators are named by their position in dag_plan::body_order).
struct stream_step {
  std::size_t stream{0};
  /// The first operator on its stream: the stream begins where the DAG begins.
  bool starts_stream{false};
  /// Producers on other streams to wait for (ascending positions).
  std::vector<std::size_t> waits;
  /// Another stream waits for this operator (a fork or a join reads its completion).
  bool signals{false};
};

struct stream_plan {
  capture_order order{capture_order::chain};
  std::vector<stream_step> steps;  // one per operator, in body order
  std::size_t streams{1};          // streams used, stream 0 included (1 for a chain)
  /// Operators on other streams that stream 0 waits for before the end marker: the last
  /// operator of each stream whose completion nothing else passes on (ascending positions).
  std::vector<std::size_t> join;
};

/// Assigns streams to the operators of a DAG given in topological order. `producers[i]` holds
/// the positions (all < i) of the operators feeding operator i; flows from the data-ready
/// handler are not in it (the handler precedes the whole DAG).
[[nodiscard]] stream_plan plan_streams(const std::vector<std::vector<std::size_t>>& producers,
                                       capture_order order);

}  // namespace resident
