// resident run --deadline-us / --wcet-us / --overheads: the loop's deadline accounting next to
// the timing model's bound (see run.hpp).

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands/run.hpp"
#include "resident/app/error.hpp"
#include "resident/exec/executor.hpp"
#include "resident/partition/planner.hpp"
#include "resident/partition/planner_json.hpp"

namespace resident::cli {

namespace {

// Where `resident run` looks for the overheads when --overheads is not given: the H200's current
// receipt, from the repository's root.
constexpr const char* default_overheads = "bench/results/h200/overhead.json";

}  // namespace

run_settings with_loop_section(const run_settings& s) {
  run_settings out = s;
  if (s.config.empty()) return out;
  YAML::Node root;
  try {
    root = YAML::LoadFile(s.config);
  } catch (const YAML::Exception& e) {
    return out;  // the configuration's own parse reports it, with its position
  }
  if (!root.IsMap() || !root["loop"]) return out;
  const YAML::Node loop = root["loop"];
  const auto at = [&](const YAML::Node& n) {
    return s.config + ":" + std::to_string(n.Mark().line + 1) + ":" +
           std::to_string(n.Mark().column + 1);
  };
  if (!loop.IsMap()) throw config_error(at(loop) + ": 'loop' must be a map (deadline_us, wcet_us)");
  for (const auto& kv : loop) {
    const auto key = kv.first.as<std::string>();
    double* target = key == "deadline_us" ? &out.deadline_us
                     : key == "wcet_us"   ? &out.wcet_us
                                          : nullptr;
    if (target == nullptr) {
      throw config_error(at(kv.first) + ": unknown key 'loop." + key +
                         "'; known: deadline_us, wcet_us");
    }
    const double hi = key == "deadline_us" ? 1e6 : 1e9;
    double v = -1;
    try {
      v = kv.second.as<double>();
    } catch (const YAML::Exception&) {
    }
    if (!(v >= 0 && v <= hi)) {
      throw config_error(at(kv.second) + ": 'loop." + key + "' is " +
                         (kv.second.IsScalar() ? kv.second.Scalar() : std::string("not a number")) +
                         "; it must be a number in [0, " + (key == "deadline_us" ? "1e6" : "1e9") +
                         "]");
    }
    if (!s.given.contains("--" + std::string(key == "deadline_us" ? "deadline-us" : "wcet-us"))) {
      *target = v;
    }
  }
  return out;
}

void check_deadline_options(const run_settings& s) {
  if (s.given.contains("--overheads") && s.wcet_us <= 0) {
    throw std::invalid_argument(
        "--overheads does not apply here: the bound needs the body's WCET too (--wcet-us)");
  }
  if (!s.overheads.empty() && !std::filesystem::is_regular_file(s.overheads)) {
    throw std::invalid_argument("--overheads " + s.overheads + ": no such file");
  }
}

std::string response_bound_text(const run_settings& s, execution_mode mode, double rate_hz) {
  if (s.wcet_us <= 0) return "no bound: no WCET given (--wcet-us)";
  if (mode != execution_mode::while_loop && mode != execution_mode::tail) {
    return "no bound: the timing model covers the while and tail modes";
  }
  const std::string path = !s.overheads.empty()                                  ? s.overheads
                           : std::filesystem::is_regular_file(default_overheads) ? default_overheads
                                                                                 : "";
  if (path.empty()) {
    return "no bound: no overheads receipt (--overheads; resident bench overhead writes one)";
  }
  std::ifstream in(path);
  nlohmann::json receipt;
  try {
    receipt = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("--overheads " + path + ": not JSON (" + e.what() + ")");
  }
  const auto overheads = partition::overheads_from_receipt(receipt, 1.0, path);
  const auto it = overheads.find(mode);
  if (it == overheads.end())
    return "no bound: " + path + " has no " + std::string(to_string(mode)) + " overheads";
  partition::loop_spec loop;
  loop.name = "run";
  loop.rate_hz = rate_hz;
  loop.deadline_us = s.deadline_us > 0 ? s.deadline_us : 1e9;
  loop.sleep_ns = s.sleep_ns;
  loop.mode = mode;
  const int sms = 1 << 20;  // the whole GPU: the WCET was given for it
  loop.wcet_us[sms] = s.wcet_us;
  const double bound = partition::response_bound(loop, it->second, sms);
  char text[160];
  std::snprintf(text, sizeof text, "bound R = %.1f us (WCET %.1f us, overheads %s)", bound,
                s.wcet_us, path.c_str());
  return text;
}

void print_deadline_line(const run_settings& s, const loop_counters& c, const std::string& bound) {
  if (s.deadline_us > 0) {
    std::printf("  deadline %.1f us: %llu of %llu missed (worst overrun %.1f us)", s.deadline_us,
                static_cast<unsigned long long>(c.deadline_misses),
                static_cast<unsigned long long>(c.processed),
                static_cast<double>(c.worst_overrun_ns) / 1e3);
    if (c.max_arrival_response_ns != 0) {
      std::printf(", from arrival %llu missed",
                  static_cast<unsigned long long>(c.arrival_deadline_misses));
    }
    std::printf("\n");
  }
  std::printf("  longest release -> commit %.1f us (observed, device clock); %s\n",
              static_cast<double>(c.max_response_ns) / 1e3, bound.c_str());
}

}  // namespace resident::cli
