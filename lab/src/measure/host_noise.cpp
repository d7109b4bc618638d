#include "resident/measure/host_noise.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>
#include <sstream>

namespace resident::measure {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The whole text of a /proc file; nullopt when it cannot be opened.
std::optional<std::string> read_proc(const char* path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

}  // namespace

std::map<std::string, std::uint64_t> parse_interrupts(std::string_view text, int cpu) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream in{std::string(text)};
  std::string line;
  // The header names the columns: "CPU0 CPU1 ..." (an offline cpu has no column).
  if (!std::getline(in, line)) return out;
  int column = -1;
  {
    std::istringstream header(line);
    std::string word;
    for (int i = 0; header >> word; ++i) {
      if (word == "CPU" + std::to_string(cpu)) column = i;
    }
  }
  if (column < 0) return out;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string_view label = trim(std::string_view(line).substr(0, colon));
    std::istringstream rest(line.substr(colon + 1));
    std::vector<std::uint64_t> counts;
    std::string word;
    std::string description;
    while (rest >> word) {
      if (description.empty() && all_digits(word)) {
        counts.push_back(std::stoull(word));
      } else {
        if (!description.empty()) description.push_back(' ');
        description.append(word);
      }
    }
    if (static_cast<std::size_t>(column) >= counts.size()) continue;  // e.g. "ERR: 0"
    // Numbered lines' descriptions start with the chip and trigger ("IR-PCI-MSIX-... 524288-edge
    // nvidia"): the last word is the device, which is what a reader wants.
    std::string name(label);
    if (all_digits(label)) {
      const auto last = description.rfind(' ');
      name.push_back(' ');
      name.append(last == std::string::npos ? description : description.substr(last + 1));
    } else if (!description.empty()) {
      name.push_back(' ');
      name.append(description);
    }
    out[name] += counts[static_cast<std::size_t>(column)];
  }
  return out;
}

std::map<std::string, std::uint64_t> read_interrupts(int cpu) {
  const auto text = read_proc("/proc/interrupts");
  return text ? parse_interrupts(*text, cpu) : std::map<std::string, std::uint64_t>{};
}

std::map<std::string, std::uint64_t> parse_cpu_times(std::string_view text, int cpu) {
  static constexpr std::array<const char*, 8> fields{"user",   "nice", "system",  "idle",
                                                     "iowait", "irq",  "softirq", "steal"};
  std::istringstream in{std::string(text)};
  std::string line;
  const std::string label = "cpu" + std::to_string(cpu);
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first != label) continue;
    std::map<std::string, std::uint64_t> out;
    std::string word;
    for (const char* field : fields) {
      if (!(words >> word) || !all_digits(word)) break;  // older kernels have fewer fields
      out[field] = std::stoull(word);
    }
    return out;
  }
  return {};
}

std::map<std::string, std::uint64_t> read_cpu_times(int cpu) {
  const auto text = read_proc("/proc/stat");
  return text ? parse_cpu_times(*text, cpu) : std::map<std::string, std::uint64_t>{};
}

nlohmann::json cpu_time_delta_ms(const std::map<std::string, std::uint64_t>& before,
                                 const std::map<std::string, std::uint64_t>& after,
                                 long ticks_per_second) {
  nlohmann::json out = nlohmann::json::object();
  if (ticks_per_second <= 0) return out;
  for (const auto& [field, count] : after) {
    const auto was = before.find(field);
    if (was == before.end() || count < was->second) continue;
    out[field] =
        static_cast<double>(count - was->second) * 1000.0 / static_cast<double>(ticks_per_second);
  }
  return out;
}

std::int64_t parse_schedstat_run_delay(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string on_cpu;
  std::string delay;
  if (!(in >> on_cpu >> delay) || !all_digits(delay)) return -1;
  return static_cast<std::int64_t>(std::stoull(delay));
}

