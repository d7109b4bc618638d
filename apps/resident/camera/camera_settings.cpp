// Reading examples/camera.yaml: four sections (camera, pipeline, display, loop), each key checked.

#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "app/config.hpp"
#include "camera/camera.hpp"
#include "resident/app/error.hpp"
#include "resident/io/csi2.hpp"

namespace resident::camera {

namespace {

std::string where(const std::string& origin, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? origin : origin + ":" + std::to_string(m.line + 1);
}

[[noreturn]] void fail(const std::string& origin, const YAML::Node& n, const std::string& what) {
  throw config_error(where(origin, n) + ": " + what);
}

template <class T>
T value(const std::string& origin, const YAML::Node& n, const std::string& key) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    fail(origin, n, "'" + key + "' has a value of the wrong type");
  }
}

// A whole number in [lo, hi] (read as 64 bits first, so -1 is not 2^32 - 1).
std::int64_t whole_in(const std::string& origin, const YAML::Node& n, const std::string& key,
                      std::int64_t lo, std::int64_t hi, const std::string& why = "") {
  const auto v = value<std::int64_t>(origin, n, key);
  if (v < lo || v > hi) {
    fail(origin, n,
         "'" + key + "' is " + n.Scalar() + "; it must be a whole number in [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]" + why);
  }
  return v;
}

// A finite number in [lo, hi] (.inf and .nan are refused by name).
double number_in(const std::string& origin, const YAML::Node& n, const std::string& key, double lo,
                 double hi, const std::string& why = "") {
  const auto v = value<double>(origin, n, key);
  if (!std::isfinite(v) || v < lo || v > hi) {
    std::ostringstream range;
    range << "[" << lo << ", " << hi << "]";
    fail(origin, n,
         "'" + key + "' is " + n.Scalar() + "; it must be a finite number in " + range.str() + why);
  }
  return v;
}

template <class E>
E choose(const std::string& origin, const YAML::Node& n, const std::string& key,
         const std::vector<std::pair<std::string, E>>& options) {
  const auto s = value<std::string>(origin, n, key);
  std::string allowed;
  for (const auto& [name, e] : options) {
    if (name == s) return e;
    allowed += (allowed.empty() ? "" : ", ") + name;
  }
  fail(origin, n, "'" + key + "' is '" + s + "'; allowed: " + allowed);
}

// (name, value) pairs of an enumeration named by to_string(), for choose().
template <class E, std::size_t N>
std::vector<std::pair<std::string, E>> named(const std::array<E, N>& all) {
  std::vector<std::pair<std::string, E>> out;
  for (const E e : all) out.emplace_back(std::string(to_string(e)), e);
  return out;
}

void check_keys(const std::string& origin, const YAML::Node& section, const std::string& name,
                const std::set<std::string>& known) {
  if (!section.IsMap()) fail(origin, section, "'" + name + "' must be a map");
  for (const auto& kv : section) {
    if (!kv.first.IsScalar()) {  // as<std::string>() would throw a bare YAML exception
      fail(origin, kv.first, "a key of '" + name + "' must be a plain name, not a list or map");
    }
    const auto key = kv.first.as<std::string>();
    if (known.count(key) == 0) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      fail(origin, kv.first, "unknown key '" + name + "." + key + "'; known: " + list);
    }
  }
}

void read_camera(const std::string& origin, const YAML::Node& c, camera_settings& s) {
  check_keys(origin, c, "camera",
             {"width", "height", "format", "bayer", "rate_hz", "ring_slots", "photo", "black_level",
              "distinct_frames"});
  auto& k = s.sensor;
  if (c["width"]) {
    k.width = static_cast<std::uint32_t>(
        whole_in(origin, c["width"], "camera.width", 4, limits::max_side, ", a multiple of 4"));
  }
  if (c["height"]) {
    k.height = static_cast<std::uint32_t>(
        whole_in(origin, c["height"], "camera.height", 2, limits::max_side, ", a multiple of 2"));
  }
  if (c["format"]) {
    k.format = choose<io::csi2::raw_format>(origin, c["format"], "camera.format",
                                            named(io::csi2::all_raw_formats));
  }
  if (c["bayer"]) {
    k.order =
        choose<io::bayer_order>(origin, c["bayer"], "camera.bayer", named(io::all_bayer_orders));
  }
  if (c["rate_hz"]) {
    k.rate_hz =
        number_in(origin, c["rate_hz"], "camera.rate_hz", limits::min_rate_hz, limits::max_rate_hz);
  }
  if (c["ring_slots"]) {
    k.ring_slots = static_cast<std::uint32_t>(
        whole_in(origin, c["ring_slots"], "camera.ring_slots", 2, limits::max_ring_slots,
                 " (one slot is read while the bridge writes the next)"));
  }
  if (c["black_level"]) {
    k.black_level = static_cast<std::uint16_t>(
        whole_in(origin, c["black_level"], "camera.black_level", 0, 4095));
  }
  if (c["distinct_frames"]) {
    k.distinct_frames = static_cast<std::uint32_t>(
        whole_in(origin, c["distinct_frames"], "camera.distinct_frames", 1, 64));
  }
  if (c["photo"]) s.photo = value<std::string>(origin, c["photo"], "camera.photo");
}

