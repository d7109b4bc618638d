// The imaging operators on the GPU, each run on its own (external memory in, external memory
// out, one direct submission) and checked against its CPU reference: CSI-2 reconstruction
// against io::csi2::parse_frame (pixels and every count, corrupted streams included), the raw
// ISP bit for bit, the demosaic within 1 LSB, convert_resize within a stated tolerance.

#include <gmock/gmock.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/support.hpp"
#include "resident/imaging/reference.hpp"
#include "resident/lab/one_operator_app.hpp"
#include "resident/ops/imaging.hpp"

namespace resident::testing {
namespace {

namespace img = ops::imaging;
namespace ref = imaging::reference;
using io::bayer_order;
using io::csi2::raw_format;

constexpr bayer_order all_orders[] = {bayer_order::rggb, bayer_order::bggr, bayer_order::grbg,
                                      bayer_order::gbrg};
const char* name_of(bayer_order o) {
  constexpr const char* names[] = {"rggb", "bggr", "grbg", "gbrg"};
  return names[static_cast<int>(o)];
}

// ---- running one operator on its own ----------------------------------------------------------

using lab::port_binding;
using standalone = lab::one_operator_app;

using lab::download;
using lab::upload;

/// Runs the application once on a fresh stream (direct submission) and waits for it.
void run_once(Application& app) {
  direct_submission sub(app);
  stream s;
  sub.submit(s);
  s.synchronize();
}

std::vector<std::uint16_t> random_raw(std::size_t n, unsigned bits, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) x = static_cast<std::uint16_t>(rng() & ((1U << bits) - 1U));
  return v;
}

// ---- csi2_reconstruct -------------------------------------------------------------------------

constexpr std::uint16_t untouched = 0xABCD;  // what a row no line was unpacked into keeps

struct csi2_case {
  raw_format format{raw_format::raw12};
  std::uint32_t width{64};
  std::uint32_t height{16};
  std::uint64_t frame{4};                   // frame_ref::frame
  std::uint16_t stream_number{4};           // the frame number the packets carry
  std::int64_t bytes_delta{0};              // frame_ref::bytes - the stream's length
  std::optional<std::uint64_t> slot_value;  // *slot_frame, when there is one
  std::size_t misalign{3};                  // the stream's offset past a 16-byte boundary
  std::function<void(std::vector<std::uint8_t>&)> corrupt;  // applied to the packets
};

struct csi2_outcome {
  io::frame_integrity integrity{};
  std::vector<std::uint16_t> bayer;
};

csi2_outcome run_csi2(const csi2_case& c, const std::vector<std::uint8_t>& stream) {
  device_buffer packets(stream.size() + 32);
  auto* base = static_cast<std::uint8_t*>(packets.data()) + c.misalign;
  RESIDENT_CUDA_TRY(cudaMemcpy(base, stream.data(), stream.size(), cudaMemcpyHostToDevice));
  device_buffer slot(sizeof(std::uint64_t));
  if (c.slot_value) {
    RESIDENT_CUDA_TRY(
        cudaMemcpy(slot.data(), &*c.slot_value, sizeof(std::uint64_t), cudaMemcpyHostToDevice));
  }
  io::frame_ref fr{};
  fr.packets = base;
  fr.bytes = static_cast<std::uint64_t>(static_cast<std::int64_t>(stream.size()) + c.bytes_delta);
  fr.frame = c.frame;
  fr.status = 0;
  fr.slot_frame = c.slot_value ? slot.data_as<const std::uint64_t>() : nullptr;
  device_buffer frame(sizeof fr);
  RESIDENT_CUDA_TRY(cudaMemcpy(frame.data(), &fr, sizeof fr, cudaMemcpyHostToDevice));
  const std::size_t pixels = std::size_t{c.width} * c.height;
  device_buffer bayer = upload(std::vector<std::uint16_t>(pixels, untouched));
  device_buffer integrity(sizeof(io::frame_integrity));
  RESIDENT_CUDA_TRY(cudaMemset(integrity.data(), 0xFF, sizeof(io::frame_integrity)));
  const char* formats[] = {"raw8", "raw10", "raw12"};
  const std::string format = formats[(static_cast<int>(c.format) - 8) / 2];
  standalone app(
      [&](Application& a) {
        return a.make_operator<img::csi2_reconstruct>("csi2", arg("width", std::int64_t{c.width}),
                                                      arg("height", std::int64_t{c.height}),
                                                      arg("format", format));
      },
      {{"frame", frame.data(), sizeof fr}},
      {{"bayer", bayer.data(), pixels * 2},
       {"integrity", integrity.data(), sizeof(io::frame_integrity)}});
  run_once(app);
  csi2_outcome out;
  out.bayer = download<std::uint16_t>(bayer, pixels);
  RESIDENT_CUDA_TRY(cudaMemcpy(&out.integrity, integrity.data(), sizeof(io::frame_integrity),
                               cudaMemcpyDeviceToHost));
  return out;
}

/// Runs the case and checks it against parse_frame on the same (possibly corrupted) stream.
io::frame_integrity check_against_parse_frame(const csi2_case& c, std::uint32_t seed = 1) {
  const auto pixels =
      random_raw(std::size_t{c.width} * c.height, static_cast<unsigned>(c.format), seed);
  auto stream = io::csi2::frame_packets(c.format, c.width, c.height, pixels, c.stream_number);
  if (c.corrupt) c.corrupt(stream);
  std::vector<std::uint16_t> want(pixels.size(), untouched);
  io::csi2::frame_check check;
  if (c.bytes_delta == 0) {
    check = io::csi2::parse_frame(stream, c.format, c.width, c.height, want);
  } else {
    check.format_errors = 1;  // parse_frame's verdict on a stream of the wrong length
  }
  const bool fs_mismatch =
      check.frame_number != 0 && check.frame_number != io::csi2_frame_number(c.frame);
  const csi2_outcome got = run_csi2(c, stream);
  const io::frame_integrity& g = got.integrity;
  EXPECT_EQ(g.frame, c.frame);
  EXPECT_EQ(g.bridge_status, 0U);
  EXPECT_EQ(g.expected_lines, c.height);
  EXPECT_EQ(g.lines, check.lines);
  EXPECT_EQ(g.corrected_headers, check.corrected_headers);
  EXPECT_EQ(g.corrupt_headers, check.corrupt_headers);
  EXPECT_EQ(g.crc_errors, check.crc_errors);
  EXPECT_EQ(g.format_errors, check.format_errors + (fs_mismatch ? 1U : 0U));
  EXPECT_EQ(g.overwritten, c.slot_value && *c.slot_value != c.frame ? 1U : 0U);
  EXPECT_TRUE(got.bayer == want) << "pixels differ from parse_frame's";
  return g;
}

/// Byte offset of line y's packet in a frame_packets stream.
std::size_t line_at(const csi2_case& c, std::uint32_t y) {
  return 4 + y * (io::csi2::line_bytes(c.format, c.width) + 6);
}

TEST(csi2_reconstruct, intact_frames_unpack_bit_exact_in_every_format) {
  RESIDENT_REQUIRE_GPU();
  for (const raw_format f : {raw_format::raw8, raw_format::raw10, raw_format::raw12}) {
    // 68 pixels: a partial last chunk of 4; misaligned by 0, 3 and 8 bytes.
    for (const std::size_t misalign : {0, 3, 8}) {
      SCOPED_TRACE("RAW" + std::to_string(static_cast<int>(f)) + " misalign " +
                   std::to_string(misalign));
      csi2_case c;
      c.format = f;
      c.width = 68;
      c.height = 10;
      c.misalign = misalign;
      const io::frame_integrity g =
          check_against_parse_frame(c, static_cast<std::uint32_t>(misalign));
      EXPECT_TRUE(g.ok());
    }
  }
}

TEST(csi2_reconstruct, a_1080p_raw12_frame_is_complete) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.width = 1920;
  c.height = 1080;
  c.frame = 70000;  // past the 16-bit frame number: it wraps (1..65535)
  c.stream_number = io::csi2_frame_number(70000);
  c.slot_value = 70000;
  EXPECT_TRUE(check_against_parse_frame(c).ok());
}

