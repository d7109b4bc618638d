#pragma once
// resident bench soak: the camera pipeline and a mailbox pipeline in GPU-resident modes, side by
// side in one process for minutes to days, with every output the actuator sees checked against
// the CPU reference, every k-th shown camera frame checked against the CPU imaging pipeline, the
// counters reconciled every second, deadline misses, the latency distribution per minute (drift)
// and memory (device and host) between warm-up and the end. A periodic health line (JSON lines)
// lets a run of days be watched by a machine.

#include <array>
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "resident/app/loop.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::bench {

struct soak_settings {
  /// The longest run: a month. Memory does not grow with the length (the latencies are folded
  /// into per-minute summaries as the run goes; the loops' telemetry streams through rings).
  static constexpr double max_minutes = 60.0 * 24 * 31;

  double minutes{8.0};
  std::string camera_config{"examples/camera.yaml"};
  std::string camera_mode{"while"};   // while | tail | persistent
  std::string mailbox_mode{"while"};  // while | tail | persistent
  double mailbox_rate_hz{2000.0};
  std::int64_t elements{4096};    // the mailbox sample: fp32 values
  std::uint64_t check_every{30};  // check a shown camera frame about every this many frames
  double deadline_us{0.0};        // both loops' run_options::deadline (0: none)
  double warmup_s{20.0};          // memory and drift are judged after this
  double health_every_s{10.0};    // a JSON line this often (0: none)
  /// The mailbox loop's run_options::telemetry_max_age in ms: its latencies are folded per
  /// minute and need no fresher view, so 0 (drained when half full, 2 s at 2 kHz) by default.
  double mailbox_telemetry_age_ms{0.0};
  std::string health_path;  // where the JSON lines go (empty: stderr)
  std::string command;

  void make_quick();
  /// Throws std::invalid_argument naming the setting and its allowed range.
  void validate() const;
};

/// Runs the soak. The receipt's results are one object per pipeline plus "memory" and
/// "judgments"; `ok` says whether every hard check held (no mismatch, nothing unaccounted for).
[[nodiscard]] measure::receipt run_soak_bench(const soak_settings& settings, std::ostream& log,
                                              bool& ok);
[[nodiscard]] std::string soak_table(const measure::receipt& receipt);
/// What `resident report` prints for a soak receipt: a header line (commit, start, device), the
/// command, soak_table's lines and a table of the minutes, one row a minute: whether it was
/// judged, the mailbox's own response (n, p50, p90, p99, p99.9, max, tail share), the host's
/// view of it (p99) and the camera's latency (p50, p99, max), in µs.
[[nodiscard]] std::string soak_report_text(const measure::receipt& receipt);
/// The HTML page `resident report soak.json --html` writes: the run (commit, start, device,
/// command), a chart per latency series (per minute: a band from p50 to p99.9, or to p99
/// where a receipt has no p99.9, and a line through p99) and soak_report_text's tables.
[[nodiscard]] std::string soak_report_html(const measure::receipt& receipt);

// ---- pieces with no GPU (unit-tested) --------------------------------------------------------

/// One latency sample: seconds since the run's start, and the latency in µs.
struct timed_latency {
  double t_s{0};
  double us{0};
};

struct minute_summary {
  int minute{0};  // 0: the first minute of the run
  std::uint64_t n{0};
  double p50_us{0};
  double p99_us{0};
  double max_us{0};
  double p90_us{0};
  double p999_us{0};
  /// Share of the minute's samples slower than 1.5 x its p50: how thick the slow tail is, which
  /// moves a p99 that sits near the tail's edge more than any one sample does.
  double tail_share{0};
};

/// Per-minute latency summaries folded as a run goes, so a run of days keeps one minute of
/// samples, not all of them: a minute's samples stay (in room reserved up front) until a sample
/// of a later minute closes it. Samples come in time order from one thread; one that belongs to
/// an earlier minute than the open one counts in the open one. summaries() and latest() may be
/// called from any thread meanwhile.
class minute_folder {
 public:
  /// `per_minute`: samples a minute is expected to hold; `minutes`: the run's length. Both are
  /// reserved now (and touched), so folding does not grow the process.
  minute_folder(std::size_t per_minute, std::size_t minutes);
  minute_folder(const minute_folder&) = delete;
  minute_folder& operator=(const minute_folder&) = delete;

  void add(timed_latency sample);
  /// Every minute with samples (a minute without any is left out), in order: the closed ones,
  /// then the open one.
  [[nodiscard]] std::vector<minute_summary> summaries() const;
  /// The latest closed minute (nothing before the first minute closes).
  [[nodiscard]] std::optional<minute_summary> latest() const;

 private:
  mutable std::mutex _mutex;  // guards everything below
  int _open{-1};              // the open minute (-1: no sample yet)
  std::vector<double> _values;
  std::vector<minute_summary> _closed;
};

/// Whether a minute counts for drift: it starts after `warmup_s` and the run of `run_s` seconds
/// filled it (a last minute's few samples would make a p99 of their own).
[[nodiscard]] bool minute_judged(const minute_summary& m, double warmup_s, double run_s);

/// How far the per-minute p99 moved over the run, ignoring minutes that start before
/// `warmup_s` and a last minute the run of `run_s` seconds did not fill (its few samples would
/// make a p99 of their own): (max p99 - min p99) / min p99; nothing with fewer than two minutes
/// left to compare (a run too short to judge drift).
[[nodiscard]] std::optional<double> p99_drift(std::span<const minute_summary> minutes,
                                              double warmup_s, double run_s);

/// The soak's judgments, shared by its receipt (bench soak) and its health lines (resident
/// report): {"check", "ok", "value"}.
[[nodiscard]] nlohmann::json soak_judgment(const std::string& check, bool ok,
                                           const nlohmann::json& value);
