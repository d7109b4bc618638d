// The imaging operators timed alone, and our demosaic against NPP's (see camera_operators.hpp).

#include "bench/camera/camera_operators.hpp"

#include <algorithm>
#include <functional>
#include <iomanip>
#include <memory>
#include <ostream>
#include <stdexcept>

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/exec/submission.hpp"
#include "resident/imaging/png.hpp"
#include "resident/imaging/reference.hpp"
#include "resident/io/csi2.hpp"
#include "resident/io/display.hpp"
#include "resident/io/frame.hpp"
#include "resident/io/sensor_bridge.hpp"
#include "resident/lab/one_operator_app.hpp"
#include "resident/measure/statistics.hpp"
#include "resident/ops/imaging.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::bench {

namespace {

namespace img = ops::imaging;
using nlohmann::json;

using port_buffer = lab::port_binding;
using one_operator = lab::one_operator_app;

/// An operator submitted on its own: once (to check its output), then timed launch by launch.
class operator_runner {
 public:
  operator_runner(one_operator::factory make, std::vector<port_buffer> inputs,
                  std::vector<port_buffer> outputs)
      : _app(std::move(make), std::move(inputs), std::move(outputs)), _submission(_app) {
    const auto& order = _submission.order();
    const auto it = std::find_if(order.begin(), order.end(),
                                 [](const Operator* op) { return op->name() == "op"; });
    _index = static_cast<std::size_t>(it - order.begin());
  }

  void run_once() {
    _submission.submit_operator(_index, _stream);
    _stream.synchronize();
  }

  /// Device microseconds of each of `reps` launches, after `warmup` untimed ones. Each launch is
  /// timed on its own (and waited for), so no launch queues behind the previous one.
  std::vector<double> times(int reps, int warmup) {
    for (int i = 0; i < warmup; ++i) _submission.submit_operator(_index, _stream);
    _stream.synchronize();
    const event start(true);
    const event stop(true);
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(reps));
    for (int i = 0; i < reps; ++i) {
      start.record(_stream);
      _submission.submit_operator(_index, _stream);
      stop.record(_stream);
      stop.synchronize();
      us.push_back(static_cast<double>(event::elapsed_ms(start, stop)) * 1000.0);
    }
    return us;
  }

 private:
  one_operator _app;
  direct_submission _submission;
  stream _stream;
  std::size_t _index{0};
};

using lab::download;
using lab::upload;

std::int64_t whole(std::uint32_t v) { return static_cast<std::int64_t>(v); }

/// What the camera's sensor makes of the photograph (camera/camera.hpp's defaults: RGGB, the
/// bridge's colour cast, black level 256 at 12 bits, scaled for fewer bits).
std::vector<std::uint16_t> camera_mosaic(const io::rgb8_image& photo, std::uint32_t w,
                                         std::uint32_t h, unsigned bits) {
  const io::sensor_config sensor;
  io::mosaic_options o;
  o.width = w;
  o.height = h;
  o.bits = bits;
  o.order = io::bayer_order::rggb;
  o.black_level = static_cast<std::uint16_t>(sensor.black_level >> (12U - bits));
  std::copy(std::begin(sensor.cast), std::end(sensor.cast), std::begin(o.cast));
  return io::mosaic(photo, o);
}

struct timing_context {
  std::string resolution;
  std::uint32_t w{};
  std::uint32_t h{};
  int reps{};
  int warmup{};
  std::ostream& log;
};

json timed(const timing_context& t, const std::string& name, operator_runner& runner,
           const std::string& checked) {
  const measure::summary s = measure::summarize(runner.times(t.reps, t.warmup));
  t.log << "camera: operator " << t.resolution << " " << name << ": p50 " << std::fixed
        << std::setprecision(1) << s.p50 << " us, p99 " << s.p99 << " us\n";
  return {{"kind", "operator"}, {"operator", name}, {"resolution", t.resolution},
          {"width", t.w},       {"height", t.h},    {"reps", t.reps},
          {"warmup", t.warmup}, {"p50_us", s.p50},  {"p99_us", s.p99},
          {"mean_us", s.mean},  {"min_us", s.min},  {"max_us", s.max},
          {"checked", checked}};
}

