// resident run's deadline options: the timing model's bound beside the observed maximum, and
// the honest answer when there is no bound to give.

#include <gmock/gmock.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

#include "commands/run.hpp"
#include "resident/app/error.hpp"

namespace resident::cli {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path fixtures = RESIDENT_TEST_FIXTURES;

TEST(cli_deadline, without_a_wcet_there_is_no_bound_only_an_observed_maximum) {
  run_settings s;
  s.deadline_us = 200;
  EXPECT_EQ(response_bound_text(s, execution_mode::while_loop, 1000.0),
            "no bound: no WCET given (--wcet-us)");
}

TEST(cli_deadline, the_bound_is_the_planners_r_from_the_receipt_and_the_wcet) {
  run_settings s;
  s.wcet_us = 50;
  s.overheads = (fixtures / "overhead_h200.json").string();
  // while: O_pass 10.63, O_busy 19.84; R = max(O_pass + 0, O_busy + B) + O_busy + B = 139.68.
  EXPECT_THAT(response_bound_text(s, execution_mode::while_loop, 1000.0),
              HasSubstr("bound R = 139.7 us (WCET 50.0 us, overheads"));
  EXPECT_EQ(response_bound_text(s, execution_mode::eager, 1000.0),
            "no bound: the timing model covers the while and tail modes");
}

TEST(cli_deadline, overheads_without_a_wcet_or_a_file_are_refused) {
  run_settings s;
  s.overheads = "/no/such/overhead.json";
  s.given = {"--overheads"};
  EXPECT_THAT([&] { check_deadline_options(s); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("needs the body's WCET")));
  s.wcet_us = 10;
  EXPECT_THAT([&] { check_deadline_options(s); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("no such file")));
}

TEST(cli_deadline, the_deadline_flag_reaches_the_run_options_and_its_range_is_checked) {
  CLI::App root;
  run_settings s;
  (void)add_run_options(root, s);
  root.parse(std::vector<std::string>{"250.5", "--deadline-us", "run"});
  EXPECT_DOUBLE_EQ(s.deadline_us, 250.5);
  EXPECT_EQ(check_run(s).options.deadline, std::chrono::nanoseconds(250'500));
  CLI::App again;
  run_settings t;
  (void)add_run_options(again, t);
  EXPECT_THROW(again.parse(std::vector<std::string>{"2e6", "--deadline-us", "run"}),
               CLI::ValidationError);
}

TEST(cli_deadline, the_lab_configurations_loop_section_gives_them_unless_the_flags_do) {
  const auto file = std::filesystem::temp_directory_path() / "cli_deadline_lab.yaml";
  std::ofstream(file) << "affine: {scale: 2.0}\nloop: {deadline_us: 300, wcet_us: 40}\n";
  run_settings s;
  s.config = file.string();
  const run_settings from_file = with_loop_section(s);
  EXPECT_DOUBLE_EQ(from_file.deadline_us, 300.0);
  EXPECT_DOUBLE_EQ(from_file.wcet_us, 40.0);
  EXPECT_EQ(check_run(from_file).options.deadline, std::chrono::microseconds(300));
  s.deadline_us = 100;
  s.given = {"--deadline-us"};
  EXPECT_DOUBLE_EQ(with_loop_section(s).deadline_us, 100.0) << "the flag wins";
  std::ofstream(file) << "loop: {deadline_us: -3}\n";
  EXPECT_THAT([&] { (void)with_loop_section(s); },
              ::testing::ThrowsMessage<config_error>(HasSubstr("'loop.deadline_us' is -3")));
  std::ofstream(file) << "loop: {dedline_us: 3}\n";
  EXPECT_THAT(
      [&] { (void)with_loop_section(s); },
      ::testing::ThrowsMessage<config_error>(HasSubstr(":1:8: unknown key 'loop.dedline_us'")));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace resident::cli
