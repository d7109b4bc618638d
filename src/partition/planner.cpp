#include "resident/partition/planner.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "app/config.hpp"

namespace resident::partition {

std::string format_us(double value) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << value;
  std::string text = out.str();
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  if (text == "-0") text = "0";
  return text;
}

namespace {

// The bound adds decimal inputs (us from YAML or a receipt) in binary floating point; a response
// exactly equal to its deadline must not fail on the last bit of rounding. 1 ps is far below any
// measured quantity here (%globaltimer counts in 32 ns steps).
constexpr double tolerance_us = 1e-6;

constexpr std::size_t no_loop = static_cast<std::size_t>(-1);

/// The first mistake in a taskset and where it belongs, so the YAML reader can point at the
/// offending value (or the offending loop, when it has no value for the key).
struct problem {
  enum class part { device, overheads, loops, loop };
  part in{};
  std::size_t index{no_loop};  // the loop, for part::loop
  std::string key;             // the key at fault; for part::overheads the mode's name
  std::string message;
};

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

// A rate above 1 MHz has a period under 1 us, below any loop's fixed cost (O_busy is about
// 18 us on the H200); times beyond 1000 s are no real-time deadline or body. Both bounds keep
// the planner's arithmetic and its printed numbers in a sane range (1e308 Hz used to print a
// 300-digit utilization).
constexpr double max_rate_hz = 1e6;
constexpr double max_time_us = 1e9;

std::string us(double value) { return format_us(value); }

std::string hz(double value) {
  std::ostringstream out;
  out << std::setprecision(6) << value;
  return out.str();
}

/// "8, 16, 24, ..., 128" for the device's candidate partition sizes.
std::string size_examples(const device_spec& d) {
  std::vector<int> sizes;
  for (int sm = d.granularity; sm <= d.sm_count && sizes.size() < 4; sm += d.granularity) {
    if (sm >= d.min_partition) sizes.push_back(sm);
  }
  std::string out;
  for (const int sm : sizes) out += (out.empty() ? "" : ", ") + std::to_string(sm);
  const int largest = d.sm_count / d.granularity * d.granularity;
  if (sizes.empty()) return "none up to " + std::to_string(d.sm_count) + " SMs";
  if (largest > sizes.back()) out += ", ..., " + std::to_string(largest);
  return out;
}

std::string mode_name(execution_mode mode) { return std::string(to_string(mode)); }

std::string covered_modes(const std::map<execution_mode, overhead_model>& overheads) {
  if (overheads.empty()) return "none";
  std::string names;
  for (const auto& [mode, model] : overheads) {
    names += (names.empty() ? "" : ", ") + mode_name(mode);
  }
  return names;
}

constexpr int max_devices = 64;

std::optional<problem> find_problem(const taskset& tasks) {
  using part = problem::part;
  const auto& d = tasks.device;
  for (const auto& [key, value] : {std::pair<const char*, int>{"sm_count", d.sm_count},
                                   {"granularity", d.granularity},
                                   {"min_partition", d.min_partition}}) {
    if (value <= 0) {
      return problem{part::device, no_loop, key,
                     std::string("device ") + key + " is " + std::to_string(value) +
                         "; it must be a positive number of SMs"};
    }
  }
  if (d.count < 1 || d.count > max_devices) {
    return problem{part::device, no_loop, "count",
                   "device count is " + std::to_string(d.count) + "; it must be 1 to " +
                       std::to_string(max_devices) + " devices"};
  }
  for (const auto& [mode, model] : tasks.overheads) {
    if (!is_resident(mode)) {
      return problem{part::overheads, no_loop, mode_name(mode),
                     "overheads for mode " + mode_name(mode) +
                         ": only the resident modes while and tail are planned"};
    }
    for (const auto& [key, value] :
         {std::pair<const char*, double>{"idle_pass_us", model.idle_pass_us},
          {"busy_fixed_us", model.busy_fixed_us}}) {
      if (!std::isfinite(value) || value < 0) {
        return problem{part::overheads, no_loop, mode_name(mode),
                       "overhead " + mode_name(mode) + "." + key + " is " + us(value) +
                           "; it must be a finite number of us, >= 0"};
      }
    }
  }
  if (tasks.loops.empty()) return problem{part::loops, no_loop, {}, "no loops to plan"};
  std::map<std::string_view, std::size_t> position;
  for (std::size_t i = 0; i < tasks.loops.size(); ++i) {
    const auto& loop = tasks.loops[i];
    if (loop.name.empty()) {
      return problem{part::loop, i, "name", "loop #" + std::to_string(i + 1) + " has no name"};
    }
    const auto [it, inserted] = position.emplace(loop.name, i);
    if (!inserted) {
      return problem{part::loop, i, "name",
                     "duplicate loop name '" + loop.name + "': loops #" +
                         std::to_string(it->second + 1) + " and #" + std::to_string(i + 1) +
                         "; names must be unique"};
    }
    const std::string who = "loop '" + loop.name + "'";
    if (!finite_positive(loop.rate_hz) || loop.rate_hz > max_rate_hz) {
      return problem{part::loop, i, "rate_hz",
                     who + " has rate_hz " + hz(loop.rate_hz) +
                         "; it must be positive and at most 1000000 Hz"};
    }
    if (!finite_positive(loop.deadline_us) || loop.deadline_us > max_time_us) {
      return problem{part::loop, i, "deadline_us",
                     who + " has deadline_us " + hz(loop.deadline_us) +
                         "; it must be positive and at most 1e9 us"};
    }
    if (!is_resident(loop.mode)) {
      return problem{part::loop, i, "mode",
                     who + " has mode " + mode_name(loop.mode) +
                         "; the planner models the GPU-resident modes while and tail only"};
    }
    if (!tasks.overheads.contains(loop.mode)) {
      return problem{part::loop, i, "mode",
                     who + " runs in mode " + mode_name(loop.mode) +
                         ", but the overheads give none for " + mode_name(loop.mode) +
                         " (they cover: " + covered_modes(tasks.overheads) + ")"};
    }
    // A table left to --profile (a workload and no table) is checked by plan(), not here, so
    // such a taskset still parses.
    if (loop.wcet_us.empty() && loop.workload.empty()) {
      return problem{part::loop, i, "wcet_us",
                     who + " has an empty wcet_us table; give at least one size: us entry"};
    }
    for (const auto& [sm, wcet] : loop.wcet_us) {
      if (sm <= 0) {
        return problem{
            part::loop, i, "wcet_us",
            who + " has a WCET for " + std::to_string(sm) + " SMs; sizes must be positive"};
      }
      if (!finite_positive(wcet) || wcet > max_time_us) {
        return problem{part::loop, i, "wcet_us",
                       who + " has WCET " + hz(wcet) + " us at " + std::to_string(sm) +
                           " SMs; it must be positive and at most 1e9 us"};
      }
      if (sm % d.granularity != 0 || sm < d.min_partition) {
        return problem{part::loop, i, "wcet_us",
                       who + " has a WCET at " + std::to_string(sm) +
                           " SMs, a partition size the device cannot give: sizes are multiples "
                           "of " +
                           std::to_string(d.granularity) + " SMs, at least " +
                           std::to_string(d.min_partition) + " (" + size_examples(d) + ")"};
      }
    }
  }
  return std::nullopt;
}

/// R for a given body WCET: the worse of the two waits, then the sample's own iteration.
size_evaluation evaluate(const loop_spec& loop, const overhead_model& o, int sm, double wcet) {
  size_evaluation e;
  e.sm = sm;
  e.wcet_us = wcet;
  e.busy_us = o.busy_fixed_us + wcet;
  const double idle_wait = o.idle_pass_us + loop.sleep_us();
  e.wait = idle_wait > e.busy_us ? wait_kind::idle_pass : wait_kind::busy_iteration;
  e.response_us = std::max(idle_wait, e.busy_us) + e.busy_us;
  e.keeps_up = e.busy_us <= loop.period_us() + tolerance_us;
  e.meets_deadline = e.response_us <= loop.deadline_us + tolerance_us;
  return e;
}

std::string percent(double fraction) {
  std::ostringstream out;
  const double p = fraction * 100;
  if (std::abs(p) < 1e4) {
    out << std::fixed << std::setprecision(1) << p << '%';
  } else {
    out << std::setprecision(3) << p << '%';  // an overload by orders of magnitude: 3 digits do
  }
  return out.str();
}

/// Plans one loop over the device's candidate sizes, and says why when nothing is feasible.
loop_plan plan_loop(const loop_spec& loop, const overhead_model& o, const std::vector<int>& sizes) {
  loop_plan p;
  p.name = loop.name;
  p.mode = loop.mode;
  p.period_us = loop.period_us();
  p.deadline_us = loop.deadline_us;
  p.sleep_us = loop.sleep_us();
  for (const int sm : sizes) {
    if (const auto wcet = wcet_at(loop, sm)) p.sizes.push_back(evaluate(loop, o, sm, *wcet));
  }
  const std::string who = "loop '" + loop.name + "'";
  if (sizes.empty()) {
    p.verdict = loop_verdict::no_partition;
    p.reason = who + " has no partition size to run on";
    return p;
  }
  if (const auto it = std::find_if(p.sizes.begin(), p.sizes.end(),
                                   [](const size_evaluation& e) { return e.feasible(); });
      it != p.sizes.end()) {
    p.verdict = loop_verdict::fits;
    p.sm = it->sm;
    p.wcet_us = it->wcet_us;
    p.busy_us = it->busy_us;
    p.response_us = it->response_us;
    p.slack_us = loop.deadline_us - it->response_us;
    p.utilization = it->busy_us / p.period_us;
    p.wait = it->wait;
    return p;
  }
  const int largest = sizes.back();
  if (p.sizes.empty()) {
    p.verdict = loop_verdict::no_wcet;
    p.reason = who + " has no WCET at or below any partition size: its wcet_us table starts at " +
               std::to_string(loop.wcet_us.begin()->first) + " SMs, and the largest partition is " +
               std::to_string(largest) + " SMs";
    return p;
  }
  const auto by_busy = [](const size_evaluation& a, const size_evaluation& b) {
    return a.busy_us < b.busy_us;
  };
  if (std::none_of(p.sizes.begin(), p.sizes.end(),
                   [](const size_evaluation& e) { return e.keeps_up; })) {
    const auto& best = *std::min_element(p.sizes.begin(), p.sizes.end(), by_busy);
    p.verdict = loop_verdict::overloaded;
    p.reason = who + " cannot keep up with " + hz(loop.rate_hz) + " Hz (period " + us(p.period_us) +
               " us) at any size up to " + std::to_string(largest) +
               " SMs: its fastest busy iteration, at " + std::to_string(best.sm) +
               " SMs, takes O_busy + B = " + us(o.busy_fixed_us) + " + " + us(best.wcet_us) +
               " = " + us(best.busy_us) + " us (utilization " +
               percent(best.busy_us / p.period_us) + "); " +
               (p.period_us > o.busy_fixed_us
                    ? "it needs B <= " + us(p.period_us - o.busy_fixed_us) + " us"
                    : std::string("no body can keep up: O_busy alone exceeds the period")) +
               ", or a rate of at most " + hz(1e6 / best.busy_us) + " Hz";
    return p;
  }
  // It keeps up somewhere, so the deadline is what fails: report the best response among the
  // sizes where the bound holds at all.
  const size_evaluation* best = nullptr;
  for (const auto& e : p.sizes) {
    if (e.keeps_up && (best == nullptr || e.response_us < best->response_us)) best = &e;
  }
  p.verdict = loop_verdict::misses_deadline;
  const double idle_wait = o.idle_pass_us + loop.sleep_us();
  // R <= D needs both waits to fit: O_pass + δ + O_busy + B <= D and 2 (O_busy + B) <= D.
  const double wcet_needed = std::min(loop.deadline_us - idle_wait - o.busy_fixed_us,
                                      loop.deadline_us / 2 - o.busy_fixed_us);
  std::string need;
  if (wcet_needed > 0) {
    need = "it needs B <= " + us(wcet_needed) + " us (has " + us(best->wcet_us) + ")";
  } else {
    need = "no body can meet it: the fixed overheads alone give R = " +
           us(std::max(idle_wait, o.busy_fixed_us) + o.busy_fixed_us) + " us";
  }
  // A table that stops improving makes every larger size tie with the best: say so, so that
  // nobody reads "on 32 SMs" as "more SMs would help".
  const auto& last = p.sizes.back();
  const bool from_up =
      last.sm != best->sm && last.keeps_up && last.response_us == best->response_us;
  p.reason = who + " misses its " + us(loop.deadline_us) + " us deadline at every size up to " +
             std::to_string(largest) + " SMs: at best, " + (from_up ? "from " : "on ") +
             std::to_string(best->sm) + (from_up ? " SMs up" : " SMs") +
             ", R = " + us(best->response_us) + " us, " + us(best->response_us - loop.deadline_us) +
             " us over; " + need + ", or a deadline of at least " + us(best->response_us) + " us";
  return p;
}

// ---- YAML -----------------------------------------------------------------------------------

using marks = std::map<std::string, YAML::Mark>;

using resident::detail::yaml_where;

[[noreturn]] void fail(const std::string& origin, const YAML::Mark& mark,
                       const std::string& message) {
  throw plan_error(yaml_where(origin, mark) + ": " + message);
}

/// The entries of a map, keys checked to be plain, known and given once; records each value's
/// mark under its key.
class map_reader {
 public:
  map_reader(const YAML::Node& node, std::string who, std::string known, std::string origin)
      : _node(node), _who(std::move(who)), _known(std::move(known)), _origin(std::move(origin)) {}

