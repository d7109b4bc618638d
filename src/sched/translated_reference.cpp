// translated_model::reference: the plan evaluated on the CPU in fp64, layer by layer, from the
// same weights the device holds. Straight loops: it is the check, not a fast path.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/sched/be_layers.hpp"
#include "resident/sched/translated_model.hpp"

namespace resident::sched {

namespace {

using tensor_t = std::vector<double>;
using shape_t = std::vector<std::int32_t>;

std::size_t at4(const shape_t& s, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return static_cast<std::size_t>(((n * s[1] + c) * s[2] + h) * s[3] + w);
}

tensor_t conv(const plan_layer& l, const tensor_t& x, const shape_t& in) {
  const shape_t& o = l.shape;
  const std::int32_t cg = in[1] / l.groups;
  const std::int32_t kg = o[1] / l.groups;
  tensor_t y(static_cast<std::size_t>(o[0]) * o[1] * o[2] * o[3]);
  for (std::int32_t n = 0; n < o[0]; ++n) {
    for (std::int32_t k = 0; k < o[1]; ++k) {
      const std::int32_t g = k / kg;
      for (std::int32_t p = 0; p < o[2]; ++p) {
        for (std::int32_t q = 0; q < o[3]; ++q) {
          double acc = l.bias[static_cast<std::size_t>(k)];
          for (std::int32_t c = 0; c < cg; ++c) {
            for (std::int32_t r = 0; r < l.kernel[0]; ++r) {
              const std::int32_t ih = p * l.stride[0] - l.padding[0] + r;
              if (ih < 0 || ih >= in[2]) continue;
              for (std::int32_t t = 0; t < l.kernel[1]; ++t) {
                const std::int32_t iw = q * l.stride[0] - l.padding[0] + t;
                if (iw < 0 || iw >= in[3]) continue;
                const std::size_t wi =
                    ((static_cast<std::size_t>(k) * cg + c) * l.kernel[0] + r) * l.kernel[1] + t;
                acc += x[at4(in, n, g * cg + c, ih, iw)] * l.weight[wi];
              }
            }
          }
          y[at4(o, n, k, p, q)] = activation_fp64(acc, l.act);
        }
      }
    }
  }
  return y;
}

tensor_t pool(const plan_layer& l, const tensor_t& x, const shape_t& in) {
  const shape_t& o = l.shape;
  const bool max = l.kind == layer_kind::max_pool;
  tensor_t y(static_cast<std::size_t>(o[0]) * o[1] * o[2] * o[3]);
  for (std::int32_t n = 0; n < o[0]; ++n) {
    for (std::int32_t c = 0; c < o[1]; ++c) {
      for (std::int32_t p = 0; p < o[2]; ++p) {
        for (std::int32_t q = 0; q < o[3]; ++q) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          int inside = 0;
          for (std::int32_t r = 0; r < l.kernel[0]; ++r) {
            for (std::int32_t t = 0; t < l.kernel[1]; ++t) {
              const std::int32_t ih = p * l.stride[0] - l.padding[0] + r;
              const std::int32_t iw = q * l.stride[0] - l.padding[0] + t;
              if (ih < 0 || ih >= in[2] || iw < 0 || iw >= in[3]) continue;
              const double v = x[at4(in, n, c, ih, iw)];
              acc = max ? std::max(acc, v) : acc + v;
              ++inside;
            }
          }
          if (!max) acc /= l.count_include_pad ? l.kernel[0] * l.kernel[1] : inside;
          y[at4(o, n, c, p, q)] = acc;
        }
      }
    }
  }
  return y;
}

/// scale_shift, act, add, channel_scale: elementwise over the first input's layout.
tensor_t pointwise(const plan_layer& l, const std::vector<const tensor_t*>& xs, const shape_t& in) {
  const tensor_t& x = *xs[0];
  const std::size_t per_image = x.size() / static_cast<std::size_t>(in[0]);
  const std::size_t channels = in.size() >= 2 ? static_cast<std::size_t>(in[1]) : 1;
  const std::size_t inner = per_image / channels;
  tensor_t y(x.size());
  for (std::size_t e = 0; e < x.size(); ++e) {
    const std::size_t c = e / inner % channels;
    double v = x[e];
    if (l.kind == layer_kind::scale_shift) v = v * l.scale[c] + l.shift[c];
    if (l.kind == layer_kind::channel_scale) v *= (*xs[1])[e / per_image * channels + c];
    if (l.kind == layer_kind::add) v += (*xs[1])[e];
    y[e] = activation_fp64(v, l.act);
  }
  return y;
}

tensor_t evaluate(const plan_layer& l, const std::vector<const tensor_t*>& xs,
                  const std::vector<shape_t>& shapes) {
  const shape_t& in = shapes.front();
  switch (l.kind) {
    case layer_kind::conv2d:
      return conv(l, *xs[0], in);
    case layer_kind::max_pool:
    case layer_kind::avg_pool:
      return pool(l, *xs[0], in);
    case layer_kind::global_avg_pool: {
      const std::size_t plane = static_cast<std::size_t>(in[2]) * in[3];
      tensor_t y(xs[0]->size() / plane);
      for (std::size_t i = 0; i < y.size(); ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < plane; ++j) sum += (*xs[0])[i * plane + j];
        y[i] = sum / static_cast<double>(plane);
      }
      return y;
    }
    case layer_kind::concat: {
      tensor_t y;
      for (std::int32_t n = 0; n < in[0]; ++n) {
        for (std::size_t i = 0; i < xs.size(); ++i) {
          const std::size_t per_image = xs[i]->size() / static_cast<std::size_t>(in[0]);
          const auto first = xs[i]->begin() + static_cast<std::ptrdiff_t>(n * per_image);
          y.insert(y.end(), first, first + static_cast<std::ptrdiff_t>(per_image));
        }
      }
      return y;
    }
    case layer_kind::linear: {
      const std::size_t outputs = static_cast<std::size_t>(l.shape[1]);
      const std::size_t features = xs[0]->size() / static_cast<std::size_t>(in[0]);
      tensor_t y(static_cast<std::size_t>(in[0]) * outputs);
      for (std::size_t n = 0; n < static_cast<std::size_t>(in[0]); ++n) {
        for (std::size_t o = 0; o < outputs; ++o) {
          double acc = l.bias[o];
          for (std::size_t f = 0; f < features; ++f) {
            acc += (*xs[0])[n * features + f] * l.weight[o * features + f];
          }
          y[n * outputs + o] = activation_fp64(acc, l.act);
        }
      }
      return y;
    }
    default:
      return pointwise(l, xs, in);
  }
}

}  // namespace

