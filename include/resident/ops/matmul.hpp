#pragma once
// out = in x W for n x n row-major fp32 matrices, through cuBLAS (FP32, no TF32). W is the
// operator's own, drawn from `seed` so a CPU reference can rebuild it (weights()).
// The cuBLAS handle and its workspace are created in initialize(), so capture never allocates;
// compute() binds the handle to ctx.stream() each time (a forked capture gives each branch its
// own stream), and the workspace again after it.

#include <cublas_v2.h>

#include <cstdint>
#include <vector>

#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"

namespace resident::ops {

class matmul final : public Operator {
 public:
  matmul() = default;
  ~matmul() override;

  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;

  /// The weight matrix (row-major n x n) as uploaded; valid after setup().
  [[nodiscard]] const std::vector<float>& weights() const noexcept { return _weights; }
  [[nodiscard]] std::int64_t n() const noexcept { return _n; }

  /// The weights for (n, seed): uniform in ±sqrt(3/n), so a chain of products keeps its scale.
  [[nodiscard]] static std::vector<float> make_weights(std::int64_t n, std::uint64_t seed);

 private:
  std::int64_t _n{};
  std::size_t _workspace_bytes{};
  std::vector<float> _weights;
  device_buffer _device_weights;
  device_buffer _workspace;
  cublasHandle_t _handle{};
};

}  // namespace resident::ops
