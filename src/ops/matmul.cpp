#include "resident/ops/matmul.hpp"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "app/checked_bytes.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"

namespace resident::ops {

namespace {

void cublas_try(cublasStatus_t status, const char* call, const std::string& op) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw execution_error("operator '" + op + "': " + call + " failed: " +
                          cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
  }
}

}  // namespace

matmul::~matmul() {
  if (_handle != nullptr) {
    const cublasStatus_t status = cublasDestroy(_handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "resident: cublasDestroy failed: %s\n", cublasGetStatusName(status));
      assert(false && "cublasDestroy failed");
    }
  }
}

std::vector<float> matmul::make_weights(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const float bound = std::sqrt(3.0F / static_cast<float>(n));
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> w(static_cast<std::size_t>(n * n));
  for (auto& x : w) x = dist(rng);
  return w;
}

void matmul::setup(OperatorSpec& spec) {
  _n = spec.param<std::int64_t>("n", 512, "matrix dimension (n x n, fp32)");
  const auto seed = spec.param<std::int64_t>("seed", 1, "seed of the weight matrix");
  const auto workspace_mib =
      spec.param<std::int64_t>("workspace_mib", 4, "cuBLAS workspace, preallocated");
  if (_n <= 0 || _n > 16384) {
    throw composition_error("operator '" + spec.operator_name() +
                            "': parameter 'n' must be in [1, 16384], got " + std::to_string(_n));
  }
  if (workspace_mib < 0) {
    throw composition_error("operator '" + spec.operator_name() +
                            "': parameter 'workspace_mib' must be >= 0");
  }
  // 0: cuBLAS takes no workspace; more is checked against 4 GiB before it is shifted into bytes.
  _workspace_bytes = workspace_mib == 0
                         ? 0
                         : ::resident::detail::checked_bytes(
                               workspace_mib, std::size_t{1} << 20,
                               "operator '" + spec.operator_name() + "': parameter 'workspace_mib'",
                               std::size_t{4} << 30);
  _weights = make_weights(_n, static_cast<std::uint64_t>(seed));
  const auto bytes = ::resident::detail::checked_bytes(
      _n * _n, sizeof(float), "operator '" + spec.operator_name() + "': n x n");
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void matmul::initialize() {
  cublas_try(cublasCreate(&_handle), "cublasCreate", name());
  // FP32 products in full precision: results are checked against an FP64 CPU reference.
  cublas_try(cublasSetMathMode(_handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode", name());
  _workspace = device_buffer(_workspace_bytes);
  _device_weights = device_buffer(_weights.size() * sizeof(float));
  RESIDENT_CUDA_TRY(cudaMemcpy(_device_weights.data(), _weights.data(),
                               _weights.size() * sizeof(float), cudaMemcpyHostToDevice));
}

void matmul::compute(CaptureContext& ctx) {
  cublas_try(cublasSetStream(_handle, ctx.stream()), "cublasSetStream", name());
  // cublasSetStream resets the workspace to cuBLAS's own pool, which allocates inside the
  // capture (an allocation node no conditional body or device graph may hold): re-bind ours.
  cublas_try(cublasSetWorkspace(_handle, _workspace.data(), _workspace_bytes), "cublasSetWorkspace",
             name());
  const float alpha = 1.0F;
  const float beta = 0.0F;
  const int n = static_cast<int>(_n);
  // Row-major out = in x W is column-major out^T = W^T x in^T: pass W first.
  cublas_try(
      cublasSgemm(_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                  _device_weights.data_as<const float>(), n, ctx.device_memory<const float>("in"),
                  n, &beta, ctx.device_memory<float>("out"), n),
      "cublasSgemm", name());
}

}  // namespace resident::ops
