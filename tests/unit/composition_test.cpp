// Putting an application together inside compose(): ports, make_operator, add_flow and the
// data-ready handler. Each mistake is reported when plan() runs compose().

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- ports ------------------------------------------------------------------------------------

TEST(ports, are_declared_in_order_with_direction_size_and_external_memory) {
  int memory = 0;
  std::shared_ptr<ports_op> op;
  test_app app([&](test_app& a) {
    op = a.make_operator<ports_op>(
        "op", std::vector{input("x", 8), output("y", 16, &memory), input("z", 4)});
    auto feed = a.make_operator<ports_op>("feed", std::vector{output("x", 8), output("z", 4)});
    a.add_flow(feed, op, {{"x", "x"}, {"z", "z"}});
  });
  (void)app.plan();
  const auto& ports = op->spec().ports();
  ASSERT_EQ(ports.size(), 3U);
  EXPECT_EQ(ports[1].name, "y");
  EXPECT_EQ(ports[1].direction, port_direction::output);
  EXPECT_EQ(ports[1].bytes, 16U);
  EXPECT_EQ(ports[1].external, &memory);
  EXPECT_EQ(ports[1].bound, nullptr) << "no device memory before materialize()";
  EXPECT_THAT(op->spec().port_names(port_direction::input), ElementsAre("x", "z"));
  EXPECT_THAT(op->spec().port_names(port_direction::output), ElementsAre("y"));
  EXPECT_EQ(op->spec().find_port("z"), &ports[2]);
  EXPECT_EQ(op->spec().find_port("w"), nullptr);
}

TEST(ports, zero_byte_output_is_rejected) {
  test_app app(
      [](test_app& a) { (void)a.make_operator<ports_op>("z", std::vector{output("out", 0)}); });
  EXPECT_EQ(plan_error(app),
            "operator 'z': device_output(\"out\") has size 0 bytes; a port must hold at least one "
            "byte");
}

TEST(ports, zero_byte_input_is_rejected) {
  test_app app(
      [](test_app& a) { (void)a.make_operator<ports_op>("z", std::vector{input("in", 0)}); });
  EXPECT_THAT(plan_error(app), HasSubstr("operator 'z': device_input(\"in\") has size 0 bytes"));
}

TEST(ports, unnamed_port_is_rejected) {
  test_app app(
      [](test_app& a) { (void)a.make_operator<ports_op>("u", std::vector{input("", 8)}); });
  EXPECT_EQ(plan_error(app), "operator 'u': device_input needs a name");
}

TEST(ports, same_name_declared_twice_is_rejected) {
  test_app app([](test_app& a) {
    (void)a.make_operator<ports_op>("d", std::vector{output("x", 8), output("x", 8)});
  });
  EXPECT_EQ(plan_error(app), "operator 'd': port 'x' is declared twice");
}

TEST(ports, input_and_output_cannot_share_a_name) {
  test_app app([](test_app& a) {
    (void)a.make_operator<ports_op>("d", std::vector{input("x", 8), output("x", 8)});
  });
  EXPECT_THAT(plan_error(app), HasSubstr("port 'x' is declared twice"));
}

// ---- make_operator ----------------------------------------------------------------------------

TEST(make_operator, names_the_operator_and_runs_its_setup) {
  std::shared_ptr<ports_op> op;
  test_app app([&](test_app& a) { op = a.make_operator<ports_op>("src", source_ports(32)); });
  (void)app.plan();
  EXPECT_EQ(op->name(), "src");
  EXPECT_EQ(op->spec().operator_name(), "src");
  EXPECT_EQ(op->spec().ports().size(), 1U);
  EXPECT_EQ(&app.find_operator("src"), op.get());
}

TEST(make_operator, duplicate_name_is_rejected) {
  test_app app([](test_app& a) {
    (void)a.make_operator<ports_op>("a", source_ports());
    (void)a.make_operator<ports_op>("a", sink_ports());
  });
  EXPECT_EQ(plan_error(app),
            "make_operator(\"a\"): application 'app' already has an operator "
            "named 'a'");
}

TEST(make_operator, empty_name_is_rejected) {
  test_app app([](test_app& a) { (void)a.make_operator<ports_op>(""); });
  EXPECT_EQ(plan_error(app), "make_operator: an operator needs a name");
}

TEST(make_operator, outside_compose_is_rejected) {
  test_app app;
  EXPECT_EQ(error_of([&] { (void)app.make_operator<ports_op>("late"); }),
            "make_operator(\"late\"): operators are created inside compose()");
}

