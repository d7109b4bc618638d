#pragma once
// Host contention for `resident bench io --contention stress`: load the cores the measured
// threads do not use with memory-bandwidth, file-I/O and CPU hogs, to show what host-driven
// execution loses under load and GPU-resident execution does not.
//
//   auto cpus = assign_cpus({{"sensor", -1}, {"actuator", -1}, {"host", -1}});
//   contention_generator stress({.cpus = remaining_cpus({cpus.at("sensor"), ...})});
//   stress.start();
//   ... measure ...
//   stress.stop();
//   receipt["contention"] = stress.to_json();
//
// Built-in hogs, one thread per listed core, kinds round-robin (memory, file, cpu, memory, ...).
// With fewer than three cores, one hog of each kind still runs and the hogs share the cores
// round-robin, so every kind of pressure is always present. Each hog pins itself to its core as
// SCHED_OTHER, so it competes with, but never outranks, a realtime measured thread.
//
// start() and stop() belong to one controlling thread; activity() may be read from any thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include <nlohmann/json.hpp>

namespace resident::measure {

struct contention_options {
  std::vector<int> cpus;  // cores the hogs may use (one hog thread per core)
  // Per memory hog: two buffers of this size copied back and forth. Must exceed the last-level
  // cache for the copies to reach DRAM.
  std::size_t memory_bytes{64u << 20};
  // Where file hogs write (their files are removed at stop). A tmpfs here never reaches a disk:
  // the generator says so in its notes.
  std::filesystem::path scratch_dir{std::filesystem::temp_directory_path()};
  bool use_stress_ng{false};  // run the external stress-ng instead of the built-in hogs
};

/// Work the built-in hogs did so far (stress-ng reports none: all zero).
struct contention_activity {
  std::uint64_t bytes_copied{};   // memory hogs: bytes memcpy'd
  std::uint64_t bytes_written{};  // file hogs: bytes write() accepted
  std::uint64_t fsyncs{};         // file hogs: fsync() calls completed
  std::uint64_t spin_loops{};     // cpu hogs: arithmetic iterations
};

/// {"bytes_copied", "bytes_written", "fsyncs", "spin_loops"}
[[nodiscard]] nlohmann::json to_json(const contention_activity& a);

/// Loads the given cores until stopped.
///
/// Built-in hogs: memory (memcpy between two large buffers, in chunks of at most 4 MiB), file
/// (buffered 1 MiB write() to a scratch file, fsync every 4 MiB, truncate and rewind at 256 MiB)
/// and cpu (a dependent integer multiply chain). Each checks the stop flag every chunk, write or
/// ~1 ms of arithmetic; an fsync already in flight finishes first.
///
/// With use_stress_ng: runs `stress-ng --vm N --hdd N --cpu N --taskset LIST --timeout 0 ...` as
/// a child in its own process group, stopped with SIGTERM to the group, then SIGKILL after a
/// grace period (its stdout goes to /dev/null, its stderr is inherited). It loads the same set of
/// cores but does not pin each worker to one of them.
/// The child gets SIGTERM when the thread that called start() exits (PR_SET_PDEATHSIG), so a
/// crashed benchmark leaves no stress-ng behind: call start() from a thread that outlives the
/// measurement.
class contention_generator {
 public:
  /// Validates: at least one cpu, each online, in this process's affinity mask (a hog that cannot
  /// pin itself would float onto the measured cores) and listed once; memory_bytes > 0. Throws
  /// std::invalid_argument otherwise.
  explicit contention_generator(contention_options options);
  ~contention_generator();  // stops if running; never throws
  contention_generator(const contention_generator&) = delete;
  contention_generator& operator=(const contention_generator&) = delete;

  /// Starts the hogs. Throws std::logic_error if already running; std::runtime_error (or
  /// std::system_error) if the scratch files, buffers or threads cannot be created, or if
  /// use_stress_ng and stress-ng is not on PATH. A failed start leaves nothing running. A stopped
  /// generator may be started again; the activity counters restart from zero.
  void start();
  /// Stops and joins every hog (milliseconds, unless an fsync is in flight), then removes the
  /// scratch files and frees the buffers. Safe to call when not running.
  void stop() noexcept;
  [[nodiscard]] bool running() const noexcept { return _running; }

  /// Live counters (relaxed reads; each is exact once stop() returned).
  [[nodiscard]] contention_activity activity() const noexcept;
  /// "built-in: 2 memory, 1 file (fsync), 1 cpu hogs on cpus 2,3,4,5" or the stress-ng command.
  [[nodiscard]] std::string description() const;
  /// Things a reader of the results should know: a hog that could not pin itself or failed, a
  /// scratch dir on tmpfs, hogs sharing cores.
  [[nodiscard]] std::vector<std::string> notes() const;
  /// {"kind": "built-in"|"stress-ng", "cpus", "memory_hogs", "file_hogs", "cpu_hogs",
  ///  "memory_bytes", "scratch_dir", "command" (null for built-in), "description", "running",
  ///  "activity": {...}, "notes": [...]}
  [[nodiscard]] nlohmann::json to_json() const;

  [[nodiscard]] const contention_options& options() const noexcept { return _options; }
  [[nodiscard]] std::size_t memory_hogs() const noexcept { return _memory_hogs; }
  [[nodiscard]] std::size_t file_hogs() const noexcept { return _file_hogs; }
  [[nodiscard]] std::size_t cpu_hogs() const noexcept { return _cpu_hogs; }

 private:
  enum class hog_kind { memory, file, cpu };
  struct hog;

  void start_built_in();
  void start_stress_ng();
  void stop_stress_ng() noexcept;
  void run_hog(hog& h) noexcept;
  void run_memory(hog& h);
  void run_file(hog& h);
  void run_cpu();
  void add_note(std::string note);
  [[nodiscard]] std::vector<std::string> stress_ng_arguments(const std::string& program) const;

  contention_options _options;
  std::size_t _memory_hogs{0}, _file_hogs{0}, _cpu_hogs{0};
  std::vector<std::unique_ptr<hog>> _hogs;
  std::vector<std::thread> _threads;
  std::atomic<bool> _stop{false};
  bool _running{false};
  std::atomic<std::uint64_t> _bytes_copied{0}, _bytes_written{0}, _fsyncs{0}, _spin_loops{0};
  mutable std::mutex _notes_mutex;
  std::vector<std::string> _notes;
  std::vector<std::string> _command;  // stress-ng argv once resolved
  pid_t _child{-1};                   // stress-ng, also its process group
};

/// The benchmarks' stress level: hogs on `cpus` (those the measuring threads leave free),
/// started and given 200 ms to reach a steady state. Throws std::invalid_argument naming
/// `pinned` ("the sensor and loop threads", ...) when no core is left for them.
[[nodiscard]] std::unique_ptr<contention_generator> start_stress(std::vector<int> cpus,
                                                                 bool use_stress_ng,
                                                                 const std::string& pinned);

}  // namespace resident::measure
