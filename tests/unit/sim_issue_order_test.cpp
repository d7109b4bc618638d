// The logical issue-order simulator: one host tick per submission, device work when its stream
// and waits allow, the lab's timing arithmetic, and hazards between operations that share a
// buffer without a happens-before ordering.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "resident/sim/issue_order.hpp"

// The CLI body lives in resident_bench, which exists only when the apps are built.
#if __has_include("commands/sim_command.hpp")
#include "commands/sim_command.hpp"
#define RESIDENT_SIM_HAVE_BENCH 1
#endif

namespace resident::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::filesystem::path fixtures = std::filesystem::path(RESIDENT_TEST_FIXTURES);

/// The message `f` throws sim_error with; empty when it does not throw.
template <class F>
std::string sim_error_of(F&& f) {
  try {
    f();
  } catch (const sim_error& e) {
    return e.what();
  }
  return {};
}

std::string validation_error(const std::vector<operation>& ops) {
  return sim_error_of([&] { validate(ops); });
}

std::string parse_error(const std::string& yaml) {
  return sim_error_of([&] { (void)parse_operations(yaml, "test.yaml"); });
}

// ---- schedule ---------------------------------------------------------------------------------

TEST(issue_order_sim, reproduces_the_lab_example) {
  const auto result = schedule(lab_example());
  EXPECT_EQ(result.host_return_tick, 4);
  ASSERT_EQ(result.operations.size(), 4U);
  const std::vector<std::tuple<std::string, std::string, int, int, int>> expected{
      {"copy", "copy", 0, 0, 3},
      {"affine", "compute", 1, 3, 7},
      {"square", "compute", 2, 7, 9},
      {"reduce", "compute", 3, 9, 10},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& [name, stream, issue, start, end] = expected[i];
    const auto& op = result.operations[i];
    EXPECT_EQ(op.name, name);
    EXPECT_EQ(op.stream, stream) << name;
    EXPECT_EQ(op.issue_tick, issue) << name;
    EXPECT_EQ(op.start, start) << name;
    EXPECT_EQ(op.end, end) << name;
  }
  EXPECT_EQ(result.device_complete_tick, 10);
}

TEST(issue_order_sim, host_and_event_spans_overlap_so_adding_them_is_wrong) {
  const auto result = schedule(lab_example());
  EXPECT_EQ(result.host_span, 4);
  EXPECT_EQ(result.event_span, 10);
  EXPECT_EQ(result.end_to_end, 10);
  EXPECT_EQ(result.incorrect_addition, 14);
}

TEST(issue_order_sim, an_operation_never_starts_before_the_host_submits_it) {
  // Four independent streams: nothing holds them back but submission.
  const std::vector<operation> ops{
      {"a", "s0", 1, {}, {}, {}},
      {"b", "s1", 1, {}, {}, {}},
      {"c", "s2", 1, {}, {}, {}},
  };
  const auto result = schedule(ops);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    EXPECT_EQ(result.operations[k].start, static_cast<std::int64_t>(k));
  }
  EXPECT_EQ(result.device_complete_tick, 3);
}

TEST(issue_order_sim, lab_pipeline_arithmetic_gives_164) {
  EXPECT_EQ(lab_result({1, 2, 3, 4}), 164);  // 9 + 25 + 49 + 81
}

// ---- hazards ----------------------------------------------------------------------------------

TEST(issue_order_sim, lab_example_is_hazard_free) {
  EXPECT_TRUE(hazard_free(lab_example()));
  EXPECT_TRUE(find_hazards(lab_example()).empty());
}

TEST(issue_order_sim, dropping_the_copy_event_lets_affine_read_work_too_soon) {
  const auto ops = without_dependency(lab_example(), "copy", "affine");
  const auto result = schedule(ops);
  EXPECT_EQ(result.at("affine").start, 1);
  EXPECT_LT(result.at("affine").start, result.at("copy").end);

  const auto hazards = find_hazards(ops);
  ASSERT_EQ(hazards.size(), 1U);
  EXPECT_EQ(hazards[0].kind, hazard_kind::read_before_write);
  EXPECT_EQ(hazards[0].buffer, "work");
  EXPECT_EQ(hazards[0].first, "copy");
  EXPECT_EQ(hazards[0].second, "affine");
  EXPECT_TRUE(hazards[0].overlapped);
  EXPECT_FALSE(hazard_free(ops));
}

