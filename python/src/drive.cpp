// _drive_mailbox: a pinned C++ sensor thread and a pinned C++ actuator thread around a running
// loop's mailbox, for benchmarks driven from Python (python -m resident.bench.inference). No
// Python runs while they do: the sensor publishes at a fixed rate, the actuator stamps the first
// sight of each sample's output, and the GIL is released until both are done.

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bindings.hpp"
#include "resident/io/mailbox.hpp"

namespace py = pybind11;

namespace resident::python {
namespace {

using clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch())
          .count());
}

// Pins the calling thread to `cpu` (-1: leaves it); throws naming the role when it cannot.
void pin_to(int cpu, const char* role) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int error = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (error != 0) {
    throw std::runtime_error(std::string("_drive_mailbox: cannot pin the ") + role +
                             " thread to cpu " + std::to_string(cpu) + ": " + std::strerror(error));
  }
}

struct drive_settings {
  std::size_t samples{};
  double rate_hz{};
  int sensor_cpu{-1};
  int actuator_cpu{-1};
  int observer_cpu{-1};  // a second actuator thread there (-1: none)
  std::size_t keep_bytes{};
  std::chrono::nanoseconds drain{};  // how long the actuator waits after the last publish
  std::int64_t poisson_seed{-1};     // >= 0: exponential gaps of mean 1 / rate_hz (Poisson)
};

/// When each sample is due after the start: every period, or at a Poisson process's arrivals
/// (exponential gaps of the same mean, from a seeded generator: the same run is reproducible).
std::vector<std::uint64_t> due_offsets(const drive_settings& s) {
  std::vector<std::uint64_t> due(s.samples);
  const double period_ns = 1e9 / s.rate_hz;
  if (s.poisson_seed < 0) {
    for (std::size_t i = 0; i < s.samples; ++i) {
      due[i] = static_cast<std::uint64_t>(period_ns * static_cast<double>(i));
    }
    return due;
  }
  std::mt19937_64 rng(static_cast<std::uint64_t>(s.poisson_seed));
  std::exponential_distribution<double> gap(1.0 / period_ns);
  double t = 0.0;
  for (std::size_t i = 0; i < s.samples; ++i) {
    due[i] = static_cast<std::uint64_t>(t);
    t += gap(rng);
  }
  return due;
}

struct drive_result {
  std::vector<std::uint64_t> publish_ns;
  std::vector<std::uint64_t> seen_ns;  // 0: no output of that sample was seen
  std::vector<std::byte> outputs;      // keep_bytes per sample, the first output seen
  std::uint64_t first_seq{};
};

void sensor(io::mailbox& mb, std::span<const std::byte> payloads, const drive_settings& s,
            std::uint64_t start_ns, drive_result& r, std::atomic<bool>& done) {
  pin_to(s.sensor_cpu, "sensor");
  const std::size_t in = mb.settings().input_bytes;
  const std::size_t kinds = payloads.size() / in;
  const std::vector<std::uint64_t> offsets = due_offsets(s);
  for (std::size_t i = 0; i < s.samples; ++i) {
    const std::uint64_t due = start_ns + offsets[i];
    while (now_ns() < due) {
    }
    r.publish_ns[i] = now_ns();
    (void)mb.publish(payloads.subspan((i % kinds) * in, in));
  }
  done.store(true, std::memory_order_release);
}

/// One actuator thread's first sightings (seen_ns 0: not seen) and the outputs it saw.
struct sightings {
  std::vector<std::uint64_t> seen_ns;
  std::vector<std::byte> outputs;
};

void actuator(const io::mailbox& mb, const drive_settings& s, int cpu, std::uint64_t first_seq,
              sightings& r, const std::atomic<bool>& sensor_done) {
  pin_to(cpu, "actuator");
  std::vector<std::byte> out(mb.settings().output_bytes);
  io::output_stamp after = mb.latest_output();
  std::uint64_t quiet_since = 0;
  for (;;) {
    const io::output_stamp stamp = mb.wait_output(after, out, std::chrono::milliseconds(20));
    const std::uint64_t t = now_ns();
    if (stamp.empty() || stamp == after) {
      if (!sensor_done.load(std::memory_order_acquire)) continue;
      if (quiet_since == 0) quiet_since = t;
      if (t - quiet_since > static_cast<std::uint64_t>(s.drain.count())) return;
      continue;
    }
    quiet_since = 0;
    after = stamp;
    if (stamp.seq < first_seq) continue;
    const std::uint64_t i = stamp.seq - first_seq;
    if (i >= s.samples || r.seen_ns[i] != 0) continue;
    r.seen_ns[i] = t;
    std::memcpy(r.outputs.data() + i * s.keep_bytes, out.data(), s.keep_bytes);
    if (i + 1 == s.samples) return;
  }
}

/// Each sample's earliest sighting among the actuator threads, with the output that one saw: a
/// thread that loses its core for longer than a period then misses nothing the other saw.
void merge(const std::vector<sightings>& all, const drive_settings& s, drive_result& r) {
  for (std::size_t i = 0; i < s.samples; ++i) {
    for (const sightings& a : all) {
      const std::uint64_t t = a.seen_ns[i];
      if (t == 0 || (r.seen_ns[i] != 0 && r.seen_ns[i] <= t)) continue;
      r.seen_ns[i] = t;
      std::memcpy(r.outputs.data() + i * s.keep_bytes, a.outputs.data() + i * s.keep_bytes,
                  s.keep_bytes);
    }
  }
}