/// The photograph as the camera sends it in one RAW format: its mosaic, the frame's CSI-2 packet
/// stream in device memory and a frame_ref to that stream in device memory (frame 1).
struct packet_frame {
  packet_frame(const timing_context& t, const io::rgb8_image& photo, io::csi2::raw_format format)
      : pixels(camera_mosaic(photo, t.w, t.h, static_cast<unsigned>(format))) {
    const auto packets =
        io::csi2::frame_packets(format, t.w, t.h, pixels, io::csi2_frame_number(1));
    stream = upload(std::span<const std::uint8_t>(packets));
    io::frame_ref r{};
    r.packets = stream.data_as<const std::uint8_t>();
    r.bytes = packets.size();
    r.frame = 1;
    ref = upload(std::span<const io::frame_ref>(&r, 1));
  }
  std::vector<std::uint16_t> pixels;
  device_buffer stream;
  device_buffer ref;
};

/// Reconstruction of one RAW format: the frame's packet stream in device memory, a frame_ref
/// to it; the output checked against the mosaic and the integrity record.
json time_reconstruct(const timing_context& t, const io::rgb8_image& photo,
                      io::csi2::raw_format format) {
  const std::string fname(io::csi2::to_string(format));
  const packet_frame frame(t, photo, format);
  const auto& pixels = frame.pixels;
  const device_buffer& ref_memory = frame.ref;
  const std::size_t bayer_bytes = pixels.size() * sizeof(std::uint16_t);
  device_buffer bayer(bayer_bytes);
  device_buffer integrity(sizeof(io::frame_integrity));
  operator_runner runner(
      [&](Application& a) {
        return a.make_operator<img::csi2_reconstruct>(
            "op", arg("width", whole(t.w)), arg("height", whole(t.h)), arg("format", fname),
            arg("order", std::string("rggb")));
      },
      {{"frame", ref_memory.data(), sizeof(io::frame_ref)}},
      {{"bayer", bayer.data(), bayer_bytes},
       {"integrity", integrity.data(), sizeof(io::frame_integrity)}});
  runner.run_once();
  const auto record = download<io::frame_integrity>(integrity, 1).front();
  if (!record.ok() || download<std::uint16_t>(bayer, pixels.size()) != pixels) {
    throw std::runtime_error("bench camera: reconstruct " + fname + " at " + t.resolution +
                             " did not reproduce the frame (" + std::to_string(record.lines) +
                             " of " + std::to_string(record.expected_lines) + " lines passed)");
  }
  return timed(t, "reconstruct " + fname, runner,
               "integrity ok and the Bayer image equal to the mosaic");
}

/// The buffers the later stages read: the ISP's input and output, an RGBA16 image.
struct stage_buffers {
  std::vector<std::uint16_t> raw;
  device_buffer in;
  device_buffer corrected;
  device_buffer rgba16;
};

json time_isp(const timing_context& t, stage_buffers& b) {
  // raw_isp works in place: it runs on a copy of the raw frame in `corrected`, which then holds
  // the corrected frame (restored after the timed runs, which correct it again and again).
  const std::size_t bytes = b.raw.size() * sizeof(std::uint16_t);
  RESIDENT_CUDA_TRY(cudaMemcpy(b.corrected.data(), b.in.data(), bytes, cudaMemcpyDeviceToDevice));
  operator_runner runner(
      [&](Application& a) {
        return a.make_operator<img::raw_isp>(
            "op", arg("width", whole(t.w)), arg("height", whole(t.h)),
            arg("order", std::string("rggb")), arg("bits", std::int64_t{12}),
            arg("black_level", std::int64_t{io::sensor_config{}.black_level}),
            arg("white_balance", std::string("grey_world")));
      },
      {{"in", b.corrected.data(), bytes}}, {});
  runner.run_once();
  const auto want = imaging::reference::raw_isp(b.raw, t.w, t.h, io::bayer_order::rggb, 12,
                                                io::sensor_config{}.black_level, true);
  if (download<std::uint16_t>(b.corrected, b.raw.size()) != want.raw) {
    throw std::runtime_error("bench camera: isp at " + t.resolution +
                             " differs from the CPU reference");
  }
  json result = timed(t, "isp", runner, "equal to reference::raw_isp");
  RESIDENT_CUDA_TRY(cudaMemcpy(b.corrected.data(), want.raw.data(), bytes, cudaMemcpyHostToDevice));
  return result;
}

