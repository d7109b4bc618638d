#pragma once
// A small LeNet-style classifier written against cuDNN and cuBLAS directly (no framework), for
// the captured_graph example and its GPU test:
//
//   image 1x1x28x28 -> conv 5x5 (8, pad 2) + bias -> ReLU -> max-pool 2x2
//                   -> conv 5x5 (16, pad 2) + bias -> ReLU -> max-pool 2x2 -> 16x7x7
//                   -> fully connected 784 -> 10 (cuBLAS) -> logits
//
// fp32 throughout, with no TF32 (cuDNN FMA math, cuBLAS pedantic math). The weights are drawn
// from a seed, so reference() can rebuild the same network on the CPU. Everything the forward
// pass uses (handles, descriptors, workspaces, activations) is made by the constructor: forward()
// only enqueues work, so it can be captured into a graph. Only this file's users link cuDNN.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "resident/cuda/graph.hpp"

namespace resident::examples {

class lenet {
 public:
  static constexpr int image_side = 28;
  static constexpr int classes = 10;
  static constexpr std::size_t input_elements = std::size_t{image_side} * image_side;
  static constexpr std::size_t input_bytes = input_elements * sizeof(float);
  static constexpr std::size_t logits_bytes = std::size_t{classes} * sizeof(float);

  /// Creates the network on the current device with weights drawn from `seed`.
  explicit lenet(std::uint64_t seed = 1);
  lenet(lenet&&) noexcept;
  lenet& operator=(lenet&&) noexcept;
  lenet(const lenet&) = delete;
  lenet& operator=(const lenet&) = delete;
  ~lenet();

  /// Device memory the network reads its image from and writes its logits to, fixed for its
  /// lifetime (a captured graph's ports).
  [[nodiscard]] float* input() const noexcept;
  [[nodiscard]] float* logits() const noexcept;

  /// Enqueues one forward pass on `s`: no allocation, no synchronization, so it can be captured.
  void forward(cudaStream_t s);
  /// Runs forward() once (cuDNN and cuBLAS set themselves up then), then captures it into a
  /// graph. The graph uses this object's weights, workspaces and activations: keep it alive as
  /// long as the graph may run.
  [[nodiscard]] graph capture();

  /// The same network on the CPU in fp64: the logits, and for each the sum of the magnitudes
  /// of the terms of its dot product (the scale its rounding error is relative to).
  struct reference_result {
    std::vector<double> logits;
    std::vector<double> scale;
  };
  [[nodiscard]] reference_result reference(std::span<const float> image) const;

  /// "cuDNN 9.19.0 (built with 9.19.0, for CUDA 12.9)": for logs.
  [[nodiscard]] static std::string library_versions();

 private:
  struct impl;
  std::unique_ptr<impl> _impl;
};

}  // namespace resident::examples
