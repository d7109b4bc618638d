#pragma once
// resident info: the GPU and build this binary sees.

#include "commands/command.hpp"

namespace resident::cli {

/// `resident info` has no settings of its own.
struct info_settings {};

[[nodiscard]] command add_info_command(CLI::App& root);

/// Prints the build and device 0; no_gpu() without a GPU.
[[nodiscard]] int run_info(const info_settings& settings);

}  // namespace resident::cli
