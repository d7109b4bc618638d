// sched::translated_model on the device: a plan of every layer kind against its fp64 reference,
// inference after inference with the same bits, and a preempted, resumed run under a be_runner
// giving the bits of an unpreempted one.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu/support.hpp"
#include "resident/sched/preemption.hpp"
#include "resident/sched/translated_model.hpp"

namespace resident::sched {
namespace {

using resident::testing::random_floats;

/// Builds a plan layer by layer; each layer's output is the next tensor id.
class plan_builder {
 public:
  explicit plan_builder(std::uint32_t seed) : _rng(seed) {}

  std::int32_t conv(const std::string& name, std::int32_t in, std::vector<std::int32_t> shape,
                    std::int32_t in_channels, std::int32_t k, std::int32_t stride, std::int32_t pad,
                    std::int32_t groups, activation act) {
    plan_layer l = base(layer_kind::conv2d, name, {in}, std::move(shape), act);
    l.kernel = {k, k};
    l.stride = {stride, stride};
    l.padding = {pad, pad};
    l.groups = groups;
    l.weight = weights(static_cast<std::size_t>(l.shape[1]) * (in_channels / groups) * k * k,
                       (in_channels / groups) * k * k);
    l.bias = weights(static_cast<std::size_t>(l.shape[1]), 1);
    return add(std::move(l));
  }
  std::int32_t pool(const std::string& name, layer_kind kind, std::int32_t in,
                    std::vector<std::int32_t> shape, std::int32_t k, std::int32_t stride,
                    std::int32_t pad) {
    plan_layer l = base(kind, name, {in}, std::move(shape), activation::none);
    l.kernel = {k, k};
    l.stride = {stride, stride};
    l.padding = {pad, pad};
    return add(std::move(l));
  }
  std::int32_t scale_shift(const std::string& name, std::int32_t in,
                           std::vector<std::int32_t> shape, activation act) {
    plan_layer l = base(layer_kind::scale_shift, name, {in}, std::move(shape), act);
    l.scale = weights(static_cast<std::size_t>(l.shape[1]), 1);
    l.shift = weights(static_cast<std::size_t>(l.shape[1]), 1);
    return add(std::move(l));
  }
  std::int32_t linear(const std::string& name, std::int32_t in, std::int32_t batch,
                      std::int32_t features, std::int32_t outputs) {
    plan_layer l = base(layer_kind::linear, name, {in}, {batch, outputs}, activation::none);
    l.weight = weights(static_cast<std::size_t>(features) * outputs, features);
    l.bias = weights(static_cast<std::size_t>(outputs), 1);
    return add(std::move(l));
  }
  std::int32_t other(layer_kind kind, const std::string& name, std::vector<std::int32_t> inputs,
                     std::vector<std::int32_t> shape, activation act = activation::none) {
    return add(base(kind, name, std::move(inputs), std::move(shape), act));
  }

  std::vector<plan_layer> layers;

 private:
  plan_layer base(layer_kind kind, const std::string& name, std::vector<std::int32_t> inputs,
                  std::vector<std::int32_t> shape, activation act) {
    plan_layer l;
    l.kind = kind;
    l.name = name;
    l.inputs = std::move(inputs);
    l.output = static_cast<std::int32_t>(layers.size()) + 1;
    l.shape = std::move(shape);
    l.act = act;
    return l;
  }
  std::int32_t add(plan_layer l) {
    layers.push_back(std::move(l));
    return layers.back().output;
  }
  /// Uniform in +-1/sqrt(fan_in), PyTorch's default: activations stay O(1).
  std::vector<float> weights(std::size_t n, std::int32_t fan_in) {
    const float bound = 1.0F / std::sqrt(static_cast<float>(fan_in));
    std::uniform_real_distribution<float> d(-bound, bound);
    std::vector<float> w(n);
    for (float& x : w) x = d(_rng);
    return w;
  }
  std::mt19937 _rng;
};

/// Every layer kind on [2, 3, 16, 16]: a stem, a depthwise convolution, an unfoldable batch
/// norm, max pooling, squeeze-excitation, concatenation, a grouped convolution, a residual sum,
/// average pooling, an activation alone and a linear head of 10.
translated_model every_kind_model() {
  plan_builder b(17);
  const auto stem = b.conv("stem", 0, {2, 8, 16, 16}, 3, 3, 1, 1, 1, activation::relu);
  const auto dw = b.conv("dw", stem, {2, 8, 8, 8}, 8, 3, 2, 1, 8, activation::relu6);
  const auto bn = b.scale_shift("bn", dw, {2, 8, 8, 8}, activation::silu);
  const auto pooled = b.pool("pool", layer_kind::max_pool, bn, {2, 8, 4, 4}, 3, 2, 1);
  const auto squeeze = b.other(layer_kind::global_avg_pool, "se.pool", {pooled}, {2, 8, 1, 1});
  const auto fc1 = b.conv("se.fc1", squeeze, {2, 4, 1, 1}, 8, 1, 1, 0, 1, activation::silu);
  const auto fc2 = b.conv("se.fc2", fc1, {2, 8, 1, 1}, 4, 1, 1, 0, 1, activation::sigmoid);
  const auto gated = b.other(layer_kind::channel_scale, "se.scale", {pooled, fc2}, {2, 8, 4, 4});
  const auto cat = b.other(layer_kind::concat, "cat", {pooled, gated}, {2, 16, 4, 4});
  const auto mix = b.conv("mix", cat, {2, 8, 4, 4}, 16, 1, 1, 0, 2, activation::none);
  const auto sum =
      b.other(layer_kind::add, "residual", {mix, gated}, {2, 8, 4, 4}, activation::relu);
  const auto avg = b.pool("avg", layer_kind::avg_pool, sum, {2, 8, 2, 2}, 2, 2, 0);
  const auto hs = b.other(layer_kind::act, "hs", {avg}, {2, 8, 2, 2}, activation::hardswish);
  const auto head = b.linear("fc", hs, 2, 32, 10);
  return translated_model({2, 3, 16, 16}, std::move(b.layers), head);
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0;
  for (const double w : want) scale = std::max(scale, std::abs(w));
  ASSERT_GT(scale, 0.0);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), 1e-4 * scale) << "output " << i;
  }
}

