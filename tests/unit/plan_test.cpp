// Application::plan(): composes once, validates the DAG, orders the operators and assigns one
// device buffer to every output and the inputs it feeds.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- composing --------------------------------------------------------------------------------

TEST(plan, composes_once_and_returns_the_same_plan) {
  test_app app([](test_app& t) { (void)t.make_operator<ports_op>("a", source_ports()); });
  const dag_plan& first = app.plan();
  const dag_plan& second = app.plan();
  EXPECT_EQ(&first, &second);
  EXPECT_EQ(app.compose_calls, 1);
}

TEST(plan, of_an_empty_application_is_empty) {
  test_app app;
  const dag_plan& plan = app.plan();
  EXPECT_TRUE(plan.handler_order.empty());
  EXPECT_TRUE(plan.body_order.empty());
  EXPECT_TRUE(plan.buffers.empty());
  EXPECT_EQ(plan.total_runtime_bytes(), 0U);
}

TEST(plan, after_a_throwing_compose_composes_again_from_scratch) {
  test_app app([](test_app& t) {
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    t.register_data_ready_handler(handler_of({rx}));
    if (t.compose_calls == 1) throw std::runtime_error("first compose fails");
    auto sink = t.make_operator<ports_op>("sink", sink_ports());
    t.add_flow(rx, sink);
  });
  EXPECT_THROW((void)app.plan(), std::runtime_error);
  // The second compose creates "rx" and registers the handler again: neither may collide with
  // what the failed compose left behind.
  const dag_plan& plan = app.plan();
  EXPECT_EQ(app.compose_calls, 2);
  EXPECT_THAT(names(plan.handler_order), ElementsAre("rx"));
  EXPECT_THAT(names(plan.body_order), ElementsAre("sink"));
}

TEST(plan, after_a_failed_validation_composes_again_from_scratch) {
  test_app app([](test_app& t) {
    auto src = t.make_operator<ports_op>("src", source_ports());
    auto sink = t.make_operator<ports_op>("sink", sink_ports());
    if (t.compose_calls > 1) t.add_flow(src, sink);
  });
  EXPECT_THAT(plan_error(app), HasSubstr("input 'in' is not connected"));
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("src", "sink"));
  EXPECT_EQ(app.compose_calls, 2);
}

// ---- validation -------------------------------------------------------------------------------

TEST(plan, reports_an_unconnected_input_with_the_add_flow_that_would_feed_it) {
  test_app app([](test_app& t) { (void)t.make_operator<ports_op>("affine", relay_ports()); });
  EXPECT_EQ(plan_error(app),
            "operator 'affine' input 'in' is not connected; feed it with add_flow(<producer>, "
            "affine, {{\"<output>\", \"in\"}})");
}

TEST(plan, accepts_an_unconnected_output) {
  std::shared_ptr<ports_op> a;
  test_app app([&](test_app& t) { a = t.make_operator<ports_op>("a", source_ports(128)); });
  const dag_plan& plan = app.plan();
  ASSERT_EQ(plan.buffers.size(), 1U);
  EXPECT_EQ(plan.buffers[plan.buffer_of(*a, "out")].producer, "a.out");
  EXPECT_TRUE(plan.buffers[0].consumers.empty());
  EXPECT_EQ(plan.total_runtime_bytes(), 128U) << "an unread output still gets its memory";
}

TEST(plan, reports_a_two_operator_cycle_with_its_edges) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", relay_ports());
    auto b = t.make_operator<ports_op>("b", relay_ports());
    t.add_flow(a, b);
    t.add_flow(b, a);
  });
  EXPECT_EQ(plan_error(app),
            "the operators form a cycle: a.out -> b.in, b.out -> a.in; an application must be a "
            "DAG");
}

