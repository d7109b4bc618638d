#pragma once
// Typed operator parameters. An operator declares each parameter with a default in setup();
// values come from make_operator(name, arg(...)) or from a YAML configuration file.

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace resident {

using parameter_value = std::variant<bool, std::int64_t, double, std::string>;

/// A parameter value supplied for an operator: `arg("elements", 4096)`.
struct arg {
  template <class T>
  requires std::is_arithmetic_v<std::remove_cvref_t<T>> ||
      std::is_convertible_v<T, std::string_view>
      arg(std::string param_name, T&& v) : name(std::move(param_name)) {
    using U = std::remove_cvref_t<T>;
    if constexpr (std::is_same_v<U, bool>) {
      value = v;
    } else if constexpr (std::is_integral_v<U>) {
      value = static_cast<std::int64_t>(v);
    } else if constexpr (std::is_floating_point_v<U>) {
      value = static_cast<double>(v);
    } else {
      value = std::string(std::string_view(v));
    }
  }

  /// A value read as text (from a configuration file); converted to the declared type on use.
  static arg text(std::string param_name, std::string text, std::string origin);

  std::string name;
  parameter_value value;
  bool from_text{false};
  std::string origin{"code"};  // where the value came from, for error messages

 private:
  arg() = default;
};

/// What setup() declared about one parameter (for listings and error messages).
struct parameter_info {
  std::string name;
  std::string type;  // "integer", "number", "boolean", "string"
  std::string default_value;
  std::string description;
};

namespace detail {
template <class T>
constexpr const char* parameter_type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "boolean";
  else if constexpr (std::is_integral_v<T>)
    return "integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "number";
  else
    return "string";
}
/// Converts a supplied value to the declared type; throws composition_error naming both.
bool to_bool(const arg& a, const std::string& op);
std::int64_t to_integer(const arg& a, const std::string& op, std::int64_t lo, std::int64_t hi);
double to_number(const arg& a, const std::string& op);
std::string to_string_value(const arg& a, const std::string& op);
std::string describe(const parameter_value& v);
}  // namespace detail

}  // namespace resident