TEST(issue_order_sim, unordered_access_separated_only_by_timing_is_still_a_hazard) {
  // writer ends at tick 1, when reader is issued: the timing is fine, the ordering is not.
  const std::vector<operation> ops{
      {"writer", "s1", 1, {}, {}, {"x"}},
      {"reader", "s2", 1, {}, {"x"}, {}},
  };
  const auto result = schedule(ops);
  EXPECT_GE(result.at("reader").start, result.at("writer").end);
  const auto hazards = find_hazards(ops);
  ASSERT_EQ(hazards.size(), 1U);
  EXPECT_EQ(hazards[0].kind, hazard_kind::read_before_write);
  EXPECT_FALSE(hazards[0].overlapped);
}

TEST(issue_order_sim, ordering_through_waits_is_transitive) {
  const std::vector<operation> ops{
      {"produce", "s1", 5, {}, {}, {"x"}},
      {"relay", "s2", 1, {"produce"}, {}, {}},
      {"consume", "s3", 1, {"relay"}, {"x"}, {}},
  };
  EXPECT_TRUE(happens_before(ops, "produce", "consume"));
  EXPECT_TRUE(hazard_free(ops));
}

TEST(issue_order_sim, ordering_combines_waits_and_stream_order) {
  // consume follows relay on s2 and relay waits for produce: ordered, though consume names no
  // wait of its own.
  const std::vector<operation> ops{
      {"produce", "s1", 5, {}, {}, {"x"}},
      {"relay", "s2", 1, {"produce"}, {}, {}},
      {"consume", "s2", 1, {}, {"x"}, {}},
  };
  EXPECT_TRUE(happens_before(ops, "produce", "consume"));
  EXPECT_FALSE(happens_before(ops, "consume", "produce"));
  EXPECT_TRUE(hazard_free(ops));
}

TEST(issue_order_sim, a_later_wait_does_not_order_earlier_work_on_the_waiting_stream) {
  // first runs on s2 before s2 waits for produce, so first and produce stay unordered.
  const std::vector<operation> ops{
      {"produce", "s1", 5, {}, {}, {"x"}},
      {"first", "s2", 1, {}, {"x"}, {}},
      {"second", "s2", 1, {"produce"}, {"x"}, {}},
  };
  const auto hazards = find_hazards(ops);
  ASSERT_EQ(hazards.size(), 1U);
  EXPECT_EQ(hazards[0].first, "produce");
  EXPECT_EQ(hazards[0].second, "first");
}

TEST(issue_order_sim, two_unordered_writers_are_write_after_write) {
  const std::vector<operation> ops{
      {"a", "s1", 2, {}, {}, {"x"}},
      {"b", "s2", 2, {}, {}, {"x"}},
  };
  const auto hazards = find_hazards(ops);
  ASSERT_EQ(hazards.size(), 1U);
  EXPECT_EQ(hazards[0].kind, hazard_kind::write_after_write);
  EXPECT_EQ(hazards[0].buffer, "x");
  EXPECT_TRUE(hazards[0].overlapped);
}

TEST(issue_order_sim, unordered_write_of_a_read_buffer_is_write_after_read) {
  const std::vector<operation> ops{
      {"a", "s1", 2, {}, {"x"}, {}},
      {"b", "s2", 2, {}, {}, {"x"}},
  };
  const auto hazards = find_hazards(ops);
  ASSERT_EQ(hazards.size(), 1U);
  EXPECT_EQ(hazards[0].kind, hazard_kind::write_after_read);
  EXPECT_EQ(hazards[0].first, "a");
  EXPECT_EQ(hazards[0].second, "b");
}

TEST(issue_order_sim, unordered_readers_of_one_buffer_are_no_hazard) {
  const std::vector<operation> ops{
      {"a", "s1", 2, {}, {"x"}, {}},
      {"b", "s2", 2, {}, {"x"}, {}},
  };
  EXPECT_TRUE(hazard_free(ops));
}

TEST(issue_order_sim, a_read_of_an_unordered_write_is_reported_before_write_after_write) {
  const std::vector<operation> ops{
      {"a", "s1", 2, {}, {}, {"x"}}, {"b", "s2", 2, {}, {"x"}, {"x"}},  // updates x in place
  };
  const auto hazards = find_hazards(ops);
  ASSERT_EQ(hazards.size(), 1U) << "one hazard per pair and buffer";
  EXPECT_EQ(hazards[0].kind, hazard_kind::read_before_write);
}

