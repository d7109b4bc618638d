#pragma once
// The one catalog of the library's operator kinds: each kind's name (what Python's
// make_operator and error messages use), what its factory takes besides parameters, whether it
// runs in persistent mode, and the factory. A new operator is one entry (src/ops/catalog.cpp).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "resident/app/operator.hpp"
#include "resident/app/parameters.hpp"
#include "resident/ops/captured_graph.hpp"

namespace resident::io {
class device_link;
class mailbox;
class sensor_bridge;
class display;
}  // namespace resident::io

namespace resident::ops {

/// What a kind's factory takes besides its parameters.
enum class kind_input : std::uint8_t {
  none,
  mailbox,         // io.mailbox_rx, io.mailbox_tx
  sensor_bridge,   // io.frame_rx
  display,         // io.display_tx
  memory,          // ops.external_source, ops.external_sink: a byte count and optional memory
  captured_graph,  // ops.captured_graph: a CUDA graph and its input and output ports
  device_link,     // io.link_rx, io.link_tx
};

[[nodiscard]] constexpr std::string_view to_string(kind_input input) noexcept {
  switch (input) {
    case kind_input::none:
      return "none";
    case kind_input::mailbox:
      return "mailbox";
    case kind_input::sensor_bridge:
      return "sensor bridge";
    case kind_input::display:
      return "display";
    case kind_input::memory:
      return "memory";
    case kind_input::captured_graph:
      return "captured graph";
    case kind_input::device_link:
      return "device link";
  }
  return "?";
}

/// The factory's inputs; only the member its kind_input names is read.
struct kind_inputs {
  std::shared_ptr<io::mailbox> mailbox;
  std::shared_ptr<io::sensor_bridge> bridge;
  std::shared_ptr<io::display> display;
  std::shared_ptr<io::device_link> link;
  void* memory{};
  std::size_t bytes{};
  cudaGraph_t graph{};  // borrowed until the operator's setup(), which clones it
  graph_ports ports;
};

struct operator_kind {
  std::string name;     // e.g. "ops.affine"
  std::string summary;  // one line
  kind_input input{kind_input::none};
  bool device_form{false};  // offers a device form: runs in persistent mode
  /// A new operator; throws std::invalid_argument when the input its kind needs is missing.
  std::function<std::shared_ptr<Operator>(const kind_inputs&)> make;
};

/// Every kind, sorted by name (the NPP demosaic only where the library was built with NPP).
[[nodiscard]] const std::vector<operator_kind>& operator_catalog();

/// The kind named `name`; throws composition_error naming it and listing every kind.
[[nodiscard]] const operator_kind& operator_kind_named(std::string_view name);

/// The parameters a kind declares, from its setup() on an instance made for the purpose (kinds
/// with kind_input::none only; the others have none of their own).
[[nodiscard]] std::vector<parameter_info> kind_parameters(const operator_kind& kind);

}  // namespace resident::ops
