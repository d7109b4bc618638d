// resident run: which options apply to which run, and the paths and CPU the options name (see
// run.hpp). --check runs all of it, so a configuration it accepts does not fail on them later.

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "camera/camera.hpp"
#include "commands/run.hpp"

namespace resident::cli {

namespace {

/// The options only one kind of run uses, and what the other kind does instead.
struct option_scope {
  const char* name;
  bool camera;      // true: camera configurations only; false: the lab pipeline only
  const char* why;  // why the other kind ignores it
};

constexpr option_scope scoped_options[] = {
    {"--frames", true, "the lab pipeline releases --samples samples per mode"},
    {"--dump", true, "the lab pipeline has no frames to write"},
    {"--sensor-cpu", true, "the lab pipeline's sensor is the calling thread"},
    {"--samples", false, "a camera run processes --frames frames per mode"},
    {"--rate", false, "a camera configuration sets its rate in camera.rate_hz"},
    {"--elements", false, "a camera configuration sets its frame size in camera.width/height"},
    {"--sleep-ns", false, "camera runs do not take an idle sleep"},
    {"--dot", false, "camera runs do not write their graph"},
    {"--no-fuse", false, "camera runs always use the fused iteration"},
};

bool any_mode(const run_settings& s, bool camera, bool (*test)(execution_mode)) {
  if (s.mode == "all") {
    if (camera) {
      for (const auto& m : camera::compared_camera_modes()) {
        if (test(m.mode)) return true;
      }
      return false;
    }
    for (const auto m : all_execution_modes) {
      if (test(m)) return true;
    }
    return false;
  }
  return test(camera ? camera::parse_camera_mode(s.mode).mode : parse_execution_mode(s.mode));
}

[[noreturn]] void does_not_apply(const std::string& option, const std::string& why) {
  throw std::invalid_argument(option + " does not apply here: " + why);
}

/// `path` or, when it does not exist yet, the nearest folder above it that does.
std::filesystem::path existing_part(const std::filesystem::path& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  while (!p.empty() && !std::filesystem::exists(p) && p != p.parent_path()) p = p.parent_path();
  return p;
}

void check_writable_folder(const std::filesystem::path& folder, const std::string& flag,
                           const std::string& shown) {
  const std::filesystem::path at = existing_part(folder);
  const bool is_folder = std::filesystem::is_directory(at);
  if (!is_folder || ::access(at.c_str(), W_OK | X_OK) != 0) {
    throw std::invalid_argument(
        flag + " " + shown + ": cannot write there (" + at.string() +
        (is_folder ? " is a folder this user cannot write" : " exists and is not a folder") + ")");
  }
}

std::string cpu_list(const cpu_set_t& set) {
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    out += (out.empty() ? "" : ",") + std::to_string(cpu) +
           (last > cpu ? "-" + std::to_string(last) : std::string());
    cpu = last;
  }
  return out;
}

}  // namespace

void check_options_apply(const run_settings& s, bool camera) {
  const std::string kind = camera ? "this is a camera configuration; "
                                  : "this is the lab pipeline (no camera section); ";
  for (const auto& o : scoped_options) {
    if (o.camera != camera && s.given.contains(o.name)) does_not_apply(o.name, kind + o.why);
  }
  const auto persistent = [](execution_mode m) { return m == execution_mode::persistent; };
  const auto not_persistent = [](execution_mode m) { return m != execution_mode::persistent; };
  const auto resident = [](execution_mode m) { return is_resident(m); };
  if (s.persistent_blocks >= 0 && !any_mode(s, camera, persistent)) {
    does_not_apply("--persistent-blocks", "it sizes persistent mode's kernel, and the mode is '" +
                                              s.mode + "'; use it with --mode persistent");
  }
  if (s.no_fuse && !any_mode(s, camera, not_persistent)) {
    does_not_apply("--no-fuse",
                   "persistent mode runs no separate controller or end-marker kernels to keep");
  }
  if (s.given.contains("--poll-ns") && !any_mode(s, camera, resident)) {
    does_not_apply("--poll-ns",
                   "it is the in-kernel polling budget of the GPU-resident modes "
                   "(while, tail, persistent), and the mode is '" +
                       s.mode + "', which polls on the host");
  }
}

void check_run_paths_and_cpu(const run_settings& s) {
  if (!s.dump.empty()) check_writable_folder(s.dump, "--dump", s.dump);
  if (!s.dot.empty()) {
    const std::filesystem::path dot = std::filesystem::absolute(s.dot);
    if (std::filesystem::is_directory(dot)) {
      throw std::invalid_argument("--dot " + s.dot + ": is a folder; give a file name");
    }
    const std::filesystem::path folder = dot.parent_path();
    if (!std::filesystem::is_directory(folder)) {
      throw std::invalid_argument("--dot " + s.dot + ": the folder " + folder.string() +
                                  " does not exist");
    }
    check_writable_folder(folder, "--dot", s.dot);
  }
  if (s.sensor_cpu >= 0) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
      throw std::runtime_error("--sensor-cpu: cannot read this process's CPUs");
    }
    if (s.sensor_cpu >= CPU_SETSIZE || !CPU_ISSET(s.sensor_cpu, &allowed)) {
      throw std::invalid_argument("--sensor-cpu " + std::to_string(s.sensor_cpu) +
                                  ": no such CPU for this process (it may run on CPUs " +
                                  cpu_list(allowed) + ")");
    }
  }
}

}  // namespace resident::cli