TEST(make_operator, after_plan_is_rejected) {
  test_app app([](test_app& a) { (void)a.make_operator<ports_op>("a"); });
  (void)app.plan();
  EXPECT_THAT(error_of([&] { (void)app.make_operator<ports_op>("b"); }),
              HasSubstr("operators are created inside compose()"));
}

TEST(make_operator, forwards_constructor_arguments_and_turns_args_into_parameters) {
  std::shared_ptr<ctor_op> op;
  test_app app([&](test_app& a) {
    op = a.make_operator<ctor_op>("c", arg("gain", 2.5), 42, arg("label", "mixed"),
                                  std::make_unique<std::string>("moved in"));
  });
  (void)app.plan();
  EXPECT_EQ(op->number, 42);
  ASSERT_NE(op->text, nullptr);
  EXPECT_EQ(*op->text, "moved in");
  EXPECT_DOUBLE_EQ(op->gain, 2.5);
  EXPECT_EQ(op->label, "mixed");
}

TEST(make_operator, accepts_an_arg_passed_as_an_lvalue) {
  std::shared_ptr<ctor_op> op;
  const arg gain("gain", 4);
  test_app app([&](test_app& a) {
    op = a.make_operator<ctor_op>("c", 1, gain, std::make_unique<std::string>());
  });
  (void)app.plan();
  EXPECT_DOUBLE_EQ(op->gain, 4.0);
}

TEST(find_operator, unknown_name_is_rejected) {
  test_app app([](test_app& a) { (void)a.make_operator<ports_op>("a"); });
  (void)app.plan();
  EXPECT_EQ(error_of([&] { (void)app.find_operator("b"); }),
            "application 'app' has no operator 'b'");
}

// ---- add_flow ---------------------------------------------------------------------------------

TEST(add_flow, connects_named_ports_so_they_share_a_buffer) {
  std::shared_ptr<ports_op> a;
  std::shared_ptr<ports_op> b;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 16)});
    b = t.make_operator<ports_op>("b", std::vector{input("p", 16), input("q", 8)});
    t.add_flow(a, b, {{"x", "q"}, {"y", "p"}});
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffer_of(*a, "x"), plan.buffer_of(*b, "q"));
  EXPECT_EQ(plan.buffer_of(*a, "y"), plan.buffer_of(*b, "p"));
  EXPECT_NE(plan.buffer_of(*a, "x"), plan.buffer_of(*a, "y"));
}

TEST(add_flow, pairs_the_only_output_with_the_only_input_when_no_ports_are_named) {
  std::shared_ptr<ports_op> a;
  std::shared_ptr<ports_op> b;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", std::vector{output("samples", 8)});
    b = t.make_operator<ports_op>("b", std::vector{input("x", 8), output("y", 8)});
    t.add_flow(a, b);
  });
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffer_of(*a, "samples"), plan.buffer_of(*b, "x"));
}

TEST(add_flow, without_port_names_is_ambiguous_when_a_side_has_several_ports) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 8)});
    auto b = t.make_operator<ports_op>("b", sink_ports(8));
    t.add_flow(a, b);
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(a -> b): name the ports, e.g. {{\"out\", \"in\"}}: 'a' has 2 outputs and "
            "'b' has 1 inputs");
}

TEST(add_flow, without_port_names_fails_when_the_destination_has_no_input) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports());
    auto b = t.make_operator<ports_op>("b", source_ports());
    t.add_flow(a, b);
  });
  EXPECT_THAT(plan_error(app), HasSubstr("'a' has 1 outputs and 'b' has 0 inputs"));
}

TEST(add_flow, unknown_output_port_lists_the_operators_outputs) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 8)});
    auto b = t.make_operator<ports_op>("b", sink_ports(8));
    t.add_flow(a, b, {{"z", "in"}});
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(a.z -> b.in): operator 'a' has no output port 'z'; its outputs: x, y");
}

TEST(add_flow, unknown_input_port_lists_the_operators_inputs) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports(8));
    auto b = t.make_operator<ports_op>("b", relay_ports(8));
    t.add_flow(a, b, {{"out", "inn"}});
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(a.out -> b.inn): operator 'b' has no input port 'inn'; its inputs: in");
}

TEST(add_flow, unknown_port_on_an_operator_without_outputs_lists_none) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", sink_ports(8));
    auto b = t.make_operator<ports_op>("b", sink_ports(8));
    t.add_flow(a, b, {{"out", "in"}});
  });
  EXPECT_THAT(plan_error(app),
              HasSubstr("operator 'a' has no output port 'out'; its outputs: (none)"));
}

