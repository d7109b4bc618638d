#include "resident/measure/receipt.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <ctime>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "resident/version.hpp"

namespace resident::measure {

namespace {

using nlohmann::json;

// ---- from_json field access: every error names the field's path ------------------------------

std::string type_of(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number_float()) return "a number";
  if (v.is_null()) return "null";
  if (v.is_object() || v.is_array()) return std::string("an ") + v.type_name();
  return std::string("a ") + v.type_name();
}

[[noreturn]] void mistyped(const std::string& path, const char* expected, const json& v) {
  throw std::invalid_argument("receipt: field '" + path + "' must be " + expected + ", found " +
                              type_of(v));
}

std::string join(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

const json& required(const json& obj, std::string_view parent, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    throw std::invalid_argument("receipt: missing field '" + join(parent, key) + "'");
  }
  return *it;
}

const json& object_field(const json& obj, std::string_view parent, const char* key) {
  const json& v = required(obj, parent, key);
  if (!v.is_object()) mistyped(join(parent, key), "an object", v);
  return v;
}

std::string string_field(const json& obj, std::string_view parent, const char* key) {
  const json& v = required(obj, parent, key);
  if (!v.is_string()) mistyped(join(parent, key), "a string", v);
  return v.get<std::string>();
}

int to_int(const json& v, const std::string& path) {
  if (!v.is_number_integer()) mistyped(path, "an integer", v);
  // Unsigned values above INT64_MAX would wrap through get<int64_t>(), so check them apart.
  constexpr auto lo = std::numeric_limits<int>::min();
  constexpr auto hi = std::numeric_limits<int>::max();
  const bool in_range = v.is_number_unsigned()
                            ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)
                            : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi;
  if (!in_range) {
    throw std::invalid_argument("receipt: field '" + path + "' = " + v.dump() + " is out of range");
  }
  return static_cast<int>(v.get<std::int64_t>());
}

int int_field(const json& obj, std::string_view parent, const char* key) {
  return to_int(required(obj, parent, key), join(parent, key));
}

device_record device_from_json(const json& d) {
  device_record dev;
  dev.name = string_field(d, "device", "name");
  dev.sm_count = int_field(d, "device", "sm_count");
  dev.compute_capability = string_field(d, "device", "compute_capability");
  dev.driver = string_field(d, "device", "driver");
  dev.cuda_runtime = int_field(d, "device", "cuda_runtime");
  if (const auto loading = d.find("module_loading"); loading != d.end()) {
    if (!loading->is_string()) mistyped("device.module_loading", "a string", *loading);
    dev.module_loading = loading->get<std::string>();
  }
  if (const auto seen = d.find("sm_clocks_seen_mhz"); seen != d.end()) {
    if (!seen->is_array()) mistyped("device.sm_clocks_seen_mhz", "an array", *seen);
    for (std::size_t i = 0; i < seen->size(); ++i) {
      dev.sm_clock_mhz_seen.push_back(
          to_int((*seen)[i], "device.sm_clocks_seen_mhz[" + std::to_string(i) + "]"));
    }
  }
  if (const auto first = d.find("sm_clock_mhz"); first != d.end() && !first->is_null()) {
    const int clock = to_int(*first, "device.sm_clock_mhz");
    if (d.contains("sm_clocks_seen_mhz")) {
      // Both are written from one list; disagreement means the file was edited inconsistently.
      if (dev.sm_clock_mhz_seen.empty() || dev.sm_clock_mhz_seen.front() != clock) {
        throw std::invalid_argument(
            "receipt: field 'device.sm_clock_mhz' = " + std::to_string(clock) +
            " must be the first entry of 'device.sm_clocks_seen_mhz'");
      }
    } else {
      dev.sm_clock_mhz_seen.push_back(clock);
    }
  }
  return dev;
}

host_record host_from_json(const json& h) {
  host_record host;
  host.cpus = int_field(h, "host", "cpus");
  host.kernel = string_field(h, "host", "kernel");
  if (h.contains("cpu_model")) host.cpu_model = string_field(h, "host", "cpu_model");
  return host;
}

// ---- host facts --------------------------------------------------------------------------------

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(first, last - first + 1));
}

std::string cpu_model_from_proc() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(std::string_view(line).substr(0, colon)) == "model name") {
      return trim(std::string_view(line).substr(colon + 1));
    }
  }
  return {};
}

// Characters that never need quoting in a POSIX shell word.
bool shell_safe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("_-+=./:,@%", c) != nullptr;
}

