// The layer kernels of translated CNNs (be_layers.hpp), host side: how many logical blocks each
// launch covers, what make_call says about it, and the arguments refused by name.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "resident/sched/be_layers.hpp"

namespace resident::sched {
namespace {

float dummy[4];
float other[4];

template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(be_layer_args, a_grouped_convolution_is_a_gemm_per_group) {
  // [2, 8, 10, 10] -> 12 channels in 4 groups, 3x3 stride 1 pad 1: 200 output pixels (4 row
  // tiles), 3 channels a group (1 column tile): 4 groups x 4.
  const conv2d_layer_args grouped{
      {dummy, dummy, dummy, {2, 8, 10, 10, 12, 3, 3, 1, 1}}, dummy, activation::relu6, 4};
  EXPECT_EQ(conv2d_layer_blocks(grouped), 4 * 4);
  // One group and no bias is conv2d's tiling.
  const conv2d_layer_args plain{{dummy, dummy, dummy, {2, 8, 10, 10, 130, 3, 3, 1, 1}}};
  EXPECT_EQ(conv2d_layer_blocks(plain), conv2d_blocks(plain.conv));
  const be_call call = make_call("t.conv", grouped);
  EXPECT_EQ(call.blocks, 16);
  EXPECT_TRUE(call.idempotent);
  EXPECT_EQ(call.saved_floats, be_tile_state_floats);  // checkpoints like conv2d
}

TEST(be_layer_args, the_short_layers_take_1024_outputs_per_block) {
  // Depthwise 3x3 stride 2 pad 1 on [1, 32, 112, 112]: 32 x 56 x 56 = 100352 outputs.
  EXPECT_EQ(
      depthwise_conv2d_blocks(
          {dummy, dummy, nullptr, dummy, {1, 32, 112, 112, 32, 3, 3, 2, 1}, activation::silu}),
      98);
  EXPECT_EQ(pointwise_blocks({dummy, other, nullptr, nullptr, nullptr, dummy + 1, 2 * 64 * 49, 49,
                              64, activation::relu}),
            7);
  // ResNet's 3x3 stride 2 pad 1 max pool: [1, 64, 112, 112] -> [1, 64, 56, 56].
  const pool2d_args pool{dummy, dummy, 1, 64, 112, 112, 3, 3, 2, 1, pooling::max, true};
  EXPECT_EQ(pool.p(), 56);
  EXPECT_EQ(pool.q(), 56);
  EXPECT_EQ(pool2d_blocks(pool), 196);
  EXPECT_EQ(global_avg_pool_blocks({dummy, dummy, 2048, 49}), 256);  // 8 planes a block
  EXPECT_EQ(global_avg_pool_blocks({dummy, dummy, 9, 49}), 2);
  EXPECT_EQ(channel_copy_blocks({dummy, dummy, 1, 32, 3136, 96, 64}), 98);
  EXPECT_TRUE(make_call("p", pool).idempotent);
  EXPECT_EQ(make_call("p", pool).saved_floats, 0);
}

TEST(be_layer_args, bad_layers_are_refused_by_kernel_and_field) {
  EXPECT_EQ(
      refusal([] {
        (void)conv2d_layer_blocks(
            {{dummy, dummy, dummy, {1, 6, 8, 8, 9, 3, 3, 1, 1}}, nullptr, activation::none, 4});
      }),
      "conv2d_layer: groups 4 must divide c (6) and k (9)");
  EXPECT_EQ(refusal([] {
              (void)conv2d_layer_blocks({{dummy, dummy, dummy, {1, 4, 8, 8, 4, 3, 3, 1, 1}},
                                         nullptr,
                                         static_cast<activation>(42),
                                         1});
            }),
            "conv2d_layer: act is not an activation (42)");
  EXPECT_EQ(refusal([] {
              (void)depthwise_conv2d_blocks(
                  {dummy, dummy, nullptr, dummy, {1, 4, 8, 8, 6, 3, 3, 1, 1}, activation::none});
            }),
            "depthwise_conv2d: k 6 must be a multiple of c (4)");
  EXPECT_EQ(refusal([] {
              (void)pointwise_blocks(
                  {dummy, nullptr, nullptr, nullptr, nullptr, dummy, 16, 4, 4, activation::none});
            }),
            "pointwise: out must not be x or y (a block run again would read its own output)");
  EXPECT_EQ(refusal([] {
              (void)pointwise_blocks(
                  {dummy, nullptr, nullptr, nullptr, nullptr, other, 18, 4, 4, activation::none});
            }),
            "pointwise: elements 18 is not a whole number of images of channels * inner = 16");
  EXPECT_EQ(refusal([] {
              (void)pool2d_blocks({dummy, dummy, 1, 1, 8, 8, 2, 2, 2, 2, pooling::max, true});
            }),
            "pool2d: pad 2 exceeds half the window");
  EXPECT_EQ(refusal([] {
              (void)pool2d_blocks({dummy, dummy, 1, 1, 4, 4, 7, 7, 1, 1, pooling::average, true});
            }),
            "pool2d: window height 7 exceeds the padded height 6");
  EXPECT_EQ(refusal([] {
              (void)global_avg_pool_blocks({dummy, nullptr, 4, 4});
            }),
            "global_avg_pool: output is null");
  EXPECT_EQ(refusal([] {
              (void)channel_copy_blocks({dummy, dummy, 1, 32, 10, 64, 40});
            }),
            "channel_copy: offset 40 + c (32) must lie within out_channels (64)");
}

TEST(be_layer_args, every_activation_is_valid_and_nothing_else_is) {
  for (int a = 0; a <= static_cast<int>(activation::hardsigmoid); ++a) {
    EXPECT_TRUE(valid_activation(static_cast<activation>(a))) << a;
  }
  EXPECT_FALSE(valid_activation(static_cast<activation>(-1)));
  EXPECT_FALSE(valid_activation(static_cast<activation>(7)));
}

}  // namespace
}  // namespace resident::sched