  template <class F>
  void each(F&& on_entry) {
    for (const auto& entry : _node) {
      if (!entry.first.IsScalar()) {
        fail(_origin, entry.first.Mark(), _who + ": a key must be a plain name, not a list or map");
      }
      const std::string key = entry.first.Scalar();
      if (_seen.contains(key)) {
        fail(_origin, entry.first.Mark(), _who + " gives '" + key + "' twice");
      }
      _seen.emplace(key, entry.second.Mark());
      if (!on_entry(key, entry.second)) {
        fail(_origin, entry.first.Mark(),
             "unknown key '" + key + "' in " + _who + "; keys: " + _known);
      }
    }
  }

  void require(std::initializer_list<const char*> keys) const {
    for (const char* key : keys) {
      if (!_seen.contains(key)) fail(_origin, _node.Mark(), _who + " has no '" + key + "'");
    }
  }

  [[nodiscard]] const marks& seen() const noexcept { return _seen; }

 private:
  const YAML::Node& _node;
  std::string _who;
  std::string _known;
  std::string _origin;
  marks _seen;
};

std::string scalar(const YAML::Node& value, const std::string& key, const std::string& who,
                   const std::string& origin) {
  if (value.IsNull()) fail(origin, value.Mark(), "'" + key + "' of " + who + " has no value");
  if (!value.IsScalar()) {
    fail(origin, value.Mark(),
         "'" + key + "' of " + who + " must be a single value, not a list or map");
  }
  return value.Scalar();
}

double number(const YAML::Node& value, const std::string& key, const std::string& who,
              const std::string& origin) {
  const std::string text = scalar(value, key, who, origin);
  double x = 0;
  try {
    x = value.as<double>();
  } catch (const YAML::Exception&) {
    fail(origin, value.Mark(), "'" + key + "' of " + who + " must be a number, got '" + text + "'");
  }
  if (!std::isfinite(x)) {
    fail(origin, value.Mark(), "'" + key + "' of " + who + " must be finite, got '" + text + "'");
  }
  return x;
}

std::int64_t whole(const YAML::Node& value, const std::string& key, const std::string& who,
                   const std::string& origin) {
  const std::string text = scalar(value, key, who, origin);
  try {
    return value.as<std::int64_t>();
  } catch (const YAML::Exception&) {
    fail(origin, value.Mark(),
         "'" + key + "' of " + who + " must be a whole number, got '" + text + "'");
  }
}

int sm_value(const YAML::Node& value, const std::string& key, const std::string& who,
             const std::string& origin) {
  const std::int64_t n = whole(value, key, who, origin);
  if (n <= 0 || n > 1'000'000) {
    fail(origin, value.Mark(),
         "'" + key + "' of " + who + " must be a positive number of SMs, got " + value.Scalar());
  }
  return static_cast<int>(n);
}

void expect_map(const YAML::Node& value, const std::string& what, const std::string& example,
                const std::string& origin) {
  if (!value.IsMap()) fail(origin, value.Mark(), what + " must be a map, e.g. " + example);
}

device_spec parse_device(const YAML::Node& node, const std::string& origin, marks& seen) {
  expect_map(node, "'device'", "{sm_count: 132, granularity: 8, min_partition: 8}", origin);
  device_spec d;
  map_reader reader(node, "device", "sm_count, granularity, min_partition, count", origin);
  reader.each([&](const std::string& key, const YAML::Node& value) {
    int* field = key == "sm_count"        ? &d.sm_count
                 : key == "granularity"   ? &d.granularity
                 : key == "min_partition" ? &d.min_partition
                 : key == "count"         ? &d.count
                                          : nullptr;
    if (field == nullptr) return false;
    *field = sm_value(value, key, "device", origin);
    return true;
  });
  seen = reader.seen();
  return d;
}

overhead_model parse_mode_overheads(const YAML::Node& node, const std::string& mode,
                                    const std::string& origin) {
  const std::string who = "overheads." + mode;
  expect_map(node, "'" + who + "'", "{idle_pass_us: 10.6, busy_fixed_us: 15.5}", origin);
  overhead_model o;
  o.source = "explicit";
  map_reader reader(node, who, "idle_pass_us, busy_fixed_us", origin);
  reader.each([&](const std::string& key, const YAML::Node& value) {
    double* field = key == "idle_pass_us"    ? &o.idle_pass_us
                    : key == "busy_fixed_us" ? &o.busy_fixed_us
                                             : nullptr;
    if (field == nullptr) return false;
    *field = number(value, key, who, origin);
    if (*field < 0) fail(origin, value.Mark(), "'" + key + "' of " + who + " must be >= 0 us");
    return true;
  });
  reader.require({"idle_pass_us", "busy_fixed_us"});
  return o;
}

std::map<execution_mode, overhead_model> parse_overheads(const YAML::Node& node,
                                                         const std::string& origin,
                                                         const std::filesystem::path& base_dir,
                                                         const receipt_reader& read_receipt,
                                                         marks& seen) {
  expect_map(node, "'overheads'",
             "{receipt: overhead.json} or {while: {idle_pass_us: 10.6, busy_fixed_us: 15.5}}",
             origin);
  std::map<execution_mode, overhead_model> explicit_modes;
  std::string receipt;
  double margin = 1.0;
  map_reader reader(node, "overheads", "while, tail, receipt, margin", origin);
  reader.each([&](const std::string& key, const YAML::Node& value) {
    if (key == "while") {
      explicit_modes[execution_mode::while_loop] = parse_mode_overheads(value, key, origin);
    } else if (key == "tail") {
      explicit_modes[execution_mode::tail] = parse_mode_overheads(value, key, origin);
    } else if (key == "receipt") {
      receipt = scalar(value, key, "overheads", origin);
    } else if (key == "margin") {
      margin = number(value, key, "overheads", origin);
      if (margin < 1) {
        fail(origin, value.Mark(),
             "'margin' of overheads is " + value.Scalar() +
                 "; it must be >= 1 (a margin below 1 shrinks measured overheads, and R would "
                 "no longer bound anything)");
      }
    } else {
      return false;
    }
    return true;
  });
  seen = reader.seen();
  std::map<execution_mode, overhead_model> out;
  if (!receipt.empty()) {
    const std::string at = yaml_where(origin, seen.at("receipt"));
    try {
      if (!read_receipt) {
        throw plan_error(at +
                         ": this build reads no overhead receipts (resident::lab's "
                         "partition::load_taskset does); give while/tail overheads instead");
      }
      out = read_receipt(base_dir / receipt, margin, receipt, at);
    } catch (const plan_error& e) {
      const std::string message = e.what();
      // read_receipt already located its errors; the receipt's own ones get the YAML location.
      throw plan_error(message.starts_with(at) ? message : at + ": " + message);
    }
  }
  // Values written out override the receipt's for their mode: a receipt without tail, or a
  // mode measured elsewhere.
  for (auto& [mode, model] : explicit_modes) {
    model.idle_pass_us *= margin;
    model.busy_fixed_us *= margin;
    if (margin != 1.0) model.source += ", x" + us(margin) + " margin";
    out[mode] = model;
  }
  if (out.empty()) {
    fail(origin, node.Mark(), "'overheads' give no mode: add a receipt, while or tail");
  }
  return out;
}

std::map<int, double> parse_wcet(const YAML::Node& node, const std::string& who,
                                 const std::string& origin) {
  if (!node.IsMap() || node.size() == 0) {
    fail(origin, node.Mark(),
         "'wcet_us' of " + who + " must be a map of SMs to us, e.g. {8: 180, 16: 100, 32: 60}");
  }
  std::map<int, double> table;
  for (const auto& entry : node) {
    const std::string what = "wcet_us of " + who;
    if (!entry.first.IsScalar()) {
      fail(origin, entry.first.Mark(), what + ": a size must be a number");
    }
    std::int64_t sm = 0;
    try {
      sm = entry.first.as<std::int64_t>();
    } catch (const YAML::Exception&) {
      sm = 0;
    }
    if (sm <= 0 || sm > 1'000'000) {
      fail(origin, entry.first.Mark(),
           what + ": sizes must be positive whole numbers of SMs, got '" + entry.first.Scalar() +
               "'");
    }
    if (table.contains(static_cast<int>(sm))) {
      fail(origin, entry.first.Mark(), what + " gives " + std::to_string(sm) + " SMs twice");
    }
    const double wcet = number(entry.second, std::to_string(sm), what, origin);
    if (wcet <= 0) {
      fail(origin, entry.second.Mark(),
           what + " at " + std::to_string(sm) + " SMs must be positive, got " +
               entry.second.Scalar());
    }
    table.emplace(static_cast<int>(sm), wcet);
  }
  return table;
}

loop_spec parse_loop(const YAML::Node& node, std::size_t index, const std::string& origin,
                     marks& seen) {
  std::string who = "loop #" + std::to_string(index + 1);
  constexpr const char* known = "name, rate_hz, deadline_us, sleep_ns, mode, wcet_us, workload";
  if (!node.IsMap()) fail(origin, node.Mark(), who + " must be a map with keys " + known);
  // Name the loop in later messages when it has a usable name, wherever the key sits.
  if (const auto name = node["name"]; name && name.IsScalar() && !name.Scalar().empty()) {
    who = "loop '" + name.Scalar() + "'";
  }
  loop_spec loop;
  map_reader reader(node, who, known, origin);
  reader.each([&](const std::string& key, const YAML::Node& value) {
    if (key == "name") {
      loop.name = scalar(value, key, who, origin);
    } else if (key == "rate_hz") {
      loop.rate_hz = number(value, key, who, origin);
    } else if (key == "deadline_us") {
      loop.deadline_us = number(value, key, who, origin);
    } else if (key == "sleep_ns") {
      const std::int64_t ns = whole(value, key, who, origin);
      if (ns < 0) {
        fail(origin, value.Mark(),
             "'sleep_ns' of " + who + " must be >= 0 (0 spins), got " + value.Scalar());
      }
      loop.sleep_ns = static_cast<std::uint64_t>(ns);
    } else if (key == "mode") {
      const std::string text = scalar(value, key, who, origin);
      if (text != "while" && text != "tail") {
        fail(origin, value.Mark(),
             "'mode' of " + who + " is '" + text +
                 "'; the planner models the GPU-resident modes: while, tail");
      }
      loop.mode = text == "while" ? execution_mode::while_loop : execution_mode::tail;
    } else if (key == "wcet_us") {
      loop.wcet_us = parse_wcet(value, who, origin);
    } else if (key == "workload") {
      loop.workload = scalar(value, key, who, origin);
    } else {
      return false;
    }
    return true;
  });
  reader.require({"name", "rate_hz", "deadline_us"});
  if (loop.wcet_us.empty() && loop.workload.empty()) {
    fail(origin, node.Mark(),
         who + " needs wcet_us (SMs: us) or a workload for resident plan --profile to measure");
  }
  seen = reader.seen();
  return loop;
}

taskset parse_document(const std::string& yaml, const std::string& origin,
                       const std::filesystem::path& base_dir, const receipt_reader& read_receipt) {
  constexpr const char* top_keys = "device, overheads, loops";
  const YAML::Node root = YAML::Load(yaml);
  if (root.IsNull()) {
    fail(origin, root.Mark(), std::string("empty file; expected keys ") + top_keys);
  }
  if (!root.IsMap()) fail(origin, root.Mark(), std::string("expected a map with keys ") + top_keys);
  taskset tasks;
  marks device_marks;
  marks overhead_marks;
  std::vector<marks> loop_marks;
  std::vector<YAML::Mark> loop_nodes;
  YAML::Mark loops_mark;
  map_reader reader(root, "the taskset", top_keys, origin);
  reader.each([&](const std::string& key, const YAML::Node& value) {
    if (key == "device") {
      tasks.device = parse_device(value, origin, device_marks);
    } else if (key == "overheads") {
      tasks.overheads = parse_overheads(value, origin, base_dir, read_receipt, overhead_marks);
    } else if (key == "loops") {
      loops_mark = value.Mark();
      if (!value.IsSequence()) fail(origin, value.Mark(), "'loops' must be a list of loops");
      for (const auto& node : value) {
        loop_marks.emplace_back();
        loop_nodes.push_back(node.Mark());
        tasks.loops.push_back(parse_loop(node, tasks.loops.size(), origin, loop_marks.back()));
      }
    } else {
      return false;
    }
    return true;
  });
  reader.require({"overheads", "loops"});
  if (const auto p = find_problem(tasks)) {
    const auto at = [](const marks& m, const std::string& key, const YAML::Mark& otherwise) {
      const auto it = m.find(key);
      return it == m.end() ? otherwise : it->second;
    };
    YAML::Mark mark = root.Mark();
    switch (p->in) {
      case problem::part::device:
        mark = at(device_marks, p->key, root.Mark());
        break;
      case problem::part::overheads:
        mark = at(overhead_marks, p->key, root.Mark());
        break;
      case problem::part::loops:
        mark = loops_mark;
        break;
      case problem::part::loop:
        mark = at(loop_marks[p->index], p->key, loop_nodes[p->index]);
        break;
    }
    fail(origin, mark, p->message);
  }
  return tasks;
}

}  // namespace

