#pragma once
// Pieces every benchmark shares: clocks, waiting, the device and host facts of a receipt.

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "resident/exec/run_handle.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/statistics.hpp"

namespace resident::bench {

/// CLOCK_MONOTONIC in nanoseconds (the clock DESIGN.md names for sensor and actuator times).
inline std::int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Waits until CLOCK_MONOTONIC reaches `target_ns`: sleeps while far away, spins the last
/// 100 us so the release time does not inherit the scheduler's wake-up latency.
void wait_until(std::int64_t target_ns) noexcept;

/// The GPU's SM clock (MHz) and driver version as nvidia-smi reports them; empty when
/// nvidia-smi is not available.
struct smi_reading {
  int sm_clock_mhz{-1};
  std::string driver;
};
[[nodiscard]] smi_reading read_nvidia_smi();

/// Fills the device and host records of a receipt (device 0).
void describe_machine(measure::receipt& receipt);

/// Waits (polling every 100 us) until `handle` has processed sample `seq`, or `timeout_ns` went
/// by; true when it got there. A sample the loop dropped still advances last_seq past it. The
/// benches go on either way: their counters account for a sample that never came out.
bool wait_for_sample(const run_handle& handle, std::uint64_t seq, std::int64_t timeout_ns);

/// User + system CPU time of the whole process, in seconds (getrusage).
[[nodiscard]] double cpu_seconds();

/// What the emulated endpoints record for one loop: release and first-sight times and wrong
/// outputs per sample (1-based), sized before the threads start so they never allocate.
struct sample_log {
  explicit sample_log(std::size_t total)
      : release_ns(total + 1), seen_ns(total + 1, -1), wrong(total + 1, 0) {}
  std::vector<std::atomic<std::int64_t>> release_ns;  // sensor -> actuator
  std::vector<std::int64_t> seen_ns;                  // actuator only
  std::vector<std::uint8_t> wrong;                    // actuator only
};

/// A compact summary for breakdown tables: {n, mean_us, p50_us, p99_us, max_us}.
[[nodiscard]] nlohmann::json brief(const std::vector<double>& values_us);

}  // namespace resident::bench