void read_pipeline(const std::string& origin, const YAML::Node& p, camera_settings& s) {
  check_keys(origin, p, "pipeline",
             {"isp", "isp_grid", "statistics", "demosaic", "white_balance", "gamma"});
  if (p["isp"]) {
    s.isp = choose<std::string>(origin, p["isp"], "pipeline.isp",
                                {{"unfused", "unfused"}, {"fused", "fused"}});
  }
  if (p["isp_grid"]) {
    s.isp_grid = choose<std::string>(origin, p["isp_grid"], "pipeline.isp_grid",
                                     {{"resident", "resident"}, {"tiles", "tiles"}});
  }
  if (p["statistics"]) {
    s.statistics =
        choose<std::string>(origin, p["statistics"], "pipeline.statistics",
                            {{"previous-frame", "previous-frame"}, {"same-frame", "same-frame"}});
  }
  if (p["demosaic"]) {
    s.demosaic =
        choose<std::string>(origin, p["demosaic"], "pipeline.demosaic",
                            {{"malvar", "malvar"}, {"bilinear", "bilinear"}, {"npp", "npp"}});
  }
  if (p["white_balance"]) {
    s.white_balance = choose<std::string>(origin, p["white_balance"], "pipeline.white_balance",
                                          {{"grey_world", "grey_world"}, {"none", "none"}});
  }
  if (p["gamma"]) {
    s.gamma = value<double>(origin, p["gamma"], "pipeline.gamma");
    if (!(s.gamma > 0.0) || !(s.gamma <= limits::max_gamma)) {
      fail(origin, p["gamma"],
           "'pipeline.gamma' is " + p["gamma"].Scalar() + "; it must be positive and at most 10");
    }
  }
}

void read_display(const std::string& origin, const YAML::Node& d, camera_settings& s) {
  check_keys(origin, d, "display", {"refresh_hz", "sync", "present", "min_refresh_hz"});
  auto& k = s.display;
  if (d["refresh_hz"]) {
    k.refresh_hz = number_in(origin, d["refresh_hz"], "display.refresh_hz", limits::min_refresh_hz,
                             limits::max_refresh_hz);
  }
  if (d["min_refresh_hz"]) {
    k.min_refresh_hz = number_in(origin, d["min_refresh_hz"], "display.min_refresh_hz",
                                 limits::min_refresh_hz, limits::max_refresh_hz);
  }
  if (d["sync"]) {
    k.sync = choose<io::display_sync>(
        origin, d["sync"], "display.sync",
        {{"fixed", io::display_sync::fixed}, {"variable", io::display_sync::variable}});
  }
  if (d["present"]) {
    k.mode = choose<io::present_mode>(
        origin, d["present"], "display.present",
        {{"flip", io::present_mode::flip}, {"front_buffer", io::present_mode::front_buffer}});
  }
}