TEST(plan, reports_a_three_operator_cycle_with_its_edges_in_flow_order) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", relay_ports());
    auto b = t.make_operator<ports_op>("b", relay_ports());
    auto c = t.make_operator<ports_op>("c", relay_ports());
    t.add_flow(a, b);
    t.add_flow(b, c);
    t.add_flow(c, a);
  });
  EXPECT_THAT(plan_error(app),
              HasSubstr("cycle: a.out -> b.in, b.out -> c.in, c.out -> a.in; an application"));
}

TEST(plan, reports_only_the_cycle_not_the_operators_downstream_of_it) {
  test_app app([](test_app& t) {
    auto tail = t.make_operator<ports_op>("tail", sink_ports());
    auto a = t.make_operator<ports_op>("a", relay_ports());
    auto b = t.make_operator<ports_op>("b", relay_ports());
    t.add_flow(a, b);
    t.add_flow(b, a);
    t.add_flow(b, tail);  // fan-out of b.out: tail waits on the cycle but is not part of it
  });
  const std::string message = plan_error(app);
  EXPECT_THAT(message, HasSubstr("the operators form a cycle: "));
  EXPECT_THAT(message, HasSubstr("a.out -> b.in"));
  EXPECT_THAT(message, HasSubstr("b.out -> a.in"));
  EXPECT_THAT(message, Not(HasSubstr("tail")));
}

TEST(plan, reports_a_cycle_inside_the_data_ready_handler) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", relay_ports());
    auto b = t.make_operator<ports_op>("b", relay_ports());
    t.register_data_ready_handler(handler_of({a, b}));
    t.add_flow(a, b);
    t.add_flow(b, a);
  });
  EXPECT_THAT(plan_error(app), HasSubstr("cycle: a.out -> b.in, b.out -> a.in"));
}

// ---- order ------------------------------------------------------------------------------------

TEST(plan, orders_operators_without_flows_by_creation) {
  test_app app([](test_app& t) {
    for (const char* name : {"z", "a", "m"}) (void)t.make_operator<ports_op>(name);
  });
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("z", "a", "m"));
}

TEST(plan, orders_a_chain_created_backwards_by_its_flows) {
  test_app app([](test_app& t) {
    auto c = t.make_operator<ports_op>("c", sink_ports());
    auto b = t.make_operator<ports_op>("b", relay_ports());
    auto a = t.make_operator<ports_op>("a", source_ports());
    t.add_flow(a, b);
    t.add_flow(b, c);
  });
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("a", "b", "c"));
}

TEST(plan, breaks_ties_in_a_diamond_by_creation_order) {
  // a -> b, a -> c, b -> d, c -> d, created c, a, d, b: once a runs, b and c are both ready and
  // c was created first.
  test_app app([](test_app& t) {
    auto c = t.make_operator<ports_op>("c", relay_ports());
    auto a = t.make_operator<ports_op>("a", source_ports());
    auto d = t.make_operator<ports_op>("d", std::vector{input("x", 64), input("y", 64)});
    auto b = t.make_operator<ports_op>("b", relay_ports());
    t.add_flow(a, b);
    t.add_flow(a, c);
    t.add_flow(b, d, {{"out", "x"}});
    t.add_flow(c, d, {{"out", "y"}});
  });
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("a", "c", "b", "d"));
}

TEST(plan, order_is_the_same_for_every_plan_of_the_same_composition) {
  const auto compose = [](test_app& t) {
    auto c = t.make_operator<ports_op>("c", relay_ports());
    auto a = t.make_operator<ports_op>("a", source_ports());
    auto d = t.make_operator<ports_op>("d", std::vector{input("x", 64), input("y", 64)});
    auto b = t.make_operator<ports_op>("b", relay_ports());
    t.add_flow(c, d, {{"out", "y"}});
    t.add_flow(b, d, {{"out", "x"}});
    t.add_flow(a, c);
    t.add_flow(a, b);
  };
  test_app first(compose);
  test_app second(compose);
  EXPECT_EQ(names(first.plan().body_order), names(second.plan().body_order));
  EXPECT_THAT(names(first.plan().body_order), ElementsAre("a", "c", "b", "d"))
      << "flow declaration order does not matter, creation order does";
}