// ---- validation -------------------------------------------------------------------------------

TEST(issue_order_sim, rejects_an_empty_operation_list) {
  EXPECT_THAT(validation_error({}), HasSubstr("no operations to simulate"));
  EXPECT_THAT(sim_error_of([] { (void)schedule({}); }), HasSubstr("the list is empty"));
}

TEST(issue_order_sim, rejects_an_empty_name_by_its_tick) {
  EXPECT_EQ(validation_error({{"a", "s", 1, {}, {}, {}}, {"", "s", 1, {}, {}, {}}}),
            "the operation submitted at tick 1 has an empty name");
}

TEST(issue_order_sim, rejects_a_duplicate_name_at_both_positions) {
  EXPECT_EQ(validation_error(
                {{"a", "s", 1, {}, {}, {}}, {"b", "s", 1, {}, {}, {}}, {"a", "t", 1, {}, {}, {}}}),
            "duplicate operation name 'a': submitted at ticks 0 and 2; names must be unique");
}

TEST(issue_order_sim, rejects_an_empty_stream) {
  EXPECT_EQ(validation_error({{"a", "", 1, {}, {}, {}}}), "operation 'a' has an empty stream name");
}

TEST(issue_order_sim, rejects_a_non_positive_duration_showing_it) {
  EXPECT_EQ(validation_error({{"a", "s", 0, {}, {}, {}}}),
            "operation 'a' has duration 0; durations must be positive ticks");
  EXPECT_THAT(validation_error({{"a", "s", -2, {}, {}, {}}}), HasSubstr("has duration -2"));
}

TEST(issue_order_sim, rejects_a_wait_on_an_operation_not_yet_submitted) {
  EXPECT_EQ(validation_error({{"a", "s", 1, {"b"}, {}, {}}, {"b", "t", 1, {}, {}, {}}}),
            "operation 'a' (tick 0) waits for 'b', which is not yet submitted (tick 1); a wait "
            "can only name an operation submitted before it");
}

TEST(issue_order_sim, rejects_a_wait_on_an_unknown_operation) {
  EXPECT_EQ(validation_error({{"a", "s", 1, {}, {}, {}}, {"b", "t", 1, {"cpy"}, {}, {}}}),
            "operation 'b' waits for 'cpy', which is not an operation in the list");
}

TEST(issue_order_sim, rejects_a_wait_on_itself) {
  EXPECT_EQ(validation_error({{"a", "s", 1, {"a"}, {}, {}}}), "operation 'a' waits for itself");
}

TEST(issue_order_sim, rejects_an_empty_buffer_name) {
  EXPECT_EQ(validation_error({{"a", "s", 1, {}, {}, {""}}}),
            "operation 'a' has an empty buffer name in its writes");
}

TEST(issue_order_sim, without_dependency_removes_exactly_one_wait) {
  const auto ops = without_dependency(lab_example(), "copy", "affine");
  EXPECT_TRUE(ops[1].waits_for.empty());
  EXPECT_EQ(ops[0].name, "copy");
  EXPECT_EQ(ops.size(), 4U);
}

TEST(issue_order_sim, without_dependency_rejects_a_missing_operation_or_wait) {
  EXPECT_EQ(sim_error_of([] { (void)without_dependency(lab_example(), "copy", "affin"); }),
            "cannot drop copy->affin: there is no operation 'affin'");
  EXPECT_EQ(sim_error_of([] { (void)without_dependency(lab_example(), "copy", "square"); }),
            "cannot drop copy->square: 'square' does not wait for 'copy'");
}

// ---- YAML -------------------------------------------------------------------------------------

TEST(issue_order_sim, loads_the_lab_example_from_yaml) {
  const auto ops = load_operations(fixtures / "sim_lab.yaml");
  const auto lab = lab_example();
  ASSERT_EQ(ops.size(), lab.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].name, lab[i].name);
    EXPECT_EQ(ops[i].stream, lab[i].stream);
    EXPECT_EQ(ops[i].duration, lab[i].duration);
    EXPECT_EQ(ops[i].waits_for, lab[i].waits_for);
    EXPECT_EQ(ops[i].reads, lab[i].reads);
    EXPECT_EQ(ops[i].writes, lab[i].writes);
  }
}