// loop: the loop's deadline and the body's WCET for the timing model's bound (resident run).
void read_loop(const std::string& origin, const YAML::Node& l, camera_settings& s) {
  check_keys(origin, l, "loop", {"deadline_us", "wcet_us"});
  if (l["deadline_us"]) {
    s.deadline_us = number_in(origin, l["deadline_us"], "loop.deadline_us", 0.0, 1e6);
  }
  if (l["wcet_us"]) s.wcet_us = number_in(origin, l["wcet_us"], "loop.wcet_us", 0.0, 1e9);
}

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// What the keys allow one by one still leaves shapes whose buffers are absurd: the frame's
// CSI-2 bytes, the ring of them in GPU memory and the prebuilt frames (host and GPU) are held to
// budgets, and the black level to the format's bits.
void check_shape(const std::string& origin, const YAML::Node& c, const camera_settings& s) {
  const auto& k = s.sensor;
  if (k.width % 4 != 0 || k.height % 2 != 0) {
    fail(origin, c,
         "camera.width must be a multiple of 4 and camera.height a multiple of 2, got " +
             std::to_string(k.width) + "x" + std::to_string(k.height));
  }
  const std::size_t frame = io::csi2::frame_packet_bytes(k.format, k.width, k.height);
  const std::string shape = std::to_string(k.width) + "x" + std::to_string(k.height) + " " +
                            std::string(to_string(k.format));
  if (frame > limits::max_frame_bytes) {
    fail(origin, c,
         "a " + shape + " frame is " + std::to_string(frame) + " bytes of CSI-2 packets; at most " +
             std::to_string(limits::max_frame_bytes) + " (256 MiB) are allowed");
  }
  if (frame * k.ring_slots > limits::max_ring_bytes) {
    fail(origin, c["ring_slots"] ? c["ring_slots"] : c,
         "camera.ring_slots " + std::to_string(k.ring_slots) + " of " + shape + " frames is " +
             std::to_string(frame * k.ring_slots) + " bytes of GPU memory; at most " +
             std::to_string(limits::max_ring_bytes) + " (4 GiB) are allowed");
  }
  if (frame * k.distinct_frames > limits::max_ring_bytes) {
    fail(origin, c["distinct_frames"] ? c["distinct_frames"] : c,
         "camera.distinct_frames " + std::to_string(k.distinct_frames) + " of " + shape +
             " frames is " + std::to_string(frame * k.distinct_frames) +
             " bytes of prebuilt frames; at most " + std::to_string(limits::max_ring_bytes) +
             " (4 GiB) are allowed");
  }
  const unsigned bits = static_cast<unsigned>(k.format);
  const unsigned full = (1U << bits) - 1;
  if (k.black_level >= full) {
    fail(origin, c["black_level"] ? c["black_level"] : c,
         "camera.black_level " + std::to_string(k.black_level) + " must be below the full scale " +
             std::to_string(full) + " of " + std::to_string(bits) + "-bit samples (" +
             std::string(to_string(k.format)) + ")");
  }
}

}  // namespace

camera_settings parse_camera_settings(std::string_view yaml, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw config_error(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap() || !root["camera"]) {
    throw config_error(origin + ": a camera configuration needs a top-level 'camera' section");
  }
  check_keys(origin, root, "<top level>", {"camera", "pipeline", "display", "loop"});
  detail::reject_duplicate_keys(root, origin);
  camera_settings s;
  read_camera(origin, root["camera"], s);
  if (root["pipeline"]) read_pipeline(origin, root["pipeline"], s);
  if (root["display"]) read_display(origin, root["display"], s);
  if (root["loop"]) read_loop(origin, root["loop"], s);
  check_shape(origin, root["camera"], s);
  const bool isp_named = root["pipeline"] && root["pipeline"]["isp"];
  if (!isp_named && (s.demosaic == "npp" || s.display.mode != io::present_mode::flip)) {
    s.isp = "unfused";  // what only the four operators offer, asked for without naming the isp
  }
  if (s.isp == "fused" && s.demosaic == "npp") {
    fail(origin, root["pipeline"],
         "pipeline.isp 'fused' demosaics itself (malvar or bilinear); 'npp' needs isp: unfused");
  }
  if (s.isp == "fused" && s.display.mode != io::present_mode::flip) {
    fail(origin, root["display"],
         "pipeline.isp 'fused' needs display.present 'flip': it learns whether a frame is sound "
         "only after writing it, so a front buffer would show a corrupt frame");
  }
  if (s.display.min_refresh_hz > s.display.refresh_hz) {
    fail(origin, root["display"],
         "display.min_refresh_hz (" + number_text(s.display.min_refresh_hz) +
             ") must be at most display.refresh_hz (" + number_text(s.display.refresh_hz) + ")");
  }
  return s;
}

camera_settings load_camera_settings(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw config_error("cannot read camera configuration " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_camera_settings(text.str(), file.string());
}

bool is_camera_config(const std::filesystem::path& file) {
  try {
    const YAML::Node root = YAML::LoadFile(file.string());
    return root.IsMap() && root["camera"];
  } catch (const YAML::Exception&) {
    return false;
  }
}

camera_mode parse_camera_mode(std::string_view name) {
  if (name == "cpu-hostmem") {
    return {"cpu-hostmem", execution_mode::eager, io::frame_delivery::host};
  }
  try {
    const execution_mode m = parse_execution_mode(name);
    return {std::string(to_string(m)), m, io::frame_delivery::device};
  } catch (const std::exception&) {
    throw config_error("camera mode '" + std::string(name) +
                       "' is not one of cpu-hostmem, eager, host-graph, while, tail, persistent");
  }
}

std::vector<camera_mode> compared_camera_modes() {
  return {parse_camera_mode("cpu-hostmem"), parse_camera_mode("host-graph"),
          parse_camera_mode("while"), parse_camera_mode("tail")};
}

}  // namespace resident::camera