void validate(const taskset& tasks) {
  if (const auto p = find_problem(tasks)) throw plan_error(p->message);
}

std::vector<int> candidate_sizes(const device_spec& device) {
  std::vector<int> sizes;
  if (device.granularity <= 0) return sizes;
  for (int sm = device.granularity; sm <= device.sm_count; sm += device.granularity) {
    if (sm >= device.min_partition) sizes.push_back(sm);
  }
  return sizes;
}

std::optional<double> wcet_at(const loop_spec& loop, int sm) {
  // upper_bound finds the first profiled size above sm; the one before it is the largest <= sm.
  auto it = loop.wcet_us.upper_bound(sm);
  if (it == loop.wcet_us.begin()) return std::nullopt;
  return std::prev(it)->second;
}

double response_bound(const loop_spec& loop, const overhead_model& overhead, int sm) {
  const auto wcet = wcet_at(loop, sm);
  if (!wcet) {
    throw plan_error(
        "loop '" + loop.name + "' has no WCET at or below " + std::to_string(sm) + " SMs" +
        (loop.wcet_us.empty()
             ? std::string(": its wcet_us table is empty")
             : ": its table starts at " + std::to_string(loop.wcet_us.begin()->first)));
  }
  return evaluate(loop, overhead, sm, *wcet).response_us;
}