TEST(csi2_reconstruct, one_flipped_header_bit_is_corrected_and_the_line_used) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.corrupt = [&](std::vector<std::uint8_t>& s) { s[line_at(c, 5) + 1] ^= 0x10; };
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.corrected_headers, 1U);
  EXPECT_EQ(g.lines, c.height);
  EXPECT_TRUE(g.ok());
}

TEST(csi2_reconstruct, two_flipped_header_bits_make_a_corrupt_header_and_leave_the_row) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.corrupt = [&](std::vector<std::uint8_t>& s) {
    s[line_at(c, 5)] ^= 0x01;
    s[line_at(c, 5) + 2] ^= 0x40;
  };
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.corrupt_headers, 1U);
  EXPECT_EQ(g.lines, c.height - 1);
  EXPECT_FALSE(g.ok());
}

TEST(csi2_reconstruct, a_flipped_payload_bit_is_a_crc_error) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.corrupt = [&](std::vector<std::uint8_t>& s) { s[line_at(c, 9) + 4 + 37] ^= 0x08; };
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.crc_errors, 1U);
  EXPECT_EQ(g.lines, c.height - 1);
}

TEST(csi2_reconstruct, a_wrong_data_type_or_word_count_is_a_format_error) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  const auto rewrite = [&](std::vector<std::uint8_t>& s, std::uint32_t y, io::csi2::data_type type,
                           std::uint16_t word_count) {
    const auto h = io::csi2::encode_header({0, type, word_count});
    std::copy(h.begin(), h.end(), s.begin() + static_cast<std::ptrdiff_t>(line_at(c, y)));
  };
  const auto line = static_cast<std::uint16_t>(io::csi2::line_bytes(c.format, c.width));
  c.corrupt = [&](std::vector<std::uint8_t>& s) {
    rewrite(s, 2, io::csi2::data_type::raw10, line);
    rewrite(s, 11, io::csi2::data_type::raw12, static_cast<std::uint16_t>(line - 3));
  };
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.format_errors, 2U);
  EXPECT_EQ(g.lines, c.height - 2);
}

