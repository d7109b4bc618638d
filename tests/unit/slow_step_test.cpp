// slow_step_notice: a set-up or clean-up step that outlasts its limit is named on stderr with
// what holds it, then with how long it took; a quick step prints nothing.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "resident/detail/slow_step.hpp"

namespace resident::detail {
namespace {

using namespace std::chrono_literals;

TEST(slow_step_notice, a_step_past_its_limit_is_named_then_timed) {
  testing::internal::CaptureStderr();
  {
    const std::string loop = "while loop of application 'consumer'";
    const slow_step_notice notice("freeing", loop, 20ms);
    std::this_thread::sleep_for(300ms);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  const auto named = err.find("freeing the while loop of application 'consumer' has taken");
  ASSERT_NE(named, std::string::npos) << err;
  EXPECT_NE(err.find("run_together", named), std::string::npos) << err;
  const auto done = err.find("freeing the while loop of application 'consumer' finished after");
  ASSERT_NE(done, std::string::npos) << err;
  EXPECT_LT(named, done) << err;
}

TEST(slow_step_notice, a_step_within_its_limit_prints_nothing) {
  testing::internal::CaptureStderr();
  {
    const std::string loop = "tail loop of application 'a'";
    const slow_step_notice notice("setting up", loop, 10s);
    std::this_thread::sleep_for(1ms);
  }  // ends at once: the watcher is woken, not left to time out
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace resident::detail
