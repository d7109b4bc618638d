// resident bench link (see bench_link.hpp).

#include "commands/bench_link.hpp"

#include <iostream>

namespace resident::cli {

CLI::App* add_bench_link_options(CLI::App& bench, bench_link_command_settings& s) {
  auto* app = bench.add_subcommand(
      "link", "a loop on one GPU hands samples to a loop on another (io::device_link)");
  app->add_option("--producer", s.link.producer, "the producer loop's GPU")
      ->check(whole_in(0, 1023))
      ->capture_default_str();
  app->add_option("--consumer", s.link.consumer,
                  "the consumer loop's GPU (-1: device 1 where there are two, else 0)")
      ->check(whole_in(-1, 1023))
      ->capture_default_str();
  app->add_option("--sizes", s.sizes, "payload bytes (a 1080p RGBA frame, a 224x224x3 fp32 tensor)")
      ->capture_default_str();
  app->add_option("--modes", s.modes, "modes to run both loops in")->capture_default_str();
  app->add_option("--samples", s.link.samples, "measured samples per size and mode")
      ->check(whole_in(1, 10'000'000))
      ->capture_default_str();
  app->add_option("--warmup", s.link.warmup, "samples before measuring")
      ->check(whole_in(0, 1'000'000))
      ->capture_default_str();
  app->add_option("--rate", s.link.rate_hz, "the host's publish rate into the producer, Hz")
      ->check(positive(100'000))
      ->capture_default_str();
  app->add_option("--depth", s.link.depth, "the link's ring slots")
      ->check(whole_in(2, 4096))
      ->capture_default_str();
  app->add_option("--clock-rounds", s.link.clock_rounds, "ping-pong rounds for the clock offset")
      ->check(whole_in(1, 1'000'000))
      ->capture_default_str();
  app->add_option("--slack-us", s.link.slack_us,
                  "the target: p99 handoff <= bytes / peer bandwidth + this")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_flag("--quick", s.quick, "200 samples, 20 warm-up, 200 clock rounds");
  app->add_option("--json", s.json, "write the JSON receipt here");
  return app;
}

command add_bench_link_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_link_command_settings>();
  s->link.command = command_line;
  return {add_bench_link_options(bench, *s), [s] { return run_bench_link(*s); }};
}

bench::link_settings bench_link_command_settings::resolve() const {
  bench::link_settings out = link;
  if (quick) out.make_quick();
  out.sizes.clear();
  for (const int b : positive_numbers(sizes, "--sizes"))
    out.sizes.push_back(static_cast<std::size_t>(b));
  out.modes = split_list(modes);
  out.validate();
  return out;
}

int run_bench_link(const bench_link_command_settings& s) {
  const bench::link_settings link = s.resolve();
  if (!have_gpu()) return no_gpu("bench link");
  const auto receipt = bench::run_link_bench(link, std::cerr);
  finish_bench(receipt, s.json, bench::link_table(receipt));
  for (const auto& r : receipt.results) {
    if (r["wrong_outputs"].get<std::size_t>() != 0 ||
        r["missing_outputs"].get<std::size_t>() != 0) {
      print_error("bench link", "wrong or missing outputs at " +
                                    std::to_string(r["bytes"].get<std::size_t>()) + " bytes, " +
                                    r["mode"].get<std::string>());
      return 1;
    }
  }
  return 0;
}

}  // namespace resident::cli
