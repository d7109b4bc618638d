#include "lenet.hpp"

#include <cublas_v2.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/ops/captured_graph.hpp"

namespace resident::examples {

namespace {

constexpr int kernel_side = 5;
constexpr int padding = 2;  // "same" convolutions: the side is kept, then halved by each pool
constexpr std::array<int, 3> channels{1, 8, 16};
constexpr int pooled_side = lenet::image_side / 4;
constexpr int fc_inputs = channels[2] * pooled_side * pooled_side;  // 784
constexpr std::size_t cublas_workspace_bytes = std::size_t{4} << 20;

void cudnn_check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("lenet: ") + call +
                             " failed: " + cudnnGetErrorString(status));
  }
}

void cublas_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("lenet: ") + call +
                             " failed: " + cublasGetStatusName(status));
  }
}

// An owning cuDNN or cuBLAS handle or descriptor: Create in the constructor, Destroy (reported,
// never thrown) in the destructor; move-only.
template <class Handle, class Status, Status (*Create)(Handle*), Status (*Destroy)(Handle),
          Status Success>
class owned {
 public:
  explicit owned(const char* what) {
    Handle raw{};
    if (Create(&raw) != Success) throw std::runtime_error(std::string("lenet: creating ") + what);
    _handle.reset(raw);
  }
  [[nodiscard]] Handle get() const noexcept { return _handle.get(); }

 private:
  struct destroy {
    void operator()(Handle h) const noexcept {
      if (Destroy(h) != Success) std::fprintf(stderr, "lenet: destroying a handle failed\n");
    }
  };
  std::unique_ptr<std::remove_pointer_t<Handle>, destroy> _handle;
};

using cudnn_handle =
    owned<cudnnHandle_t, cudnnStatus_t, cudnnCreate, cudnnDestroy, CUDNN_STATUS_SUCCESS>;
using tensor_desc = owned<cudnnTensorDescriptor_t, cudnnStatus_t, cudnnCreateTensorDescriptor,
                          cudnnDestroyTensorDescriptor, CUDNN_STATUS_SUCCESS>;
using filter_desc = owned<cudnnFilterDescriptor_t, cudnnStatus_t, cudnnCreateFilterDescriptor,
                          cudnnDestroyFilterDescriptor, CUDNN_STATUS_SUCCESS>;
using conv_desc =
    owned<cudnnConvolutionDescriptor_t, cudnnStatus_t, cudnnCreateConvolutionDescriptor,
          cudnnDestroyConvolutionDescriptor, CUDNN_STATUS_SUCCESS>;
using activation_desc =
    owned<cudnnActivationDescriptor_t, cudnnStatus_t, cudnnCreateActivationDescriptor,
          cudnnDestroyActivationDescriptor, CUDNN_STATUS_SUCCESS>;
using pooling_desc = owned<cudnnPoolingDescriptor_t, cudnnStatus_t, cudnnCreatePoolingDescriptor,
                           cudnnDestroyPoolingDescriptor, CUDNN_STATUS_SUCCESS>;
using cublas_handle =
    owned<cublasHandle_t, cublasStatus_t, cublasCreate, cublasDestroy, CUBLAS_STATUS_SUCCESS>;

tensor_desc make_tensor(int c, int side) {
  tensor_desc t("a tensor descriptor");
  cudnn_check(
      cudnnSetTensor4dDescriptor(t.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, c, side, side),
      "cudnnSetTensor4dDescriptor");
  return t;
}

