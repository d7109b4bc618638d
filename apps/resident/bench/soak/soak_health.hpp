#pragma once
// The soak's health lines (bench soak --health: one JSON object a line, every --health-every-s)
// read back without a GPU. A run of days writes its receipt only at its end; its health lines
// are what is left of a run that is still going, was killed or died, so `resident report` reads
// them alone: what each loop processed, dropped and left unaccounted, the checks, where the lines
// stop or skip, windows in which a loop made no progress, drop bursts beside the sensor
// thread's late releases, memory after warm-up and the latest minutes' latencies.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/soak/soak_bench.hpp"

namespace resident::bench {

/// One loop's counters in one line.
struct health_counters {
  std::uint64_t processed{0};
  std::uint64_t dropped{0};
  std::uint64_t unaccounted{0};
  std::uint64_t deadline_misses{0};
  std::uint64_t last_seq{0};
  double max_response_us{0};
  std::int64_t sensor_late{-1};  // its sensor thread's late releases so far (-1: none given)
};

/// What one line holds, kept small: a run of a month writes hundreds of thousands of lines.
struct health_point {
  double t_s{0};
  std::vector<health_counters> loops;  // in health_log::loops' order
  double rss_bytes{-1};                // -1: not in the line
  double free_device_bytes{-1};
  std::uint64_t outputs_checked{0};  // the mailbox's outputs checked against the CPU reference
  std::uint64_t output_mismatches{0};
  std::uint64_t screens_checked{0};  // shown camera frames checked against the CPU pipeline
  std::uint64_t screen_mismatches{0};
};

struct health_log {
  std::string path;
  std::vector<std::string> loops;  // each top-level object with counters, named in the first line
  std::vector<health_point> points;
  /// The latest whole minute of each latency series ("mailbox", "mailbox_host", "camera"), each
  /// minute once, by minute number.
  std::map<std::string, std::map<int, minute_summary>> minutes;
  std::optional<double> warmup_s;  // as the lines give it
  bool torn_last_line{false};      // the last line was cut short (the writer was killed)
};

/// Whether `path` holds health lines: its first line alone is a JSON object with "t_s" (a
/// receipt is one JSON document, an object whose first line is not).
[[nodiscard]] bool is_health_log(const std::string& path);

/// Reads the lines. A last line cut short is left out and noted; any other line that is not a
/// JSON object with a number "t_s" after the line before's, whose loops differ from the first
/// line's, or whose counters are not whole numbers, throws std::invalid_argument naming the file,
/// the line and the field.
[[nodiscard]] health_log read_health_log(const std::string& path);

/// What the lines say, as JSON (tested field by field): the span and interval of the lines,
/// gaps, and per loop (each top-level object with counters: "mailbox", "camera") its last
/// counters, unaccounted samples, windows without progress, counters that went back and drop
/// windows (with the sensor's late releases in the same windows, where the lines have them);
/// the checks, memory after `warmup_s` (a line's own "warmup_s" wins) and the latest minutes'
/// p99 per latency series with its drift; and "judgments" as bench soak's receipt has them.
[[nodiscard]] nlohmann::json health_summary(const health_log& log, double warmup_s = 20.0);

/// health_summary as text: what `resident report health.jsonl` prints.
[[nodiscard]] std::string health_report_text(const health_log& log);
/// The page `resident report health.jsonl --html` writes: charts over the run (samples
/// processed and dropped per second per loop, host RSS and free device memory, the latest
/// minutes' p99) and the text.
[[nodiscard]] std::string health_report_html(const health_log& log);

}  // namespace resident::bench
