#pragma once
// The lab pipeline's operators on fp32 vectors of `elements` values:
//   copy (in -> out), affine (out = scale * in + offset; 2x+1 by default), square (out = in^2),
//   sum_reduce (out[0] = sum of in, accumulated in fp64 in a fixed order: deterministic).

#include <cstdint>

#include "resident/app/operator.hpp"

namespace resident::ops {

/// Device-to-device copy of `elements` floats (captured as a memcpy node).
class copy final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::int64_t _elements{};
};

class affine final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  /// The values setup() resolved (from code or configuration), for CPU references.
  [[nodiscard]] float scale() const noexcept { return _scale; }
  [[nodiscard]] float offset() const noexcept { return _offset; }

 private:
  std::int64_t _elements{};
  float _scale{};
  float _offset{};
};

class square final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::int64_t _elements{};
};

class sum_reduce final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::int64_t _elements{};
};

namespace detail {
void launch_affine(const float* in, float* out, std::int64_t n, float scale, float offset,
                   cudaStream_t s);
void launch_square(const float* in, float* out, std::int64_t n, cudaStream_t s);
void launch_sum_reduce(const float* in, float* out, std::int64_t n, cudaStream_t s);
}  // namespace detail

}  // namespace resident::ops
