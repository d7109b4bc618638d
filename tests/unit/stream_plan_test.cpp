// plan_streams: which stream each operator of the DAG is captured on, what it waits for, and
// what stream 0 joins before the end marker. Operators are named by their place in the
// topological order; producers[i] lists the operators feeding operator i.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/app/stream_plan.hpp"
#include "resident/exec/run_options.hpp"
#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using producers = std::vector<std::vector<std::size_t>>;

std::vector<std::size_t> streams_of(const stream_plan& plan) {
  std::vector<std::size_t> out;
  for (const auto& step : plan.steps) out.push_back(step.stream);
  return out;
}

std::vector<bool> signals_of(const stream_plan& plan) {
  std::vector<bool> out;
  for (const auto& step : plan.steps) out.push_back(step.signals);
  return out;
}

// ---- names -------------------------------------------------------------------------------------

TEST(capture_order_option, names_round_trip_and_unknown_names_list_the_choices) {
  EXPECT_EQ(to_string(capture_order::chain), "chain");
  EXPECT_EQ(to_string(capture_order::forked), "forked");
  EXPECT_EQ(parse_capture_order("chain"), capture_order::chain);
  EXPECT_EQ(parse_capture_order("forked"), capture_order::forked);
  const std::string message =
      error_of<std::invalid_argument>([] { (void)parse_capture_order("fork"); });
  EXPECT_EQ(message, "unknown capture order 'fork'; capture orders: chain, forked");
}

TEST(capture_order_option, run_options_default_to_chain_and_refuse_unknown_values) {
  run_options options;
  EXPECT_EQ(options.capture, capture_order::chain);
  options.capture = static_cast<capture_order>(7);
  EXPECT_EQ(error_of<std::invalid_argument>([&] { options.validate(); }),
            "run_options: capture holds an unknown value 7");
}

// ---- chain -------------------------------------------------------------------------------------

TEST(plan_streams, chain_puts_every_operator_on_stream_zero_with_nothing_to_join) {
  // A diamond, chained: 0 -> {1, 2} -> 3.
  const stream_plan plan = plan_streams(producers{{}, {0}, {0}, {1, 2}}, capture_order::chain);
  EXPECT_EQ(plan.order, capture_order::chain);
  EXPECT_EQ(plan.streams, 1U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 0, 0, 0));
  EXPECT_TRUE(plan.steps[0].starts_stream);
  for (const auto& step : plan.steps) {
    EXPECT_TRUE(step.waits.empty());
    EXPECT_FALSE(step.signals);
  }
  EXPECT_TRUE(plan.join.empty());
}

TEST(plan_streams, an_empty_dag_uses_one_stream) {
  for (const auto order : {capture_order::chain, capture_order::forked}) {
    const stream_plan plan = plan_streams({}, order);
    EXPECT_EQ(plan.streams, 1U);
    EXPECT_TRUE(plan.steps.empty());
    EXPECT_TRUE(plan.join.empty());
  }
}

// ---- forked ------------------------------------------------------------------------------------

TEST(plan_streams, forked_chain_stays_on_one_stream) {
  const stream_plan plan = plan_streams(producers{{}, {0}, {1}, {2}}, capture_order::forked);
  EXPECT_EQ(plan.streams, 1U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(signals_of(plan), ElementsAre(false, false, false, false));
  EXPECT_TRUE(plan.join.empty());
}

TEST(plan_streams, forked_diamond_forks_one_arm_and_joins_it_at_the_fan_in) {
  // 0 -> {1, 2} -> 3: arm 1 continues stream 0, arm 2 forks stream 1, 3 waits for 2.
  const stream_plan plan = plan_streams(producers{{}, {0}, {0}, {1, 2}}, capture_order::forked);
  EXPECT_EQ(plan.streams, 2U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 0, 1, 0));
  EXPECT_THAT(plan.steps[2].waits, ElementsAre(0));
  EXPECT_TRUE(plan.steps[2].starts_stream);
  EXPECT_THAT(plan.steps[3].waits, ElementsAre(2));
  EXPECT_FALSE(plan.steps[3].starts_stream);
  EXPECT_THAT(signals_of(plan), ElementsAre(true, false, true, false));
  // The fan-in joined stream 1 already: stream 0's end is the end of everything.
  EXPECT_TRUE(plan.join.empty());
}

TEST(plan_streams, forked_fan_out_to_two_egresses_joins_the_side_branch_before_the_end) {
  // Both branches start at the handler (no producer in the DAG): 0 -> 1 (egress) and
  // 2 -> 3 (egress).
  const stream_plan plan = plan_streams(producers{{}, {0}, {}, {2}}, capture_order::forked);
  EXPECT_EQ(plan.streams, 2U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 0, 1, 1));
  EXPECT_TRUE(plan.steps[2].starts_stream);
  EXPECT_TRUE(plan.steps[2].waits.empty());  // begins where the DAG begins
  EXPECT_TRUE(plan.steps[3].waits.empty());
  EXPECT_THAT(plan.join, ElementsAre(3));
  EXPECT_THAT(signals_of(plan), ElementsAre(false, false, false, true));
}

