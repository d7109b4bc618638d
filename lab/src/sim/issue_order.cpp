#include "resident/sim/issue_order.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

namespace resident::sim {

namespace {

constexpr std::size_t whole_list = static_cast<std::size_t>(-1);

/// The first mistake in a list and which operation it belongs to (whole_list when none does),
/// so the YAML reader can point at the line of the offending operation.
struct problem {
  std::size_t index{whole_list};
  std::string message;
};

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::optional<problem> find_problem(const std::vector<operation>& operations) {
  if (operations.empty())
    return problem{whole_list, "no operations to simulate: the list is empty"};
  // Names first, all of them, so that a wait on an operation listed later can be told apart
  // from a wait on a name that does not exist.
  std::unordered_map<std::string_view, std::size_t> position;
  for (std::size_t i = 0; i < operations.size(); ++i) {
    const auto& name = operations[i].name;
    if (name.empty()) {
      return problem{i,
                     "the operation submitted at tick " + std::to_string(i) + " has an empty name"};
    }
    const auto [it, inserted] = position.emplace(name, i);
    if (!inserted) {
      return problem{i, "duplicate operation name '" + name + "': submitted at ticks " +
                            std::to_string(it->second) + " and " + std::to_string(i) +
                            "; names must be unique"};
    }
  }
  for (std::size_t i = 0; i < operations.size(); ++i) {
    const auto& op = operations[i];
    const std::string who = "operation '" + op.name + "'";
    if (op.stream.empty()) return problem{i, who + " has an empty stream name"};
    if (op.duration <= 0) {
      return problem{i, who + " has duration " + std::to_string(op.duration) +
                            "; durations must be positive ticks"};
    }
    for (const auto& wait : op.waits_for) {
      if (wait == op.name) return problem{i, who + " waits for itself"};
      const auto it = position.find(wait);
      if (it == position.end()) {
        return problem{i, who + " waits for '" + wait + "', which is not an operation in the list"};
      }
      if (it->second > i) {
        return problem{i, who + " (tick " + std::to_string(i) + ") waits for '" + wait +
                              "', which is not yet submitted (tick " + std::to_string(it->second) +
                              "); a wait can only name an operation submitted before it"};
      }
    }
    for (const auto* list : {&op.reads, &op.writes}) {
      if (contains(*list, "")) {
        return problem{i, who + " has an empty buffer name in its " +
                              (list == &op.reads ? "reads" : "writes")};
      }
    }
  }
  return std::nullopt;
}

/// before[j][i]: operation i happens before operation j. Every direct predecessor (the stream's
/// previous operation, each wait) is submitted earlier, so one pass in submission order, adding
/// each predecessor's own row, closes the relation transitively.
std::vector<std::vector<bool>> happens_before_matrix(const std::vector<operation>& operations) {
  const std::size_t n = operations.size();
  std::unordered_map<std::string_view, std::size_t> position;
  std::unordered_map<std::string_view, std::size_t> last_on_stream;
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
  for (std::size_t j = 0; j < n; ++j) {
    const auto& op = operations[j];
    auto& row = before[j];
    const auto add = [&](std::size_t p) {
      row[p] = true;
      for (std::size_t i = 0; i < p; ++i) {
        if (before[p][i]) row[i] = true;
      }
    };
    if (const auto it = last_on_stream.find(op.stream); it != last_on_stream.end()) add(it->second);
    for (const auto& wait : op.waits_for) add(position.at(wait));
    last_on_stream[op.stream] = j;
    position.emplace(op.name, j);
  }
  return before;
}

std::size_t index_of(const std::vector<operation>& operations, std::string_view name) {
  for (std::size_t i = 0; i < operations.size(); ++i) {
    if (operations[i].name == name) return i;
  }
  throw sim_error("no operation named '" + std::string(name) + "'");
}

// ---- YAML -----------------------------------------------------------------------------------

std::string where(const std::string& origin, const YAML::Mark& mark) {
  if (mark.is_null()) return origin;
  return origin + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

[[noreturn]] void fail(const std::string& origin, const YAML::Mark& mark,
                       const std::string& message) {
  throw sim_error(where(origin, mark) + ": " + message);
}

constexpr const char* known_keys = "name, stream, duration, waits_for, reads, writes";

std::string scalar(const YAML::Node& value, const std::string& key, const std::string& who,
                   const std::string& origin) {
  if (value.IsNull()) fail(origin, value.Mark(), "'" + key + "' of " + who + " has no value");
  if (!value.IsScalar()) {
    fail(origin, value.Mark(),
         "'" + key + "' of " + who + " must be a single value, not a list or map");
  }
  return value.Scalar();
}

std::vector<std::string> names(const YAML::Node& value, const std::string& key,
                               const std::string& who, const std::string& origin) {
  if (!value.IsSequence()) {
    fail(origin, value.Mark(),
         "'" + key + "' of " + who + " must be a list of names, e.g. [a, b] ([] for none)");
  }
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.IsScalar()) {
      fail(origin, item.Mark(),
           "'" + key + "' of " + who + " must list plain names, not lists or maps");
    }
    out.push_back(item.Scalar());
  }
  return out;
}

operation parse_operation(const YAML::Node& node, std::size_t tick, const std::string& origin) {
  std::string who = "the operation submitted at tick " + std::to_string(tick);
  if (!node.IsMap()) {
    fail(origin, node.Mark(), who + " must be a map with keys " + std::string(known_keys));
  }
  // Name the operation in later messages when it has a usable name, wherever the key sits.
  if (const auto name = node["name"]; name && name.IsScalar() && !name.Scalar().empty()) {
    who = "operation '" + name.Scalar() + "'";
  }
  operation op;
  std::vector<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      fail(origin, entry.first.Mark(), who + ": a key must be a plain name, not a list or map");
    }
    const std::string key = entry.first.Scalar();
    if (contains(seen, key)) fail(origin, entry.first.Mark(), who + " gives '" + key + "' twice");
    seen.push_back(key);
    const YAML::Node& value = entry.second;
    if (key == "name") {
      op.name = scalar(value, key, who, origin);
    } else if (key == "stream") {
      op.stream = scalar(value, key, who, origin);
    } else if (key == "duration") {
      const std::string text = scalar(value, key, who, origin);
      try {
        op.duration = value.as<std::int64_t>();
      } catch (const YAML::Exception&) {
        fail(origin, value.Mark(),
             "'duration' of " + who + " must be a whole number of ticks, got '" + text + "'");
      }
    } else if (key == "waits_for") {
      op.waits_for = names(value, key, who, origin);
    } else if (key == "reads") {
      op.reads = names(value, key, who, origin);
    } else if (key == "writes") {
      op.writes = names(value, key, who, origin);
    } else {
      fail(origin, entry.first.Mark(),
           "unknown key '" + key + "' in " + who + "; keys: " + std::string(known_keys));
    }
  }
  for (const char* required : {"name", "stream", "duration"}) {
    if (!contains(seen, required)) fail(origin, node.Mark(), who + " has no '" + required + "'");
  }
  return op;
}