/// Host RSS grows at most 1 MiB after warm-up.
[[nodiscard]] nlohmann::json rss_growth_judgment(std::int64_t growth_bytes);
/// Free device memory moves at most 2 MiB after warm-up.
[[nodiscard]] nlohmann::json device_memory_judgment(std::int64_t moved_bytes);
/// A per-minute p99 drift within 5%, or not judged (ok) where there were too few whole minutes.
[[nodiscard]] nlohmann::json drift_judgment(const std::string& what, std::optional<double> drift);

/// The loop's own response to a sample from its telemetry entry: the handler's sighting of the
/// sample to the egress's commit, on the device clock (no host on it), filed at
/// (seq - base) / rate_hz seconds into the run. Nothing for a repeat, a sample before the base
/// or an entry missing either stamp.
[[nodiscard]] std::optional<timed_latency> in_loop_latency(const telemetry_entry& e,
                                                           std::uint64_t base, double rate_hz);

/// Which mailbox samples ran while the camera loop worked on a frame, so a receipt can say
/// whether the mailbox's slow tail is the other loop's doing. Each sample's [sighting, commit]
/// and each frame's windows are device-clock times (one GPU's %globaltimer): the frame's work
/// [sighting, commit] and its landing, the `landing_ns` before its arrival stamp (the bridge's
/// copy of the frame into device memory ends at the arrival). A sample is slow above 1.5 x the
/// median of the first `calibration` samples. Samples wait until frames known cover their time
/// (a frame that arrives later than commit + landing_ns cannot touch them); each series comes
/// in time order from its own thread (the two loops' supervisors). Room is taken up front: a
/// ring of `frames` frames (a sample older than the oldest kept is counted as unjudged) and one
/// of `pending` samples (when full, the oldest is judged against the frames known).
class overlap_census {
 public:
  static constexpr std::array<double, 7> gap_edges_us{25, 50, 100, 200, 400, 800, 1600};
  static constexpr std::size_t gap_buckets = gap_edges_us.size() + 2;
  struct counts {
    double slow_above_us{0};  // 0 until calibrated
    std::uint64_t slow{0};
    std::uint64_t slow_in_work{0};     // overlapped a frame's work
    std::uint64_t slow_in_landing{0};  // overlapped a frame's landing (and no frame's work)
    std::uint64_t fast{0};
    std::uint64_t fast_in_work{0};
    std::uint64_t fast_in_landing{0};
    std::uint64_t unjudged{0};  // older than every frame kept, or before calibration ended
    // By how long before the next frame's arrival stamp a sample ended (0 when that arrival
    // fell inside the sample), in the buckets of gap_edges_us plus one beyond the last edge and
    // one for no later frame: a landing's true length shows as the gap under which slow samples
    // crowd.
    std::array<std::uint64_t, gap_buckets> slow_by_gap{};
    std::array<std::uint64_t, gap_buckets> fast_by_gap{};
  };

  overlap_census(std::uint64_t landing_ns, std::size_t calibration = 4096,
                 std::size_t frames = 4096, std::size_t pending = 1 << 15);
  overlap_census(const overlap_census&) = delete;
  overlap_census& operator=(const overlap_census&) = delete;

  void add_frame(std::uint64_t arrival_ns, std::uint64_t sighting_ns, std::uint64_t commit_ns);
  void add_sample(std::uint64_t sighting_ns, std::uint64_t commit_ns);
  /// The counts so far; with `settle_all` (the run has ended) every waiting sample is judged
  /// against the frames known.
  [[nodiscard]] counts result(bool settle_all);

 private:
  struct frame_window {
    std::uint64_t arrival_ns;
    std::uint64_t begin_ns;  // the frame's work
    std::uint64_t end_ns;
  };
  struct span_ns {
    std::uint64_t begin_ns;
    std::uint64_t end_ns;
  };
  void settle(bool all);         // with _mutex held
  void retire_oldest();          // judges (or counts as unjudged) the oldest waiting sample
  void judge(const span_ns& s);  // with _mutex held

  std::mutex _mutex;  // guards everything below
  std::uint64_t _landing_ns;
  std::size_t _calibration;
  std::vector<double> _first;  // the calibration samples' latencies (µs)
  std::vector<frame_window> _frames;
  std::uint64_t _frames_added{0};
  std::uint64_t _longest_work_ns{0};
  std::vector<span_ns> _pending;
  std::uint64_t _pending_head{0};  // index of the oldest waiting sample (mod size)
  std::uint64_t _pending_n{0};
  counts _counts;
};

/// Which frame the camera loop processed before each frame, from its streamed telemetry: with
/// previous-frame statistics a shown frame F carries the gains of that frame. One thread adds
/// the batches in processing order while another asks; each slot is one atomic word (the frame
/// in the high half, how many frames before it its predecessor lies in the low half).
class predecessor_ring {
 public:
  explicit predecessor_ring(std::size_t slots);
  void add(std::span<const telemetry_entry> batch);
  /// The frame processed before the latest processing of `frame`: `frame` itself for a repeat,
  /// 0 for the first frame processed. Nothing while its entry has not come in, once the ring
  /// has moved past it, or for a frame number of 2^32 or more.
  [[nodiscard]] std::optional<std::uint64_t> before(std::uint64_t frame) const;

 private:
  std::size_t _slots;
  std::unique_ptr<std::atomic<std::uint64_t>[]> _words;
  std::uint64_t _last{0};  // the adding thread's: the latest frame processed
};

/// Resident set size of this process in bytes (/proc/self/statm; 0 where unreadable).
[[nodiscard]] std::uint64_t resident_set_bytes();

}  // namespace resident::bench