json time_demosaic(const timing_context& t, stage_buffers& b, const std::string& algorithm) {
  const std::size_t in_bytes = b.raw.size() * sizeof(std::uint16_t);
  const std::size_t out_bytes = b.raw.size() * 8;
  operator_runner runner(
      [&](Application& a) -> std::shared_ptr<Operator> {
#if RESIDENT_HAVE_NPP
        if (algorithm == "npp") {
          return a.make_operator<img::npp_demosaic>("op", arg("width", whole(t.w)),
                                                    arg("height", whole(t.h)),
                                                    arg("order", std::string("rggb")));
        }
#endif
        return a.make_operator<img::demosaic>(
            "op", arg("width", whole(t.w)), arg("height", whole(t.h)),
            arg("order", std::string("rggb")), arg("bits", std::int64_t{12}),
            arg("algorithm", algorithm), arg("output", std::string("rgba16")));
      },
      {{"bayer", b.corrected.data(), in_bytes}}, {{"rgb", b.rgba16.data(), out_bytes}});
  runner.run_once();
  return timed(t, "demosaic " + algorithm, runner,
               "PSNR on photographs (demosaic part); exactness: the GPU tests");
}

json time_egress(const timing_context& t, stage_buffers& b) {
  io::display_config c;
  c.width = t.w;
  c.height = t.h;
  auto screen = std::make_shared<io::display>(c);  // not started: the egress only writes
  io::frame_integrity ok{};
  ok.expected_lines = t.h;
  ok.lines = t.h;
  const device_buffer integrity = upload(std::span<const io::frame_integrity>(&ok, 1));
  operator_runner runner(
      [&](Application& a) {
        return a.make_operator<io::display_tx>("op", screen, arg("gamma", 2.2),
                                               arg("input", std::string("rgba16")));
      },
      {{"rgb", b.rgba16.data(), b.raw.size() * 8},
       {"integrity", integrity.data(), sizeof(io::frame_integrity)}},
      {});
  runner.run_once();
  if (screen->counters().frames_written != 1) {
    throw std::runtime_error("bench camera: the egress at " + t.resolution +
                             " did not write its frame");
  }
  return timed(t, "egress", runner, "the frame written (display counters)");
}

/// p50 of each phase over the last `reps` stamped launches of a fused pass.
json phases_json(const std::vector<img::fused_pass_times>& all, std::size_t reps) {
  const std::size_t n = std::min(reps, all.size());
  const auto p50 = [&](double img::fused_pass_times::*field) {
    std::vector<double> v;
    for (std::size_t i = all.size() - n; i < all.size(); ++i) v.push_back(all[i].*field);
    return measure::summarize(v).p50;
  };
  return {{"launches", n},
          {"tiles_p50_us", p50(&img::fused_pass_times::tiles_us)},
          {"arrival_p50_us", p50(&img::fused_pass_times::arrival_us)},
          {"finish_p50_us", p50(&img::fused_pass_times::finish_us)},
          {"kernel_p50_us", p50(&img::fused_pass_times::total_us)},
          {"method",
           "the kernel's own stamps (%globaltimer): tiles = the first block's start -> the last "
           "block's tiles written; arrival -> the last block to arrive begins the verdict; "
           "finish = the verdict, integrity record, gains and commit; kernel = start -> commit"}};
}