TEST(csi2_reconstruct, a_frame_start_of_another_frame_number_is_a_format_error) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.frame = 5;  // the packets say 4
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.format_errors, 1U);
  EXPECT_EQ(g.lines, c.height);
  EXPECT_FALSE(g.ok());
}

TEST(csi2_reconstruct, frame_start_and_end_headers_are_checked_like_lines) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.corrupt = [&](std::vector<std::uint8_t>& s) {
    s[1] ^= 0x02;             // frame start: one bit, corrected
    s[s.size() - 4] ^= 0x03;  // frame end: two bits, corrupt
  };
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.corrected_headers, 1U);
  EXPECT_EQ(g.corrupt_headers, 1U);
}

TEST(csi2_reconstruct, a_stream_of_the_wrong_length_is_one_format_error_and_not_read) {
  RESIDENT_REQUIRE_GPU();
  for (const std::int64_t delta : {-1, 5}) {
    csi2_case c;
    c.bytes_delta = delta;
    const io::frame_integrity g = check_against_parse_frame(c);
    EXPECT_EQ(g.format_errors, 1U);
    EXPECT_EQ(g.lines, 0U);
  }
}

TEST(csi2_reconstruct, a_slot_rewritten_meanwhile_is_reported_overwritten) {
  RESIDENT_REQUIRE_GPU();
  csi2_case c;
  c.slot_value = c.frame + 2;  // the bridge has moved on to a later frame in this slot
  const io::frame_integrity g = check_against_parse_frame(c);
  EXPECT_EQ(g.overwritten, 1U);
  EXPECT_FALSE(g.ok());
  c.slot_value = c.frame;
  EXPECT_TRUE(check_against_parse_frame(c).ok());
}

// ---- raw_isp ------------------------------------------------------------------------------------

