#pragma once
// Device discovery that never throws on a machine without a GPU, so CLI tools and tests can say
// "no GPU" clearly instead of failing inside CUDA.

#include <optional>
#include <string>

namespace resident {

struct device_info {
  int ordinal{};
  std::string name;
  int sm_count{};
  int compute_major{};
  int compute_minor{};
  int driver_version{};   // e.g. 13000
  int runtime_version{};  // e.g. 13000
  int clock_rate_khz{};   // SM clock the runtime reports
  bool can_map_host_memory{};
  bool host_native_atomics{};
};

/// Number of usable CUDA devices; 0 when there is no GPU or no driver (never throws).
[[nodiscard]] int device_count() noexcept;
/// Why no device is usable ("no CUDA driver found", ...); empty when one is.
[[nodiscard]] std::string no_device_reason();
/// Properties of `ordinal`; throws cuda_error when the query fails.
[[nodiscard]] device_info query_device(int ordinal = 0);

}  // namespace resident
