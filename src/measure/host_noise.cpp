#include "resident/measure/host_noise.hpp"

#include <algorithm>
#include <array>
#include <fstream>
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
  std::ifstream f("/proc/interrupts");
  if (!f) return {};
  std::stringstream text;
  text << f.rdbuf();
  return parse_interrupts(text.str(), cpu);
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

}  // namespace resident::measure
