#include "resident/cuda/error.hpp"

#include <cassert>
#include <cstdio>

namespace resident {

namespace {
std::string describe(cudaError_t code, const std::string& call, const std::string& file, int line) {
  return call + " failed at " + file + ":" + std::to_string(line) + ": " + cudaGetErrorName(code) +
         " (" + cudaGetErrorString(code) + ")";
}
}  // namespace

cuda_error::cuda_error(cudaError_t code, std::string call, std::string file, int line)
    : std::runtime_error(describe(code, call, file, line)),
      _code(code),
      _call(std::move(call)),
      _file(std::move(file)),
      _line(line) {}

namespace detail {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  // The runtime also keeps a failed call's error as its "last error"; reset it (a no-op for
  // sticky errors), so a later kernel launch check does not report this failure as its own.
  (void)cudaGetLastError();
  throw cuda_error(code, call, file, line);
}

void report_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "resident: %s failed at %s:%d: %s (%s)\n", call, file, line,
               cudaGetErrorName(code), cudaGetErrorString(code));
  assert(code == cudaSuccess && "CUDA call failed in a non-throwing path");
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess) throw cuda_error(code, std::string("launch of ") + kernel, file, line);
}

}  // namespace detail
}  // namespace resident