TEST(add_flow, naming_an_input_as_the_source_is_a_direction_error) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", relay_ports(8));
    auto b = t.make_operator<ports_op>("b", sink_ports(8));
    t.add_flow(a, b, {{"in", "in"}});
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(a.in -> b.in): 'in' is an input of operator 'a', not an output");
}

TEST(add_flow, naming_an_output_as_the_destination_is_a_direction_error) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports(8));
    auto b = t.make_operator<ports_op>("b", relay_ports(8));
    t.add_flow(a, b, {{"out", "out"}});
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(a.out -> b.out): 'out' is an output of operator 'b', not an input");
}

TEST(add_flow, rejects_size_mismatch_naming_both_ports) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports(16384));
    auto b = t.make_operator<ports_op>("b", sink_ports(8192));
    t.add_flow(a, b, {{"out", "in"}});
  });
  EXPECT_EQ(plan_error(app), "add_flow(a.out -> b.in): output is 16384 bytes, input expects 8192");
}

TEST(add_flow, rejects_an_input_already_fed_by_another_output) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports());
    auto b = t.make_operator<ports_op>("b", source_ports());
    auto c = t.make_operator<ports_op>("c", sink_ports());
    t.add_flow(a, c);
    t.add_flow(b, c);
  });
  EXPECT_EQ(plan_error(app), "add_flow(b.out -> c.in): input c.in is already fed by a.out");
}

TEST(add_flow, rejects_the_same_flow_twice) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports());
    auto c = t.make_operator<ports_op>("c", sink_ports());
    t.add_flow(a, c);
    t.add_flow(a, c, {{"out", "in"}});
  });
  EXPECT_EQ(plan_error(app), "add_flow(a.out -> c.in): this flow already exists");
}

TEST(add_flow, rejects_the_same_input_twice_in_one_call) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 8)});
    auto c = t.make_operator<ports_op>("c", sink_ports(8));
    t.add_flow(a, c, {{"x", "in"}, {"y", "in"}});
  });
  EXPECT_THAT(plan_error(app), HasSubstr("input c.in is already fed by a.x"));
}

TEST(add_flow, rejects_an_operator_feeding_itself) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", relay_ports());
    t.add_flow(a, a);
  });
  EXPECT_EQ(plan_error(app), "add_flow(a.out -> a.in): an operator cannot feed itself");
}

TEST(add_flow, rejects_an_operator_of_another_application) {
  std::shared_ptr<ports_op> foreign;
  test_app other([&](test_app& t) { foreign = t.make_operator<ports_op>("x", source_ports()); });
  (void)other.plan();
  test_app app([&](test_app& t) {
    auto sink = t.make_operator<ports_op>("sink", sink_ports());
    t.add_flow(foreign, sink);
  });
  EXPECT_EQ(plan_error(app),
            "add_flow: operator 'x' was not created by this application's make_operator()");
}

TEST(add_flow, rejects_an_operator_of_another_application_with_the_same_name) {
  std::shared_ptr<ports_op> foreign;
  test_app other([&](test_app& t) {
    auto src = t.make_operator<ports_op>("src", source_ports());
    foreign = t.make_operator<ports_op>("sink", sink_ports());
    t.add_flow(src, foreign);
  });
  (void)other.plan();
  test_app app([&](test_app& t) {
    auto src = t.make_operator<ports_op>("src", source_ports());
    (void)t.make_operator<ports_op>("sink", sink_ports());
    t.add_flow(src, foreign);
  });
  EXPECT_THAT(plan_error(app), HasSubstr("operator 'sink' was not created by this application"));
}

TEST(add_flow, outside_compose_is_rejected) {
  std::shared_ptr<ports_op> a;
  std::shared_ptr<ports_op> b;
  test_app app([&](test_app& t) {
    a = t.make_operator<ports_op>("a", std::vector{output("x", 8), output("y", 8)});
    b = t.make_operator<ports_op>("b", sink_ports(8));
    t.add_flow(a, b, {{"x", "in"}});
  });
  (void)app.plan();
  EXPECT_EQ(error_of([&] {
              app.add_flow(a, b, {{"y", "in"}});
            }),
            "add_flow: flows are made inside compose()");
}

TEST(add_flow, rejects_a_null_operator) {
  test_app app([](test_app& t) {
    auto a = t.make_operator<ports_op>("a", source_ports());
    t.add_flow(a, nullptr);
  });
  EXPECT_EQ(plan_error(app), "add_flow: an operator is null");
}

