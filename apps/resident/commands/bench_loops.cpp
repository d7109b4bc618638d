// resident bench loops (see bench_loops.hpp).

#include "commands/bench_loops.hpp"

#include <iostream>

namespace resident::cli {

namespace {

const std::string default_counts = "1,5,10,15,20";

/// The sensors, the controller and the measuring threads.
void add_timing_options(CLI::App& app, bench::loops_settings& loops) {
  app.add_option("--samples", loops.samples, "measured samples per loop")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app.add_option("--warmup", loops.warmup, "samples per loop before measuring")
      ->check(whole_in(0, 100'000'000))
      ->capture_default_str();
  app.add_option("--rate", loops.rate_hz, "each sensor's rate in Hz")
      ->check(positive(100'000))
      ->capture_default_str();
  app.add_option("--sleep-ns", loops.sleep_ns, "controller idle sleep (0 spins)")
      ->check(whole_in(0, 1'000'000'000))
      ->capture_default_str();
  app.add_option("--poll-ns", loops.poll_ns, "handler in-kernel polling budget")
      ->check(whole_in(0, 10'000'000'000))
      ->capture_default_str();
  app.add_option("--host-cores", loops.host_cores,
                 "cores for host-driven loop threads (0: one each while cores last)")
      ->check(whole_in(0, 4096))
      ->capture_default_str();
  app.add_option("--observers", loops.observers,
                 "actuator threads, each on its own core, each polling every loop (earliest "
                 "sighting counts)")
      ->check(whole_in(1, 4))
      ->capture_default_str();
  app.add_option("--devices", loops.devices,
                 "GPUs to spread the loops over, round-robin, each with its own partitions")
      ->check(whole_in(1, 16))
      ->capture_default_str();
  app.add_option("--disturbance-ns", loops.disturbance_ns,
                 "a sample is 'disturbed' when the sensor's publish or the actuator's round "
                 "over the loops before the sighting took longer than this")
      ->check(whole_in(1, 1'000'000'000))
      ->capture_default_str();
}

}  // namespace

CLI::App* add_bench_loops_options(CLI::App& bench, bench_loops_command_settings& s) {
  auto* app = bench.add_subcommand("loops", "N concurrent loops, each on its own SM partition");
  app->add_option("--counts", s.counts, "loop counts to run")->capture_default_str();
  app->add_option("--modes", s.modes, "modes to compare")->capture_default_str();
  app->add_option("--contention", s.contention, "none, stress")->capture_default_str();
  app->add_option("--workload", s.loops.workload, "per loop: empty, matmul6 or matmulNxK")
      ->capture_default_str();
  app->add_option("--partition-sms", s.loops.partition_sms,
                  "SMs per loop (0: the largest equal share for the largest count)")
      ->check(whole_in(0, 1024))
      ->capture_default_str();
  app->add_option("--backend", s.loops.backend,
                  "SM partitions: green (disjoint SM sets) or mps (SM budgets; needs the MPS "
                  "daemon)")
      ->capture_default_str();
  add_timing_options(*app, s.loops);
  app->add_flag("--no-fifo", s.no_fifo, "do not ask for SCHED_FIFO");
  app->add_flag("--no-telemetry", s.no_telemetry,
                "no device timestamps per sample (no in-loop split of the latency)");
  app->add_flag("--stress-ng", s.loops.stress_ng, "use stress-ng for the stress level");
  app->add_flag("--quick", s.quick, "counts 1,5,10 and few samples");
  app->add_option("--json", s.json, "write the JSON receipt here");
  return app;
}

command add_bench_loops_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_loops_command_settings>();
  s->loops.command = command_line;
  return {add_bench_loops_options(bench, *s), [s] { return run_bench_loops(*s); }};
}

bench::loops_settings bench_loops_command_settings::resolve() const {
  bench::loops_settings out = loops;
  if (quick) out.make_quick();
  if (!quick || counts != default_counts) out.counts = positive_numbers(counts, "--counts");
  out.modes = split_list(modes);
  out.contention = split_list(contention);
  out.realtime = !no_fifo;
  out.telemetry = !no_telemetry;
  out.validate();
  return out;
}

int run_bench_loops(const bench_loops_command_settings& s) {
  const bench::loops_settings loops = s.resolve();
  if (!have_gpu()) return no_gpu("bench loops");
  const auto receipt = bench::run_loops_bench(loops, std::cerr);
  finish_bench(receipt, s.json, bench::loops_table(receipt));
  for (const auto& r : receipt.results) {
    if (r["wrong_outputs"].get<std::int64_t>() != 0) {
      print_error("bench loops", "WRONG outputs in " + r["mode"].get<std::string>() + " x" +
                                     std::to_string(r["loops"].get<int>()));
      return 1;
    }
  }
  return 0;
}

}  // namespace resident::cli
