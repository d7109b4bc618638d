// Inputs the fuzz harnesses (tests/fuzz) found, fed through the entry point the harness
// exercises: each once crashed, hung or escaped with an unnamed error; now each gives a named
// error or a correct result. The inputs are tests/fuzz/regressions/<harness>/.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "resident/app/error.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/report.hpp"

#if __has_include("commands/sim_command.hpp")  // the CLI's code (RESIDENT_BUILD_APPS)
#define RESIDENT_FUZZ_APPS 1
#include "camera/camera.hpp"
#include "commands/plan_command.hpp"
#include "commands/sim_command.hpp"
#endif

namespace {

const std::filesystem::path regressions =
    std::filesystem::path(RESIDENT_TEST_FIXTURES) / ".." / ".." / "fuzz" / "regressions";

std::string regression_input(const std::string& harness, const std::string& name) {
  std::ifstream in(regressions / harness / name, std::ios::binary);
  EXPECT_TRUE(in) << "missing regression input " << (regressions / harness / name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A folder of the test's own under the temporary folder, removed at the end of the test.
class scratch_folder {
 public:
  explicit scratch_folder(const std::string& name)
      : _path(std::filesystem::temp_directory_path() / ("resident-fuzz-regression-" + name)) {
    std::filesystem::remove_all(_path);
    std::filesystem::create_directories(_path);
  }
  ~scratch_folder() { std::filesystem::remove_all(_path); }
  [[nodiscard]] std::filesystem::path file(const std::string& name, const std::string& text) const {
    std::ofstream(_path / name, std::ios::binary) << text;
    return _path / name;
  }
  [[nodiscard]] const std::filesystem::path& path() const { return _path; }

 private:
  std::filesystem::path _path;
};

[[maybe_unused]] std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// U+FFFD, the replacement character, as UTF-8.
[[maybe_unused]] constexpr const char* replacement = "\xEF\xBF\xBD";

}  // namespace

TEST(fuzz_regressions, receipt_a_number_beyond_double_is_not_valid_json_naming_the_file) {
  // A lab receipt with 2.88e608 in a result: json::parse throws out_of_range (406), not
  // parse_error, and it used to escape receipt::read without the file's name.
  const scratch_folder folder("receipt");
  const auto file = folder.file("lab.json", regression_input("receipt", "number_overflow.json"));
  try {
    (void)resident::measure::receipt::read(file);
    FAIL() << "a number beyond double's range was read";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("receipt: " + file.string() + " is not valid JSON"));
    EXPECT_THAT(e.what(), testing::HasSubstr("number overflow"));
  }
}

TEST(fuzz_regressions, receipt_numbers_of_300_digits_are_printed_whole) {
  // A receipt whose latencies are 1e300: "%.2f" prints 303 characters, and the report's
  // formatters copied that many bytes out of a 32- or 64-byte stack buffer (AddressSanitizer:
  // stack-buffer-overflow). The text and the page now carry each number whole.
  const scratch_folder folder("receipt-digits");
  const auto file =
      folder.file("io.json", regression_input("receipt", "numbers_of_300_digits.json"));
  const std::vector<resident::measure::receipt> parts = {resident::measure::receipt::read(file)};
  const std::string one_e300 = resident::measure::detail::printf_string("%.2f", 1e300);
  ASSERT_EQ(one_e300.size(), 304u);  // 301 digits, the point and two decimals
  EXPECT_EQ(one_e300.substr(0, 4), "1000");
  EXPECT_THAT(resident::measure::render_text(parts), testing::HasSubstr(one_e300));
  EXPECT_THAT(resident::measure::render_html(parts), testing::HasSubstr(one_e300));
  const auto merged = resident::measure::merge({parts.front(), parts.front()});
  EXPECT_THAT(resident::measure::render_text({merged}), testing::HasSubstr(one_e300));
}

TEST(fuzz_regressions, printf_string_sizes_its_buffer_to_the_text) {
  using resident::measure::detail::printf_string;
  EXPECT_EQ(printf_string("%.1f", 2.25), "2.2");
  EXPECT_EQ(printf_string("%.*f", 3, 1.0), "1.000");
  EXPECT_EQ(printf_string("%g", -1.7976931348623157e308), "-1.79769e+308");
  EXPECT_EQ(printf_string("%.0f", -1.7976931348623157e308).size(), 310u);
  EXPECT_EQ(printf_string("%s|%4zu", std::string(500, 'x').c_str(), std::size_t{7}),
            std::string(500, 'x') + "|   7");
}

#ifdef RESIDENT_FUZZ_APPS

TEST(fuzz_regressions, camera_config_a_map_as_a_key_is_a_config_error_naming_the_line) {
  const std::string yaml = regression_input("camera_config", "map_as_key.yaml");
  try {
    (void)resident::camera::parse_camera_settings(yaml, "camera.yaml");
    FAIL() << "a map as a key was accepted";
  } catch (const resident::config_error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("camera.yaml:6: a key of '<top level>' must be a "
                                             "plain name, not a list or map"));
  }
}

TEST(fuzz_regressions, sim_json_writes_a_name_that_is_not_utf8_with_replacement_characters) {
  // An operation's stream name holds a byte that is not UTF-8 (0xE4 in "copy_?"): the
  // schedule is fine, and --json used to fail in json::dump (type_error 316).
  const scratch_folder dir("sim");
  resident::bench::sim_settings settings;
  settings.file = dir.file("ops.yaml", regression_input("sim", "invalid_utf8_name.yaml")).string();
  settings.json = (dir.path() / "sim.json").string();
  std::ostringstream out;
  const int status = resident::bench::run_sim(settings, out);
  EXPECT_TRUE(status == 0 || status == resident::bench::sim_hazards_found) << status;
  const std::string written = read_text(settings.json);
  const auto json = nlohmann::json::parse(written);  // valid JSON, valid UTF-8
  EXPECT_EQ(json["benchmark"], "sim");
  EXPECT_THAT(written, testing::HasSubstr(replacement));
}

TEST(fuzz_regressions, plan_json_writes_a_name_that_is_not_utf8_with_replacement_characters) {
  // A loop's name holds a byte that is not UTF-8 (0xF2 in "lida?"): --json used to fail in
  // json::dump (type_error 316).
  const scratch_folder dir("plan");
  std::filesystem::copy_file(std::filesystem::path(RESIDENT_TEST_FIXTURES) / "overhead_h200.json",
                             dir.path() / "overhead_h200.json");
  resident::bench::plan_settings settings;
  settings.file =
      dir.file("taskset.yaml", regression_input("taskset", "invalid_utf8_name.yaml")).string();
  settings.json = (dir.path() / "plan.json").string();
  std::ostringstream out;
  (void)resident::bench::run_plan(settings, out);  // fits or not: the JSON is what is checked
  const std::string written = read_text(settings.json);
  const auto json = nlohmann::json::parse(written);
  EXPECT_EQ(json["benchmark"], "plan");
  EXPECT_THAT(written, testing::HasSubstr(replacement));
}

#endif  // RESIDENT_FUZZ_APPS