std::string_view to_string(wait_kind kind) noexcept {
  switch (kind) {
    case wait_kind::idle_pass:
      return "idle pass";
    case wait_kind::busy_iteration:
      return "busy iteration";
  }
  return "unknown";
}

std::string_view to_string(loop_verdict verdict) noexcept {
  switch (verdict) {
    case loop_verdict::fits:
      return "fits";
    case loop_verdict::no_partition:
      return "no_partition";
    case loop_verdict::no_wcet:
      return "no_wcet";
    case loop_verdict::overloaded:
      return "overloaded";
    case loop_verdict::misses_deadline:
      return "misses_deadline";
  }
  return "unknown";
}

namespace {

/// Spreads the loops' smallest partitions over device.count identical devices, largest first,
/// each on the first device with room (first-fit decreasing: quick and usually tight, not
/// optimal). A loop that finds no room leaves the taskset infeasible, with the reason.
void place_on_devices(const device_spec& d, plan_result& result) {
  result.sm_used_by_device.assign(static_cast<std::size_t>(d.count), 0);
  std::vector<std::size_t> order(result.loops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return result.loops[a].sm > result.loops[b].sm;
  });
  std::string unplaced;
  for (const std::size_t i : order) {
    loop_plan& p = result.loops[i];
    for (int dev = 0; dev < d.count; ++dev) {
      int& used = result.sm_used_by_device[static_cast<std::size_t>(dev)];
      if (used + p.sm <= d.sm_count) {
        used += p.sm;
        p.device = dev;
        break;
      }
    }
    if (p.device < 0)
      unplaced += (unplaced.empty() ? "" : ", ") + p.name + " (" + std::to_string(p.sm) + " SMs)";
  }
  if (!unplaced.empty()) {
    result.reasons.push_back("the loops' smallest partitions (" + std::to_string(result.sm_needed) +
                             " SMs in all) do not fit on " + std::to_string(d.count) +
                             " devices of " + std::to_string(d.sm_count) +
                             " SMs placed largest first: no room left for " + unplaced);
  }
}

}  // namespace