std::vector<operation> parse_document(const std::string& yaml, const std::string& origin) {
  const YAML::Node root = YAML::Load(yaml);
  if (root.IsNull())
    fail(origin, root.Mark(), "empty file; expected a map with an 'operations' list");
  if (!root.IsMap()) fail(origin, root.Mark(), "expected a map with an 'operations' list");
  YAML::Node list;
  for (const auto& entry : root) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    if (key != "operations") {
      fail(origin, entry.first.Mark(),
           "unknown top-level key '" + key + "'; the only key is 'operations'");
    }
    list = entry.second;
  }
  if (!list) fail(origin, root.Mark(), "no 'operations' list");
  if (!list.IsSequence()) {
    fail(origin, list.Mark(), "'operations' must be a list of operations ([] is empty)");
  }
  std::vector<operation> operations;
  std::vector<YAML::Mark> marks;
  for (const auto& node : list) {
    operations.push_back(parse_operation(node, operations.size(), origin));
    marks.push_back(node.Mark());
  }
  if (const auto p = find_problem(operations)) {
    fail(origin, p->index == whole_list ? list.Mark() : marks[p->index], p->message);
  }
  return operations;
}

// ---- text -----------------------------------------------------------------------------------

const char* first_access(hazard_kind kind) {
  return kind == hazard_kind::write_after_read ? "reads" : "writes";
}
const char* second_access(hazard_kind kind) {
  return kind == hazard_kind::read_before_write ? "reads" : "writes";
}

}  // namespace

