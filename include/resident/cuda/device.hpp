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
  /// The driver's module loading mode: "lazy" (CUDA_MODULE_LOADING=LAZY, the default since
  /// CUDA 12.2), "eager", or "unknown" when the driver cannot say.
  std::string module_loading;
};

/// Makes `ordinal` the calling thread's current device for the guard's scope (cudaSetDevice, so
/// its primary context is current even where an SM partition's context was), then restores the
/// device that was current before, so library calls that need a device leave the caller's
/// choice of device as it was. Throws cuda_error when the device cannot be made current.
class current_device_guard {
 public:
  explicit current_device_guard(int ordinal);
  current_device_guard(const current_device_guard&) = delete;
  current_device_guard& operator=(const current_device_guard&) = delete;
  ~current_device_guard();

 private:
  int _previous{-1};  // -1: nothing to restore
};

/// The calling thread's current device (cudaGetDevice); throws cuda_error.
[[nodiscard]] int current_device();

/// Number of usable CUDA devices; 0 when there is no GPU or no driver (never throws).
[[nodiscard]] int device_count() noexcept;
/// Empty when `ordinal` is one of this machine's usable devices; else why not, to follow the
/// caller's name for it: "3 does not exist: this machine has 2 usable CUDA devices (0 to 1)".
[[nodiscard]] std::string missing_device(int ordinal);
/// Lets device `from` read and write device `to`'s memory (cudaDeviceEnablePeerAccess with
/// `from` current); nothing when they are the same device or access is on already. Throws
/// cuda_error when CUDA refuses. The caller's current device is left as it was.
void enable_peer_access(int from, int to);
/// Why no device is usable ("no CUDA driver found", ...); empty when one is.
[[nodiscard]] std::string no_device_reason();
/// "no usable CUDA GPU or driver was found (CUDA's report: REASON)", with a remark where CUDA's
/// words mislead (the static runtime reports a missing driver as an insufficient one): what the
/// CLI and the Python module say before listing what still works without a GPU.
[[nodiscard]] std::string explain_no_device(const std::string& reason);
/// Properties of `ordinal`; throws cuda_error when the query fails.
[[nodiscard]] device_info query_device(int ordinal = 0);

/// Whether the driver loads kernels lazily (on their first launch). That first launch can wait
/// until the context has no kernel running, which a resident loop never gives it: a kernel
/// launched for the first time beside a running loop may then never start. Load such kernels
/// before the loop starts (load_kernel), or run with CUDA_MODULE_LOADING=EAGER. False when the
/// driver cannot say (drivers before CUDA 12.2 load eagerly).
[[nodiscard]] bool lazy_module_loading();

/// Asks the driver to load every kernel when the context is made (CUDA_MODULE_LOADING=EAGER),
/// unless the environment already chose a mode, which is kept. Call it before the process's
/// first CUDA call (the driver reads the variable once); false when it could not be set.
bool request_eager_module_loading() noexcept;

/// Loads `kernel` (a __global__ function's address) into the current context now, so that its
/// first launch does not load it. `name` is for the error message.
void load_kernel(const void* kernel, const char* name);

template <class... Args>
void load_kernel(void (*kernel)(Args...), const char* name) {
  load_kernel(reinterpret_cast<const void*>(kernel), name);
}

}  // namespace resident