/// The fused pass alone (imaging.camera_isp: RAW12, Malvar, previous-frame statistics): the
/// frame's packet stream in device memory to the display's scanout buffer, integrity checks
/// included. Checked: the frame's integrity record sound and the frame written. `stamped`: the
/// kernel that stamps its phases (a second entry, so the first stays the plain kernel's time).
json time_fused(const timing_context& t, const io::rgb8_image& photo, bool stamped) {
  const auto format = io::csi2::raw_format::raw12;
  const packet_frame frame(t, photo, format);
  const device_buffer& ref_memory = frame.ref;
  device_buffer integrity(sizeof(io::frame_integrity));
  io::display_config c;
  c.width = t.w;
  c.height = t.h;
  auto screen = std::make_shared<io::display>(c);  // not started: the pass only writes
  std::shared_ptr<img::camera_isp> op;
  operator_runner runner(
      [&](Application& a) {
        op = a.make_operator<img::camera_isp>(
            "op", screen, arg("width", whole(t.w)), arg("height", whole(t.h)),
            arg("format", std::string(io::csi2::to_string(format))),
            arg("order", std::string("rggb")));
        if (stamped) op->stamp_phases();
        return op;
      },
      {{"frame", ref_memory.data(), sizeof(io::frame_ref)}},
      {{"integrity", integrity.data(), sizeof(io::frame_integrity)}});
  runner.run_once();
  const auto record = download<io::frame_integrity>(integrity, 1).front();
  if (!record.ok() || screen->counters().frames_written != 1) {
    throw std::runtime_error("bench camera: the fused pass at " + t.resolution +
                             " did not write a sound frame (" + std::to_string(record.lines) +
                             " of " + std::to_string(record.expected_lines) + " lines passed, " +
                             std::to_string(screen->counters().frames_written) + " written)");
  }
  if (!stamped) {
    return timed(t, "fused raw12", runner, "integrity ok and the frame written (display counters)");
  }
  json result =
      timed(t, "fused raw12 stamped", runner, "as fused raw12, with the kernel's phase stamps");
  result["phases"] = phases_json(op->phase_times(), static_cast<std::size_t>(t.reps));
  const json& ph = result["phases"];
  t.log << "camera: fused " << t.resolution << " phases p50 (us): tiles "
        << ph["tiles_p50_us"].get<double>() << ", arrival " << ph["arrival_p50_us"].get<double>()
        << ", finish " << ph["finish_p50_us"].get<double>() << ", kernel "
        << ph["kernel_p50_us"].get<double>() << "\n";
  return result;
}

/// The fused pass against the peer a user would reach for: NPP's demosaic plus the copy to
/// scanout (the egress), their p50s from the same run. Without NPP the result says so.
void add_npp_peer(json& results) {
  const auto p50_of = [&](const std::string& name) -> const json* {
    for (const auto& r : results) {
      if (r.value("operator", "") == name && r.contains("p50_us")) return &r["p50_us"];
    }
    return nullptr;
  };
  for (auto& r : results) {
    if (r.value("operator", "") != "fused raw12") continue;
    const json* npp = p50_of("demosaic npp");
    const json* egress = p50_of("egress");
    r["peer"] = "demosaic npp + egress";
    if (npp == nullptr || egress == nullptr) {
      r["peer_note"] = "not measured: this build has no NPP";
      return;
    }
    const double peer = npp->get<double>() + egress->get<double>();
    r["peer_p50_us"] = peer;
    r["p50_over_peer"] = r["p50_us"].get<double>() / peer;
  }
}

}  // namespace

std::vector<std::string> camera_operator_names() {
  std::vector<std::string> names{"reconstruct raw10", "reconstruct raw12", "isp", "demosaic malvar",
                                 "demosaic bilinear"};
#if RESIDENT_HAVE_NPP
  names.emplace_back("demosaic npp");
#endif
  names.emplace_back("egress");
  names.emplace_back("fused raw12");
  names.emplace_back("fused raw12 stamped");
  return names;
}

json time_camera_operators(const std::string& resolution, std::uint32_t width, std::uint32_t height,
                           const io::rgb8_image& photo, int reps, int warmup, std::ostream& log) {
  const timing_context t{resolution, width, height, reps, warmup, log};
  json results = json::array();
  results.push_back(time_reconstruct(t, photo, io::csi2::raw_format::raw10));
  results.push_back(time_reconstruct(t, photo, io::csi2::raw_format::raw12));
  stage_buffers b;
  b.raw = camera_mosaic(photo, width, height, 12);
  b.in = upload(std::span<const std::uint16_t>(b.raw));
  b.corrected = device_buffer(b.raw.size() * sizeof(std::uint16_t));
  b.rgba16 = device_buffer(b.raw.size() * 8);
  results.push_back(time_isp(t, b));
  results.push_back(time_demosaic(t, b, "malvar"));
  results.push_back(time_demosaic(t, b, "bilinear"));
#if RESIDENT_HAVE_NPP
  results.push_back(time_demosaic(t, b, "npp"));
#endif
  // The egress reads what the last demosaic wrote (Malvar's, or NPP's 12-bit scale: dark, but
  // the same work).
  results.push_back(time_egress(t, b));
  results.push_back(time_fused(t, photo, false));
  results.push_back(time_fused(t, photo, true));
  add_npp_peer(results);
  return results;
}

