#include "resident/sched/translated_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/cuda/error.hpp"
#include "resident/sched/be_layers.hpp"

namespace resident::sched {

namespace {

constexpr std::array<std::pair<std::string_view, layer_kind>, 10> kind_names{{
    {"conv2d", layer_kind::conv2d},
    {"scale_shift", layer_kind::scale_shift},
    {"act", layer_kind::act},
    {"max_pool", layer_kind::max_pool},
    {"avg_pool", layer_kind::avg_pool},
    {"global_avg_pool", layer_kind::global_avg_pool},
    {"add", layer_kind::add},
    {"concat", layer_kind::concat},
    {"channel_scale", layer_kind::channel_scale},
    {"linear", layer_kind::linear},
}};

constexpr std::array<std::pair<std::string_view, activation>, 7> activation_names{{
    {"none", activation::none},
    {"relu", activation::relu},
    {"relu6", activation::relu6},
    {"silu", activation::silu},
    {"sigmoid", activation::sigmoid},
    {"hardswish", activation::hardswish},
    {"hardsigmoid", activation::hardsigmoid},
}};

using shape_t = std::vector<std::int32_t>;

std::int64_t elements_of(const shape_t& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

std::string text(const shape_t& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// Throws for the layer being checked: "layer 'layer1.0.conv1' (conv2d): <what>".
struct checker {
  const plan_layer& layer;
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("translated model: layer '" + layer.name + "' (" +
                                std::string(to_string(layer.kind)) + "): " + what);
  }
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }
  void weights(const std::vector<float>& w, std::int64_t want, const char* which) const {
    require(static_cast<std::int64_t>(w.size()) == want,
            std::string(which) + " holds " + std::to_string(w.size()) +
                " values, the layer needs " + std::to_string(want));
  }
  void square() const {
    require(layer.stride[0] == layer.stride[1] && layer.padding[0] == layer.padding[1],
            "stride and padding must be the same both ways (the kernels take one of each)");
    require(
        layer.stride[0] > 0 && layer.padding[0] >= 0 && layer.kernel[0] > 0 && layer.kernel[1] > 0,
        "kernel and stride must be > 0 and padding >= 0");
  }
};

std::int32_t window_out(std::int32_t in, std::int32_t k, std::int32_t stride, std::int32_t pad) {
  return (in + 2 * pad - k) / stride + 1;
}

/// The output shape a layer computes from its inputs' shapes (and checks its weights).
shape_t expected_shape(const plan_layer& l, const std::vector<shape_t>& in) {
  const checker c{l};
  const auto arity = [&](std::size_t n) {
    c.require(in.size() == n, "takes " + std::to_string(n) + " input(s), the plan gives " +
                                  std::to_string(in.size()));
  };
  const auto four_d = [&](const shape_t& s) {
    c.require(s.size() == 4, "needs an [n, c, h, w] input, not " + text(s));
  };
  switch (l.kind) {
    case layer_kind::conv2d: {
      arity(1);
      four_d(in[0]);
      c.square();
      c.require(l.shape.size() == 4, "its output must be [n, k, p, q]");
      const std::int32_t channels = in[0][1];
      const std::int32_t k = l.shape[1];
      c.require(l.groups > 0 && channels % l.groups == 0 && k % l.groups == 0,
                "groups " + std::to_string(l.groups) + " must divide " + std::to_string(channels) +
                    " input and " + std::to_string(k) + " output channels");
      c.weights(l.weight, std::int64_t{k} * (channels / l.groups) * l.kernel[0] * l.kernel[1],
                "weight");
      c.weights(l.bias, k, "bias");
      return {in[0][0], k, window_out(in[0][2], l.kernel[0], l.stride[0], l.padding[0]),
              window_out(in[0][3], l.kernel[1], l.stride[0], l.padding[0])};
    }
    case layer_kind::scale_shift:
      arity(1);
      c.require(in[0].size() >= 2, "needs an input with channels, not " + text(in[0]));
      c.weights(l.scale, in[0][1], "scale");
      c.weights(l.shift, in[0][1], "shift");
      return in[0];
    case layer_kind::act:
      arity(1);
      return in[0];
    case layer_kind::add:
      arity(2);
      c.require(in[0] == in[1], "adds " + text(in[0]) + " and " + text(in[1]) + " (one shape)");
      return in[0];
    case layer_kind::channel_scale:
      arity(2);
      four_d(in[0]);
      c.require(in[1] == shape_t{in[0][0], in[0][1], 1, 1},
                "scales " + text(in[0]) + " by " + text(in[1]) + " (one value per channel)");
      return in[0];
    case layer_kind::max_pool:
    case layer_kind::avg_pool:
      arity(1);
      four_d(in[0]);
      c.square();
      c.require(2 * l.padding[0] <= std::min(l.kernel[0], l.kernel[1]),
                "padding exceeds half the window");
      return {in[0][0], in[0][1], window_out(in[0][2], l.kernel[0], l.stride[0], l.padding[0]),
              window_out(in[0][3], l.kernel[1], l.stride[0], l.padding[0])};
    case layer_kind::global_avg_pool:
      arity(1);
      four_d(in[0]);
      return l.shape.size() == 2 ? shape_t{in[0][0], in[0][1]} : shape_t{in[0][0], in[0][1], 1, 1};
    case layer_kind::concat: {
      c.require(!in.empty(), "concatenates nothing");
      std::int32_t channels = 0;
      for (const shape_t& s : in) {
        four_d(s);
        c.require(s[0] == in[0][0] && s[2] == in[0][2] && s[3] == in[0][3],
                  "concatenates " + text(in[0]) + " and " + text(s) + " (one n, h and w)");
        channels += s[1];
      }
      return {in[0][0], channels, in[0][2], in[0][3]};
    }
    case layer_kind::linear: {
      arity(1);
      c.require(in[0].size() >= 2, "needs an input of [n, features...], not " + text(in[0]));
      c.require(l.shape.size() == 2, "its output must be [n, features]");
      const std::int64_t features = elements_of(in[0]) / in[0][0];
      c.weights(l.weight, features * l.shape[1], "weight");
      c.weights(l.bias, l.shape[1], "bias");
      return {in[0][0], l.shape[1]};
    }
  }
  c.fail("is not a layer kind");
}

}  // namespace

std::optional<layer_kind> parse_layer_kind(std::string_view name) {
  for (const auto& [n, k] : kind_names) {
    if (n == name) return k;
  }
  return std::nullopt;
}

std::string_view to_string(layer_kind kind) {
  for (const auto& [n, k] : kind_names) {
    if (k == kind) return n;
  }
  return "unknown";
}

std::optional<activation> parse_activation(std::string_view name) {
  for (const auto& [n, a] : activation_names) {
    if (n == name) return a;
  }
  return std::nullopt;
}

translated_model::translated_model(std::vector<std::int32_t> input_shape,
                                   std::vector<plan_layer> layers, std::int32_t output)
    : _input_shape(std::move(input_shape)), _output(output) {
  if (_input_shape.size() != 4 || std::any_of(_input_shape.begin(), _input_shape.end(),
                                              [](std::int32_t d) { return d <= 0; })) {
    throw std::invalid_argument(
        "translated model: the input shape must be [n, c, h, w] with "
        "every size > 0, not " +
        text(_input_shape));
  }
  check_and_shape(layers);
  _layers = std::move(layers);
  _tensors.reserve(_shapes.size());
  for (const shape_t& s : _shapes) {
    _tensors.emplace_back(static_cast<std::size_t>(elements_of(s)) * sizeof(float));
    RESIDENT_CUDA_TRY(cudaMemset(_tensors.back().data(), 0, _tensors.back().size()));
    _device_bytes += _tensors.back().size();
  }
  for (const plan_layer& l : _layers) add_layer_calls(l);
  std::int32_t most = 1;
  for (const be_call& c : _calls) most = std::max(most, c.blocks);
  _done = device_buffer(static_cast<std::size_t>(most) * sizeof(std::uint32_t));
}

void translated_model::check_and_shape(const std::vector<plan_layer>& layers) {
  _shapes = {_input_shape};
  for (const plan_layer& l : layers) {
    const checker c{l};
    std::vector<shape_t> in;
    for (const std::int32_t id : l.inputs) {
      c.require(id >= 0 && id < static_cast<std::int32_t>(_shapes.size()),
                "reads tensor " + std::to_string(id) + " before any layer writes it");
      in.push_back(_shapes[static_cast<std::size_t>(id)]);
    }
    c.require(l.output == static_cast<std::int32_t>(_shapes.size()),
              "writes tensor " + std::to_string(l.output) + "; the next tensor is " +
                  std::to_string(_shapes.size()));
    c.require(valid_activation(l.act), "has no valid activation");
    const shape_t want = expected_shape(l, in);
    c.require(want == l.shape, "computes " + text(want) + ", the plan says " + text(l.shape));
    c.require(std::all_of(want.begin(), want.end(), [](std::int32_t d) { return d > 0; }),
              "computes an empty tensor " + text(want));
    c.require(elements_of(want) <= std::numeric_limits<std::int32_t>::max(),
              "computes more values than the kernels index");
    _shapes.push_back(want);
  }
  if (_output < 0 || _output >= static_cast<std::int32_t>(_shapes.size())) {
    throw std::invalid_argument("translated model: the output is tensor " +
                                std::to_string(_output) + ", which no layer writes");
  }
}

float* translated_model::tensor(std::int32_t id) const {
  return _tensors[static_cast<std::size_t>(id)].data_as<float>();
}

float* translated_model::upload(const std::vector<float>& host) {
  _weights.emplace_back(host.size() * sizeof(float));
  RESIDENT_CUDA_TRY(cudaMemcpy(_weights.back().data(), host.data(), host.size() * sizeof(float),
                               cudaMemcpyHostToDevice));
  _parameters += host.size();
  _device_bytes += _weights.back().size();
  return _weights.back().data_as<float>();
}

std::size_t translated_model::input_elements() const noexcept {
  return static_cast<std::size_t>(elements_of(_input_shape));
}

std::size_t translated_model::output_elements() const noexcept {
  return static_cast<std::size_t>(elements_of(output_shape()));
}

void translated_model::set_input(std::span<const float> x) {
  if (x.size() != input_elements()) {
    throw std::invalid_argument("translated model: the input holds " + std::to_string(x.size()) +
                                " values, the model takes " + std::to_string(input_elements()) +
                                " (" + text(_input_shape) + ")");
  }
  RESIDENT_CUDA_TRY(cudaMemcpy(tensor(0), x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
}

std::vector<float> translated_model::read_output() const {
  std::vector<float> out(output_elements());
  RESIDENT_CUDA_TRY(
      cudaMemcpy(out.data(), tensor(_output), out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

namespace {

/// [n, c, h, w] or [n, features] as pointwise's channels and inner.
std::pair<std::int32_t, std::int32_t> channels_inner(const shape_t& s) {
  const std::int64_t per_image = elements_of(s) / s[0];
  const std::int32_t channels = s.size() >= 2 ? s[1] : 1;
  return {channels, static_cast<std::int32_t>(per_image / channels)};
}

}  // namespace

void translated_model::add_layer_calls(const plan_layer& l) {
  const shape_t& in = _shapes[static_cast<std::size_t>(l.inputs.front())];
  const std::string prefix = l.name + ".";
  float* out = tensor(l.output);
  const float* x = tensor(l.inputs.front());
  const auto pointwise = [&](const float* y, const float* scale, const float* shift,
                             const float* gate, const char* what) {
    const auto [channels, inner] = channels_inner(in);
    _calls.push_back(make_call(
        prefix + what,
        pointwise_args{x, y, scale, shift, gate, out, elements_of(in), inner, channels, l.act}));
  };
  switch (l.kind) {
    case layer_kind::conv2d: {
      const conv2d_shape sh{in[0],       in[1],       in[2],       in[3],       l.shape[1],
                            l.kernel[0], l.kernel[1], l.stride[0], l.padding[0]};
      const float* w = upload(l.weight);
      const float* b = upload(l.bias);
      if (l.groups > 1 && l.groups == in[1]) {
        _calls.push_back(
            make_call(prefix + "depthwise_conv2d", depthwise_conv2d_args{x, w, b, out, sh, l.act}));
      } else {
        _calls.push_back(make_call(prefix + "conv2d_layer",
                                   conv2d_layer_args{{x, w, out, sh}, b, l.act, l.groups}));
      }
      return;
    }
    case layer_kind::scale_shift:
      pointwise(nullptr, upload(l.scale), upload(l.shift), nullptr, "scale_shift");
      return;
    case layer_kind::act:
      pointwise(nullptr, nullptr, nullptr, nullptr, "act");
      return;
    case layer_kind::add:
      pointwise(tensor(l.inputs[1]), nullptr, nullptr, nullptr, "add");
      return;
    case layer_kind::channel_scale:
      pointwise(nullptr, nullptr, nullptr, tensor(l.inputs[1]), "channel_scale");
      return;
    case layer_kind::max_pool:
    case layer_kind::avg_pool:
      _calls.push_back(
          make_call(prefix + "pool2d",
                    pool2d_args{x, out, in[0], in[1], in[2], in[3], l.kernel[0], l.kernel[1],
                                l.stride[0], l.padding[0],
                                l.kind == layer_kind::max_pool ? pooling::max : pooling::average,
                                l.count_include_pad}));
      return;
    case layer_kind::global_avg_pool:
      _calls.push_back(make_call(prefix + "global_avg_pool",
                                 global_avg_pool_args{x, out, in[0] * in[1], in[2] * in[3]}));
      return;
    case layer_kind::concat: {
      std::int32_t offset = 0;
      for (std::size_t i = 0; i < l.inputs.size(); ++i) {
        const shape_t& s = _shapes[static_cast<std::size_t>(l.inputs[i])];
        _calls.push_back(make_call(prefix + "copy" + std::to_string(i),
                                   channel_copy_args{tensor(l.inputs[i]), out, s[0], s[1],
                                                     s[2] * s[3], l.shape[1], offset}));
        offset += s[1];
      }
      return;
    }
    case layer_kind::linear: {
      const std::int32_t outputs = l.shape[1];
      const auto features = static_cast<std::int32_t>(elements_of(in) / in[0]);
      std::vector<float> transposed(l.weight.size());  // [out, in] -> [in, out]
      for (std::int32_t o = 0; o < outputs; ++o) {
        for (std::int32_t f = 0; f < features; ++f) {
          transposed[static_cast<std::size_t>(f) * outputs + o] =
              l.weight[static_cast<std::size_t>(o) * features + f];
        }
      }
      const float* wt = upload(transposed);
      _calls.push_back(make_call(
          prefix + "gemm_bias_act",
          gemm_bias_act_args{{x, wt, out, in[0], outputs, features}, upload(l.bias), l.act}));
      return;
    }
  }
}

void translated_model::launch_unpreempted(cudaStream_t s) {
  for (const be_call& c : _calls) {
    be_launch_view v;
    v.done = _done.data_as<std::uint32_t>();
    v.blocks = c.blocks;
    c.launch(s, v);
  }
}

void translated_model::run_unpreempted(cudaStream_t s) {
  launch_unpreempted(s);
  RESIDENT_CUDA_TRY(cudaStreamSynchronize(s));
}

}  // namespace resident::sched
