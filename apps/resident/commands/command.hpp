#pragma once
// What every `resident` command shares: how it is registered and run, its error style
// (`resident <command>: <message>`), the message when no GPU is usable, the flag validators.
//
// Each command lives in its own file (info.cpp, run.cpp, bench_io.cpp, ...) with its settings
// struct and an add_*_command() that registers its CLI11 subcommand; main() adds them all, and
// parse_and_run() parses the command line and runs the one given.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "resident/measure/receipt.hpp"

namespace resident::cli {

/// A registered command: its CLI11 subcommand, and what runs it once the command line is parsed
/// (the exit status; exceptions become `resident <command>: <message>` and status 1).
struct command {
  CLI::App* app{nullptr};
  std::function<int()> run;
};

/// "bench reef" for the `reef` subcommand of `bench` (the root's name left out).
[[nodiscard]] std::string command_name(const CLI::App& app);

/// Prints `resident <command>: <message>` to stderr (and `command` empty: `resident: ...`).
void print_error(const std::string& command, const std::string& message);

/// Parses argv against `root` and runs the command given. Unknown commands are named; parse
/// errors, bad flag values and exceptions come out in one style and return 1 (not CLI11's own
/// exit codes); --help and --version print and return 0.
[[nodiscard]] int parse_and_run(CLI::App& root, const std::vector<command>& commands, int argc,
                                char** argv);

// ---- the GPU ----------------------------------------------------------------------------------

/// Whether a CUDA GPU is usable.
[[nodiscard]] bool have_gpu();

/// The message for `command` when no CUDA GPU or driver is usable: what was found (CUDA's error
/// as detail), and what resident can still do without one.
[[nodiscard]] std::string no_gpu_message(const std::string& command, const std::string& reason);

/// Prints no_gpu_message() for this machine to stderr and returns the exit status 2.
int no_gpu(const std::string& command);

// ---- flags ------------------------------------------------------------------------------------

/// A whole number in [lo, hi]; CLI11 names the flag in the error.
[[nodiscard]] CLI::Validator whole_in(std::int64_t lo, std::int64_t hi);
/// A number greater than 0 and at most `hi`.
[[nodiscard]] CLI::Validator positive(double hi = 1e12);
/// A number in [lo, hi].
[[nodiscard]] CLI::Validator number_in(double lo, double hi);

/// "a, b,c" -> {"a", "b", "c"} (spaces dropped, empty items skipped).
[[nodiscard]] std::vector<std::string> split_list(const std::string& text);
/// split_list, each item a whole number > 0; std::invalid_argument naming `flag` otherwise.
[[nodiscard]] std::vector<int> positive_numbers(const std::string& text, const std::string& flag);

/// `resident bench`, the group of the benchmark commands (each adds itself to it).
[[nodiscard]] CLI::App* add_bench_group(CLI::App& root);

/// A benchmark's end: writes the receipt where --json asks, then prints the human table.
void finish_bench(const measure::receipt& receipt, const std::string& json,
                  const std::string& table);

}  // namespace resident::cli
