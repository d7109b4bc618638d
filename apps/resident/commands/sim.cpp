// resident sim (see sim.hpp).

#include "commands/sim.hpp"

#include <iostream>

namespace resident::cli {

CLI::App* add_sim_options(CLI::App& root, sim_settings& s) {
  auto* app = root.add_subcommand(
      "sim",
      "the logical issue-order model of streams: ticks, the event arithmetic, hazards "
      "(no GPU)");
  app->add_option("file", s.file, "operations (YAML); none: the lab's example")
      ->check(CLI::ExistingFile);
  app->add_option("--drop", s.drop, "also simulate without dependency FROM->TO");
  app->add_option("--json", s.json, "write the schedules as JSON here");
  return app;
}

command add_sim_command(CLI::App& root) {
  auto s = std::make_shared<sim_settings>();
  return {add_sim_options(root, *s), [s] { return bench::run_sim(*s, std::cout); }};
}

}  // namespace resident::cli