TEST(issue_order_sim, yaml_unknown_key_is_named_with_line_and_column) {
  EXPECT_EQ(parse_error("operations:\n"
                        "  - name: copy\n"
                        "    stream: copy\n"
                        "    durration: 3\n"),
            "test.yaml:4:5: unknown key 'durration' in operation 'copy'; keys: name, stream, "
            "duration, waits_for, reads, writes");
}

TEST(issue_order_sim, yaml_unknown_top_level_key_is_an_error) {
  EXPECT_THAT(parse_error("operation:\n  - {name: a, stream: s, duration: 1}\n"),
              StartsWith("test.yaml:1:1: unknown top-level key 'operation'"));
}

TEST(issue_order_sim, yaml_wrong_types_are_errors_with_location) {
  EXPECT_EQ(parse_error("operations:\n  - {name: a, stream: s, duration: soon}\n"),
            "test.yaml:2:36: 'duration' of operation 'a' must be a whole number of ticks, got "
            "'soon'");
  EXPECT_THAT(parse_error("operations:\n  - {name: a, stream: s, duration: 1, waits_for: b}\n"),
              AllOf(StartsWith("test.yaml:2:50: "),
                    HasSubstr("'waits_for' of operation 'a' must be a list of names")));
  EXPECT_THAT(parse_error("operations:\n  - {name: [a], stream: s, duration: 1}\n"),
              AllOf(StartsWith("test.yaml:2:12: "), HasSubstr("must be a single value")));
  EXPECT_THAT(parse_error("operations: copy\n"),
              AllOf(StartsWith("test.yaml:1:13: "), HasSubstr("'operations' must be a list")));
}

TEST(issue_order_sim, yaml_missing_key_names_the_operation) {
  EXPECT_EQ(parse_error("operations:\n  - {name: a, duration: 1}\n"),
            "test.yaml:2:5: operation 'a' has no 'stream'");
}

TEST(issue_order_sim, yaml_syntax_error_has_a_location) {
  EXPECT_THAT(parse_error("operations:\n  - {name: a, stream: s\n"),
              AllOf(StartsWith("test.yaml:"), HasSubstr("not valid YAML")));
}

TEST(issue_order_sim, yaml_validation_errors_point_at_the_operation) {
  EXPECT_EQ(parse_error("operations:\n"
                        "  - {name: a, stream: s, duration: 1}\n"
                        "  - {name: b, stream: s, duration: 0}\n"),
            "test.yaml:3:5: operation 'b' has duration 0; durations must be positive ticks");
  EXPECT_EQ(parse_error("operations: []\n"),
            "test.yaml:1:13: no operations to simulate: the list is empty");
}

TEST(issue_order_sim, loading_a_missing_file_says_which) {
  EXPECT_THAT(sim_error_of([] { (void)load_operations(fixtures / "sim_absent.yaml"); }),
              HasSubstr("cannot open operation file"));
}

// ---- output -----------------------------------------------------------------------------------

TEST(issue_order_sim, text_lists_ticks_arithmetic_and_hazards) {
  const auto ops = without_dependency(lab_example(), "copy", "affine");
  const auto text = render_text(schedule(ops), find_hazards(ops));
  EXPECT_THAT(text, HasSubstr("host_return_tick=4\n"));
  EXPECT_THAT(text, HasSubstr("copy stream=copy issue=0 start=0 end=3\n"));
  EXPECT_THAT(text, HasSubstr("affine stream=compute issue=1 start=1 end=5\n"));
  EXPECT_THAT(text, HasSubstr("host=4, event=8, end_to_end=8 ticks\n"));
  EXPECT_THAT(text, HasSubstr("incorrect addition=12 ticks"));
  EXPECT_THAT(text, HasSubstr("hazard: read-before-write on 'work': affine (compute) reads it "
                              "with no ordering after copy (copy) writes it; simulated, affine "
                              "starts at tick 1 before copy ends at tick 3\n"));
}

TEST(issue_order_sim, text_says_when_only_timing_separates_a_hazard) {
  const std::vector<operation> ops{
      {"a", "s1", 1, {}, {"x"}, {}},
      {"b", "s2", 1, {}, {}, {"x"}},
  };
  EXPECT_THAT(render_text(schedule(ops), find_hazards(ops)),
              HasSubstr("hazard: write-after-read on 'x': b (s2) writes it with no ordering "
                        "after a (s1) reads it; simulated, b starts at tick 1, not before a ends "
                        "at tick 1, but only by timing\n"));
}