TEST(plan, with_several_sources_runs_the_earliest_created_ready_operator_first) {
  // Created: sink_b, src_1, sink_a, src_2. Ready at first: src_1 and src_2; src_1 frees sink_b,
  // which was created before src_2.
  test_app app([](test_app& t) {
    auto sink_b = t.make_operator<ports_op>("sink_b", sink_ports());
    auto src_1 = t.make_operator<ports_op>("src_1", source_ports());
    auto sink_a = t.make_operator<ports_op>("sink_a", sink_ports());
    auto src_2 = t.make_operator<ports_op>("src_2", source_ports());
    t.add_flow(src_2, sink_a);
    t.add_flow(src_1, sink_b);
  });
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("src_1", "sink_b", "src_2", "sink_a"));
}

TEST(plan, counts_two_flows_between_the_same_operators_as_one_dependency) {
  test_app app([](test_app& t) {
    auto b = t.make_operator<ports_op>("b", std::vector{input("x", 8), input("y", 8)});
    auto a = t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 8)});
    t.add_flow(a, b, {{"x", "x"}, {"y", "y"}});
  });
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("a", "b"));
}

TEST(plan, splits_handler_operators_from_the_body) {
  test_app app([](test_app& t) {
    auto sink = t.make_operator<ports_op>("sink", sink_ports());
    auto decode = t.make_operator<ports_op>("decode", relay_ports());
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    auto work = t.make_operator<ports_op>("work", relay_ports());
    t.register_data_ready_handler(handler_of({decode, rx}));
    t.add_flow(rx, decode);
    t.add_flow(decode, work);
    t.add_flow(work, sink);
  });
  const dag_plan& plan = app.plan();
  EXPECT_THAT(names(plan.handler_order), ElementsAre("rx", "decode"));
  EXPECT_THAT(names(plan.body_order), ElementsAre("work", "sink"))
      << "a body operator fed by the handler is a source of the body";
}

TEST(plan, without_a_handler_puts_every_operator_in_the_body) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports());
    auto b = t.make_operator<ports_op>("b", sink_ports());
    t.add_flow(a, b);
  });
  EXPECT_TRUE(app.plan().handler_order.empty());
  EXPECT_THAT(names(app.plan().body_order), ElementsAre("a", "b"));
}

// ---- buffers ----------------------------------------------------------------------------------

TEST(plan, fan_out_shares_one_buffer_between_the_producer_and_every_consumer) {
  std::shared_ptr<ports_op> a;
  std::shared_ptr<ports_op> b;
  std::shared_ptr<ports_op> c;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", source_ports(256));
    b = t.make_operator<ports_op>("b", sink_ports(256));
    c = t.make_operator<ports_op>("c", sink_ports(256));
    t.add_flow(a, b);
    t.add_flow(a, c);
  });
  const dag_plan& plan = app.plan();
  ASSERT_EQ(plan.buffers.size(), 1U);
  const std::size_t shared = plan.buffer_of(*a, "out");
  EXPECT_EQ(plan.buffer_of(*b, "in"), shared);
  EXPECT_EQ(plan.buffer_of(*c, "in"), shared);
  const planned_buffer& buffer = plan.buffers[shared];
  EXPECT_EQ(buffer.bytes, 256U);
  EXPECT_EQ(buffer.external, nullptr);
  EXPECT_EQ(buffer.producer, "a.out");
  EXPECT_THAT(buffer.consumers, ElementsAre("b.in", "c.in"));
  EXPECT_EQ(plan.total_runtime_bytes(), 256U) << "fan-out allocates once";
}

/// Transforms its "in" port in place into "out".
class in_place_op : public Operator {
 public:
  explicit in_place_op(std::size_t bytes = 64, std::size_t out_bytes = 0)
      : _bytes(bytes), _out_bytes(out_bytes == 0 ? bytes : out_bytes) {}
  void setup(OperatorSpec& spec) override {
    spec.device_input("in", _bytes);
    spec.device_output("out", _out_bytes);
    spec.in_place("out", "in");
  }
  void compute(CaptureContext&) override {}

