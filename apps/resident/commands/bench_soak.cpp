// resident bench soak (see bench_soak.hpp).

#include "commands/bench_soak.hpp"

#include <iostream>

namespace resident::cli {

CLI::App* add_bench_soak_options(CLI::App& bench, bench_soak_command_settings& s) {
  auto* app = bench.add_subcommand(
      "soak", "camera and mailbox loops side by side for N minutes, every output checked");
  app->add_option("--minutes", s.soak.minutes, "how long")
      ->check(number_in(0.05, 60.0 * 24 * 30))
      ->capture_default_str();
  app->add_option("--camera-config", s.soak.camera_config, "the camera's YAML")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app->add_option("--camera-mode", s.soak.camera_mode, "while, tail or persistent")
      ->capture_default_str();
  app->add_option("--mailbox-mode", s.soak.mailbox_mode, "while, tail or persistent")
      ->capture_default_str();
  app->add_option("--mailbox-rate", s.soak.mailbox_rate_hz, "mailbox samples per second")
      ->check(number_in(1, 100'000))
      ->capture_default_str();
  app->add_option("--elements", s.soak.elements, "fp32 values per mailbox sample")
      ->check(whole_in(1, 1 << 24))
      ->capture_default_str();
  app->add_option("--check-every", s.soak.check_every,
                  "check a shown camera frame about every this many frames")
      ->check(whole_in(1, 1'000'000'000))
      ->capture_default_str();
  app->add_option("--deadline-us", s.soak.deadline_us, "both loops' deadline (0: none)")
      ->check(number_in(0, 1e6))
      ->capture_default_str();
  app->add_option("--warmup-s", s.soak.warmup_s, "memory and drift are judged after this")
      ->check(number_in(0, 86400))
      ->capture_default_str();
  app->add_option("--health-every-s", s.soak.health_every_s,
                  "a JSON health line this often (0: none)")
      ->check(number_in(0, 86400))
      ->capture_default_str();
  app->add_option("--mailbox-telemetry-age-ms", s.soak.mailbox_telemetry_age_ms,
                  "drain the mailbox loop's telemetry when entries are this old (0: when half "
                  "the ring is full)")
      ->check(number_in(0, 60000))
      ->capture_default_str();
  app->add_option("--health", s.soak.health_path, "write the health lines here (default stderr)");
  app->add_flag("--quick", s.quick, "30 s");
  app->add_option("--json", s.json, "write the JSON receipt here");
  return app;
}

command add_bench_soak_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_soak_command_settings>();
  s->soak.command = command_line;
  return {add_bench_soak_options(bench, *s), [s] { return run_bench_soak(*s); }};
}

bench::soak_settings bench_soak_command_settings::resolve() const {
  bench::soak_settings out = soak;
  if (quick) out.make_quick();
  out.validate();
  return out;
}

int run_bench_soak(const bench_soak_command_settings& s) {
  const bench::soak_settings soak = s.resolve();
  if (!have_gpu()) return no_gpu("bench soak");
  bool ok = false;
  const auto receipt = bench::run_soak_bench(soak, std::cerr, ok);
  finish_bench(receipt, s.json, bench::soak_table(receipt));
  return ok ? 0 : 1;
}

}  // namespace resident::cli