TEST(translated_model, a_plan_of_every_layer_kind_matches_its_fp64_reference) {
  RESIDENT_REQUIRE_GPU();
  translated_model m = every_kind_model();
  std::vector<std::string> kernels;
  for (const be_call& c : m.calls()) kernels.push_back(c.name);
  // The depthwise layer takes its own kernel, the concatenation one copy per input.
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "dw.depthwise_conv2d"), kernels.end());
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "cat.copy1"), kernels.end());
  EXPECT_EQ(m.output_shape(), (std::vector<std::int32_t>{2, 10}));
  stream s;
  for (int input = 0; input < 2; ++input) {  // two inputs: the outputs follow them
    const auto x = random_floats(m.input_elements());
    m.set_input(x);
    m.run_unpreempted(s.get());
    expect_close(m.read_output(), m.reference(x));
  }
}

TEST(translated_model, inference_after_inference_gives_the_same_bits) {
  RESIDENT_REQUIRE_GPU();
  translated_model m = every_kind_model();
  const auto x = random_floats(m.input_elements());
  m.set_input(x);
  stream s;
  m.run_unpreempted(s.get());
  const auto first = m.read_output();
  m.run_unpreempted(s.get());
  EXPECT_TRUE(m.read_output() == first);
  auto y = x;
  y[0] += 1.0F;
  m.set_input(y);
  m.run_unpreempted(s.get());
  EXPECT_FALSE(m.read_output() == first);
  EXPECT_THROW(m.set_input(std::vector<float>(5)), std::invalid_argument);
}

/// Big enough that the word, raised every few scheduler polls, lands while kernels run:
/// [4, 32, 64, 64], two 3x3 convolutions of 64 channels, a grouped one, pooling, a head.
translated_model slow_model() {
  plan_builder b(23);
  const auto a = b.conv("a", 0, {4, 64, 64, 64}, 32, 3, 1, 1, 1, activation::relu);
  const auto c = b.conv("b", a, {4, 64, 64, 64}, 64, 3, 1, 1, 4, activation::silu);
  const auto d = b.conv("c", c, {4, 64, 32, 32}, 64, 3, 2, 1, 1, activation::relu6);
  const auto p = b.other(layer_kind::global_avg_pool, "pool", {d}, {4, 64, 1, 1});
  const auto head = b.linear("fc", p, 4, 64, 10);
  return translated_model({4, 32, 64, 64}, std::move(b.layers), head);
}

TEST(translated_model, a_preempted_and_resumed_inference_gives_the_unpreempted_bits) {
  RESIDENT_REQUIRE_GPU();
  translated_model m = slow_model();
  m.set_input(random_floats(m.input_elements()));
  stream s;
  m.run_unpreempted(s.get());
  const auto unpreempted = m.read_output();

  preempt_signal signal;
  be_runner runner(m.calls(), s.get(), &signal, {});
  const auto stats = runner.run_sequences(6, [&signal](std::uint64_t poll) {
    if (poll % 6 == 2) signal.raise();
    if (poll % 6 == 4) signal.clear();
  });
  if (signal.raised()) signal.clear();
  s.synchronize();
  EXPECT_EQ(stats.sequences, 6U);
  EXPECT_GT(stats.preempted_launches, 0U) << "no launch was cut: the test proved nothing";
  EXPECT_EQ(stats.resumed_launches, stats.preempted_launches);
  EXPECT_TRUE(m.read_output() == unpreempted);
}

}  // namespace
}  // namespace resident::sched
