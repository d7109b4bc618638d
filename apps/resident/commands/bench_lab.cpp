// resident bench lab (see bench_lab.hpp).

#include "commands/bench_lab.hpp"

#include <iostream>

namespace resident::cli {

namespace {

/// The pipeline's shape and how each mode runs it.
void add_pipeline_options(CLI::App& app, bench::lab_settings& lab) {
  app.add_option("--mode", lab.mode, "eager, stream, graph, persistent or all")
      ->capture_default_str();
  app.add_option("--persistent-workers", lab.persistent_workers,
                 "persistent mode: worker blocks claiming from the queue")
      ->check(whole_in(1, 1024))
      ->capture_default_str();
  app.add_option("--elements", lab.elements, "fp32 values")
      ->check(whole_in(1, std::int64_t{1} << 28))
      ->capture_default_str();
  app.add_option("--settle-ms", lab.settle_ms, "untimed pipeline runs before the first mode")
      ->check(number_in(0, 600'000))
      ->capture_default_str();
  app.add_option("--graph-edges", lab.graph_edges,
                 "graph mode: programmatic (programmatic dependent launch) or full edges")
      ->capture_default_str();
  app.add_option("--copy", lab.copy, "the copy step: memcpy (node) or kernel")
      ->capture_default_str();
  app.add_option("--warmup", lab.warmup, "untimed iterations per mode")
      ->check(whole_in(0, 100'000'000))
      ->capture_default_str();
  app.add_option("--iterations", lab.iterations, "timed iterations per repeat")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app.add_option("--repeats", lab.repeats, "timed runs per mode (the receipt gives medians)")
      ->check(whole_in(1, 1000))
      ->capture_default_str();
}

/// Graph pools and updates.
void add_pool_options(CLI::App& app, bench::lab_settings& lab) {
  app.add_option("--buckets", lab.buckets, "graph pool bucket sizes (requests)")
      ->capture_default_str();
  app.add_option("--bucket-counts", lab.bucket_counts, "check every request count from 1 to this")
      ->check(whole_in(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--bucket-replays", lab.bucket_replays, "timed replays per bucket")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app.add_option("--update-trials", lab.update_trials, "timed graph updates per path")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
}

}  // namespace

CLI::App* add_bench_lab_options(CLI::App& bench, bench_lab_command_settings& s) {
  auto* app = bench.add_subcommand(
      "lab", "the four-operation pipeline in eager, stream, graph and persistent submission modes");
  add_pipeline_options(*app, s.lab);
  app->add_option("--order", s.order, "the order the modes run in")->capture_default_str();
  add_pool_options(*app, s.lab);
  app->add_option("--peer", s.lab.peer, "a scripts/peer/torch_lab.py receipt to set beside")
      ->check(CLI::ExistingFile);
  app->add_flag("--quick", s.quick, "fewer iterations: a few seconds");
  app->add_option("--json", s.json, "write the JSON receipt here");
  return app;
}

command add_bench_lab_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_lab_command_settings>();
  s->lab.command = command_line;
  return {add_bench_lab_options(bench, *s), [s] { return run_bench_lab(*s); }};
}

bench::lab_settings bench_lab_command_settings::resolve() const {
  bench::lab_settings out = lab;
  if (quick) out.make_quick();
  out.order = split_list(order);
  out.validate();
  return out;
}

int run_bench_lab(const bench_lab_command_settings& s) {
  const bench::lab_settings lab = s.resolve();
  if (!have_gpu()) return no_gpu("bench lab");
  const auto receipt = bench::run_lab_bench(lab, std::cerr);
  finish_bench(receipt, s.json, bench::lab_table(receipt));
  const std::string wrong = bench::lab_failures(receipt);
  if (!wrong.empty()) {
    print_error("bench lab", "WRONG results: " + wrong);
    return 1;
  }
  return 0;
}

}  // namespace resident::cli
