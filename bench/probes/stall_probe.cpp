// A design probe: how often a busy-polling thread loses its core on this machine with nothing
// else of ours running. It spins on CLOCK_MONOTONIC, pinned, and logs every gap between two
// reads above a threshold, then prints the stall summary and the interrupts its core took, in
// the form bench loops' receipts use, so the two can be compared.
//
//   resident_stall_probe [seconds=5] [cpu=-1: highest allowed] [threshold_ns=10000]

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>

#include <nlohmann/json.hpp>

#include "resident/measure/host_noise.hpp"
#include "resident/measure/threads.hpp"

namespace {

/// CLOCK_MONOTONIC in nanoseconds, as the benches stamp samples.
std::int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
    int cpu = argc > 2 ? std::atoi(argv[2]) : -1;
    const std::int64_t threshold = argc > 3 ? std::atoll(argv[3]) : 10'000;
    if (!(seconds > 0) || threshold <= 0) {
      std::fprintf(stderr, "usage: resident_stall_probe [seconds>0] [cpu] [threshold_ns>0]\n");
      return 2;
    }
    if (cpu < 0) cpu = resident::measure::allowed_cpus().back();
    const auto grant = resident::measure::configure_current_thread(cpu, true);
    resident::measure::stall_log stalls(1 << 20);
    const auto irq0 = resident::measure::read_interrupts(cpu);
    const std::int64_t t0 = now_ns();
    const auto end = t0 + static_cast<std::int64_t>(seconds * 1e9);
    std::int64_t previous = t0;
    std::uint64_t reads = 0;
    for (;;) {
      const std::int64_t t = now_ns();
      ++reads;
      if (t - previous > threshold) stalls.record(previous, t - previous);
      previous = t;
      if (t >= end) break;
    }
    const auto irq1 = resident::measure::read_interrupts(cpu);
    nlohmann::json out = {{"cpu", cpu},
                          {"thread", resident::measure::to_json(grant)},
                          {"seconds", seconds},
                          {"threshold_us", static_cast<double>(threshold) / 1000.0},
                          {"clock_reads", reads},
                          {"stalls", stalls.summary(previous - t0, 1'000'000, t0)},
                          {"interrupts", resident::measure::interrupt_delta(irq0, irq1)}};
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resident_stall_probe: %s\n", e.what());
    return 1;
  }
}