// ---- register_data_ready_handler --------------------------------------------------------------

TEST(data_ready_handler, is_reported_once_registered) {
  test_app app([](test_app& t) {
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    auto sink = t.make_operator<ports_op>("sink", sink_ports());
    t.register_data_ready_handler(handler_of({rx}));
    t.add_flow(rx, sink);
  });
  EXPECT_FALSE(app.has_data_ready_handler());
  (void)app.plan();
  EXPECT_TRUE(app.has_data_ready_handler());
  ASSERT_EQ(app.handler().operators.size(), 1U);
  EXPECT_EQ(app.handler().operators[0]->name(), "rx");
}

TEST(data_ready_handler, keeps_the_host_gate) {
  test_app app([](test_app& t) {
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    auto handler = handler_of({rx});
    handler.host_gate = [](std::uint64_t last, sample_policy) { return last < 3; };
    t.register_data_ready_handler(std::move(handler));
  });
  (void)app.plan();
  ASSERT_TRUE(app.handler().host_gate);
  EXPECT_TRUE(app.handler().host_gate(2, sample_policy::newest));
  EXPECT_FALSE(app.handler().host_gate(3, sample_policy::newest));
}

TEST(data_ready_handler, needs_at_least_one_operator) {
  test_app app([](test_app& t) { t.register_data_ready_handler(data_ready_handler{}); });
  EXPECT_EQ(plan_error(app),
            "register_data_ready_handler: the handler needs at least one operator");
}

TEST(data_ready_handler, can_be_registered_only_once) {
  test_app app([](test_app& t) {
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    t.register_data_ready_handler(handler_of({rx}));
    t.register_data_ready_handler(handler_of({rx}));
  });
  EXPECT_EQ(plan_error(app),
            "register_data_ready_handler: application 'app' already has a data-ready handler");
}

TEST(data_ready_handler, rejects_an_operator_of_another_application) {
  std::shared_ptr<ports_op> foreign;
  test_app other([&](test_app& t) { foreign = t.make_operator<ports_op>("x", source_ports()); });
  (void)other.plan();
  test_app app([&](test_app& t) {
    (void)t.make_operator<ports_op>("a", source_ports());
    t.register_data_ready_handler(handler_of({foreign}));
  });
  EXPECT_EQ(plan_error(app),
            "register_data_ready_handler: operator 'x' was not created by this application's "
            "make_operator()");
}

TEST(data_ready_handler, rejects_a_null_operator) {
  test_app app([](test_app& t) { t.register_data_ready_handler(handler_of({nullptr})); });
  EXPECT_THAT(plan_error(app), HasSubstr("operator 'null' was not created by this application"));
}

TEST(data_ready_handler, outside_compose_is_rejected) {
  std::shared_ptr<ports_op> rx;
  test_app app([&](test_app& t) { rx = t.make_operator<ports_op>("rx", source_ports()); });
  (void)app.plan();
  EXPECT_EQ(error_of([&] { app.register_data_ready_handler(handler_of({rx})); }),
            "register_data_ready_handler: the data-ready handler is registered inside compose()");
  EXPECT_FALSE(app.has_data_ready_handler()) << "the plan has no handler, so neither has the app";
}

TEST(data_ready_handler, operator_cannot_take_input_from_a_non_handler_operator) {
  test_app app([](test_app& t) {
    auto body = t.make_operator<ports_op>("body", source_ports());
    auto rx = t.make_operator<ports_op>("rx", sink_ports());
    t.register_data_ready_handler(handler_of({rx}));
    t.add_flow(body, rx);
  });
  EXPECT_EQ(plan_error(app),
            "add_flow(body.out -> rx.in): data-ready handler operator 'rx' cannot take input "
            "from 'body', which is not part of the handler (the handler runs before the DAG "
            "each iteration)");
}

TEST(data_ready_handler, operator_may_feed_the_body) {
  test_app app([](test_app& t) {
    auto rx = t.make_operator<ports_op>("rx", source_ports());
    auto body = t.make_operator<ports_op>("body", sink_ports());
    t.register_data_ready_handler(handler_of({rx}));
    t.add_flow(rx, body);
  });
  const dag_plan& plan = app.plan();
  EXPECT_THAT(names(plan.handler_order), ElementsAre("rx"));
  EXPECT_THAT(names(plan.body_order), ElementsAre("body"));
}

}  // namespace
}  // namespace resident::test
