// bench reef's configuration file: the committed default holds every knob at its default, a
// file sets what it names, and every mistake names the file, line, column and key.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/reef/reef_config.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

/// Every knob of the settings, to compare two settings whole.
nlohmann::json knobs(const reef_settings& s) {
  return {{"policies", s.policies},
          {"arrival", s.arrival},
          {"rate_hz", s.rate_hz},
          {"samples", s.samples},
          {"warmup", s.warmup},
          {"disturbance_ns", s.disturbance_ns},
          {"seed", s.seed},
          {"realtime", s.realtime},
          {"progress", s.progress},
          {"be_model", s.be_model},
          {"be_clients", s.be_clients},
          {"be_window", s.be_window},
          {"be_window_sm", s.be_window_sm},
          {"be_window_split", s.be_window_split},
          {"be_rt_sm_blocks", s.be_rt_sm_blocks},
          {"be_bounded_grid", s.be_bounded_grid},
          {"be_bounded_grid_counter", s.be_bounded_grid_counter},
          {"be_checkpoint", s.be_checkpoint},
          {"be_checkpoint_min_steps", s.be_checkpoint_min_steps},
          {"be_trace", s.be_trace},
          {"rt_batch", s.rt_batch},
          {"poll_ns", s.poll_ns},
          {"rt_raise", s.rt_raise},
          {"rt_raise_lead_us", s.rt_raise_lead_us},
          {"rt_pdl", s.rt_pdl},
          {"rt_out_copy", s.rt_out_copy},
          {"rt_l2_persist", s.rt_l2_persist},
          {"rt_arena", s.rt_arena},
          {"rt_split_body", s.rt_split_body},
          {"rt_spread", s.rt_spread},
          {"rt_placement", s.rt_placement},
          {"split_sms", s.split_sms},
          {"split_be_rest", s.split_be_rest},
          {"pad_tolerance", s.pad_tolerance},
          {"pad_place_wait_us", s.pad_place_wait_us}};
}

/// bench/configs/reef.yaml, found from the working directory up (ctest runs in the build tree)
/// or beside this source file.
std::filesystem::path default_file() {
  const std::filesystem::path relative = "bench/configs/reef.yaml";
  for (auto dir = std::filesystem::current_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / relative)) return dir / relative;
    if (dir == dir.parent_path()) break;
  }
  const auto beside = std::filesystem::path(__FILE__).parent_path() / "../.." / relative;
  return std::filesystem::exists(beside) ? beside : relative;
}

std::string error_of(const std::string& yaml) {
  try {
    (void)parse_reef_config(yaml, "x.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(reef_config, the_committed_default_holds_every_knob_at_its_default) {
  const std::filesystem::path path = default_file();
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_EQ(knobs(load_reef_config(path.string())), knobs(reef_settings{}));
  // Every key is written out (not left to the defaults), and the test compares every key.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& key : reef_config_keys()) {
    EXPECT_THAT(text.str(), HasSubstr("\n" + key + ":")) << key;
  }
  EXPECT_EQ(reef_config_keys().size(), knobs(reef_settings{}).size());
}

TEST(reef_config, a_file_sets_the_knobs_it_names_over_the_base) {
  reef_settings base;
  base.samples = 77;
  const reef_settings s = parse_reef_config(
      "rate_hz: 8000\nbe_window: 2\nrt_pdl: off\nbe_model: cnn\npolicies: exclusive, preempt-sm\n",
      "x.yaml", base);
  EXPECT_EQ(s.rate_hz, 8000.0);
  EXPECT_EQ(s.be_window, 2U);
  EXPECT_FALSE(s.rt_pdl);
  EXPECT_EQ(s.be_model, "cnn");
  EXPECT_EQ(s.policies, (std::vector<std::string>{"exclusive", "preempt-sm"}));
  EXPECT_EQ(s.samples, 77);  // not in the file: the base's
  EXPECT_EQ(s.split_sms, reef_settings{}.split_sms);
  // A YAML list works as well as a comma-separated string; an empty file changes nothing.
  EXPECT_EQ(parse_reef_config("policies: [preempt, exclusive-end]\n", "x.yaml").policies,
            (std::vector<std::string>{"preempt", "exclusive-end"}));
  EXPECT_EQ(knobs(parse_reef_config("", "x.yaml")), knobs(reef_settings{}));
}

TEST(reef_config, an_unknown_key_is_named_with_its_place_and_the_nearest_key) {
  EXPECT_EQ(error_of("rate_hz: 8000\nbe_windw: 2\n"),
            "x.yaml:2:1: unknown key 'be_windw'; did you mean 'be_window'? "
            "(bench/configs/reef.yaml lists every key)");
  EXPECT_EQ(error_of("frobnicate: 1\n"),
            "x.yaml:1:1: unknown key 'frobnicate' (bench/configs/reef.yaml lists every key)");
  EXPECT_EQ(error_of("be_window: 2\nbe_window: 3\n"), "x.yaml:2:1: key 'be_window' is given twice");
}

TEST(reef_config, a_bad_value_names_its_place_and_key) {
  EXPECT_EQ(error_of("be_window: -1\n"),
            "x.yaml:1:12: be_window: expected a whole number >= 0, got '-1'");
  EXPECT_EQ(error_of("rate_hz: fast\n"), "x.yaml:1:10: rate_hz: expected a number, got 'fast'");
  EXPECT_EQ(error_of("rt_pdl: maybe\n"),
            "x.yaml:1:9: rt_pdl: expected true or false (or on/off), got 'maybe'");
  EXPECT_EQ(error_of("samples:\n"), "x.yaml:1:1: samples: has no value");
  EXPECT_EQ(error_of("be_model: [mlp]\n"),
            "x.yaml:1:11: be_model: must be a single value, not a list");
  EXPECT_THAT(error_of("rate_hz: [1\n"), HasSubstr("x.yaml:2:1: not valid YAML"));
  EXPECT_EQ(error_of("- rate_hz\n"), "x.yaml:1:1: expected a map of knob names to values");
}

TEST(reef_config, a_value_out_of_range_names_its_place_and_key) {
  EXPECT_EQ(error_of("rate_hz: 8000\nbe_window: 9\n"),
            "x.yaml:2:12: be_window must be in 1..8, got 9");
  EXPECT_EQ(error_of("be_model: resnet\n"),
            "x.yaml:1:11: be_model must be mlp, mlp-fused or cnn, got 'resnet'");
  EXPECT_THAT(error_of("policies: exclusive, fifo\n"),
              HasSubstr("x.yaml:1:11: unknown policy 'fifo'; policies: exclusive"));
  EXPECT_EQ(error_of("rate_hz: 0\n"),
            "x.yaml:1:10: --rate (rate_hz) must be in (0, 20000] Hz, got 0");
  // Knobs that do not go together: the key the check names, where the file set it.
  EXPECT_EQ(error_of("rt_l2_persist: true\nrt_arena: false\n"),
            "x.yaml:1:16: rt_l2_persist needs rt_arena on (one window covers one address "
            "range); turn one of them off");
  // ... or the file alone when the file did not set that key.
  EXPECT_THAT(error_of("rt_arena: false\n"), HasSubstr("x.yaml: rt_l2_persist needs rt_arena on"));
}

TEST(reef_config, a_missing_file_is_named) {
  try {
    (void)load_reef_config("no/such/reef.yaml");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cannot open the configuration file no/such/reef.yaml");
  }
}

}  // namespace
}  // namespace resident::bench