plan_result plan(const taskset& tasks) {
  validate(tasks);
  for (const auto& loop : tasks.loops) {
    if (loop.wcet_us.empty()) {
      throw plan_error("loop '" + loop.name + "' has no wcet_us table yet: run resident plan " +
                       "--profile to measure its workload '" + loop.workload + "'");
    }
  }
  plan_result result;
  result.device = tasks.device;
  result.overheads = tasks.overheads;
  const auto sizes = candidate_sizes(tasks.device);
  if (sizes.empty()) {
    const auto& d = tasks.device;
    result.reasons.push_back("no partition size fits the device: partitions are multiples of " +
                             std::to_string(d.granularity) + " SMs, at least " +
                             std::to_string(d.min_partition) + ", and the device has " +
                             std::to_string(d.sm_count) + " SMs");
  }
  bool every_loop_fits = true;
  for (const auto& loop : tasks.loops) {
    auto p = plan_loop(loop, tasks.overheads.at(loop.mode), sizes);
    if (p.feasible()) {
      result.sm_needed += p.sm;
    } else {
      every_loop_fits = false;
      // One device-wide reason covers every loop when there is no size at all.
      if (!sizes.empty()) result.reasons.push_back(p.reason);
    }
    result.loops.push_back(std::move(p));
  }
  result.sm_left = tasks.device.count * tasks.device.sm_count - result.sm_needed;
  if (every_loop_fits && tasks.device.count > 1) {
    place_on_devices(tasks.device, result);
  } else if (every_loop_fits && result.sm_left >= 0) {
    result.sm_used_by_device = {result.sm_needed};
    for (auto& p : result.loops) p.device = 0;
  }
  if (every_loop_fits && tasks.device.count == 1 && result.sm_left < 0) {
    std::string parts;
    for (const auto& p : result.loops) {
      parts += (parts.empty() ? "" : " + ") + p.name + " " + std::to_string(p.sm);
    }
    result.reasons.push_back("the loops' smallest partitions need " +
                             std::to_string(result.sm_needed) + " SMs (" + parts +
                             "), the device has " + std::to_string(tasks.device.sm_count) +
                             ": short by " + std::to_string(-result.sm_left) + " SMs");
  }
  result.feasible = result.reasons.empty();
  return result;
}

