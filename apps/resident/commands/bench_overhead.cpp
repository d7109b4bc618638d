// resident bench overhead (see bench_overhead.hpp).

#include "commands/bench_overhead.hpp"

#include <iostream>

namespace resident::cli {

CLI::App* add_bench_overhead_options(CLI::App& bench, bench_overhead_command_settings& s) {
  auto* app = bench.add_subcommand("overhead", "fixed framework costs");
  app->add_option("--iterations", s.overhead.iterations, "stamped iterations per mode")
      ->check(whole_in(2, 100'000'000))
      ->capture_default_str();
  app->add_option("--idle-seconds", s.overhead.idle_seconds, "idle loop duration")
      ->check(positive(3600))
      ->capture_default_str();
  app->add_option("--launches", s.overhead.launches, "host graph launches timed")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app->add_flag("--quick", s.quick, "a few seconds in all");
  app->add_option("--json", s.json, "write the JSON receipt here");
  return app;
}

command add_bench_overhead_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_overhead_command_settings>();
  s->overhead.command = command_line;
  return {add_bench_overhead_options(bench, *s), [s] { return run_bench_overhead(*s); }};
}

bench::overhead_settings bench_overhead_command_settings::resolve() const {
  bench::overhead_settings out = overhead;
  if (quick) out.make_quick();
  out.validate();
  return out;
}

int run_bench_overhead(const bench_overhead_command_settings& s) {
  const bench::overhead_settings overhead = s.resolve();
  if (!have_gpu()) return no_gpu("bench overhead");
  const auto receipt = bench::run_overhead_bench(overhead, std::cerr);
  finish_bench(receipt, s.json, bench::overhead_table(receipt));
  return 0;
}

}  // namespace resident::cli