std::vector<std::uint16_t> run_isp(const std::vector<std::uint16_t>& raw, std::uint32_t w,
                                   std::uint32_t h, bayer_order order, bool grey_world) {
  // raw_isp works in place: its "out" port lives in its input's buffer, where the result is read.
  device_buffer in = upload(raw);
  standalone app(
      [&](Application& a) {
        return a.make_operator<img::raw_isp>(
            "isp", arg("width", std::int64_t{w}), arg("height", std::int64_t{h}),
            arg("order", std::string(name_of(order))), arg("bits", std::int64_t{12}),
            arg("black_level", std::int64_t{256}),
            arg("white_balance", std::string(grey_world ? "grey_world" : "none")));
      },
      {{"in", in.data(), raw.size() * 2}}, {});
  run_once(app);
  return download<std::uint16_t>(in, raw.size());
}

/// A 12-bit frame with a colour cast and values below the black level too.
std::vector<std::uint16_t> cast_frame(std::uint32_t w, std::uint32_t h, bayer_order order,
                                      std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint16_t> raw(std::size_t{w} * h);
  const double response[3] = {0.55, 1.0, 0.8};
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      const double v = 200.0 + (rng() % 3800) * response[io::bayer_channel(order, x, y)];
      raw[std::size_t{y} * w + x] = static_cast<std::uint16_t>(std::min(v, 4095.0));
    }
  }
  return raw;
}

TEST(raw_isp, equals_the_cpu_reference_bit_for_bit) {
  RESIDENT_REQUIRE_GPU();
  // 62 columns: rows not a whole number of 8-pixel vectors (the scalar path).
  for (const auto& [w, h] : {std::pair{64U, 48U}, std::pair{62U, 10U}, std::pair{1920U, 1080U}}) {
    for (const bayer_order order : all_orders) {
      for (const bool grey_world : {true, false}) {
        SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + " " + name_of(order) +
                     (grey_world ? " grey_world" : " none"));
        const auto raw = cast_frame(w, h, order, w + h);
        const auto want = ref::raw_isp(raw, w, h, order, 12, 256, grey_world).raw;
        EXPECT_TRUE(run_isp(raw, w, h, order, grey_world) == want);
      }
    }
  }
}

TEST(raw_isp, works_in_place) {
  RESIDENT_REQUIRE_GPU();
  const std::uint32_t w = 640;
  const std::uint32_t h = 480;
  const auto raw = cast_frame(w, h, bayer_order::gbrg, 3);
  const auto want = ref::raw_isp(raw, w, h, bayer_order::gbrg, 12, 256, true).raw;
  const img::raw_isp_config config{w, h, bayer_order::gbrg, 12, 256, true};
  const img::raw_isp_workspace ws(config);
  device_buffer frame = upload(raw);
  stream s;
  img::detail::launch_raw_isp(frame.data_as<const std::uint16_t>(), frame.data_as<std::uint16_t>(),
                              std::size_t{w} * 2, ws, s.get());
  s.synchronize();
  EXPECT_TRUE(download<std::uint16_t>(frame, raw.size()) == want);
}

// ---- demosaic -----------------------------------------------------------------------------------

struct demosaic_run {
  std::uint32_t w;
  std::uint32_t h;
  bayer_order order;
  const char* algorithm;
  const char* output;
};

