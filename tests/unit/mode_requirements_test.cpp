// Which modes an application can run in, decided before any GPU work: these need no device.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "resident/exec/run_handle.hpp"
#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;

TEST(run_async, refuses_a_resident_mode_without_a_data_ready_handler) {
  test_app app([](test_app& a) { a.make_operator<ports_op>("body", std::vector<port_decl>{}); },
               "no_handler");
  for (const auto mode : {execution_mode::while_loop, execution_mode::tail}) {
    try {
      (void)run_async(app, mode);
      FAIL() << "expected composition_error for " << to_string(mode);
    } catch (const composition_error& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string(to_string(mode)) +
                                      " mode needs a data-ready handler: application "
                                      "'no_handler' registers none"));
    }
  }
}

TEST(run_async, refuses_inconsistent_options_before_composing) {
  test_app app;
  run_options options;
  options.stall_timeout = std::chrono::milliseconds(1);
  options.idle_sleep_ns = 5'000'000;
  EXPECT_THROW((void)run_async(app, execution_mode::while_loop, options), std::invalid_argument);
  EXPECT_EQ(app.compose_calls, 0);
}

TEST(run_async, refuses_phase_times_outside_persistent_mode_and_a_bad_row_count) {
  test_app app;
  run_options options;
  options.phase_times = true;
  try {
    (void)run_async(app, execution_mode::host_graph, options);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("run_options::phase_times: the host-graph mode has no phases "
                                    "to time"));
  }
  options.phase_rows = 1;
  try {
    (void)run_async(app, execution_mode::persistent, options);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("phase_rows must be 2 to 1048576, got 1"));
  }
}

TEST(run_async, reports_a_broken_dag_before_touching_the_gpu) {
  test_app app([](test_app& a) {
    auto x = a.make_operator<ports_op>("x", relay_ports(8));
    auto y = a.make_operator<ports_op>("y", relay_ports(8));
    a.add_flow(x, y);
    a.add_flow(y, x);
  });
  try {
    (void)run_async(app, execution_mode::host_graph);
    FAIL() << "expected composition_error";
  } catch (const composition_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cycle"));
  }
}

// run_together: requests checked before anything is built, and a failed build leaves no
// application reserved (these requests fail before any GPU work, so they need no device).
TEST(run_together, refuses_an_application_asked_for_twice_or_missing_before_composing) {
  test_app a([](test_app&) {}, "camera");
  test_app b([](test_app&) {}, "display");
  try {
    (void)run_together({{&a, execution_mode::while_loop, {}},
                        {&b, execution_mode::tail, {}},
                        {&a, execution_mode::tail, {}}});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("application 'camera' is asked for twice (loops 0 and 2)"));
  }
  try {
    (void)run_together({{&a, execution_mode::while_loop, {}}, {nullptr, execution_mode::tail, {}}});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("run_together: loop 1 names no application"));
  }
  EXPECT_EQ(a.compose_calls, 0);
  EXPECT_EQ(b.compose_calls, 0);
  EXPECT_TRUE(run_together({}).empty());
}

TEST(run_together, a_build_that_fails_stops_the_rest_and_leaves_no_application_reserved) {
  test_app first([](test_app& a) { a.make_operator<ports_op>("body", std::vector<port_decl>{}); },
                 "first");
  test_app second([](test_app& a) { a.make_operator<ports_op>("body", std::vector<port_decl>{}); },
                  "second");
  // Neither registers a data-ready handler, which `while` needs: the first build fails.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      (void)run_together(
          {{&first, execution_mode::while_loop, {}}, {&second, execution_mode::while_loop, {}}});
      FAIL() << "expected composition_error";
    } catch (const composition_error& e) {
      // The second attempt fails the same way: the first did not leave 'first' reserved
      // ("already running").
      EXPECT_THAT(e.what(), HasSubstr("application 'first' registers none")) << attempt;
    }
  }
  EXPECT_EQ(second.compose_calls, 0);  // nothing after the failed build was built
}

}  // namespace
}  // namespace resident::test
