#include "resident/app/parameters.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "resident/app/error.hpp"

namespace resident {

arg arg::text(std::string param_name, std::string text, std::string origin) {
  arg a;
  a.name = std::move(param_name);
  a.value = std::move(text);
  a.from_text = true;
  a.origin = std::move(origin);
  return a;
}

namespace detail {

std::string describe(const parameter_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return "\"" + x + "\"";
        } else {
          std::ostringstream os;
          os << x;
          return os.str();
        }
      },
      v);
}

namespace {

// A value read from a configuration file that does not fit the operator is the file's mistake.
[[noreturn]] void reject(const arg& a, const std::string& message) {
  if (a.from_text) throw config_error(message);
  throw composition_error(message);
}

[[noreturn]] void mismatch(const arg& a, const std::string& op, const char* expected) {
  reject(a, "operator '" + op + "': parameter '" + a.name + "' expects " + expected + ", got " +
                describe(a.value) + " (from " + a.origin + ")");
}

const std::string* text_of(const arg& a) {
  return a.from_text ? std::get_if<std::string>(&a.value) : nullptr;
}

}  // namespace

bool to_bool(const arg& a, const std::string& op) {
  if (const auto* b = std::get_if<bool>(&a.value)) return *b;
  if (const auto* t = text_of(a)) {
    if (*t == "true" || *t == "True" || *t == "TRUE") return true;
    if (*t == "false" || *t == "False" || *t == "FALSE") return false;
  }
  mismatch(a, op, "a boolean (true or false)");
}

std::int64_t to_integer(const arg& a, const std::string& op, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
    v = *i;
  } else if (const auto* t = text_of(a)) {
    const char* end = t->data() + t->size();
    auto [ptr, ec] = std::from_chars(t->data(), end, v);
    if (ec != std::errc{} || ptr != end) mismatch(a, op, "an integer");
  } else {
    mismatch(a, op, "an integer");
  }
  if (v < lo || v > hi) {
    reject(a, "operator '" + op + "': parameter '" + a.name + "' = " + std::to_string(v) +
                  " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "] (from " + a.origin + ")");
  }
  return v;
}

double to_number(const arg& a, const std::string& op) {
  if (const auto* d = std::get_if<double>(&a.value)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&a.value)) return static_cast<double>(*i);
  if (const auto* t = text_of(a)) {
    if (!t->empty()) {
      char* end = nullptr;
      const double v = std::strtod(t->c_str(), &end);
      if (end == t->c_str() + t->size() && std::isfinite(v)) return v;
    }
  }
  mismatch(a, op, "a number");
}

std::string to_string_value(const arg& a, const std::string& op) {
  if (const auto* s = std::get_if<std::string>(&a.value)) return *s;
  mismatch(a, op, "a string");
}

}  // namespace detail
}  // namespace resident
