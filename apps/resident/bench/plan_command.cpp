#include "bench/plan_command.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <ostream>
#include <stdexcept>

#include "resident/partition/planner.hpp"

namespace resident::bench {

int run_plan(const plan_settings& settings, std::ostream& out) {
  // -1 is "not given"; anything else must be a real device size, checked before any file is read.
  if (settings.sm_count != -1 && settings.sm_count <= 0) {
    throw std::invalid_argument("--sm-count must be a positive number of SMs; got " +
                                std::to_string(settings.sm_count));
  }
  auto tasks = partition::load_taskset(settings.file);
  if (settings.sm_count > 0) tasks.device.sm_count = settings.sm_count;
  const auto result = partition::plan(tasks);

  out << "== " << settings.file << " ==\n" << partition::render_text(result);
  if (!settings.json.empty()) {
    auto json = partition::to_json(result);
    json["benchmark"] = "plan";
    json["source"] = settings.file;
    json["sm_count_override"] =
        settings.sm_count > 0 ? nlohmann::json(settings.sm_count) : nlohmann::json();
    std::ofstream file(settings.json);
    file << json.dump(2) << '\n';
    if (!file) throw std::runtime_error("cannot write " + settings.json);
    out << "json: " << settings.json << '\n';
  }
  if (result.feasible) {
    out << settings.file << ": fits\n";
    return 0;
  }
  out << settings.file << ": does not fit (exit status " << plan_does_not_fit << ")\n";
  return plan_does_not_fit;
}

}  // namespace resident::bench
