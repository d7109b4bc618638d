// Reading examples/camera.yaml: three sections (camera, pipeline, display), each key checked.

#include <yaml-cpp/yaml.h>

#include <array>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "camera/camera.hpp"
#include "resident/app/error.hpp"

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
  if (c["width"]) k.width = value<std::uint32_t>(origin, c["width"], "camera.width");
  if (c["height"]) k.height = value<std::uint32_t>(origin, c["height"], "camera.height");
  if (c["format"]) {
    k.format = choose<io::csi2::raw_format>(origin, c["format"], "camera.format",
                                            named(io::csi2::all_raw_formats));
  }
  if (c["bayer"]) {
    k.order =
        choose<io::bayer_order>(origin, c["bayer"], "camera.bayer", named(io::all_bayer_orders));
  }
  if (c["rate_hz"]) k.rate_hz = value<double>(origin, c["rate_hz"], "camera.rate_hz");
  if (c["ring_slots"]) k.ring_slots = value<std::uint32_t>(origin, c["ring_slots"], "ring_slots");
  if (c["black_level"]) {
    k.black_level = value<std::uint16_t>(origin, c["black_level"], "camera.black_level");
  }
  if (c["distinct_frames"]) {
    k.distinct_frames = value<std::uint32_t>(origin, c["distinct_frames"], "distinct_frames");
  }
  if (c["photo"]) s.photo = value<std::string>(origin, c["photo"], "camera.photo");
}

void read_pipeline(const std::string& origin, const YAML::Node& p, camera_settings& s) {
  check_keys(origin, p, "pipeline", {"demosaic", "white_balance", "gamma"});
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
    if (!(s.gamma > 0.0)) fail(origin, p["gamma"], "'pipeline.gamma' must be positive");
  }
}

void read_display(const std::string& origin, const YAML::Node& d, camera_settings& s) {
  check_keys(origin, d, "display", {"refresh_hz", "sync", "present", "min_refresh_hz"});
  auto& k = s.display;
  if (d["refresh_hz"]) k.refresh_hz = value<double>(origin, d["refresh_hz"], "display.refresh_hz");
  if (d["min_refresh_hz"]) {
    k.min_refresh_hz = value<double>(origin, d["min_refresh_hz"], "display.min_refresh_hz");
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
  check_keys(origin, root, "<top level>", {"camera", "pipeline", "display"});
  camera_settings s;
  read_camera(origin, root["camera"], s);
  if (root["pipeline"]) read_pipeline(origin, root["pipeline"], s);
  if (root["display"]) read_display(origin, root["display"], s);
  if (s.sensor.width % 4 != 0 || s.sensor.height % 2 != 0 || s.sensor.width == 0) {
    throw config_error(origin +
                       ": camera.width must be a positive multiple of 4 and "
                       "camera.height a multiple of 2, got " +
                       std::to_string(s.sensor.width) + "x" + std::to_string(s.sensor.height));
  }
  if (!(s.sensor.rate_hz > 0.0)) throw config_error(origin + ": camera.rate_hz must be positive");
  if (s.sensor.ring_slots < 2) throw config_error(origin + ": camera.ring_slots must be >= 2");
  if (!(s.display.refresh_hz > 0.0)) {
    throw config_error(origin + ": display.refresh_hz must be positive");
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
