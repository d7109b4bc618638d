// Image ports: a descriptor (shape, pixel format, pitch) beside the byte size, checked by
// add_flow at both ends and shown in the DOT dump.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;

/// One image output or one image input (or both), as an imaging operator declares them.
class image_op final : public Operator {
 public:
  image_op(std::optional<image_desc> in, std::optional<image_desc> out) : _in(in), _out(out) {}
  void setup(OperatorSpec& spec) override {
    if (_in) spec.image_input("in", *_in);
    if (_out) spec.image_output("out", *_out);
  }
  void compute(CaptureContext&) override {}

 private:
  std::optional<image_desc> _in;
  std::optional<image_desc> _out;
};

constexpr image_desc hd_rgba8{1920, 1080, pixel_format::rgba8, 0};

TEST(image_desc, sizes_follow_the_format_and_pitch) {
  EXPECT_EQ(hd_rgba8.pitch(), 1920U * 4);
  EXPECT_EQ(hd_rgba8.bytes(), 1920U * 4 * 1080);
  EXPECT_EQ((image_desc{1920, 1080, pixel_format::bayer_rggb16, 4096}).bytes(), 4096U * 1080);
  EXPECT_EQ((image_desc{224, 224, pixel_format::rgb_planar_f32, 0}).bytes(), 224U * 4 * 224 * 3);
  EXPECT_EQ((image_desc{8, 2, pixel_format::rgba16, 0}).bytes(), 8U * 8 * 2);
  // An explicit pitch equal to the tight one describes the same image.
  EXPECT_EQ(hd_rgba8, (image_desc{1920, 1080, pixel_format::rgba8, 7680}));
  EXPECT_EQ(to_string(hd_rgba8), "1920x1080 rgba8, pitch 7680");
}

TEST(image_ports, matching_images_compose_and_size_the_buffer) {
  test_app app([](test_app& t) {
    auto src = t.make_operator<image_op>("demosaic", std::nullopt, hd_rgba8);
    auto dst = t.make_operator<image_op>("egress", hd_rgba8, std::nullopt);
    t.add_flow(src, dst);
  });
  const dag_plan& p = app.plan();
  ASSERT_EQ(p.buffers.size(), 1U);
  EXPECT_EQ(p.buffers[0].bytes, hd_rgba8.bytes());
}

TEST(image_ports, a_mismatch_names_both_ports_and_both_images) {
  test_app app([](test_app& t) {
    auto src = t.make_operator<image_op>("demosaic", std::nullopt, hd_rgba8);
    // Same byte size, other shape: only the descriptor can tell.
    auto dst = t.make_operator<image_op>("egress", image_desc{1080, 1920, pixel_format::rgba8, 0},
                                         std::nullopt);
    t.add_flow(src, dst);
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(demosaic.out -> egress.in): output is image 1920x1080 rgba8, pitch 7680, "
            "input expects image 1080x1920 rgba8, pitch 4320");
}

TEST(image_ports, a_format_or_pitch_mismatch_is_refused_too) {
  for (const image_desc other : {image_desc{1920, 1080, pixel_format::bayer_rggb16, 7680},
                                 image_desc{1920, 1080, pixel_format::rgba8, 8192}}) {
    test_app app([&](test_app& t) {
      auto src = t.make_operator<image_op>("a", std::nullopt, hd_rgba8);
      auto dst = t.make_operator<image_op>("b", other, std::nullopt);
      t.add_flow(src, dst);
    });
    EXPECT_THAT(plan_error(app), HasSubstr("input expects image " + to_string(other)));
  }
}

TEST(image_ports, a_byte_sized_port_takes_an_image_of_its_size) {
  test_app app([](test_app& t) {
    auto src = t.make_operator<image_op>("demosaic", std::nullopt, hd_rgba8);
    auto dst = t.make_operator<ports_op>("raw_sink", std::vector{input("in", hd_rgba8.bytes())});
    t.add_flow(src, dst);
  });
  EXPECT_NO_THROW((void)app.plan());
  test_app wrong([](test_app& t) {
    auto src = t.make_operator<image_op>("demosaic", std::nullopt, hd_rgba8);
    auto dst = t.make_operator<ports_op>("raw_sink", std::vector{input("in", 64)});
    t.add_flow(src, dst);
  });
  EXPECT_THAT(plan_error(wrong), HasSubstr("bytes, input expects 64"));
}

TEST(image_ports, an_empty_image_or_a_short_pitch_is_refused_at_setup) {
  test_app empty([](test_app& t) {
    (void)t.make_operator<image_op>("src", std::nullopt, image_desc{0, 4, pixel_format::rgba8, 0});
  });
  EXPECT_THAT(plan_error(empty), HasSubstr("operator 'src': image_output(\"out\") declares image "
                                           "0x4 rgba8"));
  test_app short_pitch([](test_app& t) {
    (void)t.make_operator<image_op>("src", std::nullopt,
                                    image_desc{16, 4, pixel_format::rgba8, 32});
  });
  EXPECT_THAT(plan_error(short_pitch), HasSubstr("the pitch at least 64 bytes"));
}

TEST(image_ports, the_dot_dump_shows_the_image) {
  test_app app([](test_app& t) {
    auto src = t.make_operator<image_op>("demosaic", std::nullopt, hd_rgba8);
    auto dst = t.make_operator<image_op>("egress", hd_rgba8, std::nullopt);
    t.add_flow(src, dst);
  });
  EXPECT_THAT(app.to_dot(),
              HasSubstr("[label=\"out -> in (1920x1080 rgba8, pitch 7680; 8294400 B)\"]"));
}

}  // namespace
}  // namespace resident::test
