// Receipts: JSON field names and types of docs/benchmarks.md, round trips, errors that name the
// field, merging, files; and the raw-sample CSV writer.

// GCC 12's optimizer warns inside libstdc++'s std::regex (std::function members "may be used
// uninitialized", a known false positive of that compiler); nothing of this file's own.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/measure/receipt.hpp"
#include "resident/version.hpp"

namespace resident::measure {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::filesystem::path fixture =
    std::filesystem::path(RESIDENT_TEST_FIXTURES) / "io_receipt.json";

// A fresh directory per test, removed afterwards.
class temp_dir {
 public:
  temp_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    _path = std::filesystem::temp_directory_path() /
            ("resident_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(_path);
    std::filesystem::create_directories(_path);
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(_path, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return _path; }

 private:
  std::filesystem::path _path;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

summary sample_summary() {
  summary s;
  s.n = 4;
  s.mean = 2.5;
  s.p50 = 2.5;
  s.p99 = 3.97;
  s.p999 = 3.997;
  s.max = 4;
  s.min = 1;
  s.stddev = 1.118;
  s.jitter = 3;
  s.p25 = 1.75;
  s.p75 = 3.25;
  s.whisker_low = 1;
  s.whisker_high = 4;
  return s;
}

receipt sample_receipt() {
  receipt r("io", "resident bench io --rate 1000");
  r.git_commit = "abc1234";
  r.started_at = "2026-11-30T10:00:00Z";
  r.device = {"NVIDIA H200", 132, "9.0", "580.159.04", 13000, {1980, 1755}, "eager"};
  r.host = {16, "6.18.0", "AMD EPYC 9654 96-Core Processor"};
  r.settings["rate_hz"] = 1000;
  r.settings["pinning_granted"] = true;
  r.results.push_back(latency_result("while", "empty", "none", sample_summary(), 10, 1, 0));
  r.results.push_back(latency_result("host-graph", "empty", "none", sample_summary(), 12, 0, 2));
  return r;
}

template <class F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::invalid_argument thrown";
  return {};
}

template <class F>
std::string runtime_error_message(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::runtime_error thrown";
  return {};
}

// ---- receipt JSON
// --------------------------------------------------------------------------------

TEST(receipt, starts_now_in_utc_at_the_built_commit) {
  const receipt r("io", "resident bench io");
  EXPECT_EQ(r.benchmark, "io");
  EXPECT_EQ(r.command, "resident bench io");
  EXPECT_EQ(r.git_commit, std::string(resident::git_commit()));
  EXPECT_TRUE(std::regex_match(r.started_at, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << r.started_at;
  EXPECT_TRUE(r.settings.is_object());
  EXPECT_TRUE(r.results.is_array());
}

TEST(receipt, has_the_fields_of_benchmarks_md_with_their_types) {
  const json j = sample_receipt().to_json();
  EXPECT_TRUE(j.at("benchmark").is_string());
  EXPECT_TRUE(j.at("command").is_string());
  EXPECT_TRUE(j.at("git_commit").is_string());
  EXPECT_EQ(j.at("started_at"), "2026-11-30T10:00:00Z");
  const json& d = j.at("device");
  EXPECT_EQ(d.at("name"), "NVIDIA H200");
  EXPECT_TRUE(d.at("sm_count").is_number_integer());
  EXPECT_EQ(d.at("compute_capability"), "9.0");
  EXPECT_EQ(d.at("driver"), "580.159.04");
  EXPECT_TRUE(d.at("cuda_runtime").is_number_integer());
  EXPECT_EQ(d.at("sm_clock_mhz"), 1980);  // the first clock seen
  EXPECT_EQ(d.at("sm_clocks_seen_mhz"), json({1980, 1755}));
  EXPECT_TRUE(j.at("host").at("cpus").is_number_integer());
  EXPECT_TRUE(j.at("host").at("kernel").is_string());
  EXPECT_TRUE(j.at("host").at("cpu_model").is_string());
  EXPECT_TRUE(j.at("settings").is_object());
  EXPECT_TRUE(j.at("results").is_array());
  EXPECT_EQ(j.at("results").size(), 2U);
}

TEST(receipt, without_a_clock_seen_writes_null) {
  receipt r = sample_receipt();
  r.device.sm_clock_mhz_seen.clear();
  const json j = r.to_json();
  EXPECT_TRUE(j.at("device").at("sm_clock_mhz").is_null());
  EXPECT_EQ(j.at("device").at("sm_clocks_seen_mhz"), json::array());
  EXPECT_EQ(receipt::from_json(j).to_json(), j);
}

TEST(receipt, json_round_trip_is_exact) {
  const json first = sample_receipt().to_json();
  const json second = receipt::from_json(first).to_json();
  EXPECT_EQ(first, second);
  // and through text, where numbers are reparsed
  EXPECT_EQ(receipt::from_json(json::parse(first.dump())).to_json(), first);
}

TEST(receipt, reads_the_minimal_form_of_benchmarks_md) {
  // No cpu_model, settings or sm_clocks_seen_mhz: the example in docs/benchmarks.md.
  const json j = json::parse(R"({
    "benchmark": "io", "command": "resident bench io", "git_commit": "abc1234",
    "started_at": "2026-11-30T10:00:00Z",
    "device": {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0",
               "driver": "580.159.04", "cuda_runtime": 13000, "sm_clock_mhz": 1980},
    "host": {"cpus": 16, "kernel": "6.18"},
    "results": []
  })");
  const receipt r = receipt::from_json(j);
  EXPECT_EQ(r.device.sm_clock_mhz_seen, std::vector<int>{1980});
  EXPECT_EQ(r.device.sm_count, 132);
  EXPECT_EQ(r.host.cpus, 16);
  EXPECT_EQ(r.host.cpu_model, "");
  EXPECT_EQ(r.device.module_loading, "");  // not recorded, and not written back
  EXPECT_FALSE(r.to_json().at("device").contains("module_loading"));
  EXPECT_TRUE(r.settings.is_object());
  EXPECT_TRUE(r.settings.empty());
}

TEST(receipt, from_json_errors_name_the_field) {
  const json good = sample_receipt().to_json();
  const auto error_for = [&](auto edit) {
    json j = good;
    edit(j);
    return invalid_argument_message([&] { (void)receipt::from_json(j); });
  };
  EXPECT_THAT(error_for([](json& j) { j.erase("benchmark"); }),
              HasSubstr("missing field 'benchmark'"));
  EXPECT_THAT(error_for([](json& j) { j["command"] = 3; }),
              HasSubstr("'command' must be a string, found an integer"));
  EXPECT_THAT(error_for([](json& j) { j["device"]["sm_count"] = "132"; }),
              HasSubstr("'device.sm_count' must be an integer, found a string"));
  EXPECT_THAT(error_for([](json& j) { j["device"]["cuda_runtime"] = 13.0; }),
              HasSubstr("'device.cuda_runtime' must be an integer, found a number"));
  EXPECT_THAT(error_for([](json& j) { j["device"]["module_loading"] = 1; }),
              HasSubstr("'device.module_loading' must be a string, found an integer"));
  EXPECT_THAT(error_for([](json& j) { j["device"].erase("driver"); }),
              HasSubstr("missing field 'device.driver'"));
  EXPECT_THAT(error_for([](json& j) { j["device"]["sm_clocks_seen_mhz"][1] = "fast"; }),
              HasSubstr("'device.sm_clocks_seen_mhz[1]'"));
  EXPECT_THAT(error_for([](json& j) { j["device"]["sm_clock_mhz"] = 1755; }),
              HasSubstr("'device.sm_clock_mhz'"));
  EXPECT_THAT(error_for([](json& j) { j["device"]["sm_count"] = 1ULL << 40; }),
              HasSubstr("'device.sm_count' = 1099511627776 is out of range"));
  EXPECT_THAT(error_for([](json& j) { j["host"] = json::array(); }),
              HasSubstr("'host' must be an object, found an array"));
  EXPECT_THAT(error_for([](json& j) { j["host"].erase("kernel"); }),
              HasSubstr("missing field 'host.kernel'"));
  EXPECT_THAT(error_for([](json& j) { j["settings"] = 5; }), HasSubstr("'settings'"));
  EXPECT_THAT(error_for([](json& j) { j["results"] = json::object(); }),
              HasSubstr("'results' must be an array, found an object"));
  EXPECT_THAT(error_for([](json& j) { j.erase("results"); }), HasSubstr("missing field 'results'"));
  EXPECT_THAT(invalid_argument_message([] { (void)receipt::from_json(json::array()); }),
              HasSubstr("expected a JSON object"));
}

// ---- latency_result ----------------------------------------------------------------------------

TEST(receipt, latency_result_has_the_fields_of_benchmarks_md) {
  const json r = latency_result("while", "matmul6", "stress", sample_summary(), 10500, 3, 1);
  EXPECT_EQ(r.at("mode"), "while");
  EXPECT_EQ(r.at("workload"), "matmul6");
  EXPECT_EQ(r.at("contention"), "stress");
  EXPECT_TRUE(r.at("n").is_number_unsigned());
  EXPECT_EQ(r.at("n"), 4);
  for (const char* key : {"mean_us", "p50_us", "p99_us", "p999_us", "max_us", "min_us", "stddev_us",
                          "jitter_us", "p25_us", "p75_us", "whisker_low_us", "whisker_high_us"}) {
    EXPECT_TRUE(r.at(key).is_number_float()) << key;
  }
  EXPECT_DOUBLE_EQ(r.at("p99_us").get<double>(), 3.97);
  EXPECT_DOUBLE_EQ(r.at("p999_us").get<double>(), 3.997);
  EXPECT_DOUBLE_EQ(r.at("jitter_us").get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r.at("whisker_high_us").get<double>(), 4.0);
  EXPECT_EQ(r.at("processed"), 10500);
  EXPECT_EQ(r.at("dropped"), 3);
  EXPECT_EQ(r.at("repeated"), 1);
  for (const char* key : {"processed", "dropped", "repeated"}) {
    EXPECT_TRUE(r.at(key).is_number_unsigned()) << key;
  }
  EXPECT_EQ(r.size(), 19U);  // nothing else
}

// ---- merge -------------------------------------------------------------------------------------

TEST(receipt, merge_concatenates_results_and_records_every_run) {
  receipt a = sample_receipt();
  receipt b = sample_receipt();
  b.command = "resident bench io --workloads matmul6";
  b.started_at = "2026-11-30T10:05:00Z";
  b.git_commit = "def5678";
  b.device.name = "other GPU";
  b.results = json::array({latency_result("while", "matmul6", "none", sample_summary(), 1, 0, 0)});
  const receipt m = merge({a, b});
  EXPECT_EQ(m.benchmark, "io");
  EXPECT_EQ(m.command, "resident bench io --rate 1000 && resident bench io --workloads matmul6");
  ASSERT_EQ(m.results.size(), 3U);
  EXPECT_EQ(m.results[0]["mode"], "while");
  EXPECT_EQ(m.results[1]["mode"], "host-graph");
  EXPECT_EQ(m.results[2]["workload"], "matmul6");
  EXPECT_EQ(m.device.name, "NVIDIA H200");  // the first's
  EXPECT_EQ(m.git_commit, "abc1234");
  EXPECT_EQ(m.started_at, "2026-11-30T10:00:00Z");
  EXPECT_EQ(m.settings["rate_hz"], 1000);
  const json& from = m.settings.at("merged_from");
  ASSERT_EQ(from.size(), 2U);
  EXPECT_EQ(from[0], json({{"command", "resident bench io --rate 1000"},
                           {"started_at", "2026-11-30T10:00:00Z"},
                           {"git_commit", "abc1234"}}));
  EXPECT_EQ(from[1]["started_at"], "2026-11-30T10:05:00Z");
  EXPECT_EQ(from[1]["git_commit"], "def5678");
  // A merged receipt is a receipt.
  EXPECT_EQ(receipt::from_json(m.to_json()).to_json(), m.to_json());
}

TEST(receipt, merge_of_a_merge_keeps_one_flat_list_of_runs) {
  receipt a = sample_receipt();
  receipt b = sample_receipt();
  receipt c = sample_receipt();
  b.started_at = "2026-11-30T10:05:00Z";
  c.started_at = "2026-11-30T10:10:00Z";
  const receipt m = merge({merge({a, b}), c});
  const json& from = m.settings.at("merged_from");
  ASSERT_EQ(from.size(), 3U);
  EXPECT_EQ(from[2]["started_at"], "2026-11-30T10:10:00Z");
  EXPECT_EQ(m.results.size(), 6U);
}

TEST(receipt, merge_of_one_is_that_receipt_with_its_run_recorded) {
  const receipt m = merge({sample_receipt()});
  EXPECT_EQ(m.command, sample_receipt().command);
  EXPECT_EQ(m.results, sample_receipt().results);
  EXPECT_EQ(m.settings.at("merged_from").size(), 1U);
}

// A part re-run (bench camera's software part after a change) replaces the earlier part's runs
// of the same configurations; the rest of the earlier part stays.
TEST(receipt, keyed_merge_lets_a_later_part_replace_its_configurations) {
  const auto run = [](const char* kind, const char* mode, double mean, const char* checked) {
    return json{{"kind", kind}, {"mode", mode}, {"mean_us", mean}, {"checked", checked}};
  };
  receipt old_parts = sample_receipt();
  old_parts.benchmark = "camera";
  old_parts.results =
      json::array({run("software", "while", 84.4, "a"), run("software", "tail", 83.7, "a"),
                   run("operator", "while", 19.4, "a")});
  receipt rerun = old_parts;
  rerun.results = json::array(
      {run("software", "while", 69.8, "b"), run("software", "while", 69.4, "b")});  // two repeats
  const result_key key = [](const json& r) { return string_fields_key(r, {"checked"}); };
  const receipt m = merge({old_parts, rerun}, key);
  ASSERT_EQ(m.results.size(), 4U);
  EXPECT_EQ(m.results[0]["mode"], "tail");  // kept: not re-run
  EXPECT_EQ(m.results[1]["kind"], "operator");
  EXPECT_EQ(m.results[2]["mean_us"], 69.8);  // both of the later part's repeats
  EXPECT_EQ(m.results[3]["mean_us"], 69.4);
  EXPECT_EQ(m.settings.at("replaced_results"), 1);
  // Without a key, nothing is replaced; an empty key never matches.
  EXPECT_EQ(merge({old_parts, rerun}).results.size(), 5U);
  EXPECT_FALSE(merge({old_parts, rerun}).settings.contains("replaced_results"));
  const result_key none = [](const json&) { return std::string(); };
  EXPECT_EQ(merge({old_parts, rerun}, none).results.size(), 5U);
}

TEST(receipt, merge_lists_every_parts_modes_once_in_order_of_appearance) {
  receipt a = sample_receipt();
  receipt b = sample_receipt();
  a.settings["modes"] = json::array({"while", "tail"});
  a.settings["rate_hz"] = 1000;
  b.settings["modes"] = json::array({"persistent", "while"});
  b.settings["rate_hz"] = 2000;
  b.settings["formats"] = json::array({"raw10"});  // absent from the first: not added
  const receipt m = merge({a, b});
  EXPECT_EQ(m.settings["modes"], json::array({"while", "tail", "persistent"}));
  EXPECT_EQ(m.settings["rate_hz"], 1000);  // scalars stay the first part's
  EXPECT_FALSE(m.settings.contains("formats"));
  EXPECT_EQ(m.settings["merged_from"].size(), 2U);  // a list of objects, not of names
}

TEST(receipt, string_fields_key_names_the_string_fields_in_order) {
  const json r{{"mode", "while"}, {"format", "raw12"}, {"mean_us", 1.0}, {"checked", "x"}};
  EXPECT_EQ(string_fields_key(r), "checked=x;format=raw12;mode=while;");
  EXPECT_EQ(string_fields_key(r, {"checked"}), "format=raw12;mode=while;");
  EXPECT_EQ(string_fields_key(json::array()), "");
}

TEST(receipt, merge_refuses_different_benchmarks_and_nothing) {
  receipt other = sample_receipt();
  other.benchmark = "lab";
  EXPECT_THAT(invalid_argument_message([&] {
                (void)merge({sample_receipt(), other});
              }),
              HasSubstr("'lab'"));
  EXPECT_THROW((void)merge({}), std::invalid_argument);
}

// ---- files -------------------------------------------------------------------------------------

TEST(receipt, write_then_read_through_a_file) {
  const temp_dir dir;
  const auto path = dir.path() / "io.json";
  const receipt r = sample_receipt();
  r.write(path);
  const std::string text = slurp(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.rfind("{\n  \"benchmark\": \"io\",\n", 0), 0U) << text.substr(0, 40);
  EXPECT_EQ(receipt::read(path).to_json(), r.to_json());
}

// Series and histograms: an array of scalars takes one line; nested structures stay indented.
TEST(receipt, writes_arrays_of_scalars_on_one_line) {
  const temp_dir dir;
  const auto path = dir.path() / "series.json";
  receipt r = sample_receipt();
  r.results[0]["series"] = json::array({1.5, 2, 3});
  r.results[0]["runs"] = json::array({json{{"n", 1}}, json::array({"a", true})});
  r.results[0]["empty"] = json::array();
  r.write(path);
  const std::string text = slurp(path);
  EXPECT_THAT(text, HasSubstr("\"series\": [1.5,2,3]"));
  EXPECT_THAT(text, HasSubstr("\"runs\": [\n"));
  EXPECT_THAT(text, HasSubstr("[\"a\",true]"));
  EXPECT_THAT(text, HasSubstr("\"empty\": []"));
  EXPECT_EQ(receipt::read(path).to_json(), r.to_json());
}

TEST(receipt, unwritable_path_error_names_the_path) {
  const temp_dir dir;
  const auto path = dir.path() / "no_such_directory" / "io.json";
  const std::string message = runtime_error_message([&] { sample_receipt().write(path); });
  EXPECT_THAT(message, HasSubstr(path.string()));
}

TEST(receipt, read_errors_name_the_path) {
  const temp_dir dir;
  const auto missing = dir.path() / "missing.json";
  EXPECT_THAT(runtime_error_message([&] { (void)receipt::read(missing); }),
              HasSubstr(missing.string()));
  const auto broken = dir.path() / "broken.json";
  std::ofstream(broken) << "{\"benchmark\": ";
  EXPECT_THAT(runtime_error_message([&] { (void)receipt::read(broken); }),
              HasSubstr(broken.string()));
  const auto not_receipt = dir.path() / "not_receipt.json";
  std::ofstream(not_receipt) << "{\"benchmark\": \"io\"}";
  const std::string message = invalid_argument_message([&] { (void)receipt::read(not_receipt); });
  EXPECT_THAT(message, HasSubstr(not_receipt.string()));
  EXPECT_THAT(message, HasSubstr("'command'"));
}

TEST(receipt, reads_the_fixture) {
  const receipt r = receipt::read(fixture);
  EXPECT_EQ(r.benchmark, "io");
  EXPECT_EQ(r.device.sm_clock_mhz_seen, (std::vector<int>{1980, 1755}));
  EXPECT_EQ(r.host.cpus, 16);
  ASSERT_EQ(r.results.size(), 8U);
  // The fixture keeps the box-plot order of every result.
  for (const auto& x : r.results) {
    const auto v = [&](const char* k) { return x.at(k).get<double>(); };
    EXPECT_LE(v("min_us"), v("whisker_low_us"));
    EXPECT_LE(v("whisker_low_us"), v("p25_us"));
    EXPECT_LE(v("p25_us"), v("p50_us"));
    EXPECT_LE(v("p50_us"), v("p75_us"));
    EXPECT_LE(v("p75_us"), v("whisker_high_us"));
    EXPECT_LE(v("whisker_high_us"), v("max_us"));
    EXPECT_NEAR(v("jitter_us"), v("max_us") - v("min_us"), 1e-9);
  }
  EXPECT_EQ(receipt::from_json(r.to_json()).to_json(), r.to_json());
}

// ---- host and command --------------------------------------------------------------------------

TEST(receipt, current_host_describes_this_machine) {
  const host_record h = current_host();
  EXPECT_GT(h.cpus, 0);
  EXPECT_FALSE(h.kernel.empty());
}

TEST(receipt, command_line_quotes_what_a_shell_would_interpret) {
  const char* argv[] = {"resident", "bench", "io", "--json", "a b.json", "it's", "--rate=1000", ""};
  EXPECT_EQ(command_line(8, argv), "resident bench io --json 'a b.json' 'it'\\''s' --rate=1000 ''");
}

// ---- csv_writer --------------------------------------------------------------------------------

TEST(csv_writer, quotes_commas_quotes_and_line_breaks) {
  EXPECT_EQ(csv_writer::escape("plain"), "plain");
  EXPECT_EQ(csv_writer::escape(""), "");
  EXPECT_EQ(csv_writer::escape("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_writer::escape("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_writer::escape("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_writer::escape("cr\r"), "\"cr\r\"");
}

TEST(csv_writer, numbers_read_back_exactly) {
  EXPECT_EQ(csv_writer::number(0.1), "0.1");
  EXPECT_EQ(csv_writer::number(12.5), "12.5");
  EXPECT_EQ(csv_writer::number(3), "3");
  EXPECT_EQ(std::stod(csv_writer::number(1.0 / 3.0)), 1.0 / 3.0);
}

TEST(csv_writer, writes_header_and_rows) {
  const temp_dir dir;
  const auto path = dir.path() / "samples.csv";
  {
    csv_writer csv(path, {"mode", "index", "latency_us"});
    csv.row({"while", "0", csv_writer::number(4.25)});
    csv.row({"host,graph", "1", "13.5"});
    EXPECT_EQ(csv.rows(), 2U);
    csv.close();
  }
  EXPECT_EQ(slurp(path), "mode,index,latency_us\nwhile,0,4.25\n\"host,graph\",1,13.5\n");
}

TEST(csv_writer, rows_must_match_the_header) {
  const temp_dir dir;
  csv_writer csv(dir.path() / "samples.csv", {"a", "b"});
  EXPECT_THROW(csv.row({"1"}), std::invalid_argument);
  EXPECT_THROW(csv.row({"1", "2", "3"}), std::invalid_argument);
  EXPECT_NO_THROW(csv.row({"1", "2"}));
  EXPECT_THROW(csv_writer(dir.path() / "empty.csv", {}), std::invalid_argument);
}

TEST(csv_writer, unopenable_path_error_names_the_path) {
  const temp_dir dir;
  const auto path = dir.path() / "no_such_directory" / "samples.csv";
  EXPECT_THAT(runtime_error_message([&] { csv_writer csv(path, {"a"}); }),
              HasSubstr(path.string()));
}

}  // namespace
}  // namespace resident::measure
