#pragma once
// resident bench disb | inference | translated | gates: the benchmarks written in Python (they
// need PyTorch and torchvision), run by the interpreter that has the resident package, as
// `python -m resident.bench.<name>` would; every argument after the name goes to the benchmark
// (`resident bench disb --help` prints its own help).

#include <string>
#include <vector>

#include "commands/command.hpp"

namespace resident::cli {

/// The Python benchmarks, in the order `resident bench --help` lists them.
[[nodiscard]] const std::vector<std::string>& python_benchmarks();

/// The interpreter: $RESIDENT_PYTHON when set and not empty, else python3.
[[nodiscard]] std::string python_interpreter();

/// The program a Python benchmark runs: a short launcher that says clearly when the package
/// is not importable (exit 2), then runs resident.bench.<name> as __main__.
[[nodiscard]] std::string python_bench_launcher();

/// The command line of benchmark `name` with `args`: {python, "-c", launcher, name, args...}.
[[nodiscard]] std::vector<std::string> python_bench_argv(const std::string& python,
                                                         const std::string& name,
                                                         const std::vector<std::string>& args);

/// Registers one `bench` subcommand per Python benchmark.
[[nodiscard]] std::vector<command> add_python_bench_commands(CLI::App& bench);

/// Replaces this process with the benchmark's interpreter (returns only by throwing, when the
/// interpreter cannot be started).
[[noreturn]] void run_python_bench(const std::string& name, const std::vector<std::string>& args);

}  // namespace resident::cli