taskset parse_taskset(std::string_view yaml, const std::string& origin,
                      const std::filesystem::path& base_dir, const receipt_reader& read_receipt) {
  try {
    return parse_document(std::string(yaml), origin, base_dir, read_receipt);
  } catch (const YAML::Exception& e) {
    // Syntax errors and anything yaml-cpp rejects later still get the repo's origin:line:col.
    throw plan_error(yaml_where(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
}

taskset load_taskset(const std::filesystem::path& file, const receipt_reader& read_receipt) {
  std::ifstream in(file);
  if (!in) throw plan_error("cannot open taskset file " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_taskset(text.str(), file.string(), file.parent_path(), read_receipt);
}

std::string render_text(const plan_result& result) {
  std::ostringstream out;
  const auto& d = result.device;
  const auto sizes = candidate_sizes(d);
  out << "device: " << (d.count > 1 ? std::to_string(d.count) + " x " : std::string()) << d.sm_count
      << " SMs, partitions of ";
  if (sizes.empty()) {
    out << "none (multiples of " << d.granularity << ", at least " << d.min_partition << ")\n";
  } else {
    out << sizes.front() << " to " << sizes.back() << " SMs in steps of " << d.granularity << '\n';
  }
  for (const auto& [mode, o] : result.overheads) {
    out << "overheads " << mode_name(mode) << ": idle pass " << us(o.idle_pass_us)
        << " us, busy fixed " << us(o.busy_fixed_us) << " us (" << o.source << ")\n";
  }
  std::vector<std::vector<std::string>> rows{
      {"loop", "mode", "SMs", "B us", "R us", "D us", "slack us", "util", "wait"}};
  const bool several = d.count > 1;
  if (several) rows.front().insert(rows.front().begin() + 3, "GPU");
  for (const auto& p : result.loops) {
    if (p.feasible()) {
      rows.push_back({p.name, mode_name(p.mode), std::to_string(p.sm), us(p.wcet_us),
                      us(p.response_us), us(p.deadline_us), us(p.slack_us), percent(p.utilization),
                      std::string(to_string(p.wait))});
    } else {
      rows.push_back({p.name, mode_name(p.mode), "-", "-", "-", us(p.deadline_us), "-", "-",
                      std::string(to_string(p.verdict))});
    }
    if (several) {
      rows.back().insert(rows.back().begin() + 3,
                         p.device >= 0 ? std::to_string(p.device) : std::string("-"));
    }
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      // Names and words left-aligned, numbers right-aligned so their digits line up.
      const bool left = c == 0 || c == 1 || c + 1 == row.size();
      const std::string pad(width[c] - row[c].size(), ' ');
      line += (c == 0 ? "" : "  ") + (left ? row[c] + pad : pad + row[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
  if (result.feasible) {
    out << "fits: " << result.loops.size() << (result.loops.size() == 1 ? " loop" : " loops")
        << " on " << result.sm_needed << " of " << d.count * d.sm_count << " SMs, "
        << result.sm_left << " left over\n";
    if (several) {
      out << "SMs used per GPU:";
      for (std::size_t i = 0; i < result.sm_used_by_device.size(); ++i) {
        out << (i == 0 ? " " : ", ") << i << ": " << result.sm_used_by_device[i];
      }
      out << '\n';
    }
  } else {
    out << "does not fit:\n";
    for (const auto& reason : result.reasons) out << "  - " << reason << '\n';
  }
  return out.str();
}

}  // namespace resident::partition