TEST(issue_order_sim, json_holds_the_schedule_timing_and_hazards) {
  const auto ops = without_dependency(lab_example(), "copy", "affine");
  const auto json = to_json(schedule(ops), find_hazards(ops));
  EXPECT_EQ(json["host_return_tick"], 4);
  EXPECT_EQ(json["operations"][1]["name"], "affine");
  EXPECT_EQ(json["operations"][1]["issue_tick"], 1);
  EXPECT_EQ(json["operations"][1]["start"], 1);
  EXPECT_EQ(json["timing"]["incorrect_addition"], 12);
  EXPECT_EQ(json["hazards"][0]["kind"], "read-before-write");
  EXPECT_EQ(json["hazards"][0]["overlapped"], true);
  EXPECT_EQ(json["hazard_free"], false);
}

// ---- CLI body ---------------------------------------------------------------------------------

#ifdef RESIDENT_SIM_HAVE_BENCH

TEST(issue_order_sim, run_sim_shows_the_lab_example_and_its_broken_variant) {
  std::ostringstream out;
  EXPECT_EQ(bench::run_sim({}, out), 0) << "the lab example itself is hazard-free";
  const auto text = out.str();
  EXPECT_THAT(text, HasSubstr("== lab example ==\nhost_return_tick=4\n"));
  EXPECT_THAT(text, HasSubstr("reduce stream=compute issue=3 start=9 end=10\n"));
  EXPECT_THAT(text, HasSubstr("device_complete_tick=10\n"));
  EXPECT_THAT(text, HasSubstr("host=4, event=10, end_to_end=10 ticks\n"));
  EXPECT_THAT(text, HasSubstr("incorrect addition=14 ticks"));
  EXPECT_THAT(text, HasSubstr("result=164"));
  EXPECT_THAT(text, HasSubstr("== lab example without copy->affine"));
  EXPECT_THAT(text, HasSubstr("hazard: read-before-write on 'work'"));
  EXPECT_THAT(text, HasSubstr("lab example: hazard-free\n"));
}

TEST(issue_order_sim, run_sim_exits_3_when_the_given_file_has_hazards) {
  std::ostringstream out;
  EXPECT_EQ(bench::run_sim({(fixtures / "sim_race.yaml").string(), "", ""}, out),
            bench::sim_hazards_found);
  EXPECT_THAT(out.str(), HasSubstr("hazard: read-before-write on 'b': combine (compute) reads"));
}

TEST(issue_order_sim, run_sim_drop_variant_does_not_change_the_exit_status) {
  std::ostringstream out;
  const auto path = std::filesystem::temp_directory_path() / "resident_sim_test.json";
  EXPECT_EQ(
      bench::run_sim({(fixtures / "sim_lab.yaml").string(), "copy -> affine", path.string()}, out),
      0);
  EXPECT_THAT(out.str(), HasSubstr("without copy->affine"));

  std::ifstream file(path);
  const auto json = nlohmann::json::parse(file);
  EXPECT_EQ(json["benchmark"], "sim");
  ASSERT_EQ(json["schedules"].size(), 2U);
  EXPECT_EQ(json["schedules"][0]["hazard_free"], true);
  EXPECT_EQ(json["schedules"][1]["dropped"], "copy->affine");
  EXPECT_EQ(json["schedules"][1]["demonstration"], true);
  EXPECT_EQ(json["schedules"][1]["hazards"].size(), 1U);
  std::filesystem::remove(path);
}

TEST(issue_order_sim, run_sim_rejects_a_malformed_drop) {
  std::ostringstream out;
  for (const char* bad : {"copy", "copy->", "->affine", "a->b->c"}) {
    try {
      (void)bench::run_sim({"", bad, ""}, out);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("--drop expects FROM->TO, e.g. copy->affine")) << bad;
    }
  }
  EXPECT_EQ(bench::parse_drop(" copy->affine "),
            std::make_pair(std::string("copy"), std::string("affine")));
}

TEST(issue_order_sim, run_sim_rejects_a_drop_of_a_missing_dependency) {
  std::ostringstream out;
  EXPECT_THAT(sim_error_of([&] {
                (void)bench::run_sim({"", "square->reduce", ""}, out);
              }),
              HasSubstr("'reduce' does not wait for 'square'"));
}

#endif

}  // namespace
}  // namespace resident::sim
