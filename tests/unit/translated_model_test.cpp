// translated_model's plan checks, on the host: every refusal happens before anything is
// allocated and names the layer and what is wrong.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "resident/sched/translated_model.hpp"

namespace resident::sched {
namespace {

std::string refusal(std::vector<std::int32_t> input, std::vector<plan_layer> layers,
                    std::int32_t output) {
  try {
    translated_model m(std::move(input), std::move(layers), output);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

/// conv 3 -> 8 channels, 3x3, stride 1, padding 1 on [1, 3, 8, 8].
plan_layer conv_layer() {
  plan_layer l;
  l.kind = layer_kind::conv2d;
  l.name = "stem";
  l.inputs = {0};
  l.output = 1;
  l.shape = {1, 8, 8, 8};
  l.kernel = {3, 3};
  l.padding = {1, 1};
  l.weight.assign(8 * 3 * 3 * 3, 0.5F);
  l.bias.assign(8, 0.0F);
  return l;
}

TEST(translated_model, names_round_trip) {
  for (const char* n : {"conv2d", "scale_shift", "act", "max_pool", "avg_pool", "global_avg_pool",
                        "add", "concat", "channel_scale", "linear"}) {
    const auto k = parse_layer_kind(n);
    ASSERT_TRUE(k.has_value()) << n;
    EXPECT_EQ(to_string(*k), n);
  }
  EXPECT_FALSE(parse_layer_kind("gelu").has_value());
  EXPECT_EQ(parse_activation("hardswish"), activation::hardswish);
  EXPECT_EQ(parse_activation("none"), activation::none);
  EXPECT_FALSE(parse_activation("tanh").has_value());
}

TEST(translated_model, a_plan_that_does_not_hold_together_is_refused_by_layer) {
  EXPECT_EQ(refusal({1, 3, 8}, {conv_layer()}, 1),
            "translated model: the input shape must be [n, c, h, w] with every size > 0, not "
            "[1, 3, 8]");
  plan_layer short_weight = conv_layer();
  short_weight.weight.resize(10);
  EXPECT_EQ(refusal({1, 3, 8, 8}, {short_weight}, 1),
            "translated model: layer 'stem' (conv2d): weight holds 10 values, the layer needs 216");
  plan_layer wrong_shape = conv_layer();
  wrong_shape.shape = {1, 8, 4, 4};
  EXPECT_EQ(refusal({1, 3, 8, 8}, {wrong_shape}, 1),
            "translated model: layer 'stem' (conv2d): computes [1, 8, 8, 8], the plan says "
            "[1, 8, 4, 4]");
  plan_layer rectangular = conv_layer();
  rectangular.stride = {1, 2};
  EXPECT_EQ(refusal({1, 3, 8, 8}, {rectangular}, 1),
            "translated model: layer 'stem' (conv2d): stride and padding must be the same both "
            "ways (the kernels take one of each)");
  plan_layer groups = conv_layer();
  groups.groups = 2;
  EXPECT_EQ(refusal({1, 3, 8, 8}, {groups}, 1),
            "translated model: layer 'stem' (conv2d): groups 2 must divide 3 input and 8 output "
            "channels");
  plan_layer ahead = conv_layer();
  ahead.inputs = {1};
  EXPECT_EQ(refusal({1, 3, 8, 8}, {ahead}, 1),
            "translated model: layer 'stem' (conv2d): reads tensor 1 before any layer writes it");
  plan_layer sum;
  sum.kind = layer_kind::add;
  sum.name = "residual";
  sum.inputs = {0, 1};
  sum.output = 2;
  sum.shape = {1, 3, 8, 8};
  EXPECT_EQ(refusal({1, 3, 8, 8}, {conv_layer(), sum}, 2),
            "translated model: layer 'residual' (add): adds [1, 3, 8, 8] and [1, 8, 8, 8] (one "
            "shape)");
  EXPECT_EQ(refusal({1, 3, 8, 8}, {conv_layer()}, 5),
            "translated model: the output is tensor 5, which no layer writes");
  plan_layer pool;
  pool.kind = layer_kind::max_pool;
  pool.name = "pool";
  pool.inputs = {0};
  pool.output = 1;
  pool.kernel = {2, 2};
  pool.padding = {2, 2};
  pool.shape = {1, 3, 6, 6};
  EXPECT_EQ(refusal({1, 3, 8, 8}, {pool}, 1),
            "translated model: layer 'pool' (max_pool): padding exceeds half the window");
}

}  // namespace
}  // namespace resident::sched
