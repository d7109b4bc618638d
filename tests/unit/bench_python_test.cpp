// resident bench disb | inference | translated | gates: the command line handed to Python, and
// the launcher's message where the package is not importable.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "commands/bench_python.hpp"
#include "commands/command.hpp"

namespace resident::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(bench_python, every_argument_after_the_name_goes_to_the_benchmark_help_included) {
  CLI::App root{"resident"};
  CLI::App* bench = add_bench_group(root);
  const std::vector<command> commands = add_python_bench_commands(*bench);
  ASSERT_EQ(commands.size(), python_benchmarks().size());
  std::vector<std::string> args = {"resident", "bench",  "disb",   "--workload", "three",
                                   "--quick",  "--json", "d.json", "--help"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  root.parse(static_cast<int>(argv.size()), argv.data());
  const command* disb = nullptr;
  for (const auto& c : commands) {
    if (c.app->parsed()) disb = &c;
  }
  ASSERT_NE(disb, nullptr);
  EXPECT_EQ(disb->app->get_name(), "disb");
  EXPECT_THAT(disb->app->remaining(),
              ElementsAre("--workload", "three", "--quick", "--json", "d.json", "--help"));
  EXPECT_THAT(python_bench_argv("python3", "disb", {"--quick"}),
              ElementsAre("python3", "-c", python_bench_launcher(), "disb", "--quick"));
}

TEST(bench_python, the_interpreter_is_resident_python_when_set) {
  const char* before = std::getenv("RESIDENT_PYTHON");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("RESIDENT_PYTHON", "/opt/venv/bin/python", 1);
  EXPECT_EQ(python_interpreter(), "/opt/venv/bin/python");
  ::setenv("RESIDENT_PYTHON", "", 1);
  EXPECT_EQ(python_interpreter(), "python3");
  ::unsetenv("RESIDENT_PYTHON");
  EXPECT_EQ(python_interpreter(), "python3");
  if (before != nullptr) ::setenv("RESIDENT_PYTHON", saved.c_str(), 1);
}

TEST(bench_python, without_the_package_the_launcher_says_so_and_exits_2) {
  // The launcher run by python3 in an empty environment (no PYTHONPATH) from a folder without
  // the package: resident is not importable there unless installed system-wide.
  const auto dir = std::filesystem::temp_directory_path() / "resident_bench_python_test";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "launcher.py") << python_bench_launcher(); }
  const std::string probe = "cd '" + dir.string() +
                            "' && env -i PATH=/usr/bin:/bin python3 -c 'import resident' "
                            ">/dev/null 2>&1";
  ASSERT_NE(std::system(probe.c_str()), 0) << "resident is importable system-wide here";
  const std::string cmd = "cd '" + dir.string() +
                          "' && env -i PATH=/usr/bin:/bin python3 launcher.py disb --quick "
                          "2>err.txt";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::stringstream err;
  err << std::ifstream(dir / "err.txt").rdbuf();
  EXPECT_THAT(err.str(), HasSubstr("resident bench disb: the resident Python package is not "
                                   "importable by"));
  EXPECT_THAT(err.str(), HasSubstr("pip install ."));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace resident::cli
