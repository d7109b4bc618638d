#pragma once
// Error checking for the CUDA runtime. Every CUDA call in resident goes through one of these
// macros so a failure names the call, the source location and CUDA's own message.

#include <cuda_runtime_api.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace resident {

/// A failed CUDA runtime call: what was called, where, and what CUDA said.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, std::string call, std::string file, int line);

  [[nodiscard]] cudaError_t code() const noexcept { return _code; }
  [[nodiscard]] const std::string& call() const noexcept { return _call; }
  [[nodiscard]] const std::string& file() const noexcept { return _file; }
  [[nodiscard]] int line() const noexcept { return _line; }

 private:
  cudaError_t _code;
  std::string _call;
  std::string _file;
  int _line;
};

namespace detail {
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
// Destructors must not throw: report to stderr and assert in debug builds.
void report_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept;
void check_launch(const char* kernel, const char* file, int line);
}  // namespace detail

}  // namespace resident

/// Throws resident::cuda_error when `call` does not return cudaSuccess.
#define RESIDENT_CUDA_TRY(call)                                                          \
  do {                                                                                   \
    const cudaError_t resident_status_ = (call);                                         \
    if (resident_status_ != cudaSuccess) [[unlikely]]                                    \
      ::resident::detail::throw_cuda_error(resident_status_, #call, __FILE__, __LINE__); \
  } while (false)

/// Checks the kernel launch just enqueued (<<<>>> returns no status itself); `kernel` names it.
#define RESIDENT_CUDA_CHECK_LAUNCH(kernel) \
  ::resident::detail::check_launch(kernel, __FILE__, __LINE__)

/// Non-throwing variant for destructors and other noexcept paths: reports, never throws.
#define RESIDENT_CUDA_ASSERT_OK(call)                                                     \
  do {                                                                                    \
    const cudaError_t resident_status_ = (call);                                          \
    if (resident_status_ != cudaSuccess) [[unlikely]]                                     \
      ::resident::detail::report_cuda_error(resident_status_, #call, __FILE__, __LINE__); \
  } while (false)