void check_demosaic(const demosaic_run& r, const std::vector<std::uint16_t>& raw) {
  SCOPED_TRACE(std::to_string(r.w) + "x" + std::to_string(r.h) + " " + name_of(r.order) + " " +
               r.algorithm + " " + r.output);
  const std::string output = r.output;
  const std::size_t n = std::size_t{r.w} * r.h;
  const std::size_t out_bytes = output == "rgba16" ? n * 8 : output == "rgba8" ? n * 4 : n * 12;
  device_buffer in = upload(raw);
  device_buffer out(out_bytes);
  standalone app(
      [&](Application& a) {
        return a.make_operator<img::demosaic>(
            "demosaic", arg("width", std::int64_t{r.w}), arg("height", std::int64_t{r.h}),
            arg("order", std::string(name_of(r.order))), arg("bits", std::int64_t{12}),
            arg("algorithm", std::string(r.algorithm)), arg("output", output));
      },
      {{"bayer", in.data(), n * 2}}, {{"rgb", out.data(), out_bytes}});
  run_once(app);
  const float max = 4095.0F;
  const ref::rgb_planes rgb = std::string(r.algorithm) == "malvar"
                                  ? ref::demosaic_malvar(raw, r.w, r.h, r.order, max)
                                  : ref::demosaic_bilinear(raw, r.w, r.h, r.order, max);
  std::size_t bad = 0;
  if (output == "rgba16") {
    const auto want = ref::to_rgba16(rgb, max);
    const auto got = download<std::uint16_t>(out, want.size());
    for (std::size_t i = 0; i < want.size(); ++i) bad += std::abs(got[i] - want[i]) > 1;
  } else if (output == "rgba8") {
    const auto want = ref::to_rgba8(rgb, max);
    const auto got = download<std::uint8_t>(out, want.size());
    for (std::size_t i = 0; i < want.size(); ++i) bad += std::abs(got[i] - want[i]) > 1;
  } else {
    const auto want = ref::to_planar(rgb, r.w, r.h, max);
    const auto got = download<float>(out, want.size());
    for (std::size_t i = 0; i < want.size(); ++i) bad += std::fabs(got[i] - want[i]) > 1.0F / max;
  }
  EXPECT_EQ(bad, 0U) << "values more than 1 LSB from the CPU reference";
}

TEST(demosaic, every_order_algorithm_and_output_is_within_one_lsb_of_the_reference) {
  RESIDENT_REQUIRE_GPU();
  // 64x48, and 100x62: neither side a whole number of 64x16 tiles.
  for (const auto& [w, h] : {std::pair{64U, 48U}, std::pair{100U, 62U}}) {
    const auto raw = random_raw(std::size_t{w} * h, 12, w * h);
    for (const bayer_order order : all_orders) {
      for (const char* algorithm : {"malvar", "bilinear"}) {
        for (const char* output : {"rgba16", "rgba8", "planar_f32"}) {
          check_demosaic({w, h, order, algorithm, output}, raw);
        }
      }
    }
  }
}

TEST(demosaic, a_1080p_frame_is_within_one_lsb_of_the_reference) {
  RESIDENT_REQUIRE_GPU();
  const auto raw = cast_frame(1920, 1080, bayer_order::rggb, 5);
  check_demosaic({1920, 1080, bayer_order::rggb, "malvar", "rgba16"}, raw);
}

TEST(demosaic, tiny_frames_mirror_their_borders_like_the_reference) {
  RESIDENT_REQUIRE_GPU();
  for (const auto& [w, h] : {std::pair{2U, 2U}, std::pair{4U, 2U}, std::pair{6U, 4U}}) {
    check_demosaic({w, h, bayer_order::grbg, "malvar", "rgba16"}, random_raw(w * h, 12, 7));
  }
}

// ---- convert_resize ---------------------------------------------------------------------------

