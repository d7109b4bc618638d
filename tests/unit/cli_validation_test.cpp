// Bad input to `resident run`, `plan` and `report` becomes a named error and exit status 1:
// options that do not apply to the run or its mode, output folders that cannot be written, a
// sensor CPU that is not there, sizes whose byte counts would wrap, keys given twice, receipts
// without results, and CLI11's usage errors (which used to exit 105, 106, 109, ...).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "commands/command.hpp"
#include "commands/plan.hpp"
#include "commands/report.hpp"
#include "commands/run.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::cli {
namespace {

using ::testing::HasSubstr;

/// A file in the temporary directory, removed at the end of the test.
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

/// `resident ARGS...` through parse_and_run with the run, plan and report commands: the exit
/// status and what went to stderr.
std::pair<int, std::string> resident(std::vector<std::string> args) {
  CLI::App root;
  root.require_subcommand(1);
  std::vector<command> commands{add_run_command(root), add_plan_command(root),
                                add_report_command(root)};
  args.insert(args.begin(), "resident");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int rc = parse_and_run(root, commands, static_cast<int>(argv.size()), argv.data());
  (void)::testing::internal::GetCapturedStdout();
  return {rc, ::testing::internal::GetCapturedStderr()};
}

const std::string camera_yaml = "camera: {width: 640, height: 480}\n";

// ---- exit status ------------------------------------------------------------------------------

TEST(cli_exit_status, every_usage_error_exits_1_not_a_cli11_code) {
  for (const std::vector<std::string>& line :
       {std::vector<std::string>{"run", "--samples", "0"},          // a value out of range (105)
        std::vector<std::string>{"run", "--samples"},               // a value missing (106)
        std::vector<std::string>{"run", "--frobnicate"},            // an unknown option (109)
        std::vector<std::string>{"plan", "/no/such/taskset.yaml"},  // a file not there (105)
        std::vector<std::string>{"report"}}) {                      // a required argument (106)
    const auto [rc, err] = resident(line);
    EXPECT_EQ(rc, 1) << line[0] << " " << (line.size() > 1 ? line[1] : "") << ": " << err;
    EXPECT_THAT(err, HasSubstr("for the options"));
  }
}

// ---- options that do not apply ----------------------------------------------------------------

TEST(cli_run_check, an_option_the_mode_ignores_is_an_error_naming_it) {
  auto [rc, err] = resident({"run", "--check", "--mode", "while", "--persistent-blocks", "2"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--persistent-blocks does not apply here: it sizes persistent "
                             "mode's kernel, and the mode is 'while'"));
  std::tie(rc, err) = resident({"run", "--check", "--mode", "persistent", "--no-fuse"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--no-fuse does not apply here: persistent mode runs no separate"));
  std::tie(rc, err) = resident({"run", "--check", "--mode", "eager", "--poll-ns", "1000"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--poll-ns does not apply here"));
  // Where some mode of `all` uses them, they apply.
  EXPECT_EQ(resident({"run", "--check", "--no-fuse", "--poll-ns", "1000"}).first, 0);
}

TEST(cli_run_check, a_camera_option_on_the_lab_pipeline_is_an_error_and_the_reverse) {
  auto [rc, err] = resident({"run", "--check", "--frames", "10"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--frames does not apply here: this is the lab pipeline (no camera "
                             "section); the lab pipeline releases --samples samples per mode"));
  const temp_file cam("cli_validation_camera.yaml", camera_yaml);
  std::tie(rc, err) = resident({"run", cam.path(), "--check", "--elements", "64"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--elements does not apply here: this is a camera configuration"));
}

TEST(cli_run_check, the_fused_camera_pass_is_accepted_in_every_mode) {
  const temp_file cam("cli_validation_camera_fused.yaml",
                      "camera: {width: 640, height: 480}\npipeline: {isp: fused}\n");
  for (const char* mode : {"persistent", "while", "all"}) {
    EXPECT_EQ(resident({"run", cam.path(), "--check", "--mode", mode}).first, 0) << mode;
  }
}

// ---- paths and CPUs ---------------------------------------------------------------------------

TEST(cli_run_check, dump_and_dot_into_folders_that_cannot_exist_are_errors) {
  const temp_file file("cli_validation_plain_file", "x");
  const temp_file cam("cli_validation_camera2.yaml", camera_yaml);
  auto [rc, err] = resident({"run", cam.path(), "--check", "--dump", file.path() + "/out"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--dump " + file.path() + "/out: cannot write there (" + file.path() +
                             " exists and is not a folder)"));
  std::tie(rc, err) = resident({"run", "--check", "--dot", "/no/such/folder/g.dot"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--dot /no/such/folder/g.dot: the folder /no/such/folder does not "
                             "exist"));
  const std::string tmp = std::filesystem::temp_directory_path().string();
  std::tie(rc, err) = resident({"run", "--check", "--dot", tmp});
  EXPECT_THAT(err, HasSubstr("is a folder; give a file name"));
}

TEST(cli_run_check, a_sensor_cpu_the_machine_lacks_is_an_error) {
  const temp_file cam("cli_validation_camera3.yaml", camera_yaml);
  const auto [rc, err] = resident({"run", cam.path(), "--check", "--sensor-cpu", "4000"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--sensor-cpu 4000: no such CPU for this process (it may run on "
                             "CPUs 0"));
}

TEST(cli_run_check, a_missing_photograph_file_is_an_error) {
  const temp_file cam("cli_validation_camera4.yaml",
                      "camera: {width: 640, height: 480, photo: /no/such/photo.png}\n");
  const auto [rc, err] = resident({"run", cam.path(), "--check"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("photograph '/no/such/photo.png' not found"));
}

// ---- sizes and keys of the lab configuration --------------------------------------------------

TEST(cli_run_check, an_element_count_whose_bytes_would_wrap_is_an_error) {
  // 4611686018427387905 * 4 bytes is 4 modulo 2^64: the port used to be 4 bytes long.
  const temp_file cfg("cli_validation_huge.yaml",
                      "affine: {elements: 4611686018427387905}\n"
                      "square: {elements: 4611686018427387905}\n"
                      "sum: {elements: 4611686018427387905}\n");
  const auto [rc, err] = resident({"run", cfg.path(), "--check", "--elements", "1"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("operator 'affine': parameter 'elements' must be in [1, "
                             "4294967296] (at most 17179869184 bytes of 4-byte values), got "
                             "4611686018427387905"));
}

TEST(cli_run_check, a_key_given_twice_in_the_lab_configuration_is_an_error) {
  const temp_file cfg("cli_validation_twice.yaml", "affine:\n  scale: 2\n  scale: 3\n");
  const auto [rc, err] = resident({"run", cfg.path(), "--check"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr(":3:3: key 'scale' is given twice (first at line 2)"));
}

// ---- report -----------------------------------------------------------------------------------

TEST(cli_report, a_receipt_without_results_is_an_error) {
  measure::receipt r("io", "resident bench io");
  const auto path = std::filesystem::temp_directory_path() / "cli_validation_empty.json";
  r.write(path);
  auto [rc, err] = resident({"report", path.string()});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr(path.string() + ": receipt of 'io' has no results"));
  r.results = nlohmann::json::array({nlohmann::json::object({{"mode", "while"}}), 42});
  r.write(path);
  std::tie(rc, err) = resident({"report", path.string()});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("receipt of 'io': result #2 is number 42, not an object of fields"));
  r.results = nlohmann::json::array({nlohmann::json::object()});
  r.write(path);
  std::tie(rc, err) = resident({"report", path.string()});
  EXPECT_THAT(err, HasSubstr("result #1 is an empty object"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace resident::cli

// ---- pipeline files ---------------------------------------------------------------------------

namespace resident::cli {
namespace {

const std::string pipeline_yaml = R"(mailbox: {input_bytes: 64, output_bytes: 4, depth: 4}
operators:
  rx:  {kind: io.mailbox_rx}
  sq:  {kind: ops.square, elements: 16}
  sum: {kind: ops.sum_reduce, elements: 16}
  tx:  {kind: io.mailbox_tx}
flows:
  - rx.sample -> sq.in
  - sq -> sum
  - sum -> tx
)";

TEST(cli_pipeline_file, a_valid_file_checks_and_options_it_ignores_are_named) {
  const temp_file f("resident-cli-pipeline.yaml", pipeline_yaml);
  EXPECT_EQ(resident({"run", f.path(), "--check"}).first, 0);
  EXPECT_EQ(
      resident({"run", f.path(), "--check", "--mode", "persistent", "--persistent-blocks", "2"})
          .first,
      0);
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--rate", "100"}, {"--elements", "16"}, {"--frames", "10"}, {"--wcet-us", "10"}}) {
    const auto [rc, err] = resident({"run", f.path(), "--check", flag, value});
    EXPECT_EQ(rc, 1) << flag;
    EXPECT_THAT(err, HasSubstr(flag + " does not apply: this is a pipeline file")) << flag;
  }
  const auto [rc, err] =
      resident({"run", f.path(), "--check", "--mode", "while", "--persistent-blocks", "2"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("--persistent-blocks does not apply"));
}

TEST(cli_pipeline_file, a_bad_file_is_named_with_its_line) {
  std::string bad = pipeline_yaml;
  bad.replace(bad.find("elements: 16}\n  tx"), 12, "elements: 17");
  const temp_file f("resident-cli-pipeline-bad.yaml", bad);
  const auto [rc, err] = resident({"run", f.path(), "--check"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("resident-cli-pipeline-bad.yaml:9"));
  const temp_file no_tx("resident-cli-pipeline-notx.yaml",
                        "mailbox: {input_bytes: 64, output_bytes: 4}\noperators:\n"
                        "  rx: {kind: io.mailbox_rx}\n");
  EXPECT_THAT(resident({"run", no_tx.path(), "--check"}).second,
              HasSubstr("needs an io.mailbox_rx (the sensor's end), an io.mailbox_tx"));
}

}  // namespace
}  // namespace resident::cli
