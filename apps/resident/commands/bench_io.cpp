// resident bench io (see bench_io.hpp).

#include "commands/bench_io.hpp"

#include <cstdio>
#include <iostream>

namespace resident::cli {

CLI::App* add_bench_io_options(CLI::App& bench, bench_io_command_settings& s) {
  auto* app = bench.add_subcommand("io", "sensor -> actuator latency through emulated I/O");
  bench::io_settings& io = s.io;
  app->add_option("--modes", s.modes, "comma-separated modes")->capture_default_str();
  app->add_option("--workloads", s.workloads, "empty, matmul6")->capture_default_str();
  app->add_option("--contention", s.contention, "none, stress")->capture_default_str();
  app->add_option("--mailbox-formats", s.mailbox_formats,
                  "the mailbox's formats, comma-separated: automatic (lines for the 8-byte "
                  "samples here), lines, sequence-lock (the path for samples past a line)")
      ->capture_default_str();
  app->add_option("--samples", io.samples, "measured samples per configuration")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app->add_option("--rate", io.rate_hz, "sensor rate in Hz")
      ->check(positive(1e6))
      ->capture_default_str();
  app->add_option("--warmup", io.warmup, "samples released before measuring")
      ->check(whole_in(0, 100'000'000))
      ->capture_default_str();
  app->add_option("--sleep-ns", io.sleep_ns, "controller idle sleep (0 spins)")
      ->check(whole_in(0, 1'000'000'000))
      ->capture_default_str();
  app->add_option("--poll-ns", io.poll_ns, "handler in-kernel polling budget")
      ->check(whole_in(0, 10'000'000'000))
      ->capture_default_str();
  app->add_option("--disturbance-ns", io.disturbance_ns,
                  "a sample is 'disturbed' when the sensor's publish or the actuator's poll gap "
                  "around it took longer")
      ->check(whole_in(1, 1'000'000'000))
      ->capture_default_str();
  app->add_option("--sensor-cpu", io.sensor_cpu, "core for the sensor thread (-1: auto)")
      ->check(whole_in(-1, 4095));
  app->add_option("--actuator-cpu", io.actuator_cpu, "core for the actuator (-1: auto)")
      ->check(whole_in(-1, 4095));
  app->add_option("--loop-cpu", io.loop_cpu, "core for host-driven loops (-1: auto)")
      ->check(whole_in(-1, 4095));
  app->add_option("--observers", io.observers,
                  "actuator threads, each on its own core, each polling the output (earliest "
                  "sighting counts)")
      ->check(whole_in(1, 4))
      ->capture_default_str();
  app->add_flag("--no-fifo", s.no_fifo, "do not ask for SCHED_FIFO");
  app->add_flag("--no-fuse", s.no_fuse,
                "separate controller and end-marker kernels, and host-graph's IF kept (to compare "
                "with the fused default)");
  app->add_option("--repeats", io.repeats,
                  "runs of every configuration in this process; targets use their median")
      ->check(whole_in(1, 10))
      ->capture_default_str();
  app->add_flag("--peers", s.peers,
                "also run the hand-written peers (bench/peers: while, tail, host-graph, "
                "persistent) in the same process and report resident / peer");
  app->add_flag("--stress-ng", io.stress_ng, "use stress-ng for the stress level");
  app->add_flag("--quick", s.quick, "every configuration in about 20 s");
  app->add_option("--json", s.json, "write the JSON receipt here");
  app->add_option("--csv", io.csv_path, "write raw latency samples here");
  return app;
}

command add_bench_io_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_io_command_settings>();
  s->io.command = command_line;
  return {add_bench_io_options(bench, *s), [s] { return run_bench_io(*s); }};
}

bench::io_settings bench_io_command_settings::resolve() const {
  bench::io_settings out = io;
  if (quick) out.make_quick();
  out.modes = split_list(modes);
  out.workloads = split_list(workloads);
  out.contention = split_list(contention);
  out.mailbox_formats = split_list(mailbox_formats);
  out.realtime = !no_fifo;
  out.fuse = !no_fuse;
  if (peers) out.peers = {"while", "tail", "host-graph", "persistent"};
  out.validate();
  return out;
}

int run_bench_io(const bench_io_command_settings& s) {
  const bench::io_settings io = s.resolve();
  if (!have_gpu()) return no_gpu("bench io");
  const auto receipt = bench::run_io_bench(io, std::cerr);
  finish_bench(receipt, s.json, bench::io_table(receipt));
  for (const auto& r : receipt.results) {
    if (r["wrong_outputs"].get<std::int64_t>() != 0) {
      print_error("bench io", "WRONG outputs in " + r["mode"].get<std::string>() + "/" +
                                  r["workload"].get<std::string>() + "/" +
                                  r["contention"].get<std::string>());
      return 1;
    }
  }
  return 0;
}

}  // namespace resident::cli