 private:
  std::size_t _bytes;
  std::size_t _out_bytes;
};

TEST(plan, an_in_place_output_shares_its_inputs_buffer_down_a_chain) {
  std::shared_ptr<ports_op> src;
  std::shared_ptr<in_place_op> first;
  std::shared_ptr<in_place_op> second;
  std::shared_ptr<ports_op> sink;
  test_app app([&](test_app& t) {
    src = t.make_operator<ports_op>("src", source_ports(256));
    first = t.make_operator<in_place_op>("first", 256);
    second = t.make_operator<in_place_op>("second", 256);
    sink = t.make_operator<ports_op>("sink", sink_ports(256));
    t.add_flow(src, first);
    t.add_flow(first, second);
    t.add_flow(second, sink);
  });
  const dag_plan& plan = app.plan();
  ASSERT_EQ(plan.buffers.size(), 1U) << "nothing allocated for the in-place outputs";
  for (const auto& [op, port] :
       std::vector<std::pair<Operator*, const char*>>{{src.get(), "out"},
                                                      {first.get(), "in"},
                                                      {first.get(), "out"},
                                                      {second.get(), "in"},
                                                      {second.get(), "out"},
                                                      {sink.get(), "in"}}) {
    EXPECT_EQ(plan.buffer_of(*op, port), 0U) << op->name() << "." << port;
  }
  EXPECT_THAT(plan.buffers[0].consumers, ElementsAre("sink.in"));
  EXPECT_EQ(plan.total_runtime_bytes(), 256U);
}

TEST(plan, refuses_in_place_on_a_buffer_another_operator_reads) {
  test_app app([](test_app& t) {
    auto src = t.make_operator<ports_op>("src", source_ports(64));
    auto isp = t.make_operator<in_place_op>("isp", 64);
    auto tap = t.make_operator<ports_op>("tap", sink_ports(64));
    t.add_flow(src, isp);
    t.add_flow(src, tap);
  });
  try {
    (void)app.plan();
    FAIL() << "expected a composition_error";
  } catch (const composition_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("isp.out transforms input isp.in in place"));
    EXPECT_THAT(e.what(), HasSubstr("also feeds tap.in"));
  }
}

TEST(plan, in_place_needs_ports_of_the_same_size) {
  test_app app([](test_app& t) { (void)t.make_operator<in_place_op>("isp", 64, 128); });
  try {
    (void)app.plan();
    FAIL() << "expected a composition_error";
  } catch (const composition_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("operator 'isp': in_place(\"out\", \"in\")"));
    EXPECT_THAT(e.what(), HasSubstr("the output is 128 bytes, the input 64"));
  }
}

TEST(plan, gives_every_output_its_own_buffer) {
  test_app app([](test_app& t) {
    (void)t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 16)});
    (void)t.make_operator<ports_op>("b", source_ports(32));
  });
  const dag_plan& plan = app.plan();
  ASSERT_EQ(plan.buffers.size(), 3U);
  EXPECT_EQ(plan.buffers[0].producer, "a.x");
  EXPECT_EQ(plan.buffers[1].producer, "a.y");
  EXPECT_EQ(plan.buffers[2].producer, "b.out");
  EXPECT_EQ(plan.total_runtime_bytes(), 8U + 16U + 32U);
}

TEST(plan, buffer_of_an_unknown_port_is_an_error) {
  std::shared_ptr<ports_op> a;
  test_app app([&](test_app& t) { a = t.make_operator<ports_op>("a", source_ports()); });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(error_of([&] { (void)plan.buffer_of(*a, "nope"); }),
            "operator 'a' port 'nope' has no planned buffer");
}

TEST(plan, output_external_memory_wins_over_the_inputs) {
  int out_memory = 0;
  int in_memory = 0;
  std::shared_ptr<ports_op> a;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", std::vector{output("out", 64, &out_memory)});
    auto b = t.make_operator<ports_op>("b", std::vector{input("in", 64, &in_memory)});
    t.add_flow(a, b);
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffers[plan.buffer_of(*a, "out")].external, &out_memory);
}

