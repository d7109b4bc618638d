// bench lab without a GPU: flag checks, run order, and the numbers derived from mode results
// (break-even, torch ratios, targets, failure detection, the table).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/lab/lab_bench.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

std::string error_of(const lab_settings& s) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(lab_settings, defaults_match_the_lab) {
  lab_settings s;
  EXPECT_EQ(error_of(s), "");
  EXPECT_EQ(s.elements, 4096);
  EXPECT_EQ(s.warmup, 20);
  EXPECT_EQ(s.iterations, 1000);
  EXPECT_EQ(s.graph_edges, "programmatic");
  EXPECT_EQ(s.modes_in_order(),
            (std::vector<std::string>{"eager", "stream", "graph", "persistent"}));
  EXPECT_EQ(s.persistent_workers, 1);
  s.make_quick();
  EXPECT_EQ(error_of(s), "");
}

TEST(lab_settings, order_decides_the_run_order_and_mode_filters_it) {
  lab_settings s;
  s.order = {"graph", "eager", "stream"};
  EXPECT_EQ(s.modes_in_order(), (std::vector<std::string>{"graph", "eager", "stream"}));
  s.mode = "eager";
  EXPECT_EQ(s.modes_in_order(), (std::vector<std::string>{"eager"}));
}

TEST(lab_settings, bad_flags_are_clear_errors) {
  auto with = [](auto change) {
    lab_settings s;
    change(s);
    return error_of(s);
  };
  EXPECT_THAT(with([](lab_settings& s) { s.mode = "fast"; }), HasSubstr("--mode must be"));
  EXPECT_THAT(with([](lab_settings& s) {
                s.order = {"eager", "bogus"};
              }),
              HasSubstr("unknown mode 'bogus'"));
  EXPECT_THAT(with([](lab_settings& s) { s.order = {"eager", "eager"}; }), HasSubstr("twice"));
  EXPECT_THAT(with([](lab_settings& s) {
                s.mode = "graph";
                s.order = {"eager"};
              }),
              HasSubstr("not in --order"));
  EXPECT_THAT(with([](lab_settings& s) { s.elements = 0; }), HasSubstr("--elements"));
  EXPECT_THAT(with([](lab_settings& s) { s.persistent_workers = 0; }),
              HasSubstr("--persistent-workers must be in 1..1024, got 0"));
  EXPECT_THAT(with([](lab_settings& s) { s.iterations = 0; }), HasSubstr("--iterations"));
  EXPECT_THAT(with([](lab_settings& s) { s.warmup = -1; }), HasSubstr("--warmup"));
  EXPECT_THAT(with([](lab_settings& s) { s.repeats = 0; }), HasSubstr("--repeats"));
  EXPECT_THAT(with([](lab_settings& s) { s.buckets = "4,2"; }), HasSubstr("strictly increasing"));
  EXPECT_THAT(with([](lab_settings& s) { s.update_trials = 0; }), HasSubstr("--update-trials"));
  EXPECT_THAT(with([](lab_settings& s) { s.graph_edges = "fast"; }),
              HasSubstr("--graph-edges must be programmatic or full, got 'fast'"));
}

nlohmann::json mode(const std::string& impl, const std::string& m, double host, double e2e,
                    nlohmann::json setup = nullptr) {
  return {{"implementation", impl},
          {"mode", m},
          {"host_submit_us", host},
          {"device_us", e2e - 1},
          {"end_to_end_us", e2e},
          {"setup_us", setup},
          {"relative_error", 1e-8},
          {"preflight", {{"zeros", {{"ok", true}}}, {"ones", {{"ok", true}}}}}};
}

TEST(lab_derived, break_even_against_eager_and_stream) {
  const nlohmann::json modes =
      nlohmann::json::array({mode("resident", "eager", 8, 18), mode("resident", "stream", 7, 12),
                             mode("resident", "graph", 2, 12, 12'000)});
  const nlohmann::json b = lab_break_even(modes, "resident");
  ASSERT_EQ(b.size(), 2U);
  EXPECT_EQ(b[0]["baseline"], "eager");
  EXPECT_EQ(b[0]["first_cheaper_reuse"].get<std::int64_t>(), 2001);
  EXPECT_EQ(b[1]["baseline"], "stream");
  EXPECT_TRUE(b[1]["first_cheaper_reuse"].is_null());  // no saving: no break-even
}

TEST(lab_derived, ratios_pair_the_same_mode_of_both_implementations) {
  const nlohmann::json ours = nlohmann::json::array({mode("resident", "eager", 4, 10)});
  const nlohmann::json peer =
      nlohmann::json::array({mode("torch", "eager", 20, 30), mode("torch", "graph", 3, 6)});
  const nlohmann::json r = lab_ratios(ours, peer);
  ASSERT_EQ(r.size(), 1U);
  EXPECT_DOUBLE_EQ(r[0]["torch_over_resident_end_to_end_us"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r[0]["torch_over_resident_host_submit_us"].get<double>(), 5.0);
}

TEST(lab_derived, targets_say_which_were_met) {
  nlohmann::json results =
      nlohmann::json::array({mode("resident", "eager", 4, 10), mode("resident", "graph", 3, 5, 400),
                             mode("torch", "eager", 20, 20)});
  const nlohmann::json t = lab_targets(results);
  std::map<std::string, bool> met;
  for (const auto& x : t) met[x["name"].get<std::string>()] = x["met"].get<bool>();
  EXPECT_TRUE(met.at("graph end-to-end us/iteration <= 6"));
  EXPECT_FALSE(met.at("graph host submission us/iteration <= 2.5"));  // 3 > 2.5
  EXPECT_TRUE(met.at("graph setup (capture + instantiate) us <= 500"));
  EXPECT_FALSE(met.at("eager end-to-end speed-up over PyTorch eager >= 2.5"));  // 2x
  EXPECT_TRUE(met.at("worst relative error vs FP64 <= 1e-6"));
}

TEST(lab_derived, failures_name_what_went_wrong) {
  measure::receipt r("lab", "test");
  r.results.push_back(mode("resident", "eager", 4, 10));
  EXPECT_EQ(lab_failures(r), "");
  auto bad = mode("resident", "graph", 2, 5, 100);
  bad["relative_error"] = 1e-3;
  bad["preflight"]["ones"]["ok"] = false;
  r.results.push_back(bad);
  r.results.push_back({{"kind", "bucket_pool"}, {"all_correct", false}});
  const std::string f = lab_failures(r);
  EXPECT_THAT(f, HasSubstr("resident graph preflight ones"));
  EXPECT_THAT(f, HasSubstr("resident graph relative error"));
  EXPECT_THAT(f, HasSubstr("bucket pool sums"));
}

TEST(lab_derived, table_lists_every_mode_and_the_break_even) {
  measure::receipt r("lab", "test");
  r.results.push_back(mode("resident", "eager", 8, 18));
  r.results.push_back(mode("resident", "graph", 2, 12, 12'000));
  for (auto& b : lab_break_even(r.results, "resident")) r.results.push_back(b);
  const std::string table = lab_table(r);
  EXPECT_THAT(table, HasSubstr("resident  eager"));
  EXPECT_THAT(table, HasSubstr("resident  graph"));
  EXPECT_THAT(table, HasSubstr("break-even resident graph vs eager: cheaper from replay 2001"));
}

}  // namespace
}  // namespace resident::bench
