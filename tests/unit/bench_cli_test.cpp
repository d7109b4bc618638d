// The `resident` command line, parsed through the commands' own add_*_options() and
// parse_and_run(): values out of range are refused at the flag with its name, unknown commands
// are named, errors have one style, and `run` checks its configuration without a GPU.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "commands/bench_io.hpp"
#include "commands/bench_loops.hpp"
#include "commands/bench_reef.hpp"
#include "commands/command.hpp"
#include "commands/plan.hpp"
#include "commands/run.hpp"
#include "resident/app/error.hpp"

namespace resident::cli {
namespace {

using ::testing::HasSubstr;

/// The message CLI11 refuses `line` with (empty: parsed).
std::string parse_error(CLI::App& app, const std::string& line) {
  try {
    app.parse(line);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return {};
}

/// A file in the test's temporary directory, removed at the end of the test.
class temp_file {
 public:
  temp_file(const std::string& name, const std::string& text)
      : _path(std::filesystem::temp_directory_path() / name) {
    std::ofstream(_path) << text;
  }
  ~temp_file() { std::filesystem::remove(_path); }
  [[nodiscard]] std::string path() const { return _path.string(); }

 private:
  std::filesystem::path _path;
};

TEST(cli_flags, out_of_range_values_are_refused_at_the_flag_with_its_name) {
  CLI::App root;
  run_settings run;
  add_run_options(root, run);
  // -1 used to wrap to a huge unsigned value.
  EXPECT_EQ(parse_error(root, "run --sleep-ns -1"),
            "--sleep-ns: must be a whole number in 0..1000000000, got '-1'");
  EXPECT_THAT(parse_error(root, "run --samples 0"), HasSubstr("--samples: must be a whole number"));
  EXPECT_THAT(parse_error(root, "run --rate -5"),
              HasSubstr("--rate: must be a number in (0, 1e+06]"));
  EXPECT_THAT(parse_error(root, "run --elements x"), HasSubstr("--elements"));
  EXPECT_EQ(parse_error(root, "run --sleep-ns 500 --rate 200"), "");
  EXPECT_EQ(run.sleep_ns, 500U);
  EXPECT_EQ(run.rate_hz, 200.0);
}

TEST(cli_flags, plan_sm_count_must_be_a_real_device_size) {
  CLI::App root;
  plan_command_settings plan;
  add_plan_options(root, plan);
  const temp_file taskset("cli_test_taskset.yaml", "loops: []\n");
  EXPECT_EQ(parse_error(root, "plan " + taskset.path() + " --sm-count 100000"),
            "--sm-count: must be a whole number in 1..1024, got '100000'");
  EXPECT_THAT(parse_error(root, "plan " + taskset.path() + " --sm-count 0"), HasSubstr("1..1024"));
  EXPECT_EQ(parse_error(root, "plan " + taskset.path() + " --sm-count 132"), "");
  EXPECT_EQ(plan.plan.sm_count, 132);
  plan.profile_sizes = "8,0";
  EXPECT_THROW((void)plan.resolve(), std::invalid_argument);
}

TEST(cli_flags, bench_io_and_loops_refuse_negative_and_zero_counts) {
  CLI::App root;
  bench_io_command_settings io;
  bench_loops_command_settings loops;
  add_bench_io_options(root, io);
  add_bench_loops_options(root, loops);
  EXPECT_THAT(parse_error(root, "io --sleep-ns -1"), HasSubstr("--sleep-ns: must be a whole"));
  EXPECT_THAT(parse_error(root, "io --observers 9"), HasSubstr("--observers: must be a whole "
                                                               "number in 1..4, got '9'"));
  EXPECT_THAT(parse_error(root, "loops --rate 0"), HasSubstr("--rate: must be a number"));
  EXPECT_THAT(parse_error(root, "loops --poll-ns -3"), HasSubstr("--poll-ns"));
  loops.counts = "1,x";
  try {
    (void)loops.resolve();
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--counts: 'x' is not a positive whole number");
  }
}

TEST(cli_flags, bench_io_fuses_unless_told_not_to) {
  CLI::App root;
  bench_io_command_settings io;
  add_bench_io_options(root, io);
  EXPECT_EQ(parse_error(root, "io"), "");
  EXPECT_TRUE(io.resolve().fuse);
  EXPECT_EQ(parse_error(root, "io --no-fuse"), "");
  EXPECT_FALSE(io.resolve().fuse);
}

TEST(cli_flags, bench_io_peers_flag_runs_all_four_peers) {
  CLI::App root;
  bench_io_command_settings io;
  add_bench_io_options(root, io);
  EXPECT_EQ(parse_error(root, "io --peers --contention none"), "");
  EXPECT_EQ(io.resolve().peers,
            (std::vector<std::string>{"while", "tail", "host-graph", "persistent"}));
  bench_io_command_settings without;
  EXPECT_TRUE(without.resolve().peers.empty());
}

TEST(cli_bench_reef, help_shows_a_dozen_options_and_every_knob_is_in_the_config) {
  CLI::App root;
  bench_reef_command_settings reef;
  CLI::App* app = add_bench_reef_options(root, reef);
  // --help, --config, --policies, --arrival, --rate, --samples, --warmup, --quick, --progress,
  // --no-fifo, --json.
  EXPECT_LE(app->get_options().size(), 12U);
  EXPECT_THAT(app->help(), HasSubstr("--config"));
  EXPECT_THAT(parse_error(root, "reef --rate 0"),
              HasSubstr("--rate: must be a number in (0, 20000]"));
  EXPECT_THAT(parse_error(root, "reef --arrival bursty"), HasSubstr("--arrival"));
  EXPECT_THAT(parse_error(root, "reef --be-window 2"), HasSubstr("--be-window"));  // a knob
}

TEST(cli_bench_reef, flags_given_override_the_config_file) {
  const temp_file config("cli_test_reef.yaml", "rate_hz: 2000\nbe_window: 3\nsamples: 300\n");
  CLI::App root;
  bench_reef_command_settings reef;
  add_bench_reef_options(root, reef);
  ASSERT_EQ(parse_error(root, "reef --config " + config.path() + " --rate 8000 --no-fifo"), "");
  const bench::reef_settings s = reef.resolve();
  EXPECT_EQ(s.rate_hz, 8000.0);  // the flag
  EXPECT_EQ(s.be_window, 3U);    // the file
  EXPECT_EQ(s.samples, 300);     // the file
  EXPECT_FALSE(s.realtime);
  // Without a file or flags: the defaults.
  bench_reef_command_settings plain;
  EXPECT_EQ(plain.resolve().rate_hz, bench::reef_settings{}.rate_hz);
  // A bad file names its place.
  const temp_file bad("cli_test_reef_bad.yaml", "be_windw: 3\n");
  plain.config = bad.path();
  try {
    (void)plain.resolve();
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr(bad.path() + ":1:1: unknown key 'be_windw'"));
  }
}

TEST(cli_run, the_configuration_is_checked_without_a_gpu) {
  run_settings s;
  s.mode = "while";
  (void)check_run(s);  // the pipeline alone plans
  const temp_file good("cli_test_good.yaml", "affine:\n  scale: 3.0\n");
  s.config = good.path();
  const checked_run ok = check_run(s);
  ASSERT_EQ(ok.modes.size(), 1U);
  EXPECT_EQ(ok.modes[0], execution_mode::while_loop);
  const auto error_of = [&](const std::string& name, const std::string& yaml) -> std::string {
    const temp_file file(name, yaml);
    run_settings r;
    r.config = file.path();
    try {
      (void)check_run(r);
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  };
  const auto dir = std::filesystem::temp_directory_path().string() + "/";
  EXPECT_THAT(error_of("cli_test_param.yaml", "affine:\n  scael: 3.0\n"),
              HasSubstr("operator 'affine' has no parameter 'scael' (from " + dir +
                        "cli_test_param.yaml:2:10)"));
  EXPECT_THAT(error_of("cli_test_op.yaml", "afine:\n  scale: 3.0\n"),
              HasSubstr(dir + "cli_test_op.yaml:1:1: names operator 'afine'"));
  EXPECT_THAT(error_of("cli_test_yaml.yaml", "affine: [\n"), HasSubstr("not valid YAML"));
  s.config.clear();
  s.mode = "warp";
  EXPECT_THROW((void)check_run(s), std::invalid_argument);
}

TEST(cli_run, fuse_and_persistent_flags_reach_the_run_options) {
  CLI::App root;
  run_settings s;
  add_run_options(root, s);
  // Persistent mode has no separate controller or end marker to keep: --no-fuse is refused there
  // (cli_validation_test), so each flag is shown with a mode that uses it.
  ASSERT_EQ(parse_error(root, "run --mode persistent --persistent-blocks 0"), "");
  const checked_run c = check_run(s);
  EXPECT_EQ(c.modes, std::vector<execution_mode>{execution_mode::persistent});
  EXPECT_EQ(c.options.persistent_blocks, 0);
  CLI::App fused_root;
  run_settings f;
  add_run_options(fused_root, f);
  ASSERT_EQ(parse_error(fused_root, "run --mode host-graph --no-fuse"), "");
  EXPECT_FALSE(check_run(f).options.fuse);
  run_settings plain;
  EXPECT_TRUE(check_run(plain).options.fuse);  // the default
  EXPECT_EQ(check_run(plain).options.persistent_blocks, 1);
  EXPECT_THAT(parse_error(root, "run --persistent-blocks -2"), HasSubstr("--persistent-blocks"));
}

TEST(cli_run, phase_times_reach_the_run_options_in_persistent_mode_only) {
  CLI::App root;
  run_settings s;
  add_run_options(root, s);
  ASSERT_EQ(parse_error(root, "run --mode persistent --phase-times"), "");
  EXPECT_TRUE(check_run(s).options.phase_times);
  EXPECT_FALSE(check_run(run_settings{}).options.phase_times);  // the default
  for (const char* mode : {"while", "all"}) {
    s.mode = mode;
    try {
      (void)check_run(s);
      ADD_FAILURE() << "no error for --mode " << mode;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("use it with --mode persistent (the mode is '" +
                                      std::string(mode) + "')"));
    }
  }
}

TEST(cli_run, capture_flag_reaches_the_run_options_and_a_bad_order_is_named) {
  CLI::App root;
  run_settings s;
  add_run_options(root, s);
  ASSERT_EQ(parse_error(root, "run --mode host-graph --capture forked"), "");
  EXPECT_EQ(check_run(s).options.capture, capture_order::forked);
  run_settings plain;
  EXPECT_EQ(check_run(plain).options.capture, capture_order::chain);  // the default
  s.capture = "sideways";
  try {
    (void)check_run(s);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown capture order 'sideways'; capture orders: chain, forked");
  }
}

TEST(cli_run, run_check_reports_a_typo_and_passes_a_good_file) {
  const temp_file bad("cli_test_run_bad.yaml", "affine:\n  scael: 3.0\n");
  CLI::App root;
  std::vector<command> commands{add_run_command(root)};
  std::string arg0 = "resident", arg1 = "run", arg2 = bad.path(), arg3 = "--check";
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), arg3.data()};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(parse_and_run(root, commands, 4, argv), 1);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("resident run: operator 'affine' has no parameter 'scael'"));
  // Without --check too: the configuration is checked before the GPU is looked for, so a typo
  // is reported on a machine without one.
  CLI::App again;
  std::vector<command> run_again{add_run_command(again)};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(parse_and_run(again, run_again, 3, argv), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("resident run: operator 'affine' has no parameter 'scael'"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("no usable CUDA GPU")));
}

