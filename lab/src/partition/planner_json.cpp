#include "resident/partition/planner_json.hpp"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace resident::partition {

namespace {

std::string us(double value) { return format_us(value); }

std::string mode_name(execution_mode mode) { return std::string(to_string(mode)); }

/// The one result named `name` for `mode`; nullptr when there is none.
const nlohmann::json* find_result(const nlohmann::json& results, std::string_view name,
                                  std::string_view mode, const std::string& origin) {
  const nlohmann::json* found = nullptr;
  for (const auto& r : results) {
    if (!r.is_object()) continue;
    const auto n = r.find("name");
    const auto m = r.find("mode");
    if (n == r.end() || m == r.end() || *n != name || *m != mode) continue;
    if (found != nullptr) {
      // A merged receipt could pair one run's busy iteration with another's body; refuse to
      // guess which run is meant.
      throw plan_error(origin + ": " + std::string(name) + " for " + std::string(mode) +
                       " appears more than once; give the receipt of a single run");
    }
    found = &r;
  }
  return found;
}

/// max_us when the result has it, else mean_us; `statistic` says which.
double worst_or_mean(const nlohmann::json& result, std::string_view name, std::string_view mode,
                     const std::string& origin, std::string& statistic) {
  for (const char* key : {"max_us", "mean_us"}) {
    const auto it = result.find(key);
    if (it != result.end() && it->is_number()) {
      statistic = key;
      return it->get<double>();
    }
  }
  throw plan_error(origin + ": " + std::string(name) + " for " + std::string(mode) +
                   " has neither max_us nor mean_us");
}

nlohmann::json read_receipt(const std::filesystem::path& path, const std::string& at) {
  std::ifstream in(path);
  if (!in) throw plan_error(at + ": cannot open overhead receipt " + path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw plan_error(at + ": overhead receipt " + path.string() + " is not JSON: " + e.what());
  }
}

}  // namespace

std::map<execution_mode, overhead_model> overheads_from_receipt(const nlohmann::json& receipt,
                                                                double margin,
                                                                const std::string& origin) {
  if (!std::isfinite(margin) || margin < 1) {
    throw plan_error(origin + ": margin " + us(margin) +
                     " must be >= 1; a margin below 1 shrinks measured overheads");
  }
  if (!receipt.is_object()) throw plan_error(origin + ": not a receipt (expected a JSON object)");
  const auto benchmark = receipt.find("benchmark");
  if (benchmark == receipt.end() || !benchmark->is_string()) {
    throw plan_error(origin + ": not a receipt (no \"benchmark\")");
  }
  if (*benchmark != "overhead") {
    throw plan_error(origin + ": a '" + benchmark->get<std::string>() +
                     "' receipt, not an 'overhead' one (resident bench overhead writes those)");
  }
  const auto results = receipt.find("results");
  if (results == receipt.end() || !results->is_array()) {
    throw plan_error(origin + ": the receipt has no \"results\" list");
  }
  std::map<execution_mode, overhead_model> out;
  for (const auto mode : {execution_mode::while_loop, execution_mode::tail}) {
    const std::string m = mode_name(mode);
    const auto* idle = find_result(*results, "idle_iteration", m, origin);
    const auto* busy = find_result(*results, "busy_iteration", m, origin);
    const auto* body = find_result(*results, "body_to_end_marker", m, origin);
    if (idle == nullptr && busy == nullptr && body == nullptr) continue;
    for (const auto& [name, r] :
         {std::pair<const char*, const nlohmann::json*>{"idle_iteration", idle},
          {"busy_iteration", busy},
          {"body_to_end_marker", body}}) {
      if (r == nullptr) {
        throw plan_error(origin + ": the receipt has " + m + " results but no " + name + " for " +
                         m + "; rerun resident bench overhead");
      }
    }
    // The idle pass is measured only as a mean over all passes (the controller cannot stamp
    // each pass without slowing it); mean_us is all there is, and the margin covers its spread.
    const auto idle_mean = idle->find("mean_us");
    if (idle_mean == idle->end() || !idle_mean->is_number()) {
      throw plan_error(origin + ": idle_iteration for " + m + " has no mean_us");
    }
    std::string busy_stat;
    std::string body_stat;
    const double busy_us = worst_or_mean(*busy, "busy_iteration", m, origin, busy_stat);
    // The fixed part of a busy iteration is bounded by its longest iteration less its shortest
    // body: the two extremes may come from different iterations, so max - max would not bound.
    double body_us = 0;
    if (const auto min = body->find("min_us"); min != body->end() && min->is_number()) {
      body_us = min->get<double>();
      body_stat = "min_us";
    } else {
      body_us = worst_or_mean(*body, "body_to_end_marker", m, origin, body_stat);
    }
    if (busy_us < body_us) {
      throw plan_error(origin + ": busy_iteration " + busy_stat + " for " + m + " (" + us(busy_us) +
                       " us) is below body_to_end_marker " + body_stat + " (" + us(body_us) +
                       " us), which it contains");
    }
    overhead_model o;
    o.idle_pass_us = idle_mean->get<double>() * margin;
    o.busy_fixed_us = (busy_us - body_us) * margin;
    o.source = origin + ": idle pass = idle_iteration mean_us; busy fixed = busy_iteration " +
               busy_stat + " - body_to_end_marker " + body_stat;
    if (margin != 1.0) o.source += ", x" + us(margin) + " margin";
    out.emplace(mode, std::move(o));
  }
  if (out.empty()) {
    throw plan_error(origin +
                     ": the receipt has no while or tail loop overheads (idle_iteration, "
                     "busy_iteration, body_to_end_marker)");
  }
  return out;
}

