#pragma once
// Parameter parsing shared by the imaging operators; every error names the operator and the
// parameter.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "resident/app/operator_spec.hpp"
#include "resident/io/bayer.hpp"
#include "resident/io/csi2.hpp"

namespace resident::ops::imaging::params {

/// Throws composition_error "operator 'name': parameter 'param' <what>".
[[noreturn]] void fail(const OperatorSpec& spec, std::string_view param, const std::string& what);

/// A string parameter that must be one of `allowed`; returns its index there.
std::size_t choice(OperatorSpec& spec, std::string name, std::string default_value,
                   std::initializer_list<std::string_view> allowed, std::string description);

std::size_t choice(OperatorSpec& spec, std::string name, std::string default_value,
                   std::span<const std::string_view> allowed, std::string description);

/// An enumerated parameter named by to_string() (io::bayer_order, io::csi2::raw_format): one of
/// `all`, `default_value` when not given.
template <class E, std::size_t N>
E named(OperatorSpec& spec, std::string name, E default_value, const std::array<E, N>& all,
        std::string description) {
  std::array<std::string_view, N> names;
  for (std::size_t i = 0; i < N; ++i) names[i] = to_string(all[i]);
  return all[choice(spec, std::move(name), std::string(to_string(default_value)), names,
                    std::move(description))];
}

/// A positive image side (at most 65535); `even`: a whole number of Bayer cells.
std::uint32_t side(OperatorSpec& spec, std::string name, std::uint32_t default_value, bool even,
                   std::string description);

io::bayer_order order(OperatorSpec& spec);
/// Sensor bit depth: 8, 10 or 12.
unsigned bits(OperatorSpec& spec);

}  // namespace resident::ops::imaging::params
