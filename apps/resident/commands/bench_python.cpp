// resident bench disb | inference | translated | gates (see bench_python.hpp).

#include "commands/bench_python.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace resident::cli {

const std::vector<std::string>& python_benchmarks() {
  static const std::vector<std::string> names = {"disb", "inference", "translated", "gates"};
  return names;
}

std::string python_interpreter() {
  const char* chosen = std::getenv("RESIDENT_PYTHON");
  return chosen != nullptr && *chosen != '\0' ? chosen : "python3";
}

std::string python_bench_launcher() {
  return "import importlib.util, runpy, sys\n"
         "name = sys.argv[1]\n"
         "if importlib.util.find_spec('resident') is None:\n"
         "    sys.stderr.write(f'resident bench {name}: the resident Python package is not '\n"
         "                     f'importable by {sys.executable} (pip install . in the source '\n"
         "                     f'tree, or PYTHONPATH=<build>/python; RESIDENT_PYTHON chooses '\n"
         "                     f'the interpreter); the benchmark also needs PyTorch and '\n"
         "                     f'torchvision\\n')\n"
         "    sys.exit(2)\n"
         "sys.argv = [f'python -m resident.bench.{name}'] + sys.argv[2:]\n"
         "runpy.run_module(f'resident.bench.{name}', run_name='__main__', alter_sys=True)\n";
}

std::vector<std::string> python_bench_argv(const std::string& python, const std::string& name,
                                           const std::vector<std::string>& args) {
  std::vector<std::string> argv = {python, "-c", python_bench_launcher(), name};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

void run_python_bench(const std::string& name, const std::vector<std::string>& args) {
  const std::string python = python_interpreter();
  std::vector<std::string> argv = python_bench_argv(python, name, args);
  std::vector<char*> raw;
  raw.reserve(argv.size() + 1);
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(python.c_str(), raw.data());
  throw std::runtime_error("cannot start the Python interpreter '" + python +
                           "' (RESIDENT_PYTHON chooses another): " + std::strerror(errno));
}

std::vector<command> add_python_bench_commands(CLI::App& bench) {
  std::vector<command> out;
  for (const std::string& name : python_benchmarks()) {
    auto* app = bench.add_subcommand(
        name, "python -m resident.bench." + name +
                  " (PyTorch; every argument is the benchmark's: --help prints its own)");
    // Every argument after the name is the benchmark's, --help included.
    app->prefix_command();
    app->set_help_flag();
    out.push_back({app, [app, name] {
                     run_python_bench(name, app->remaining());
                     return 1;  // not reached: run_python_bench execs or throws
                   }});
  }
  return out;
}

}  // namespace resident::cli