double psnr_against_photo(std::span<const std::uint16_t> rgba, double full_scale,
                          const io::rgb8_image& photo, std::uint32_t width, std::uint32_t height) {
  if (width > photo.width || height > photo.height ||
      rgba.size() != std::size_t{width} * height * 4 || !(full_scale > 0.0)) {
    throw std::invalid_argument(
        "psnr_against_photo: a " + std::to_string(width) + "x" + std::to_string(height) +
        " RGBA image of " + std::to_string(rgba.size()) + " samples does not fit a " +
        std::to_string(photo.width) + "x" + std::to_string(photo.height) + " photograph");
  }
  std::vector<float> got;
  std::vector<float> want;
  got.reserve(std::size_t{width} * height * 3);
  want.reserve(got.capacity());
  const double to_8bit = 255.0 / full_scale;
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const std::size_t out = (std::size_t{y} * width + x) * 4;
      const std::size_t in = (std::size_t{y} * photo.width + x) * 3;
      for (std::size_t c = 0; c < 3; ++c) {
        got.push_back(static_cast<float>(rgba[out + c] * to_8bit));
        want.push_back(static_cast<float>(photo.rgb[in + c]));
      }
    }
  }
  return imaging::reference::psnr(got, want, 255.0);
}

namespace {

/// One demosaic of `raw` on the GPU into RGBA16 (downloaded).
std::vector<std::uint16_t> gpu_demosaic(const std::vector<std::uint16_t>& raw, std::uint32_t w,
                                        std::uint32_t h, const std::string& algorithm) {
  const device_buffer in = upload(std::span<const std::uint16_t>(raw));
  device_buffer out(raw.size() * 8);
  operator_runner runner(
      [&](Application& a) -> std::shared_ptr<Operator> {
#if RESIDENT_HAVE_NPP
        if (algorithm == "npp") {
          return a.make_operator<img::npp_demosaic>("op", arg("width", whole(w)),
                                                    arg("height", whole(h)),
                                                    arg("order", std::string("rggb")));
        }
#endif
        return a.make_operator<img::demosaic>(
            "op", arg("width", whole(w)), arg("height", whole(h)),
            arg("order", std::string("rggb")), arg("bits", std::int64_t{12}),
            arg("algorithm", algorithm), arg("output", std::string("rgba16")));
      },
      {{"bayer", in.data(), raw.size() * 2}}, {{"rgb", out.data(), raw.size() * 8}});
  runner.run_once();
  return download<std::uint16_t>(out, raw.size() * 4);
}

}  // namespace

json demosaic_quality(const std::vector<std::filesystem::path>& photos, std::ostream& log) {
  json results = json::array();
  for (const auto& path : photos) {
    const io::rgb8_image photo = imaging::read_png(path);
    io::mosaic_options o;
    o.width = photo.width & ~1U;  // a Bayer frame is whole 2x2 cells
    o.height = photo.height & ~1U;
    o.bits = 12;
    o.order = io::bayer_order::rggb;
    o.black_level = 0;
    const auto raw = io::mosaic(photo, o);
    const auto score = [&](const std::string& algorithm, double full) {
      return psnr_against_photo(gpu_demosaic(raw, o.width, o.height, algorithm), full, photo,
                                o.width, o.height);
    };
    json r = {{"kind", "demosaic_quality"},
              {"photo", path.stem().string()},
              {"width", o.width},
              {"height", o.height},
              {"psnr_malvar_db", score("malvar", 65535.0)},
              {"psnr_bilinear_db", score("bilinear", 65535.0)},
              {"psnr_npp_db", nullptr}};
#if RESIDENT_HAVE_NPP
    r["psnr_npp_db"] = score("npp", 4095.0);  // NPP keeps the samples' 12-bit scale
#endif
    log << "camera: demosaic quality " << r["photo"].get<std::string>() << ": " << std::fixed
        << std::setprecision(2) << "malvar " << r["psnr_malvar_db"].get<double>()
        << " dB, bilinear " << r["psnr_bilinear_db"].get<double>() << " dB";
    if (r["psnr_npp_db"].is_number()) log << ", npp " << r["psnr_npp_db"].get<double>() << " dB";
    log << "\n";
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace resident::bench