thread_sched read_thread_sched() {
  thread_sched t;
  rusage r{};
  if (getrusage(RUSAGE_THREAD, &r) == 0) {
    t.voluntary_switches = r.ru_nvcsw;
    t.involuntary_switches = r.ru_nivcsw;
  }
  if (const auto text = read_proc("/proc/thread-self/schedstat")) {
    t.run_delay_ns = parse_schedstat_run_delay(*text);
  }
  return t;
}

nlohmann::json sched_delta(const thread_sched& before, const thread_sched& after) {
  nlohmann::json out = {
      {"voluntary_switches", after.voluntary_switches - before.voluntary_switches},
      {"involuntary_switches", after.involuntary_switches - before.involuntary_switches}};
  if (before.run_delay_ns >= 0 && after.run_delay_ns >= 0) {
    out["run_delay_us"] = static_cast<double>(after.run_delay_ns - before.run_delay_ns) / 1000.0;
  }
  return out;
}

nlohmann::json interrupt_delta(const std::map<std::string, std::uint64_t>& before,
                               const std::map<std::string, std::uint64_t>& after) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, count] : after) {
    const auto it = before.find(name);
    const std::uint64_t was = it == before.end() ? 0 : it->second;
    if (count > was) out[name] = count - was;
  }
  return out;
}

stall_log::stall_log(std::size_t capacity) : _start_ns(capacity), _length_ns(capacity) {}

nlohmann::json stall_log::summary(std::int64_t run_ns, std::int64_t period_ns,
                                  std::int64_t origin_ns) const {
  std::int64_t total = 0;
  std::int64_t longest = 0;
  std::array<std::int64_t, 5> buckets{};
  std::array<std::int64_t, 10> phase{};
  for (std::size_t i = 0; i < _count; ++i) {
    const std::int64_t len = _length_ns[i];
    total += len;
    longest = std::max(longest, len);
    const std::size_t b = len < 20'000    ? 0
                          : len < 50'000  ? 1
                          : len < 100'000 ? 2
                          : len < 500'000 ? 3
                                          : 4;
    ++buckets[b];
    if (period_ns > 0) {
      std::int64_t at = (_start_ns[i] - origin_ns) % period_ns;
      if (at < 0) at += period_ns;
      ++phase[static_cast<std::size_t>(at * 10 / period_ns)];
    }
  }
  const double seconds = static_cast<double>(run_ns) * 1e-9;
  return {{"count", _count},
          {"lost", _lost},
          {"per_second", seconds > 0 ? static_cast<double>(_count) / seconds : 0.0},
          {"total_us", static_cast<double>(total) / 1000.0},
          {"fraction_of_time", run_ns > 0 ? static_cast<double>(total) / run_ns : 0.0},
          {"max_us", static_cast<double>(longest) / 1000.0},
          {"lengths_us",
           {{"<20", buckets[0]},
            {"20-50", buckets[1]},
            {"50-100", buckets[2]},
            {"100-500", buckets[3]},
            {">=500", buckets[4]}}},
          {"phase_period_us", static_cast<double>(period_ns) / 1000.0},
          {"phase", phase}};
}

nlohmann::json stall_log::shared_with(const stall_log& other, std::int64_t min_ns) const {
  std::int64_t stalls = 0;
  std::int64_t shared = 0;
  std::size_t j = 0;  // other's first long stall that may still overlap
  for (std::size_t i = 0; i < _count; ++i) {
    if (_length_ns[i] < min_ns) continue;
    ++stalls;
    const std::int64_t begin = _start_ns[i];
    const std::int64_t end = begin + _length_ns[i];
    // Stalls do not overlap within one log, so other's stalls that ended before this one began
    // end before every later one of ours begins too.
    while (j < other._count &&
           (other._length_ns[j] < min_ns || other._start_ns[j] + other._length_ns[j] <= begin)) {
      ++j;
    }
    if (j < other._count && other._start_ns[j] < end) ++shared;
  }
  return {{"min_us", static_cast<double>(min_ns) / 1000.0}, {"stalls", stalls}, {"shared", shared}};
}

}  // namespace resident::measure