const scheduled_operation& schedule_result::at(std::string_view name) const {
  for (const auto& op : operations) {
    if (op.name == name) return op;
  }
  throw sim_error("the schedule has no operation named '" + std::string(name) + "'");
}

void validate(const std::vector<operation>& operations) {
  if (const auto p = find_problem(operations)) throw sim_error(p->message);
}

schedule_result schedule(const std::vector<operation>& operations) {
  validate(operations);
  schedule_result result;
  std::unordered_map<std::string_view, std::int64_t> stream_ready;
  std::unordered_map<std::string_view, std::int64_t> end_of;
  for (std::size_t k = 0; k < operations.size(); ++k) {
    const auto& op = operations[k];
    const auto issue = static_cast<std::int64_t>(k);
    std::int64_t start = issue;  // the device cannot run what the host has not submitted
    if (const auto it = stream_ready.find(op.stream); it != stream_ready.end()) {
      start = std::max(start, it->second);
    }
    for (const auto& wait : op.waits_for) start = std::max(start, end_of.at(wait));
    if (op.duration > std::numeric_limits<std::int64_t>::max() - start) {
      throw sim_error("operation '" + op.name + "' would end past the largest representable tick");
    }
    const std::int64_t end = start + op.duration;
    result.operations.push_back({op.name, op.stream, issue, start, end});
    stream_ready[op.stream] = end;
    end_of[op.name] = end;
    result.device_complete_tick = std::max(result.device_complete_tick, end);
  }
  const auto count = static_cast<std::int64_t>(operations.size());
  result.host_return_tick = count;
  result.host_span = count;
  // The stop marker goes in after the host loop, so it cannot complete before the host returns
  // nor before the device work it follows.
  const std::int64_t event_stop = std::max(result.host_span, result.device_complete_tick);
  result.event_span = event_stop;  // the start marker completes at tick 0
  result.end_to_end = std::max(result.host_span, event_stop);
  result.incorrect_addition = result.host_span + result.event_span;
  return result;
}

std::string_view to_string(hazard_kind kind) noexcept {
  switch (kind) {
    case hazard_kind::read_before_write:
      return "read-before-write";
    case hazard_kind::write_after_read:
      return "write-after-read";
    case hazard_kind::write_after_write:
      return "write-after-write";
  }
  return "unknown";
}

bool happens_before(const std::vector<operation>& operations, std::string_view first,
                    std::string_view second) {
  validate(operations);
  const std::size_t i = index_of(operations, first);
  const std::size_t j = index_of(operations, second);
  if (i >= j) return false;  // orderings only point from earlier to later submissions
  return happens_before_matrix(operations)[j][i];
}

std::vector<hazard> find_hazards(const std::vector<operation>& operations) {
  const schedule_result timeline = schedule(operations);  // validates
  const auto before = happens_before_matrix(operations);
  std::vector<hazard> hazards;
  for (std::size_t j = 0; j < operations.size(); ++j) {
    const auto& second = operations[j];
    std::vector<std::string> buffers;  // second's, reads then writes, each once
    for (const auto* list : {&second.reads, &second.writes}) {
      for (const auto& b : *list) {
        if (!contains(buffers, b)) buffers.push_back(b);
      }
    }
    for (std::size_t i = 0; i < j; ++i) {
      if (before[j][i]) continue;
      const auto& first = operations[i];
      for (const auto& b : buffers) {
        const bool first_writes = contains(first.writes, b);
        const bool second_writes = contains(second.writes, b);
        hazard_kind kind;
        if (first_writes && contains(second.reads, b)) {
          kind = hazard_kind::read_before_write;
        } else if (first_writes && second_writes) {
          kind = hazard_kind::write_after_write;
        } else if (second_writes && contains(first.reads, b)) {
          kind = hazard_kind::write_after_read;
        } else {
          continue;  // both only read, or first does not touch b
        }
        const bool overlapped = timeline.operations[j].start < timeline.operations[i].end;
        hazards.push_back({kind, b, first.name, second.name, overlapped});
      }
    }
  }
  return hazards;
}

bool hazard_free(const std::vector<operation>& operations) {
  return find_hazards(operations).empty();
}

