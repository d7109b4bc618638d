#include "commands/sim_command.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "resident/sim/issue_order.hpp"

namespace resident::bench {

namespace {

/// The lab's own demonstration: the event between the copy and compute streams removed.
constexpr std::string_view lab_drop = "copy->affine";

struct simulation {
  std::string title;
  std::string dropped;  // "FROM->TO", empty for the schedule as given
  std::vector<sim::operation> operations;
};

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

}  // namespace

std::pair<std::string, std::string> parse_drop(std::string_view text) {
  const auto bad = [&] {
    return std::invalid_argument("--drop expects FROM->TO, e.g. copy->affine; got '" +
                                 std::string(text) + "'");
  };
  const auto arrow = text.find("->");
  if (arrow == std::string_view::npos || text.find("->", arrow + 2) != std::string_view::npos) {
    throw bad();
  }
  const auto from = trim(text.substr(0, arrow));
  const auto to = trim(text.substr(arrow + 2));
  if (from.empty() || to.empty()) throw bad();
  return {std::string(from), std::string(to)};
}

int run_sim(const sim_settings& settings, std::ostream& out) {
  const bool builtin = settings.file.empty();
  // Without a file, show the lab's pair: the correct pipeline and the one missing its event.
  const std::string drop = settings.drop.empty() && builtin ? std::string(lab_drop) : settings.drop;
  std::optional<std::pair<std::string, std::string>> dropped;
  if (!drop.empty()) dropped = parse_drop(drop);  // a bad flag fails before any work

  std::vector<simulation> runs;
  const std::string source = builtin ? "lab example" : settings.file;
  runs.push_back({source, {}, builtin ? sim::lab_example() : sim::load_operations(settings.file)});
  if (dropped) {
    const auto& [from, to] = *dropped;
    const std::string edge = from + "->" + to;
    runs.push_back({source + " without " + edge + " (demonstration; does not set the exit status)",
                    edge, sim::without_dependency(runs.front().operations, from, to)});
  }

  auto schedules = nlohmann::json::array();
  std::size_t given_hazards = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    const auto result = sim::schedule(run.operations);
    const auto hazards = sim::find_hazards(run.operations);
    if (i == 0) given_hazards = hazards.size();
    out << "== " << run.title << " ==\n" << sim::render_text(result, hazards);
    if (i == 0 && builtin) {
      out << "result=" << sim::lab_result({1, 2, 3, 4})
          << " (sum of (2x+1)^2 over 1, 2, 3, 4: the pipeline's arithmetic)\n";
    }
    auto json = sim::to_json(result, hazards);
    json["source"] = source;
    json["dropped"] = run.dropped.empty() ? nlohmann::json() : nlohmann::json(run.dropped);
    json["demonstration"] = i != 0;
    schedules.push_back(std::move(json));
  }

  if (!settings.json.empty()) {
    std::ofstream file(settings.json);
    // Names from the YAML are not checked for UTF-8: invalid bytes are written as U+FFFD.
    file << nlohmann::json{{"benchmark", "sim"}, {"schedules", schedules}}.dump(
                2, ' ', false, nlohmann::json::error_handler_t::replace)
         << '\n';
    if (!file) throw std::runtime_error("cannot write " + settings.json);
    out << "json: " << settings.json << '\n';
  }
  if (given_hazards == 0) {
    out << source << ": hazard-free\n";
    return 0;
  }
  out << source << ": " << given_hazards << (given_hazards == 1 ? " hazard" : " hazards")
      << " (exit status " << sim_hazards_found << ")\n";
  return sim_hazards_found;
}

}  // namespace resident::bench