std::string shell_quote(std::string_view arg) {
  if (!arg.empty() && std::all_of(arg.begin(), arg.end(), shell_safe)) return std::string(arg);
  std::string out = "'";
  for (const char c : arg) {
    if (c == '\'') {
      out += "'\\''";  // close the quote, an escaped quote, reopen
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

// ---- receipt -----------------------------------------------------------------------------------

receipt::receipt(std::string benchmark_name, std::string command_text)
    : benchmark(std::move(benchmark_name)),
      command(std::move(command_text)),
      git_commit(resident::git_commit()),
      started_at(utc_now_iso8601()) {}

json receipt::to_json() const {
  json dev = {{"name", device.name},
              {"sm_count", device.sm_count},
              {"compute_capability", device.compute_capability},
              {"driver", device.driver},
              {"cuda_runtime", device.cuda_runtime},
              {"sm_clock_mhz", nullptr},
              {"sm_clocks_seen_mhz", device.sm_clock_mhz_seen}};
  if (!device.sm_clock_mhz_seen.empty()) dev["sm_clock_mhz"] = device.sm_clock_mhz_seen.front();
  if (!device.module_loading.empty()) dev["module_loading"] = device.module_loading;
  return json{
      {"benchmark", benchmark},
      {"command", command},
      {"git_commit", git_commit},
      {"started_at", started_at},
      {"device", std::move(dev)},
      {"host", {{"cpus", host.cpus}, {"kernel", host.kernel}, {"cpu_model", host.cpu_model}}},
      {"settings", settings},
      {"results", results}};
}

receipt receipt::from_json(const json& j) {
  if (!j.is_object()) {
    throw std::invalid_argument("receipt: expected a JSON object, found " + type_of(j));
  }
  receipt r(string_field(j, "", "benchmark"), string_field(j, "", "command"));
  r.git_commit = string_field(j, "", "git_commit");
  r.started_at = string_field(j, "", "started_at");
  r.device = device_from_json(object_field(j, "", "device"));
  r.host = host_from_json(object_field(j, "", "host"));
  if (j.contains("settings")) r.settings = object_field(j, "", "settings");
  const json& results = required(j, "", "results");
  if (!results.is_array()) mistyped("results", "an array", results);
  r.results = results;
  return r;
}

namespace {

// 2-space indented JSON, except that an array of numbers, strings or booleans stays on one line:
// a receipt's series and histograms would otherwise take a line per value. Invalid UTF-8 (say,
// from a CPU model string) is replaced rather than thrown mid-write.
void write_pretty(std::string& out, const json& v, int depth) {
  const auto compact = [](const json& x) {
    return x.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  const bool flat_array = v.is_array() && std::none_of(v.begin(), v.end(), [](const json& x) {
                            return x.is_structured();
                          });
  if (!v.is_structured() || v.empty() || flat_array) {
    out += compact(v);
    return;
  }
  const std::string pad(2 * (depth + 1), ' ');
  out += v.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += first ? "" : ",\n";
    first = false;
    out += pad;
    if (v.is_object()) out += compact(json(it.key())) + ": ";
    write_pretty(out, *it, depth + 1);
  }
  out += "\n" + std::string(2 * depth, ' ') + (v.is_object() ? "}" : "]");
}

}  // namespace

void receipt::write(const std::filesystem::path& path) const {
  std::string text;
  write_pretty(text, to_json(), 0);
  text += "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw std::runtime_error("receipt: cannot open " + path.string() +
                             " for writing: " + std::strerror(errno));
  }
  out << text;
  out.close();
  if (!out) throw std::runtime_error("receipt: failed writing " + path.string());
}

receipt receipt::read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("receipt: cannot open " + path.string() + ": " + std::strerror(errno));
  }
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw std::runtime_error("receipt: " + path.string() + " is not valid JSON: " + e.what());
  }
  try {
    return from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path.string() + ": " + e.what());
  }
}

std::string string_fields_key(const json& result, const std::vector<std::string>& ignored) {
  std::string key;
  if (!result.is_object()) return key;
  for (auto it = result.begin(); it != result.end(); ++it) {  // nlohmann::json: names in order
    if (!it->is_string()) continue;
    if (std::find(ignored.begin(), ignored.end(), it.key()) != ignored.end()) continue;
    key += it.key() + "=" + it->get<std::string>() + ";";
  }
  return key;
}

namespace {

// Keeps a part's result unless a later part holds one of the same (non-empty) key: the parts
// are walked from the last, collecting the keys seen so far.
json merged_results(const std::vector<receipt>& parts, const result_key& key,
                    std::size_t& replaced) {
  std::vector<json> kept(parts.size(), json::array());
  std::set<std::string> later;
  for (std::size_t i = parts.size(); i-- > 0;) {
    std::set<std::string> mine;
    for (const auto& r : parts[i].results) {
      const std::string k = key ? key(r) : std::string();
      if (!k.empty() && later.count(k) != 0) {
        ++replaced;
        continue;
      }
      kept[i].push_back(r);
      if (!k.empty()) mine.insert(k);
    }
    later.merge(mine);
  }
  json results = json::array();
  for (const auto& part : kept) results.insert(results.end(), part.begin(), part.end());
  return results;
}

bool is_string_list(const json& v) {
  return v.is_array() &&
         std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
}

/// A setting that lists names (modes, formats, parts) becomes the union over the parts, in order
/// of first appearance: a part run with a mode the first lacked must not drop that mode from
/// the merged receipt's description of what ran.
void merge_name_lists(json& settings, const std::vector<receipt>& parts) {
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (!parts[i].settings.is_object()) continue;
    for (const auto& [name, list] : parts[i].settings.items()) {
      const auto mine = settings.find(name);
      if (mine == settings.end() || !is_string_list(*mine) || !is_string_list(list)) continue;
      for (const auto& e : list) {
        if (std::find(mine->begin(), mine->end(), e) == mine->end()) mine->push_back(e);
      }
    }
  }
}

}  // namespace

