#pragma once
// What an operator declares in setup(): its device ports (with byte sizes, and an image
// descriptor for ports that carry images) and its parameters.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resident/app/image.hpp"
#include "resident/app/parameters.hpp"

namespace resident {

enum class port_direction { input, output };

struct port_spec {
  std::string name;
  port_direction direction{};
  std::size_t bytes{};
  void* external{};  // memory the endpoint supplies itself, or nullptr
  void* bound{};     // the device pointer the runtime resolved for this port (after planning)
  std::optional<image_desc> image;  // what an image port carries (bytes == image->bytes())
  std::string in_place_of;          // outputs: the input whose memory this output reuses
};

/// The framework's per-iteration steps an operator's kernel can carry itself (the fused
/// iteration, docs/design.md): the controller step at the end of a data-ready handler's kernel,
/// the end-marker step at the end of an egress kernel. The operator's kernel then runs the step
/// when the loop state asks it to (loop_state::fuse_controller, fuse_end_marker;
/// resident/app/loop_control.cuh), which saves a kernel node per iteration.
enum class loop_step : std::uint8_t { controller = 1, end_marker = 2 };

class OperatorSpec {
 public:
  OperatorSpec(std::string operator_name, std::vector<arg> supplied);

  /// A device input of exactly `bytes` bytes. `external`: memory this endpoint supplies itself
  /// (used when the producing output supplies none).
  void device_input(std::string name, std::size_t bytes, void* external = nullptr);
  /// A device output of `bytes` bytes; the runtime allocates it unless `external` is given.
  /// Every consumer of the output shares this one buffer (fan-out).
  void device_output(std::string name, std::size_t bytes, void* external = nullptr);
  /// Image ports: sized by the descriptor (image.bytes()), and add_flow checks that both ends
  /// of a flow between image ports declare the same image. A flow between an image port and a
  /// byte-sized port needs only the sizes to agree.
  void image_input(std::string name, const image_desc& image, void* external = nullptr);
  void image_output(std::string name, const image_desc& image, void* external = nullptr);

  /// Makes output `output` reuse the memory of input `input` (declared before): the operator
  /// transforms its input in place, and the plan gives the output the input's buffer. Both must
  /// have the same size (and the same image, if both are image ports). The plan refuses it when
  /// that buffer also feeds another operator, which would see the transformed data.
  void in_place(std::string_view output, std::string_view input);

  /// Declares a parameter and returns its value: the supplied one (converted and checked) or
  /// `default_value`. T is bool, an integer type, a floating-point type or std::string.
  template <class T>
  T param(std::string name, T default_value, std::string description = {});

  /// Declares that this operator's kernel can carry `step` (see loop_step).
  void can_carry(loop_step step) noexcept { _carries |= static_cast<std::uint8_t>(step); }
  [[nodiscard]] bool carries(loop_step step) const noexcept {
    return (_carries & static_cast<std::uint8_t>(step)) != 0;
  }

  [[nodiscard]] const std::string& operator_name() const noexcept { return _operator_name; }
  [[nodiscard]] const std::vector<port_spec>& ports() const noexcept { return _ports; }
  [[nodiscard]] std::vector<port_spec>& ports() noexcept { return _ports; }
  [[nodiscard]] const std::vector<parameter_info>& parameters() const noexcept {
    return _parameters;
  }
  [[nodiscard]] const port_spec* find_port(std::string_view name) const noexcept;
  [[nodiscard]] std::vector<std::string> port_names(port_direction d) const;

  /// Throws composition_error for a supplied value that no parameter declared (a typo).
  void check_all_supplied_used() const;

 private:
  void add_port(std::string name, port_direction d, std::size_t bytes, void* external,
                std::optional<image_desc> image = std::nullopt);
  void declare(std::string name, const char* type, std::string default_value,
               std::string description);
  const arg* take(std::string_view name);

  std::string _operator_name;
  std::vector<arg> _supplied;
  std::vector<bool> _used;
  std::vector<port_spec> _ports;
  std::vector<parameter_info> _parameters;
  std::uint8_t _carries{0};
};

template <class T>
T OperatorSpec::param(std::string name, T default_value, std::string description) {
  static_assert(std::is_arithmetic_v<T> || std::is_same_v<T, std::string>,
                "parameters are bool, integers, floating-point numbers or std::string");
  std::string shown;
  if constexpr (std::is_same_v<T, std::string>) {
    shown = default_value;
  } else if constexpr (std::is_same_v<T, bool>) {
    shown = default_value ? "true" : "false";
  } else {
    shown = std::to_string(default_value);
  }
  declare(name, detail::parameter_type_name<T>(), std::move(shown), std::move(description));
  const arg* a = take(name);
  if (a == nullptr) return default_value;
  if constexpr (std::is_same_v<T, bool>) {
    return detail::to_bool(*a, _operator_name);
  } else if constexpr (std::is_integral_v<T>) {
    const auto lo = static_cast<std::int64_t>(std::numeric_limits<T>::min());
    const auto hi = std::numeric_limits<T>::max() > static_cast<std::uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : static_cast<std::int64_t>(std::numeric_limits<T>::max());
    return static_cast<T>(detail::to_integer(*a, _operator_name, lo, hi));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(detail::to_number(*a, _operator_name));
  } else {
    return detail::to_string_value(*a, _operator_name);
  }
}

}  // namespace resident