TEST(plan, input_external_memory_is_used_when_the_output_has_none) {
  int in_memory = 0;
  std::shared_ptr<ports_op> a;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", source_ports(64));
    auto b = t.make_operator<ports_op>("b", std::vector{input("in", 64, &in_memory)});
    auto c = t.make_operator<ports_op>("c", sink_ports(64));
    t.add_flow(a, b);
    t.add_flow(a, c);
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffers[plan.buffer_of(*a, "out")].external, &in_memory);
}

TEST(plan, consumers_supplying_the_same_memory_share_it) {
  int memory = 0;
  std::shared_ptr<ports_op> a;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", source_ports(64));
    auto b = t.make_operator<ports_op>("b", std::vector{input("in", 64, &memory)});
    auto c = t.make_operator<ports_op>("c", std::vector{input("in", 64, &memory)});
    t.add_flow(a, b);
    t.add_flow(a, c);
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffers[plan.buffer_of(*a, "out")].external, &memory);
}

TEST(plan, consumers_supplying_different_memory_are_rejected) {
  int b_memory = 0;
  int c_memory = 0;
  test_app app([&](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports(64));
    auto b = t.make_operator<ports_op>("b", std::vector{input("in", 64, &b_memory)});
    auto c = t.make_operator<ports_op>("c", std::vector{input("in", 64, &c_memory)});
    t.add_flow(a, b);
    t.add_flow(a, c);
  });
  EXPECT_EQ(plan_error(app),
            "output a.out feeds b.in and c.in, which each supply their own memory; supply it on "
            "the output instead");
}

TEST(plan, consumers_supplying_different_memory_are_fine_when_the_output_supplies_its_own) {
  int out_memory = 0;
  int b_memory = 0;
  int c_memory = 0;
  std::shared_ptr<ports_op> a;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", std::vector{output("out", 64, &out_memory)});
    auto b = t.make_operator<ports_op>("b", std::vector{input("in", 64, &b_memory)});
    auto c = t.make_operator<ports_op>("c", std::vector{input("in", 64, &c_memory)});
    t.add_flow(a, b);
    t.add_flow(a, c);
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffers[plan.buffer_of(*a, "out")].external, &out_memory);
}

TEST(plan, total_runtime_bytes_excludes_external_buffers) {
  int out_memory = 0;
  int in_memory = 0;
  test_app app([&](test_app& t) {
    (void)t.make_operator<ports_op>("owned", source_ports(100));
    (void)t.make_operator<ports_op>("ext_out", std::vector{output("out", 1000, &out_memory)});
    auto src = t.make_operator<ports_op>("src", source_ports(10000));
    auto ext_in = t.make_operator<ports_op>("ext_in", std::vector{input("in", 10000, &in_memory)});
    t.add_flow(src, ext_in);
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffers.size(), 3U);
  EXPECT_EQ(plan.total_runtime_bytes(), 100U);
}

// ---- build_plan directly --------------------------------------------------------------------

TEST(build_plan, rejects_a_flow_between_operators_outside_the_list) {
  test_app app([](test_app& t) {
    auto x = t.make_operator<ports_op>("x", source_ports());
    auto y = t.make_operator<ports_op>("y", sink_ports());
    t.add_flow(x, y);
  });
  const dag_plan& planned = app.plan();
  // build_plan is also reachable without an Application; it checks what add_flow cannot.
  std::vector<Operator*> only_y{planned.body_order.back()};
  const flow f{planned.body_order.front(), "out", planned.body_order.back(), "in"};
  EXPECT_THAT(error_of([&] { (void)build_plan(only_y, {f}, {}); }),
              HasSubstr("add_flow(x.out -> y.in): both operators must belong to the application"));
}

}  // namespace
}  // namespace resident::test
