// resident bench reef (see bench_reef.hpp).

#include "commands/bench_reef.hpp"

#include <iostream>
#include <sstream>

#include "bench/reef/reef_config.hpp"

namespace resident::cli {

namespace {

template <class T>
std::string or_file(const char* what, const T& default_value) {
  std::ostringstream text;
  text << what << " (default " << default_value << ", or --config's)";
  return text.str();
}

}  // namespace

CLI::App* add_bench_reef_options(CLI::App& bench, bench_reef_command_settings& s) {
  const bench::reef_settings defaults;
  auto* app = bench.add_subcommand(
      "reef",
      "real-time loops beside best-effort inference under co-scheduling policies; every knob "
      "is in --config (defaults: bench/configs/reef.yaml)");
  app->add_option("--config", s.config,
                  "a YAML file of knobs (bench/configs/reef.yaml holds them all at their "
                  "defaults); the flags below override it")
      ->check(CLI::ExistingFile);
  app->add_option("--policies", s.policies,
                  "comma-separated policies to compare, in order (default: all " +
                      std::to_string(bench::reef_policies().size()) + ", or --config's)");
  app->add_option("--arrival", s.arrival,
                  or_file("RT requests: periodic or poisson", defaults.arrival))
      ->check(CLI::IsMember({"periodic", "poisson"}));
  app->add_option("--rate", s.rate_hz, or_file("RT requests per second", defaults.rate_hz))
      ->check(positive(20'000));
  app->add_option("--samples", s.samples,
                  or_file("measured RT requests per policy", defaults.samples))
      ->check(whole_in(1, 100'000'000));
  app->add_option("--warmup", s.warmup, or_file("RT requests before measuring", defaults.warmup))
      ->check(whole_in(0, 100'000'000));
  app->add_flag("--quick", s.quick, "1000 samples per policy");
  app->add_flag("--progress", s.progress,
                "every 250 ms, log the RT loop's and the BE runners' counts");
  app->add_flag("--no-fifo", s.no_fifo, "do not ask for SCHED_FIFO");
  app->add_option("--json", s.json, "write the JSON receipt here");
  return app;
}

command add_bench_reef_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_reef_command_settings>();
  s->command_line = command_line;
  return {add_bench_reef_options(bench, *s), [s] { return run_bench_reef(*s); }};
}

bench::reef_settings bench_reef_command_settings::resolve() const {
  bench::reef_settings out =
      config.empty() ? bench::reef_settings{} : bench::load_reef_config(config);
  if (!policies.empty()) out.policies = split_list(policies);
  if (!arrival.empty()) out.arrival = arrival;
  if (rate_hz > 0) out.rate_hz = rate_hz;
  if (samples > 0) out.samples = samples;
  if (warmup >= 0) out.warmup = warmup;
  if (quick) out.make_quick();
  if (progress) out.progress = true;
  if (no_fifo) out.realtime = false;
  out.command = command_line;
  out.validate();
  return out;
}

int run_bench_reef(const bench_reef_command_settings& s) {
  const bench::reef_settings reef = s.resolve();
  if (!have_gpu()) return no_gpu("bench reef");
  const auto receipt = bench::run_reef_bench(reef, std::cerr);
  finish_bench(receipt, s.json, bench::reef_table(receipt));
  for (const auto& r : receipt.results) {
    if (r["wrong_outputs"].get<std::int64_t>() != 0) {
      print_error("bench reef", "WRONG RT outputs under " + r["policy"].get<std::string>());
      return 1;
    }
  }
  return 0;
}

}  // namespace resident::cli