TEST(convert_resize, normalized_planar_output_is_within_1e_5_of_the_reference) {
  // Tolerance: the kernel interpolates in float (source positions in double); 1e-5 of the
  // normalized value is ~4e-6 of full scale after dividing by the smallest std (0.224).
  RESIDENT_REQUIRE_GPU();
  constexpr std::uint32_t iw = 1920;
  constexpr std::uint32_t ih = 1080;
  const auto rgba = random_raw(std::size_t{iw} * ih * 4, 16, 21);
  device_buffer in = upload(rgba);
  device_buffer out(224 * 224 * 3 * sizeof(float));
  standalone app(
      [&](Application& a) {
        return a.make_operator<img::convert_resize>("resize", arg("in_width", std::int64_t{iw}),
                                                    arg("in_height", std::int64_t{ih}));
      },
      {{"in", in.data(), rgba.size() * 2}}, {{"out", out.data(), out.size()}});
  run_once(app);
  const std::vector<double> as_double(rgba.begin(), rgba.end());
  const auto resized = ref::resize_bilinear(as_double, iw, ih, 4, 224, 224);
  const auto want = ref::normalize_planar(resized, 224, 224, 4, 65535.0, {0.485, 0.456, 0.406},
                                          {0.229, 0.224, 0.225});
  const auto got = download<float>(out, want.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
  EXPECT_LE(worst, 1e-5);
}

TEST(convert_resize, rgba8_output_is_within_one_lsb_of_the_reference) {
  RESIDENT_REQUIRE_GPU();
  for (const char* in_format : {"rgba8", "rgba16"}) {
    SCOPED_TRACE(in_format);
    const bool in16 = std::string(in_format) == "rgba16";
    constexpr std::uint32_t iw = 100;
    constexpr std::uint32_t ih = 62;
    constexpr std::uint32_t ow = 37;
    constexpr std::uint32_t oh = 83;  // shrink one way, stretch the other
    const auto values = random_raw(std::size_t{iw} * ih * 4, in16 ? 16 : 8, 23);
    device_buffer in;
    if (in16) {
      in = upload(values);
    } else {
      in = upload(std::vector<std::uint8_t>(values.begin(), values.end()));
    }
    device_buffer out(std::size_t{ow} * oh * 4);
    standalone app(
        [&](Application& a) {
          return a.make_operator<img::convert_resize>(
              "resize", arg("in_width", std::int64_t{iw}), arg("in_height", std::int64_t{ih}),
              arg("in_format", std::string(in_format)), arg("out_width", std::int64_t{ow}),
              arg("out_height", std::int64_t{oh}), arg("out_format", std::string("rgba8")));
        },
        {{"in", in.data(), values.size() * (in16 ? 2 : 1)}}, {{"out", out.data(), out.size()}});
    run_once(app);
    const std::vector<double> as_double(values.begin(), values.end());
    const auto resized = ref::resize_bilinear(as_double, iw, ih, 4, ow, oh);
    const auto got = download<std::uint8_t>(out, out.size());
    const double full = in16 ? 65535.0 : 255.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double want = i % 4 == 3 ? 255.0 : std::round(resized[i] * 255.0 / full);
      ASSERT_LE(std::fabs(got[i] - want), 1.0) << "value " << i;
    }
  }
}

// ---- the chain, captured ---------------------------------------------------------------------

/// frame -> csi2_reconstruct -> raw_isp -> demosaic, all in the caller's memory at both ends.
class camera_chain final : public Application {
 public:
  camera_chain(void* frame, void* integrity, void* rgb)
      : Application("camera_chain"), _frame(frame), _integrity(integrity), _rgb(rgb) {}
  static constexpr std::uint32_t w = 256;
  static constexpr std::uint32_t h = 64;
  void compose() override {
    const auto size = [](std::uint32_t v) { return arg("width", std::int64_t{v}); };
    auto src = make_operator<ops::external_source>("frame_in", _frame, sizeof(io::frame_ref));
    auto csi2 = make_operator<img::csi2_reconstruct>(
        "csi2", size(w), arg("height", std::int64_t{h}), arg("order", std::string("bggr")));
    auto isp = make_operator<img::raw_isp>("isp", size(w), arg("height", std::int64_t{h}),
                                           arg("order", std::string("bggr")));
    auto dem = make_operator<img::demosaic>("demosaic", size(w), arg("height", std::int64_t{h}),
                                            arg("order", std::string("bggr")));
    auto integrity =
        make_operator<ops::external_sink>("integrity_out", _integrity, sizeof(io::frame_integrity));
    auto rgb = make_operator<ops::external_sink>("rgb_out", _rgb, std::size_t{w} * h * 8);
    add_flow(src, csi2, {{"out", "frame"}});
    add_flow(csi2, integrity, {{"integrity", "in"}});
    add_flow(csi2, isp, {{"bayer", "in"}});
    add_flow(isp, dem, {{"out", "bayer"}});
    add_flow(dem, rgb, {{"rgb", "in"}});
  }

 private:
  void* _frame;
  void* _integrity;
  void* _rgb;
};