TEST(plan_streams, forked_fan_out_of_one_operator_forks_a_stream_per_extra_consumer) {
  // 0 -> {1, 2, 3}, each a leaf.
  const stream_plan plan = plan_streams(producers{{}, {0}, {0}, {0}}, capture_order::forked);
  EXPECT_EQ(plan.streams, 3U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 0, 1, 2));
  EXPECT_TRUE(plan.steps[1].waits.empty());
  EXPECT_THAT(plan.steps[2].waits, ElementsAre(0));
  EXPECT_THAT(plan.steps[3].waits, ElementsAre(0));
  EXPECT_THAT(plan.join, ElementsAre(2, 3));
  EXPECT_THAT(signals_of(plan), ElementsAre(true, false, true, true));
}

TEST(plan_streams, forked_fan_in_of_two_sources_continues_the_lower_stream) {
  // Sources 0 and 1 meet in 2.
  const stream_plan plan = plan_streams(producers{{}, {}, {0, 1}}, capture_order::forked);
  EXPECT_EQ(plan.streams, 2U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 1, 0));
  EXPECT_THAT(plan.steps[2].waits, ElementsAre(1));
  EXPECT_TRUE(plan.join.empty());
  // The same DAG with the producers listed the other way round (and twice) plans the same.
  const stream_plan again = plan_streams(producers{{}, {}, {1, 0, 1}}, capture_order::forked);
  EXPECT_THAT(streams_of(again), ElementsAre(0, 1, 0));
  EXPECT_THAT(again.steps[2].waits, ElementsAre(1));
}

TEST(plan_streams, forked_never_continues_a_stream_whose_last_operator_is_not_a_producer) {
  // 0 -> 1 -> 2 and 0 -> 3: by 3, stream 0 ends at 2, which 3 does not depend on, so 3 forks.
  // Then 4 <- {2, 3}: it continues stream 0 (ends at 2) and waits for 3.
  const stream_plan plan =
      plan_streams(producers{{}, {0}, {1}, {0}, {2, 3}}, capture_order::forked);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 0, 0, 1, 0));
  EXPECT_THAT(plan.steps[3].waits, ElementsAre(0));
  EXPECT_THAT(plan.steps[4].waits, ElementsAre(3));
  EXPECT_TRUE(plan.join.empty());
}

TEST(plan_streams, forked_two_arm_branch_beside_a_fast_one_joins_only_the_fast_leaf) {
  // The GPU test's shape: slow(0), square(1) -> add(2) -> egress(3); affine(4) -> egress(5).
  const stream_plan plan =
      plan_streams(producers{{}, {}, {0, 1}, {2}, {}, {4}}, capture_order::forked);
  EXPECT_EQ(plan.streams, 3U);
  EXPECT_THAT(streams_of(plan), ElementsAre(0, 1, 0, 0, 2, 2));
  EXPECT_THAT(plan.steps[2].waits, ElementsAre(1));
  EXPECT_THAT(plan.join, ElementsAre(5));
}

TEST(plan_streams, refuses_a_producer_that_does_not_come_first) {
  EXPECT_THAT(error_of<std::invalid_argument>([] {
                (void)plan_streams(producers{{1}, {}}, capture_order::forked);
              }),
              HasSubstr("operator 0 is fed by operator 1"));
}

// ---- from an application's plan ---------------------------------------------------------------

TEST(plan_streams, dag_plan_lists_each_operators_producers_without_the_handler) {
  // rx (handler) -> {a, b}; a -> c on two ports; b -> c.
  test_app app([](test_app& t) {
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    auto a = t.make_operator<ports_op>(
        "a", std::vector{input("in", 64), output("x", 64), output("y", 64)});
    auto b = t.make_operator<ports_op>("b", relay_ports());
    auto c =
        t.make_operator<ports_op>("c", std::vector{input("p", 64), input("q", 64), input("r", 64)});
    t.register_data_ready_handler(handler_of({rx}));
    t.add_flow(rx, a, {{"out", "in"}});
    t.add_flow(rx, b, {{"out", "in"}});
    t.add_flow(a, c, {{"x", "p"}, {"y", "q"}});
    t.add_flow(b, c, {{"out", "r"}});
  });
  const dag_plan& plan = app.plan();
  ASSERT_THAT(names(plan.body_order), ElementsAre("a", "b", "c"));
  ASSERT_EQ(plan.body_producers.size(), 3U);
  EXPECT_TRUE(plan.body_producers[0].empty());
  EXPECT_TRUE(plan.body_producers[1].empty());
  EXPECT_THAT(plan.body_producers[2], ElementsAre(0, 1));
  const stream_plan streams = plan_streams(plan.body_producers, capture_order::forked);
  EXPECT_THAT(streams_of(streams), ElementsAre(0, 1, 0));
  EXPECT_THAT(streams.steps[2].waits, ElementsAre(1));
}

}  // namespace
}  // namespace resident::test
