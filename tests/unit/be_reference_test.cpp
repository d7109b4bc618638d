// The BE kernel library's CPU side: the fp64 references against hand-computed cases, and the
// block counts and argument checks of every kernel. No GPU: the GPU tests trust these.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "resident/sched/be_kernels.hpp"
#include "resident/sched/be_models.hpp"

namespace resident::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <class F>
std::string invalid_argument_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no invalid_argument)";
}

// ---- references --------------------------------------------------------------------------------

TEST(be_reference, gemm_multiplies_row_major_matrices) {
  const std::vector<double> a{1, 2, 3, 4};
  const std::vector<double> b{5, 6, 7, 8};
  EXPECT_THAT(gemm_reference(a, b, 2, 2, 2), ElementsAre(19, 22, 43, 50));
}

TEST(be_reference, gemm_handles_non_square_shapes) {
  const std::vector<double> a{1, 2, 3};           // 1 x 3
  const std::vector<double> b{1, 0, 0, 1, 1, 1};  // 3 x 2
  EXPECT_THAT(gemm_reference(a, b, 1, 2, 3), ElementsAre(4, 5));
}

TEST(be_reference, gemm_rejects_a_size_that_does_not_match_the_shape) {
  const std::vector<double> a{1, 2, 3};
  const std::vector<double> b{1, 2, 3, 4};
  EXPECT_THAT(invalid_argument_of([&] { (void)gemm_reference(a, b, 2, 2, 2); }),
              HasSubstr("gemm_reference: a has 3 values"));
}

const std::vector<double> one_to_nine{1, 2, 3, 4, 5, 6, 7, 8, 9};  // [1, 1, 3, 3]

TEST(be_reference, conv2d_with_pad_1_sums_each_zero_padded_neighbourhood) {
  const std::vector<double> ones(9, 1.0);
  const conv2d_shape shape{1, 1, 3, 3, 1, 3, 3, 1, 1};
  EXPECT_THAT(conv2d_reference(one_to_nine, ones, shape),
              ElementsAre(12, 21, 16, 27, 45, 33, 24, 39, 28));
}

TEST(be_reference, conv2d_with_stride_2_keeps_every_other_pixel) {
  const std::vector<double> ones(9, 1.0);
  const conv2d_shape shape{1, 1, 3, 3, 1, 3, 3, 2, 1};
  ASSERT_EQ(shape.p(), 2);
  ASSERT_EQ(shape.q(), 2);
  EXPECT_THAT(conv2d_reference(one_to_nine, ones, shape), ElementsAre(12, 16, 24, 28));
}

TEST(be_reference, conv2d_is_a_cross_correlation_not_a_flipped_convolution) {
  // The tap right of centre picks each pixel's right neighbour (0 past the edge).
  const std::vector<double> right{0, 0, 0, 0, 0, 1, 0, 0, 0};
  const conv2d_shape shape{1, 1, 3, 3, 1, 3, 3, 1, 1};
  EXPECT_THAT(conv2d_reference(one_to_nine, right, shape), ElementsAre(2, 3, 0, 5, 6, 0, 8, 9, 0));
}