TEST(imaging_chain, a_captured_graph_replays_the_cpu_chain) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::uint32_t w = camera_chain::w;
  constexpr std::uint32_t h = camera_chain::h;
  const auto pixels = cast_frame(w, h, bayer_order::bggr, 29);
  const auto packets = io::csi2::frame_packets(raw_format::raw12, w, h, pixels, 1);
  device_buffer stream_memory = upload(packets);
  io::frame_ref fr{};
  fr.packets = stream_memory.data_as<const std::uint8_t>();
  fr.bytes = packets.size();
  fr.frame = 1;
  device_buffer frame(sizeof fr);
  RESIDENT_CUDA_TRY(cudaMemcpy(frame.data(), &fr, sizeof fr, cudaMemcpyHostToDevice));
  device_buffer integrity(sizeof(io::frame_integrity));
  device_buffer rgb(std::size_t{w} * h * 8);
  camera_chain app(frame.data(), integrity.data(), rgb.data());
  direct_submission sub(app);
  stream s;
  graph g = sub.capture(s);
  graph_exec exec(g.get());
  const auto isp = ref::raw_isp(pixels, w, h, bayer_order::bggr, 12, 256, true).raw;
  const auto want =
      ref::to_rgba16(ref::demosaic_malvar(isp, w, h, bayer_order::bggr, 4095.0F), 4095.0F);
  for (int replay = 0; replay < 3; ++replay) {
    RESIDENT_CUDA_TRY(cudaMemsetAsync(rgb.data(), 0, rgb.size(), s.get()));
    RESIDENT_CUDA_TRY(cudaMemsetAsync(integrity.data(), 0, integrity.size(), s.get()));
    exec.launch(s);
    s.synchronize();
    io::frame_integrity got{};
    RESIDENT_CUDA_TRY(cudaMemcpy(&got, integrity.data(), sizeof got, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(got.ok()) << "replay " << replay;
    EXPECT_EQ(got.lines, h);
    const auto out = download<std::uint16_t>(rgb, want.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) bad += std::abs(out[i] - want[i]) > 1;
    EXPECT_EQ(bad, 0U) << "replay " << replay;
  }
}

}  // namespace
}  // namespace resident::testing

#if defined(RESIDENT_HAVE_NPP) && RESIDENT_HAVE_NPP
namespace resident::testing {
namespace {

TEST(npp_demosaic, reconstructs_a_flat_colour_with_an_opaque_alpha) {
  // NPP's bilinear filter and borders are its own: a flat colour, which every bilinear
  // demosaic reproduces, is what it must give back exactly (away from the border).
  RESIDENT_REQUIRE_GPU();
  constexpr std::uint32_t w = 64;
  constexpr std::uint32_t h = 48;
  const std::array<std::uint16_t, 3> colour{900, 2000, 450};
  for (const bayer_order order : all_orders) {
    SCOPED_TRACE(name_of(order));
    std::vector<std::uint16_t> raw(std::size_t{w} * h);
    for (std::uint32_t y = 0; y < h; ++y) {
      for (std::uint32_t x = 0; x < w; ++x) {
        raw[std::size_t{y} * w + x] =
            colour[static_cast<std::size_t>(io::bayer_channel(order, x, y))];
      }
    }
    device_buffer in = upload(raw);
    device_buffer out(std::size_t{w} * h * 8);
    standalone app(
        [&](Application& a) {
          return a.make_operator<img::npp_demosaic>("npp", arg("width", std::int64_t{w}),
                                                    arg("height", std::int64_t{h}),
                                                    arg("order", std::string(name_of(order))));
        },
        {{"bayer", in.data(), raw.size() * 2}}, {{"rgb", out.data(), out.size()}});
    run_once(app);
    const auto got = download<std::uint16_t>(out, std::size_t{w} * h * 4);
    for (std::uint32_t y = 2; y + 2 < h; ++y) {
      for (std::uint32_t x = 2; x + 2 < w; ++x) {
        const std::size_t i = (std::size_t{y} * w + x) * 4;
        ASSERT_EQ(got[i], colour[0]) << x << "," << y;
        ASSERT_EQ(got[i + 1], colour[1]) << x << "," << y;
        ASSERT_EQ(got[i + 2], colour[2]) << x << "," << y;
        ASSERT_EQ(got[i + 3], 65535) << x << "," << y;
      }
    }
  }
}

}  // namespace
}  // namespace resident::testing
#endif
