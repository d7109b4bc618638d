// Application basics that need no GPU: its name and the one-run-at-a-time guard.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;

class default_named_app final : public Application {
 public:
  void compose() override {}
};

TEST(application, is_named_app_by_default) {
  default_named_app app;
  EXPECT_EQ(app.name(), "app");
}

TEST(application, keeps_its_name) {
  test_app app([](test_app&) {}, "sensor-loop");
  EXPECT_EQ(app.name(), "sensor-loop");
}

TEST(application, starts_without_plan_handler_or_materialization) {
  test_app app;
  EXPECT_FALSE(app.has_data_ready_handler());
  EXPECT_FALSE(app.materialized());
  EXPECT_EQ(app.compose_calls, 0) << "compose() runs only when plan() needs it";
}

TEST(run_guard, second_guard_on_the_same_application_is_rejected) {
  test_app app;
  const Application::run_guard first(app, "tail");
  EXPECT_EQ(error_of([&] { Application::run_guard second(app, "eager"); }),
            "application 'app' is already running (mode tail); tear that run down before "
            "starting another");
}

TEST(run_guard, releases_the_application_when_destroyed) {
  test_app app;
  { const Application::run_guard first(app, "eager"); }
  EXPECT_NO_THROW(Application::run_guard(app, "while"));
}

TEST(run_guard, guards_each_application_separately) {
  test_app a;
  test_app b;
  const Application::run_guard on_a(a, "eager");
  EXPECT_NO_THROW(Application::run_guard(b, "eager"));
}

TEST(run_guard, moved_guard_keeps_the_application_running) {
  test_app app;
  Application::run_guard moved;
  {
    Application::run_guard first(app, "eager");
    moved = std::move(first);
  }
  EXPECT_THAT(error_of([&] { Application::run_guard again(app, "eager"); }),
              HasSubstr("already running"));
  Application::run_guard constructed(std::move(moved));
  EXPECT_THAT(error_of([&] { Application::run_guard again(app, "eager"); }),
              HasSubstr("already running"));
}

TEST(run_guard, assigning_over_a_guard_releases_its_application) {
  test_app a;
  test_app b;
  Application::run_guard guard(a, "eager");
  guard = Application::run_guard(b, "tail");
  EXPECT_NO_THROW(Application::run_guard(a, "eager")) << "a was released";
  EXPECT_THROW(Application::run_guard(b, "eager"), composition_error) << "b is held";
}

TEST(run_guard, failed_guard_does_not_release_the_running_one) {
  test_app app;
  const Application::run_guard first(app, "tail");
  EXPECT_THROW(Application::run_guard(app, "eager"), composition_error);
  EXPECT_THAT(error_of([&] { Application::run_guard again(app, "eager"); }),
              HasSubstr("(mode tail)"));
}

}  // namespace
}  // namespace resident::test