receipt_reader overhead_receipt_reader() {
  return [](const std::filesystem::path& file, double margin, const std::string& name,
            const std::string& at) {
    return overheads_from_receipt(read_receipt(file, at), margin, name);
  };
}

taskset parse_taskset(std::string_view yaml, const std::string& origin,
                      const std::filesystem::path& base_dir) {
  return parse_taskset(yaml, origin, base_dir, overhead_receipt_reader());
}

taskset load_taskset(const std::filesystem::path& file) {
  return load_taskset(file, overhead_receipt_reader());
}

nlohmann::json to_json(const plan_result& result) {
  auto overheads = nlohmann::json::object();
  for (const auto& [mode, o] : result.overheads) {
    overheads[mode_name(mode)] = {
        {"idle_pass_us", o.idle_pass_us}, {"busy_fixed_us", o.busy_fixed_us}, {"source", o.source}};
  }
  auto loops = nlohmann::json::array();
  for (const auto& p : result.loops) {
    auto sizes = nlohmann::json::array();
    for (const auto& e : p.sizes) {
      sizes.push_back({{"sm", e.sm},
                       {"wcet_us", e.wcet_us},
                       {"busy_us", e.busy_us},
                       {"response_us", e.response_us},
                       {"wait", std::string(to_string(e.wait))},
                       {"keeps_up", e.keeps_up},
                       {"meets_deadline", e.meets_deadline}});
    }
    const bool fits = p.feasible();
    const auto when_fits = [&](auto value) {
      return fits ? nlohmann::json(value) : nlohmann::json();
    };
    loops.push_back({{"name", p.name},
                     {"mode", mode_name(p.mode)},
                     {"verdict", std::string(to_string(p.verdict))},
                     {"period_us", p.period_us},
                     {"deadline_us", p.deadline_us},
                     {"sleep_us", p.sleep_us},
                     {"sm", when_fits(p.sm)},
                     {"device", p.device >= 0 ? nlohmann::json(p.device) : nlohmann::json()},
                     {"wcet_us", when_fits(p.wcet_us)},
                     {"busy_us", when_fits(p.busy_us)},
                     {"response_us", when_fits(p.response_us)},
                     {"slack_us", when_fits(p.slack_us)},
                     {"utilization", when_fits(p.utilization)},
                     {"wait", when_fits(std::string(to_string(p.wait)))},
                     {"reason", p.reason},
                     {"sizes", sizes}});
  }
  return {{"feasible", result.feasible},
          {"device",
           {{"sm_count", result.device.sm_count},
            {"granularity", result.device.granularity},
            {"min_partition", result.device.min_partition},
            {"count", result.device.count}}},
          {"overheads", overheads},
          {"loops", loops},
          {"sm_needed", result.sm_needed},
          {"sm_left", result.sm_left},
          {"sm_used_by_device", result.sm_used_by_device},
          {"reasons", result.reasons}};
}

}  // namespace resident::partition