/// The sensor and the actuator threads, until the last output was seen or the drain passed.
void run_threads(io::mailbox& mb, std::span<const std::byte> all, const drive_settings& s,
                 drive_result& r) {
  r.first_seq = mb.published() + 1;  // the sensor thread is the only publisher
  std::atomic<bool> done{false};
  const std::uint64_t start = now_ns() + 5'000'000;  // every thread settled and pinned
  std::vector<int> cpus{s.actuator_cpu};
  if (s.observer_cpu >= 0) cpus.push_back(s.observer_cpu);
  std::vector<sightings> seen(cpus.size());
  std::vector<std::exception_ptr> errors(cpus.size() + 1);
  std::vector<std::thread> actuators;
  for (std::size_t a = 0; a < cpus.size(); ++a) {
    seen[a].seen_ns.assign(s.samples, 0);
    seen[a].outputs.assign(s.samples * s.keep_bytes, std::byte{0});
    actuators.emplace_back([&, a] {
      try {
        actuator(mb, s, cpus[a], r.first_seq, seen[a], done);
      } catch (...) {
        errors[a] = std::current_exception();
      }
    });
  }
  std::thread sen([&] {
    try {
      sensor(mb, all, s, start, r, done);
    } catch (...) {
      errors.back() = std::current_exception();
      done.store(true);
    }
  });
  sen.join();
  for (auto& t : actuators) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  merge(seen, s, r);
}

py::bytes as_bytes(const void* data, std::size_t n) { return {static_cast<const char*>(data), n}; }

py::dict drive_mailbox(io::mailbox& mb, const py::buffer& payloads, std::size_t samples,
                       double rate_hz, int sensor_cpu, int actuator_cpu, std::size_t keep_bytes,
                       double drain_s, int observer_cpu, std::int64_t poisson_seed) {
  const py::buffer_info info = payloads.request();
  const std::size_t in = mb.settings().input_bytes;
  const auto bytes = static_cast<std::size_t>(info.size * info.itemsize);
  if (in == 0 || bytes == 0 || bytes % in != 0) {
    throw py::value_error("_drive_mailbox: payloads hold " + std::to_string(bytes) +
                          " bytes, not a whole number of the mailbox's " + std::to_string(in) +
                          "-byte samples");
  }
  if (samples == 0 || !(rate_hz > 0) || drain_s <= 0) {
    throw py::value_error("_drive_mailbox: samples, rate_hz and drain_s must be positive");
  }
  if (keep_bytes > mb.settings().output_bytes) {
    throw py::value_error("_drive_mailbox: keep_bytes " + std::to_string(keep_bytes) +
                          " exceeds the mailbox's " + std::to_string(mb.settings().output_bytes) +
                          "-byte outputs");
  }
  drive_settings s{samples,
                   rate_hz,
                   sensor_cpu,
                   actuator_cpu,
                   observer_cpu,
                   keep_bytes,
                   std::chrono::nanoseconds(static_cast<std::int64_t>(drain_s * 1e9)),
                   poisson_seed};
  drive_result r;
  r.publish_ns.assign(samples, 0);
  r.seen_ns.assign(samples, 0);
  r.outputs.assign(samples * keep_bytes, std::byte{0});
  {
    py::gil_scoped_release release;
    run_threads(mb, std::span<const std::byte>(static_cast<const std::byte*>(info.ptr), bytes), s,
                r);
  }
  py::dict d;
  d["publish_ns"] = as_bytes(r.publish_ns.data(), samples * sizeof(std::uint64_t));
  d["seen_ns"] = as_bytes(r.seen_ns.data(), samples * sizeof(std::uint64_t));
  d["outputs"] = as_bytes(r.outputs.data(), r.outputs.size());
  d["first_seq"] = r.first_seq;
  return d;
}

}  // namespace

void bind_drive(py::module_& m) {
  m.def("_drive_mailbox", &drive_mailbox, py::arg("mailbox"), py::arg("payloads"),
        py::arg("samples"), py::arg("rate_hz"), py::arg("sensor_cpu") = -1,
        py::arg("actuator_cpu") = -1, py::arg("keep_bytes") = 0, py::arg("drain_s") = 0.5,
        py::arg("observer_cpu") = -1, py::arg("poisson_seed") = -1,
        "Publishes `samples` payloads (cycling through `payloads`, a buffer of whole samples) "
        "at `rate_hz` from a pinned C++ sensor thread while a pinned C++ actuator thread "
        "stamps the first sight of each sample's output (CLOCK_MONOTONIC ns); with observer_cpu "
        "a second one polls too and the earlier sighting counts. Returns "
        "publish_ns and seen_ns (uint64 per sample, seen 0: never seen), outputs (keep_bytes "
        "per sample) and first_seq. poisson_seed >= 0: arrivals of a Poisson process of that "
        "mean rate instead (exponential gaps from a generator with that seed).");
}

}  // namespace resident::python