std::vector<operation> lab_example() {
  return {
      {"copy", "copy", 3, {}, {"input"}, {"work"}},
      {"affine", "compute", 4, {"copy"}, {"work"}, {"affine"}},
      {"square", "compute", 2, {}, {"affine"}, {"squared"}},
      {"reduce", "compute", 1, {}, {"squared"}, {"result"}},
  };
}

std::int64_t lab_result(const std::vector<std::int64_t>& inputs) {
  std::int64_t sum = 0;
  for (const auto x : inputs) sum += (2 * x + 1) * (2 * x + 1);
  return sum;
}

std::vector<operation> without_dependency(std::vector<operation> operations,
                                          const std::string& from, const std::string& to) {
  const auto op = std::find_if(operations.begin(), operations.end(),
                               [&](const operation& o) { return o.name == to; });
  if (op == operations.end()) {
    throw sim_error("cannot drop " + from + "->" + to + ": there is no operation '" + to + "'");
  }
  const auto wait = std::find(op->waits_for.begin(), op->waits_for.end(), from);
  if (wait == op->waits_for.end()) {
    throw sim_error("cannot drop " + from + "->" + to + ": '" + to + "' does not wait for '" +
                    from + "'");
  }
  op->waits_for.erase(wait);
  return operations;
}

std::vector<operation> parse_operations(std::string_view yaml, std::string origin) {
  try {
    return parse_document(std::string(yaml), origin);
  } catch (const YAML::Exception& e) {
    // Syntax errors and anything yaml-cpp rejects later still get the repo's origin:line:col.
    throw sim_error(where(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
}

std::vector<operation> load_operations(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw sim_error("cannot open operation file " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_operations(text.str(), file.string());
}

nlohmann::json to_json(const schedule_result& result, const std::vector<hazard>& hazards) {
  auto ops = nlohmann::json::array();
  for (const auto& op : result.operations) {
    ops.push_back({{"name", op.name},
                   {"stream", op.stream},
                   {"issue_tick", op.issue_tick},
                   {"start", op.start},
                   {"end", op.end}});
  }
  auto found = nlohmann::json::array();
  for (const auto& h : hazards) {
    found.push_back({{"kind", std::string(to_string(h.kind))},
                     {"buffer", h.buffer},
                     {"first", h.first},
                     {"second", h.second},
                     {"overlapped", h.overlapped}});
  }
  return {{"operations", ops},
          {"host_return_tick", result.host_return_tick},
          {"device_complete_tick", result.device_complete_tick},
          {"timing",
           {{"host_span", result.host_span},
            {"event_span", result.event_span},
            {"end_to_end", result.end_to_end},
            {"incorrect_addition", result.incorrect_addition}}},
          {"hazards", found},
          {"hazard_free", hazards.empty()}};
}

std::string render_text(const schedule_result& result, const std::vector<hazard>& hazards) {
  std::ostringstream out;
  out << "host_return_tick=" << result.host_return_tick << '\n';
  for (const auto& op : result.operations) {
    out << op.name << " stream=" << op.stream << " issue=" << op.issue_tick << " start=" << op.start
        << " end=" << op.end << '\n';
  }
  out << "device_complete_tick=" << result.device_complete_tick << '\n';
  out << "host=" << result.host_span << ", event=" << result.event_span
      << ", end_to_end=" << result.end_to_end << " ticks\n";
  out << "incorrect addition=" << result.incorrect_addition
      << " ticks (host and event spans overlap; adding them counts the overlap twice)\n";
  if (hazards.empty()) {
    out << "hazards: none (every pair of operations sharing a written buffer is ordered)\n";
  }
  for (const auto& h : hazards) {
    const auto& first = result.at(h.first);
    const auto& second = result.at(h.second);
    out << "hazard: " << to_string(h.kind) << " on '" << h.buffer << "': " << second.name << " ("
        << second.stream << ") " << second_access(h.kind) << " it with no ordering after "
        << first.name << " (" << first.stream << ") " << first_access(h.kind) << " it; ";
    if (h.overlapped) {
      out << "simulated, " << second.name << " starts at tick " << second.start << " before "
          << first.name << " ends at tick " << first.end << '\n';
    } else {
      out << "simulated, " << second.name << " starts at tick " << second.start << ", not before "
          << first.name << " ends at tick " << first.end << ", but only by timing\n";
    }
  }
  return out.str();
}

}  // namespace resident::sim