std::vector<float> draw(std::mt19937_64& rng, std::size_t n, double bound) {
  std::uniform_real_distribution<float> dist(static_cast<float>(-bound), static_cast<float>(bound));
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

device_buffer upload(const std::vector<float>& host) {
  device_buffer d(host.size() * sizeof(float));
  RESIDENT_CUDA_TRY(
      cudaMemcpy(d.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

// Only algorithms that sum each output's terms directly (no FFT, no Winograd), in FMA math: the
// result is then within fp32 rounding of the CPU reference.
cudnnConvolutionFwdAlgo_t pick_algorithm(cudnnHandle_t h, cudnnTensorDescriptor_t x,
                                         cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c,
                                         cudnnTensorDescriptor_t y) {
  std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> found{};
  int count = 0;
  cudnn_check(cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, c, y, static_cast<int>(found.size()),
                                                     &count, found.data()),
              "cudnnGetConvolutionForwardAlgorithm_v7");
  for (int i = 0; i < count; ++i) {
    const auto& r = found[static_cast<std::size_t>(i)];
    const bool direct = r.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
                        r.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
                        r.algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
    if (r.status == CUDNN_STATUS_SUCCESS && direct && r.mathType == CUDNN_FMA_MATH) return r.algo;
  }
  return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
}

// conv 5x5 "same" + bias -> ReLU (in place) -> max-pool 2x2.
struct conv_block {
  conv_block(cudnnHandle_t h, int in_channels, int out_channels, int side, std::mt19937_64& rng)
      : in(in_channels), out(out_channels), side(side) {
    const double fan_in = static_cast<double>(in_channels) * kernel_side * kernel_side;
    host_weights = draw(rng, static_cast<std::size_t>(out * fan_in), std::sqrt(6.0 / fan_in));
    host_bias = draw(rng, static_cast<std::size_t>(out), 0.1);
    weights = upload(host_weights);
    bias = upload(host_bias);
    cudnn_check(cudnnSetFilter4dDescriptor(w_desc.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, out,
                                           in, kernel_side, kernel_side),
                "cudnnSetFilter4dDescriptor");
    cudnn_check(cudnnSetConvolution2dDescriptor(c_desc.get(), padding, padding, 1, 1, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor");
    cudnn_check(cudnnSetConvolutionMathType(c_desc.get(), CUDNN_FMA_MATH),
                "cudnnSetConvolutionMathType");
    int n = 0;
    int c = 0;
    int hh = 0;
    int ww = 0;
    cudnn_check(cudnnGetConvolution2dForwardOutputDim(c_desc.get(), x_desc.get(), w_desc.get(), &n,
                                                      &c, &hh, &ww),
                "cudnnGetConvolution2dForwardOutputDim");
    if (n != 1 || c != out || hh != side || ww != side) {
      throw std::logic_error("lenet: a convolution's output is not the shape it was built for");
    }
    algorithm = pick_algorithm(h, x_desc.get(), w_desc.get(), c_desc.get(), y_desc.get());
    cudnn_check(cudnnGetConvolutionForwardWorkspaceSize(h, x_desc.get(), w_desc.get(), c_desc.get(),
                                                        y_desc.get(), algorithm, &workspace_bytes),
                "cudnnGetConvolutionForwardWorkspaceSize");
  }

  int in;
  int out;
  int side;
  std::vector<float> host_weights;  // out x in x 5 x 5
  std::vector<float> host_bias;
  device_buffer weights;
  device_buffer bias;
  device_buffer activation{std::size_t{1} * out * side * side * sizeof(float)};
  device_buffer pooled{std::size_t{1} * out * (side / 2) * (side / 2) * sizeof(float)};
  tensor_desc x_desc = make_tensor(in, side);
  tensor_desc y_desc = make_tensor(out, side);
  tensor_desc bias_desc = make_tensor(out, 1);
  tensor_desc pooled_desc = make_tensor(out, side / 2);
  filter_desc w_desc{"a filter descriptor"};
  conv_desc c_desc{"a convolution descriptor"};
  cudnnConvolutionFwdAlgo_t algorithm{};
  std::size_t workspace_bytes{};
};

// CPU reference of one conv_block, in fp64; `in` is in x side x side.
std::vector<double> conv_block_reference(const conv_block& b, const std::vector<double>& in) {
  const int s = b.side;
  std::vector<double> y(static_cast<std::size_t>(b.out) * s * s);
  for (int k = 0; k < b.out; ++k) {
    for (int r = 0; r < s; ++r) {
      for (int q = 0; q < s; ++q) {
        double sum = b.host_bias[static_cast<std::size_t>(k)];
        for (int c = 0; c < b.in; ++c) {
          for (int i = 0; i < kernel_side; ++i) {
            for (int j = 0; j < kernel_side; ++j) {
              const int rr = r + i - padding;
              const int qq = q + j - padding;
              if (rr < 0 || rr >= s || qq < 0 || qq >= s) continue;
              sum += double{b.host_weights[static_cast<std::size_t>(
                         ((k * b.in + c) * kernel_side + i) * kernel_side + j)]} *
                     in[static_cast<std::size_t>((c * s + rr) * s + qq)];
            }
          }
        }
        y[static_cast<std::size_t>((k * s + r) * s + q)] = std::max(sum, 0.0);
      }
    }
  }
  const int h = s / 2;
  std::vector<double> pooled(static_cast<std::size_t>(b.out) * h * h);
  for (int k = 0; k < b.out; ++k) {
    for (int r = 0; r < h; ++r) {
      for (int q = 0; q < h; ++q) {
        const auto at = [&](int dr, int dq) {
          return y[static_cast<std::size_t>((k * s + 2 * r + dr) * s + 2 * q + dq)];
        };
        pooled[static_cast<std::size_t>((k * h + r) * h + q)] =
            std::max({at(0, 0), at(0, 1), at(1, 0), at(1, 1)});
      }
    }
  }
  return pooled;
}

}  // namespace

struct lenet::impl {
  explicit impl(std::uint64_t seed) : rng(seed) {
    cudnn_check(cudnnSetActivationDescriptor(relu.get(), CUDNN_ACTIVATION_RELU,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0),
                "cudnnSetActivationDescriptor");
    cudnn_check(cudnnSetPooling2dDescriptor(pool.get(), CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN,
                                            2, 2, 0, 0, 2, 2),
                "cudnnSetPooling2dDescriptor");
    cublas_check(cublasSetMathMode(cublas.get(), CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    blocks.reserve(2);
    blocks.emplace_back(cudnn.get(), channels[0], channels[1], image_side, rng);
    blocks.emplace_back(cudnn.get(), channels[1], channels[2], image_side / 2, rng);
    fc_host_weights = draw(rng, std::size_t{classes} * fc_inputs, std::sqrt(3.0 / fc_inputs));
    fc_host_bias = draw(rng, classes, 0.1);
    fc_weights = upload(fc_host_weights);
    fc_bias = upload(fc_host_bias);
    workspace_bytes = std::max(blocks[0].workspace_bytes, blocks[1].workspace_bytes);
    workspace = device_buffer(std::max<std::size_t>(workspace_bytes, 256));
  }

  std::mt19937_64 rng;
  cudnn_handle cudnn{"the cuDNN handle"};
  cublas_handle cublas{"the cuBLAS handle"};
  activation_desc relu{"an activation descriptor"};
  pooling_desc pool{"a pooling descriptor"};
  std::vector<conv_block> blocks;
  std::vector<float> fc_host_weights;  // classes x 784, row-major
  std::vector<float> fc_host_bias;
  device_buffer fc_weights;
  device_buffer fc_bias;
  device_buffer input{lenet::input_bytes};
  device_buffer logits{lenet::logits_bytes};
  std::size_t workspace_bytes{};
  device_buffer workspace;
  device_buffer cublas_workspace{cublas_workspace_bytes};
};

lenet::lenet(std::uint64_t seed) : _impl(std::make_unique<impl>(seed)) {}
lenet::lenet(lenet&&) noexcept = default;
lenet& lenet::operator=(lenet&&) noexcept = default;
lenet::~lenet() = default;

float* lenet::input() const noexcept { return _impl->input.data_as<float>(); }
float* lenet::logits() const noexcept { return _impl->logits.data_as<float>(); }

void lenet::forward(cudaStream_t s) {
  impl& n = *_impl;
  const float one = 1.0F;
  const float zero = 0.0F;
  cudnn_check(cudnnSetStream(n.cudnn.get(), s), "cudnnSetStream");
  const void* x = n.input.data();
  for (const conv_block& b : n.blocks) {
    cudnn_check(
        cudnnConvolutionForward(n.cudnn.get(), &one, b.x_desc.get(), x, b.w_desc.get(),
                                b.weights.data(), b.c_desc.get(), b.algorithm, n.workspace.data(),
                                n.workspace_bytes, &zero, b.y_desc.get(), b.activation.data()),
        "cudnnConvolutionForward");
    cudnn_check(cudnnAddTensor(n.cudnn.get(), &one, b.bias_desc.get(), b.bias.data(), &one,
                               b.y_desc.get(), b.activation.data()),
                "cudnnAddTensor");
    cudnn_check(
        cudnnActivationForward(n.cudnn.get(), n.relu.get(), &one, b.y_desc.get(),
                               b.activation.data(), &zero, b.y_desc.get(), b.activation.data()),
        "cudnnActivationForward");
    cudnn_check(
        cudnnPoolingForward(n.cudnn.get(), n.pool.get(), &one, b.y_desc.get(), b.activation.data(),
                            &zero, b.pooled_desc.get(), b.pooled.data()),
        "cudnnPoolingForward");
    x = b.pooled.data();
  }
  // logits = bias + W x: the bias first (a device-to-device copy), then cuBLAS adds W x.
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(n.logits.data(), n.fc_bias.data(), logits_bytes,
                                    cudaMemcpyDeviceToDevice, s));
  cublas_check(cublasSetStream(n.cublas.get(), s), "cublasSetStream");
  // cublasSetStream drops the workspace for cuBLAS's own pool, which allocates: bind ours again.
  cublas_check(
      cublasSetWorkspace(n.cublas.get(), n.cublas_workspace.data(), cublas_workspace_bytes),
      "cublasSetWorkspace");
  // Row-major W (classes x 784) is column-major W^T (784 x classes): W x = (W^T)^T x.
  cublas_check(cublasSgemv(n.cublas.get(), CUBLAS_OP_T, fc_inputs, classes, &one,
                           n.fc_weights.data_as<const float>(), fc_inputs,
                           static_cast<const float*>(x), 1, &one, n.logits.data_as<float>(), 1),
               "cublasSgemv");
}

graph lenet::capture() {
  {
    const stream warm;
    forward(warm.get());
    warm.synchronize();
  }
  return ops::captured_graph::capture([this](cudaStream_t s) { forward(s); });
}

lenet::reference_result lenet::reference(std::span<const float> image) const {
  if (image.size() != input_elements) {
    throw std::invalid_argument("lenet::reference: an image is " + std::to_string(input_elements) +
                                " values");
  }
  std::vector<double> x(image.begin(), image.end());
  for (const conv_block& b : _impl->blocks) x = conv_block_reference(b, x);
  reference_result r{std::vector<double>(classes), std::vector<double>(classes)};
  for (int o = 0; o < classes; ++o) {
    double sum = _impl->fc_host_bias[static_cast<std::size_t>(o)];
    double scale = std::abs(sum);
    for (int i = 0; i < fc_inputs; ++i) {
      const double term =
          double{_impl->fc_host_weights[static_cast<std::size_t>(o * fc_inputs + i)]} *
          x[static_cast<std::size_t>(i)];
      sum += term;
      scale += std::abs(term);
    }
    r.logits[static_cast<std::size_t>(o)] = sum;
    r.scale[static_cast<std::size_t>(o)] = scale;
  }
  return r;
}

std::string lenet::library_versions() {
  const auto version = [](std::size_t v) {
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  };
  const std::size_t cudart = cudnnGetCudartVersion();
  return "cuDNN " + version(cudnnGetVersion()) + " (built with " + version(CUDNN_VERSION) +
         ", for CUDA " + std::to_string(cudart / 1000) + "." + std::to_string(cudart / 10 % 100) +
         ")";
}

}  // namespace resident::examples
