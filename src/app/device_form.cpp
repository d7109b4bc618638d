#include "resident/app/device_form.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "resident/app/error.hpp"

namespace resident {

namespace {

struct kernel_registry {
  std::mutex mutex;
  std::vector<const persistent_kernel_set*> sets;
};

kernel_registry& registry() {
  static kernel_registry r;
  return r;
}

}  // namespace

void register_persistent_kernel(const persistent_kernel_set& kernels) {
  kernel_registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (std::find(r.sets.begin(), r.sets.end(), &kernels) == r.sets.end()) r.sets.push_back(&kernels);
}

std::vector<const persistent_kernel_set*> registered_persistent_kernels() {
  kernel_registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.sets;
}

device_form& device_form::with_phases(std::uint32_t count) {
  if (count < 1 || count > max_form_phases) {
    throw composition_error("device form '" + name() + "': " + std::to_string(count) +
                            " phases; a form has 1 to " + std::to_string(max_form_phases));
  }
  phases = count;
  last_block_phases &= (1U << count) - 1U;  // count <= 16
  return *this;
}

device_form& device_form::with_phase_end(std::uint32_t phase, phase_end end) {
  if (phase >= phases) {
    throw composition_error("device form '" + name() + "': phase " + std::to_string(phase) +
                            " of " + std::to_string(phases));
  }
  if (end == phase_end::last_block) {
    last_block_phases |= 1U << phase;
  } else {
    last_block_phases &= ~(1U << phase);
  }
  return *this;
}

}  // namespace resident
