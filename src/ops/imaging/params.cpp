#include "params.hpp"

#include <array>

#include "resident/app/error.hpp"

namespace resident::ops::imaging::params {

void fail(const OperatorSpec& spec, std::string_view param, const std::string& what) {
  throw composition_error("operator '" + spec.operator_name() + "': parameter '" +
                          std::string(param) + "' " + what);
}

std::size_t choice(OperatorSpec& spec, std::string name, std::string default_value,
                   std::initializer_list<std::string_view> allowed, std::string description) {
  return choice(spec, std::move(name), std::move(default_value),
                std::span<const std::string_view>(allowed.begin(), allowed.size()),
                std::move(description));
}

std::size_t choice(OperatorSpec& spec, std::string name, std::string default_value,
                   std::span<const std::string_view> allowed, std::string description) {
  const std::string value = spec.param<std::string>(name, default_value, std::move(description));
  std::size_t i = 0;
  std::string listed;
  for (const std::string_view a : allowed) {
    if (value == a) return i;
    listed += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(a);
    ++i;
  }
  fail(spec, name, "must be " + listed + ", got '" + value + "'");
}

std::uint32_t side(OperatorSpec& spec, std::string name, std::uint32_t default_value, bool even,
                   std::string description) {
  const auto v = spec.param<std::int64_t>(name, default_value, std::move(description));
  if (v <= 0 || v > 65535 || (even && v % 2 != 0)) {
    fail(spec, name,
         std::string("must be ") + (even ? "even and " : "") + "in [1, 65535], got " +
             std::to_string(v));
  }
  return static_cast<std::uint32_t>(v);
}

io::bayer_order order(OperatorSpec& spec) {
  return named(spec, "order", io::bayer_order::rggb, io::all_bayer_orders,
               "colour filter of the top-left 2x2 cell, row by row");
}

unsigned bits(OperatorSpec& spec) {
  const auto b = spec.param<std::int64_t>("bits", 12, "sensor bit depth: 8, 10 or 12");
  if (b != 8 && b != 10 && b != 12)
    fail(spec, "bits", "must be 8, 10 or 12, got " + std::to_string(b));
  return static_cast<unsigned>(b);
}

}  // namespace resident::ops::imaging::params
