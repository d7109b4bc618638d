#include "resident/measure/break_even.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace resident::measure {

std::optional<std::int64_t> first_cheaper_reuse(double setup, double baseline, double replay) {
  for (const auto& [name, value] :
       {std::pair{"setup", setup}, std::pair{"baseline", baseline}, std::pair{"replay", replay}}) {
    if (!std::isfinite(value) || value < 0) {
      throw std::invalid_argument(std::string("break-even: ") + name +
                                  " cost must be finite and non-negative, got " +
                                  std::to_string(value));
    }
  }
  const double saving = baseline - replay;
  if (saving <= 0) return std::nullopt;
  // At n = setup / saving both paths cost the same; the next whole iteration is the first win.
  const double ties_at = std::floor(setup / saving);
  if (ties_at >= 9.2e18) {
    throw std::invalid_argument("break-even: setup / saving does not fit a 64-bit count");
  }
  return static_cast<std::int64_t>(ties_at) + 1;
}

}  // namespace resident::measure
