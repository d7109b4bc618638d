// Application::to_dot: the operator DAG in Graphviz DOT, planned on the CPU.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

/// rx -> affine -> tx; returns rx.
std::shared_ptr<ports_op> pipeline(test_app& t) {
  auto rx = t.make_operator<ports_op>("rx", source_ports(4096));
  auto affine = t.make_operator<ports_op>("affine", relay_ports(4096));
  auto tx = t.make_operator<ports_op>("tx", std::vector{input("result", 4096)});
  t.add_flow(rx, affine);
  t.add_flow(affine, tx, {{"out", "result"}});
  return rx;
}

TEST(to_dot, is_a_digraph_named_after_the_application) {
  test_app app(pipeline, "lab");
  const std::string dot = app.to_dot();
  EXPECT_THAT(dot, StartsWith("digraph \"lab\" {\n"));
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_THAT(dot, HasSubstr("}\n"));
}

TEST(to_dot, lists_every_operator_with_its_place_in_the_capture_order) {
  test_app app(pipeline);
  const std::string dot = app.to_dot();
  EXPECT_THAT(dot, HasSubstr("  \"rx\" [label=\"#1 rx\"];\n"));
  EXPECT_THAT(dot, HasSubstr("  \"affine\" [label=\"#2 affine\"];\n"));
  EXPECT_THAT(dot, HasSubstr("  \"tx\" [label=\"#3 tx\"];\n"));
}

TEST(to_dot, says_the_operators_are_captured_in_order_on_one_stream) {
  test_app app(pipeline);
  EXPECT_THAT(app.to_dot(), HasSubstr("captured in topological order (#n) on one stream: "
                                      "branches do not overlap"));
}

TEST(to_dot, forked_says_so_and_labels_each_operator_with_its_stream) {
  // rx (handler) -> {affine -> tx, square}: square forks stream 1.
  test_app app([](test_app& t) {
    auto rx = pipeline(t);
    auto square = t.make_operator<ports_op>("square", std::vector{input("in", 4096)});
    t.add_flow(rx, square);
  });
  const std::string dot = app.to_dot(capture_order::forked);
  EXPECT_THAT(dot, HasSubstr("each independent branch on a forked stream (sN)"));
  EXPECT_THAT(dot, Not(HasSubstr("on one stream")));
  EXPECT_THAT(dot, HasSubstr("  \"affine\" [label=\"#2 affine (s0)\"];\n"));
  EXPECT_THAT(dot, HasSubstr("  \"tx\" [label=\"#3 tx (s0)\"];\n"));
  EXPECT_THAT(dot, HasSubstr("  \"square\" [label=\"#4 square (s1)\"];\n"));
  // The default, chain, labels no streams.
  EXPECT_THAT(app.to_dot(), HasSubstr("  \"square\" [label=\"#4 square\"];\n"));
}

TEST(to_dot, labels_edges_with_port_names_and_bytes) {
  test_app app(pipeline);
  const std::string dot = app.to_dot();
  EXPECT_THAT(dot, HasSubstr("\"rx\" -> \"affine\" [label=\"out -> in (4096 B)\"];"));
  EXPECT_THAT(dot, HasSubstr("\"affine\" -> \"tx\" [label=\"out -> result (4096 B)\"];"));
}

TEST(to_dot, without_a_handler_has_no_handler_cluster) {
  test_app app(pipeline);
  EXPECT_THAT(app.to_dot(), Not(HasSubstr("cluster_handler")));
}

TEST(to_dot, puts_handler_operators_in_their_own_cluster) {
  test_app app([](test_app& t) {
    auto rx = pipeline(t);
    t.register_data_ready_handler(handler_of({rx}));
  });
  const std::string dot = app.to_dot();
  EXPECT_THAT(dot, HasSubstr("  subgraph cluster_handler {\n    label=\"data-ready handler\";\n"
                             "    style=dashed;\n    \"rx\" [label=\"#1 rx\"];\n  }\n"));
}

TEST(to_dot, plans_the_application_and_reports_its_mistakes) {
  test_app app([](test_app& t) { (void)t.make_operator<ports_op>("lonely", sink_ports()); });
  EXPECT_THAT(error_of([&] { (void)app.to_dot(); }), HasSubstr("input 'in' is not connected"));
  EXPECT_EQ(app.compose_calls, 1);
}

}  // namespace
}  // namespace resident::test