receipt merge(const std::vector<receipt>& parts, const result_key& key) {
  if (parts.empty()) throw std::invalid_argument("merge: no receipts to merge");
  receipt merged = parts.front();
  if (!merged.settings.is_object()) {
    throw std::invalid_argument("merge: the first receipt's settings are not a JSON object");
  }
  json merged_from = json::array();
  std::string commands;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const receipt& part = parts[i];
    if (part.benchmark != merged.benchmark) {
      throw std::invalid_argument("merge: receipt " + std::to_string(i) + " is of benchmark '" +
                                  part.benchmark + "', receipt 0 of '" + merged.benchmark +
                                  "'; only receipts of one benchmark merge");
    }
    commands += (i == 0 ? "" : " && ") + part.command;
    // A part that is itself a merge already lists its original runs: keep the list flat.
    const auto earlier =
        part.settings.is_object() ? part.settings.find("merged_from") : part.settings.end();
    if (part.settings.is_object() && earlier != part.settings.end() && earlier->is_array()) {
      for (const auto& run : *earlier) merged_from.push_back(run);
    } else {
      merged_from.push_back({{"command", part.command},
                             {"started_at", part.started_at},
                             {"git_commit", part.git_commit}});
    }
  }
  std::size_t replaced = 0;
  merged.command = std::move(commands);
  merged.results = merged_results(parts, key, replaced);
  merge_name_lists(merged.settings, parts);
  merged.settings["merged_from"] = std::move(merged_from);
  merged.settings.erase("replaced_results");
  if (replaced > 0) merged.settings["replaced_results"] = replaced;
  return merged;
}

json summary_fields(const summary& s) {
  return json{{"n", static_cast<std::uint64_t>(s.n)},
              {"mean_us", s.mean},
              {"p50_us", s.p50},
              {"p99_us", s.p99},
              {"p999_us", s.p999},
              {"max_us", s.max},
              {"min_us", s.min},
              {"stddev_us", s.stddev},
              {"jitter_us", s.jitter},
              {"p25_us", s.p25},
              {"p75_us", s.p75},
              {"whisker_low_us", s.whisker_low},
              {"whisker_high_us", s.whisker_high}};
}

json latency_result(std::string_view mode, std::string_view workload, std::string_view contention,
                    const summary& s, std::uint64_t processed, std::uint64_t dropped,
                    std::uint64_t repeated) {
  json result{{"mode", mode}, {"workload", workload}, {"contention", contention}};
  result.update(summary_fields(s));
  result.update(json{{"processed", processed}, {"dropped", dropped}, {"repeated", repeated}});
  return result;
}

host_record current_host() {
  host_record host;
  host.cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (host.cpus == 0) host.cpus = static_cast<int>(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN)));
  utsname names{};
  if (uname(&names) == 0) host.kernel = names.release;
  host.cpu_model = cpu_model_from_proc();
  return host;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::array<char, 32> text{};
  const std::size_t length = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text.data(), length);
}

std::string command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) out += ' ';
    out += shell_quote(argv[i] != nullptr ? argv[i] : "");
  }
  return out;
}

// ---- csv_writer --------------------------------------------------------------------------------

csv_writer::csv_writer(const std::filesystem::path& path, std::vector<std::string> header)
    : _path(path), _header(std::move(header)) {
  if (_header.empty()) throw std::invalid_argument("csv_writer(" + path.string() + "): no columns");
  _out.open(path, std::ios::binary | std::ios::trunc);
  if (!_out) {
    throw std::runtime_error("csv_writer: cannot open " + path.string() +
                             " for writing: " + std::strerror(errno));
  }
  write_line(_header);
}

void csv_writer::row(const std::vector<std::string>& cells) {
  if (cells.size() != _header.size()) {
    throw std::invalid_argument("csv_writer(" + _path.string() + "): row " +
                                std::to_string(_rows + 1) + " has " + std::to_string(cells.size()) +
                                " cells, the header " + std::to_string(_header.size()));
  }
  if (!_out.is_open()) {
    throw std::runtime_error("csv_writer: " + _path.string() + " is already closed");
  }
  write_line(cells);
  ++_rows;
}

void csv_writer::close() {
  if (!_out.is_open()) return;
  _out.close();
  if (!_out) throw std::runtime_error("csv_writer: failed writing " + _path.string());
}

void csv_writer::write_line(const std::vector<std::string>& cells) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) _out << ',';
    _out << escape(cells[i]);
  }
  _out << '\n';
  if (!_out) throw std::runtime_error("csv_writer: failed writing " + _path.string());
}

std::string csv_writer::escape(std::string_view cell) {
  if (cell.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(cell);
  std::string out = "\"";
  for (const char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_writer::number(double value) {
  std::array<char, 32> text{};
  const auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} ? std::string(text.data(), end) : std::string("nan");
}

}  // namespace resident::measure