double activation_fp64(double v, activation act) noexcept {
  switch (act) {
    case activation::relu:
      return std::max(v, 0.0);
    case activation::relu6:
      return std::min(std::max(v, 0.0), 6.0);
    case activation::silu:
      return v / (1.0 + std::exp(-v));
    case activation::sigmoid:
      return 1.0 / (1.0 + std::exp(-v));
    case activation::hardswish:
      return v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
    case activation::hardsigmoid:
      return std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;
    case activation::none:
      break;
  }
  return v;
}

std::vector<double> translated_model::reference(std::span<const float> x) const {
  if (x.size() != input_elements()) {
    throw std::invalid_argument("translated model: reference() got " + std::to_string(x.size()) +
                                " values, the model takes " + std::to_string(input_elements()));
  }
  std::vector<tensor_t> values{tensor_t(x.begin(), x.end())};
  for (const plan_layer& l : _layers) {
    std::vector<const tensor_t*> xs;
    std::vector<shape_t> shapes;
    for (const std::int32_t id : l.inputs) {
      xs.push_back(&values[static_cast<std::size_t>(id)]);
      shapes.push_back(_shapes[static_cast<std::size_t>(id)]);
    }
    values.push_back(evaluate(l, xs, shapes));
  }
  return values[static_cast<std::size_t>(_output)];
}

}  // namespace resident::sched