TEST(cli_commands, unknown_commands_are_named_in_one_style) {
  const auto run = [](std::vector<std::string> args) {
    CLI::App root;
    root.require_subcommand(1);
    std::vector<command> commands{add_run_command(root)};
    CLI::App* bench = add_bench_group(root);
    commands.push_back(add_bench_reef_command(*bench, "test"));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    ::testing::internal::CaptureStderr();
    const int rc = parse_and_run(root, commands, static_cast<int>(argv.size()), argv.data());
    return std::make_pair(rc, ::testing::internal::GetCapturedStderr());
  };
  auto [rc, err] = run({"resident", "frobnicate"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("resident: unknown command 'frobnicate'; commands: run, bench"));
  std::tie(rc, err) = run({"resident", "bench", "frob"});
  EXPECT_THAT(err, HasSubstr("resident bench: unknown command 'frob'; commands: reef"));
  std::tie(rc, err) = run({"resident", "bench"});
  EXPECT_THAT(err, HasSubstr("resident bench: name a command: reef"));
  std::tie(rc, err) = run({"resident", "bench", "reef", "--rate", "-1"});
  EXPECT_NE(rc, 0);
  EXPECT_THAT(err, HasSubstr("resident bench reef: --rate: must be a number"));
  EXPECT_THAT(err, HasSubstr("run 'resident bench reef --help' for the options"));
  std::tie(rc, err) = run({"resident", "bench", "reef", "--policies", "fifo"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("resident bench reef: unknown policy 'fifo'"));
}

TEST(cli_commands, bench_help_points_at_the_benchmarks_doc) {
  CLI::App root;
  EXPECT_THAT(add_bench_group(root)->get_description(), HasSubstr("docs/benchmarks.md"));
}

TEST(cli_gpu, the_no_gpu_message_says_what_is_missing_and_what_still_works) {
  const std::string m = no_gpu_message(
      "bench io",
      "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version");
  EXPECT_THAT(m, HasSubstr("resident bench io: no usable CUDA GPU or driver was found"));
  EXPECT_THAT(m, HasSubstr("when no NVIDIA driver is installed"));
  for (const char* still : {"resident plan", "resident sim", "resident report", "--check"}) {
    EXPECT_THAT(m, HasSubstr(still));
  }
  EXPECT_THAT(no_gpu_message("run", "cudaErrorNoDevice: no CUDA-capable device is detected"),
              ::testing::Not(HasSubstr("NVIDIA driver is installed")));
}

}  // namespace
}  // namespace resident::cli
