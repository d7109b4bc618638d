#pragma once
// resident sim [OPS.yaml]: the logical issue-order model of streams (bench/sim_command.hpp; no
// GPU).

#include "commands/sim_command.hpp"
#include "commands/command.hpp"

namespace resident::cli {

/// `resident sim`'s settings are the simulator command's own.
using sim_settings = bench::sim_settings;

CLI::App* add_sim_options(CLI::App& root, sim_settings& settings);
[[nodiscard]] command add_sim_command(CLI::App& root);

}  // namespace resident::cli