TEST(be_reference, conv2d_sums_over_input_channels_for_each_output_channel) {
  // Two images of 2 channels of 1 x 2 pixels; 1x1 filters: k0 = c0 + 10 c1, k1 = -c1.
  const std::vector<double> input{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> filter{1, 10, 0, -1};
  const conv2d_shape shape{2, 2, 1, 2, 2, 1, 1, 1, 0};
  EXPECT_THAT(conv2d_reference(input, filter, shape), ElementsAre(31, 42, -3, -4, 75, 86, -7, -8));
}

TEST(be_reference, bias_act_adds_the_channel_bias_then_applies_relu) {
  std::vector<double> x{1, -2, 3, -4, 5, -6};
  const std::vector<double> bias{0.5, -3, 1};
  bias_act_reference(x, bias, 2, activation::relu);
  EXPECT_THAT(x, ElementsAre(1.5, 0, 0, 0, 6, 0));
}

TEST(be_reference, bias_act_without_activation_keeps_negatives_and_wraps_channels) {
  std::vector<double> x(8, 0.0);
  const std::vector<double> bias{1, -2, 3};
  bias_act_reference(x, bias, 2, activation::none);
  EXPECT_THAT(x, ElementsAre(1, 1, -2, -2, 3, 3, 1, 1));  // channel (i / 2) % 3
}

TEST(be_reference, maxpool2d_takes_the_max_of_each_2x2_window_and_drops_an_odd_column) {
  const std::vector<double> x{1,  5, 2,  0,  9,  //
                              3,  4, 8,  1,  9,  //
                              0,  0, -1, -2, 9,  //
                              -3, 7, -4, -5, 9};
  EXPECT_THAT(maxpool2d_reference(x, 1, 1, 4, 5), ElementsAre(5, 8, 7, -1));
}

TEST(be_reference, maxpool2d_pools_each_plane_separately) {
  const std::vector<double> x{1, 2, 3, 4, -1, -2, -3, -4};  // [1, 2, 2, 2]
  EXPECT_THAT(maxpool2d_reference(x, 1, 2, 2, 2), ElementsAre(4, -1));
}

TEST(be_reference, row_sum_adds_each_row) {
  const std::vector<double> x{1, 2, 3, 4, 5, 6};
  EXPECT_THAT(row_sum_reference(x, 2, 3), ElementsAre(6, 15));
}

TEST(be_reference, references_reject_empty_shapes) {
  const std::vector<double> none;
  EXPECT_THAT(invalid_argument_of([&] { (void)row_sum_reference(none, 0, 3); }),
              HasSubstr("row_sum_reference"));
  EXPECT_THAT(invalid_argument_of([&] { (void)maxpool2d_reference(none, 1, 1, 1, 4); }),
              HasSubstr("maxpool2d_reference"));
  EXPECT_THAT(invalid_argument_of([&] {
                (void)conv2d_reference(none, none, conv2d_shape{1, 1, 3, 3, 1, 3, 3, 0, 1});
              }),
              HasSubstr("conv2d_reference"));
}

// ---- block counts and argument checks ---------------------------------------------------------

// The counts never dereference the pointers; they only must not be null.
float dummy[1];

TEST(be_kernel_args, gemm_has_one_block_per_64x64_output_tile) {
  EXPECT_EQ(gemm_blocks({dummy, dummy, dummy, 70, 130, 45}), 2 * 3);
  EXPECT_EQ(gemm_blocks({dummy, dummy, dummy, 64, 64, 1}), 1);
  EXPECT_EQ(gemm_blocks({dummy, dummy, dummy, 1, 1, 1000}), 1);
}

TEST(be_kernel_args, gemm_bias_act_tiles_its_output_like_gemm) {
  EXPECT_EQ(gemm_bias_act_blocks({{dummy, dummy, dummy, 70, 130, 45}, dummy, activation::relu}),
            2 * 3);
  EXPECT_EQ(gemm_bias_act_blocks({{dummy, dummy, dummy, 1, 1, 1000}, dummy, activation::none}), 1);
}

TEST(be_kernel_args, conv2d_tiles_output_pixels_by_output_channels) {
  // p = (11 + 2 - 3) / 2 + 1 = 6, q = (9 + 2 - 3) / 2 + 1 = 5: 2 * 30 = 60 pixels, 1 row tile.
  const conv2d_args a{dummy, dummy, dummy, {2, 3, 11, 9, 70, 3, 3, 2, 1}};
  EXPECT_EQ(a.shape.p(), 6);
  EXPECT_EQ(a.shape.q(), 5);
  EXPECT_EQ(conv2d_blocks(a), 1 * 2);
}

TEST(be_kernel_args, elementwise_kernels_take_1024_elements_per_block) {
  EXPECT_EQ(be_chunk, 1024);
  EXPECT_EQ(bias_act_blocks({dummy, dummy, 2100, 150, 7, activation::relu}), 3);
  EXPECT_EQ(fill_blocks({dummy, 1024, 0.0F}), 1);
  EXPECT_EQ(fill_blocks({dummy, 1025, 0.0F}), 2);
  // [2, 3, 13, 11] pools to [2, 3, 6, 5]: 180 outputs.
  EXPECT_EQ(maxpool2d_blocks({dummy, dummy, 2, 3, 13, 11}), 1);
  EXPECT_EQ(maxpool2d_blocks({dummy, dummy, 4, 16, 64, 64}), 64);  // 65536 outputs
}

TEST(be_kernel_args, row_sum_has_one_block_per_1024_column_chunk_of_each_row) {
  EXPECT_EQ(row_sum_blocks({dummy, dummy, 5, 2500}), 5 * 3);
  EXPECT_EQ(row_sum_blocks({dummy, dummy, 3, 10}), 3);
}

TEST(be_kernel_args, invalid_arguments_name_the_kernel_and_the_field) {
  EXPECT_EQ(invalid_argument_of([] {
              (void)gemm_blocks({dummy, dummy, dummy, 0, 4, 4});
            }),
            "gemm: m must be > 0, got 0");
  EXPECT_EQ(invalid_argument_of([] {
              (void)gemm_blocks({dummy, dummy, dummy, 4, 4, -3});
            }),
            "gemm: k must be > 0, got -3");
  EXPECT_EQ(invalid_argument_of([] {
              (void)gemm_blocks({nullptr, dummy, dummy, 4, 4, 4});
            }),
            "gemm: a is null");
  EXPECT_EQ(invalid_argument_of([] {
              (void)gemm_bias_act_blocks({{dummy, dummy, dummy, 4, 0, 4}, dummy, activation::relu});
            }),
            "gemm_bias_act: gemm.n must be > 0, got 0");
  EXPECT_EQ(
      invalid_argument_of([] {
        (void)gemm_bias_act_blocks({{dummy, dummy, dummy, 4, 4, 4}, nullptr, activation::relu});
      }),
      "gemm_bias_act: bias is null");
  EXPECT_EQ(invalid_argument_of([] {
              (void)gemm_bias_act_blocks(
                  {{dummy, dummy, dummy, 4, 4, 4}, dummy, static_cast<activation>(7)});
            }),
            "gemm_bias_act: act is not an activation (7)");
  EXPECT_THAT(invalid_argument_of([] {
                (void)conv2d_blocks({dummy, dummy, dummy, {1, 1, 8, 8, 4, 3, 3, 0, 1}});
              }),
              HasSubstr("conv2d: stride"));
  EXPECT_THAT(invalid_argument_of([] {
                (void)conv2d_blocks({dummy, dummy, dummy, {1, 1, 2, 8, 4, 5, 3, 1, 1}});
              }),
              HasSubstr("conv2d: r exceeds the padded height"));
  EXPECT_THAT(invalid_argument_of([] {
                (void)conv2d_blocks({dummy, dummy, dummy, {1, 1, 8, 8, 4, 3, 3, 1, -1}});
              }),
              HasSubstr("conv2d: pad"));
  EXPECT_EQ(invalid_argument_of([] {
              (void)bias_act_blocks({dummy, dummy, 16, 1, -1, activation::none});
            }),
            "bias_act: channels must be > 0, got -1");
  EXPECT_EQ(invalid_argument_of([] {
              (void)bias_act_blocks({dummy, nullptr, 16, 1, 4, activation::none});
            }),
            "bias_act: bias is null");
  EXPECT_EQ(invalid_argument_of([] {
              (void)maxpool2d_blocks({dummy, dummy, 1, 1, 1, 8});
            }),
            "maxpool2d: h must be >= 2, got 1");
  EXPECT_EQ(invalid_argument_of([] {
              (void)row_sum_blocks({dummy, dummy, 4, 0});
            }),
            "row_sum: cols must be > 0, got 0");
  EXPECT_EQ(invalid_argument_of([] {
              (void)fill_blocks({dummy, 0, 1.0F});
            }),
            "fill: elements must be > 0, got 0");
}

TEST(be_kernel_args, a_launch_too_large_for_one_grid_is_rejected) {
  EXPECT_THAT(invalid_argument_of([] {
                (void)fill_blocks({dummy, std::int64_t{1} << 42, 0.0F});
              }),
              HasSubstr("do not fit one launch"));
}

TEST(be_kernel_args, calls_carry_the_block_count_and_whether_a_rerun_is_safe) {
  const be_call gemm = make_call("t.gemm", gemm_args{dummy, dummy, dummy, 70, 130, 45});
  EXPECT_EQ(gemm.name, "t.gemm");
  EXPECT_EQ(gemm.blocks, 6);
  EXPECT_TRUE(gemm.idempotent);
  EXPECT_TRUE(static_cast<bool>(gemm.launch));
  // The GEMM-shaped kernels checkpoint a tile of partial sums; the short ones none.
  EXPECT_EQ(gemm.saved_floats, be_tile_state_floats);
  // The fused epilogue never reads C: a rerun is as safe as gemm's, and it checkpoints the same.
  const be_call fused =
      make_call("t.gemm_bias_relu",
                gemm_bias_act_args{{dummy, dummy, dummy, 70, 130, 45}, dummy, activation::relu});
  EXPECT_EQ(fused.blocks, 6);
  EXPECT_TRUE(fused.idempotent);
  EXPECT_EQ(fused.saved_floats, be_tile_state_floats);
  EXPECT_EQ(
      make_call("c", conv2d_args{dummy, dummy, dummy, {1, 1, 3, 3, 1, 3, 3, 1, 1}}).saved_floats,
      be_tile_state_floats);
  EXPECT_EQ(make_call("b", bias_act_args{dummy, dummy, 10, 1, 1, activation::relu}).saved_floats,
            0);
  EXPECT_EQ(make_call("r", row_sum_args{dummy, dummy, 1, 10}).saved_floats, 0);
  EXPECT_TRUE(
      make_call("c", conv2d_args{dummy, dummy, dummy, {1, 1, 3, 3, 1, 3, 3, 1, 1}}).idempotent);
  EXPECT_TRUE(make_call("p", maxpool2d_args{dummy, dummy, 1, 1, 2, 2}).idempotent);
  EXPECT_TRUE(make_call("f", fill_args{dummy, 10, 0.0F}).idempotent);
  EXPECT_FALSE(make_call("b", bias_act_args{dummy, dummy, 10, 1, 1, activation::relu}).idempotent);
  EXPECT_FALSE(make_call("r", row_sum_args{dummy, dummy, 1, 10}).idempotent);
  EXPECT_THROW((void)make_call("bad", fill_args{dummy, 0, 0.0F}), std::invalid_argument);
}

// ---- model arguments (checked before any device allocation) -----------------------------------

TEST(be_kernel_args, models_reject_bad_shapes_before_touching_the_device) {
  EXPECT_THAT(invalid_argument_of([] { mlp_model m(4, {16}, 1); }),
              HasSubstr("mlp_model: widths needs an input and an output width"));
  EXPECT_EQ(invalid_argument_of([] {
              mlp_model m(4, {16, 0, 4}, 1);
            }),
            "mlp_model: widths[1] must be > 0, got 0");
  EXPECT_EQ(invalid_argument_of([] {
              mlp_model m(0, {16, 4}, 1);
            }),
            "mlp_model: batch must be > 0, got 0");
  EXPECT_EQ(invalid_argument_of([] { cnn_model m(-2, 1); }),
            "cnn_model: batch must be > 0, got -2");
}

}  // namespace
}  // namespace resident::sched
