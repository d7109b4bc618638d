#pragma once
// Benchmark receipts (docs/benchmarks.md): the JSON record of one benchmark run, with the exact
// command, git commit, device and host, and one result object per measured configuration; plus
// the CSV writer for raw samples.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "resident/measure/statistics.hpp"

namespace resident::measure {

/// The GPU a benchmark ran on. JSON "device": {"name", "sm_count", "compute_capability",
/// "driver", "cuda_runtime", "sm_clock_mhz", "sm_clocks_seen_mhz"}, where "sm_clock_mhz" is the
/// first clock seen (null when none was) and "sm_clocks_seen_mhz" the whole list. Optional:
/// "module_loading" ("lazy", "eager"; absent in receipts made before it was recorded).
struct device_record {
  std::string name;
  int sm_count{};
  std::string compute_capability;  // "9.0"
  std::string driver;              // "580.159.04"
  int cuda_runtime{};              // cudaRuntimeGetVersion(): 13000 = CUDA 13.0
  std::vector<int> sm_clock_mhz_seen;
  std::string module_loading;  // "lazy", "eager", "unknown"; empty: not recorded
};

/// JSON "host": {"cpus", "kernel", "cpu_model"}.
struct host_record {
  int cpus{};
  std::string kernel;     // uname release
  std::string cpu_model;  // empty when /proc/cpuinfo names none
};

class receipt {
 public:
  /// started_at = now (UTC, "2026-11-30T10:00:00Z"); git_commit = resident::git_commit().
  receipt(std::string benchmark, std::string command);

  std::string benchmark;
  std::string command;  // the exact argv, e.g. from command_line()
  std::string git_commit;
  std::string started_at;
  device_record device;
  host_record host;
  nlohmann::json settings = nlohmann::json::object();  // benchmark-specific (rate, samples, ...)
  nlohmann::json results = nlohmann::json::array();    // one object per configuration

  [[nodiscard]] nlohmann::json to_json() const;
  /// Throws std::invalid_argument naming the missing or mistyped field ("device.sm_count").
  /// Optional: device.sm_clock_mhz (or null), device.sm_clocks_seen_mhz, host.cpu_model,
  /// settings. Unknown fields are ignored.
  static receipt from_json(const nlohmann::json& j);

  /// Pretty JSON (2-space indent; an array of scalars on one line) and a trailing newline. Throws std::runtime_error naming the
  /// path when the file cannot be written. Does not create missing directories.
  void write(const std::filesystem::path& path) const;
  /// Throws std::runtime_error naming the path when the file cannot be read or is not JSON, and
  /// std::invalid_argument naming the path and field when it is not a receipt.
  static receipt read(const std::filesystem::path& path);
};

/// A result's configuration, for merge(): results with the same non-empty key are runs of the
/// same configuration. An empty key never matches.
using result_key = std::function<std::string(const nlohmann::json& result)>;

/// Merges receipts of one benchmark (e.g. a full run split across GPU calls): results
/// concatenated in order, commands joined with " && ", device, host, git_commit, started_at and
/// settings of the first, plus settings["merged_from"]: one {"command", "started_at",
/// "git_commit"} per original run (a part that is itself a merge contributes its own list).
/// With `key`, a part re-run replaces: a result is dropped when a later part holds a result of
/// the same key (all of that part's runs of it stay, repeats included), and
/// settings["replaced_results"] counts the dropped ones.
/// Throws std::invalid_argument when `parts` is empty or the benchmarks differ.
[[nodiscard]] receipt merge(const std::vector<receipt>& parts, const result_key& key = {});

/// A key of every string field of a result except `ignored` (descriptions that are not part of
/// the configuration), as "name=value;" in name order; for benchmarks whose configurations
/// differ in named fields only (bench camera).
[[nodiscard]] std::string string_fields_key(const nlohmann::json& result,
                                            const std::vector<std::string>& ignored = {});

/// A summary's fields in µs, named as docs/benchmarks.md names them: n, mean_us, p50_us, p99_us,
/// p999_us, max_us, min_us, stddev_us, jitter_us, plus p25_us, p75_us, whisker_low_us,
/// whisker_high_us for box plots.
[[nodiscard]] nlohmann::json summary_fields(const summary& s);

/// A latency result object with the field names of docs/benchmarks.md: mode, workload, contention,
/// n, mean_us, p50_us, p99_us, p999_us, max_us, min_us, stddev_us, jitter_us, processed,
/// dropped, repeated; plus p25_us, p75_us, whisker_low_us, whisker_high_us for box plots.
/// `s` must be in microseconds.
[[nodiscard]] nlohmann::json latency_result(std::string_view mode, std::string_view workload,
                                            std::string_view contention, const summary& s,
                                            std::uint64_t processed, std::uint64_t dropped,
                                            std::uint64_t repeated);

/// Host facts: cpus (std::thread::hardware_concurrency, else sysconf), kernel (uname release),
/// cpu_model (/proc/cpuinfo "model name", empty if absent).
[[nodiscard]] host_record current_host();

/// The current time as UTC ISO-8601 with seconds: "2026-11-30T10:00:00Z".
[[nodiscard]] std::string utc_now_iso8601();

/// argv as one shell command line: arguments with characters a POSIX shell would interpret are
/// single-quoted, so the receipt's command can be pasted back into a shell.
[[nodiscard]] std::string command_line(int argc, const char* const* argv);

/// Raw samples as CSV (RFC 4180 quoting, "\n" line ends): the header line is written by the
/// constructor, then one line per row(). Cells holding a comma, a double quote, CR or LF are
/// quoted, with quotes doubled.
class csv_writer {
 public:
  /// Throws std::runtime_error naming the path if it cannot be opened for writing, and
  /// std::invalid_argument if the header is empty.
  csv_writer(const std::filesystem::path& path, std::vector<std::string> header);

  /// Throws std::invalid_argument unless cells.size() == header size, std::runtime_error naming
  /// the path if writing fails.
  void row(const std::vector<std::string>& cells);
  /// Flushes and closes; throws std::runtime_error naming the path if anything failed to write.
  /// The destructor closes too, but silently.
  void close();

  [[nodiscard]] std::size_t rows() const noexcept { return _rows; }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return _path; }

  /// One cell as written (quoted when needed).
  [[nodiscard]] static std::string escape(std::string_view cell);
  /// A double as the shortest text that reads back to the same value ("12.5", "1e-07").
  [[nodiscard]] static std::string number(double value);

 private:
  void write_line(const std::vector<std::string>& cells);

  std::filesystem::path _path;
  std::vector<std::string> _header;
  std::ofstream _out;
  std::size_t _rows{};
};

}  // namespace resident::measure
