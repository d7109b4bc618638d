// Core pinning, scheduling grants and core assignment. Everything that changes a thread's affinity
// or policy runs in a std::thread, so the test process's main thread is left as it was.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "resident/measure/threads.hpp"
#include "test_operators.hpp"

namespace resident::test {
namespace {

using measure::allowed_cpus;
using measure::assign_cpus;
using measure::configure_current_thread;
using measure::remaining_cpus;
using measure::thread_grant;
using ::testing::HasSubstr;
using ::testing::Not;

template <class F>
void on_a_thread(F&& f) {
  std::thread t(std::forward<F>(f));
  t.join();
}

std::vector<int> current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(threads, at_least_one_cpu_is_online) {
  EXPECT_GE(measure::online_cpus(), 1);
  const std::vector<int> online = measure::online_cpu_list();
  EXPECT_EQ(online.size(), static_cast<std::size_t>(measure::online_cpus()));
  EXPECT_TRUE(std::is_sorted(online.begin(), online.end()));
}

TEST(threads, allowed_cpus_are_online_and_ascending) {
  const std::vector<int> allowed = allowed_cpus();
  const std::vector<int> online = measure::online_cpu_list();
  ASSERT_FALSE(allowed.empty());
  EXPECT_TRUE(std::is_sorted(allowed.begin(), allowed.end()));
  for (const int c : allowed) {
    EXPECT_NE(std::find(online.begin(), online.end(), c), online.end()) << "cpu " << c;
  }
}

TEST(threads, allowed_cpus_is_the_process_mask_even_from_a_pinned_thread) {
  const std::vector<int> before = allowed_cpus();
  on_a_thread([&] {
    ASSERT_TRUE(configure_current_thread(before.front(), false).pinned);
    EXPECT_EQ(allowed_cpus(), before);
  });
}

// A benchmark confines the process for its run; inside a longer-lived process (the GPU test
// suite runs several) the next one must find every core again.
TEST(threads, affinity_restorer_gives_the_confined_cpus_back) {
  const std::vector<int> before = allowed_cpus();
  {
    const measure::affinity_restorer restore;
    ASSERT_TRUE(measure::confine_process({before.back()}));
    EXPECT_EQ(allowed_cpus(), std::vector<int>{before.back()});
  }
  EXPECT_EQ(allowed_cpus(), before);
}

TEST(threads, pins_the_calling_thread_to_each_allowed_cpu) {
  for (const int cpu : allowed_cpus()) {
    on_a_thread([cpu] {
      const thread_grant g = configure_current_thread(cpu, false);
      EXPECT_TRUE(g.pinned);
      EXPECT_EQ(g.cpu, cpu);
      EXPECT_EQ(g.policy, "SCHED_OTHER");
      EXPECT_EQ(g.priority, 0);
      EXPECT_EQ(g.note, "");
      EXPECT_EQ(current_affinity(), std::vector<int>{cpu});
      std::this_thread::yield();  // give the scheduler a chance to migrate it
      EXPECT_EQ(sched_getcpu(), cpu);
    });
  }
}

TEST(threads, minus_one_leaves_the_thread_unpinned) {
  on_a_thread([] {
    const std::vector<int> before = current_affinity();
    const thread_grant g = configure_current_thread(-1, false);
    EXPECT_FALSE(g.pinned);
    EXPECT_EQ(g.cpu, -1);
    EXPECT_EQ(g.policy, "SCHED_OTHER");
    EXPECT_EQ(current_affinity(), before);
  });
}

TEST(threads, a_cpu_that_is_not_online_is_named_in_the_error) {
  const std::string message =
      error_of<std::invalid_argument>([] { (void)configure_current_thread(100000, false); });
  EXPECT_THAT(message, HasSubstr("cpu 100000 is not online"));
  EXPECT_THAT(message, HasSubstr(std::to_string(measure::online_cpus()) + " online cpus"));
}

TEST(threads, a_negative_cpu_other_than_minus_one_is_rejected) {
  EXPECT_THAT(error_of<std::invalid_argument>([] { (void)configure_current_thread(-2, false); }),
              HasSubstr("cpu -2"));
}

TEST(threads, realtime_priority_outside_fifo_range_is_rejected) {
  EXPECT_THAT(error_of<std::invalid_argument>([] { (void)configure_current_thread(-1, true, 0); }),
              HasSubstr("priority 0"));
  EXPECT_THAT(
      error_of<std::invalid_argument>([] { (void)configure_current_thread(-1, true, 1000); }),
      HasSubstr("priority 1000"));
}

TEST(threads, realtime_request_is_granted_or_explained) {
  const int cpu = allowed_cpus().back();
  thread_grant g;
  on_a_thread([&] { g = configure_current_thread(cpu, true, 10); });
  // Either outcome is legitimate; the grant must say which one happened.
  std::cout << "[ realtime ] " << measure::to_json(g).dump() << "\n";
  EXPECT_TRUE(g.pinned);
  EXPECT_EQ(g.cpu, cpu);
  if (g.policy == "SCHED_FIFO") {
    EXPECT_EQ(g.priority, 10);
    EXPECT_THAT(g.note, Not(HasSubstr("refused")));
  } else {
    EXPECT_EQ(g.policy, "SCHED_OTHER");
    EXPECT_EQ(g.priority, 0);
    EXPECT_THAT(g.note, HasSubstr("SCHED_FIFO refused: "));
  }
}

// Where FIFO is granted (root), check the refusal path too: a forked child that gives up root
// and its RT limit must be refused and say why.
TEST(threads, refused_realtime_is_reported_not_thrown) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges in a child";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    const rlimit none{0, 0};
    if (setrlimit(RLIMIT_RTPRIO, &none) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    int code = 1;
    try {
      const thread_grant g = configure_current_thread(-1, true, 10);
      const std::string text = g.policy + "|" + std::to_string(g.priority) + "|" + g.note;
      if (write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size())) code = 0;
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "child failed before reporting (2: could not drop root)";
  EXPECT_THAT(text, HasSubstr("SCHED_OTHER|0|SCHED_FIFO refused: Operation not permitted"));
  EXPECT_THAT(text, HasSubstr("RLIMIT_RTPRIO, which is 0"));
}

TEST(threads, a_thread_asking_for_no_realtime_drops_an_inherited_fifo) {
  on_a_thread([] {
    const thread_grant parent = configure_current_thread(-1, true, 5);
    if (parent.policy != "SCHED_FIFO") return;  // refused here: nothing is inherited
    thread_grant child;
    on_a_thread([&] {
      int policy = 0;
      sched_param p{};
      pthread_getschedparam(pthread_self(), &policy, &p);
      EXPECT_EQ(policy, SCHED_FIFO) << "std::thread inherits its creator's policy";
      child = configure_current_thread(-1, false);
    });
    EXPECT_EQ(child.policy, "SCHED_OTHER");
    EXPECT_EQ(child.priority, 0);
  });
}

TEST(threads, grant_json_has_every_field) {
  const thread_grant g{3, true, "SCHED_FIFO", 50, ""};
  const nlohmann::json j = measure::to_json(g);
  EXPECT_EQ(j, nlohmann::json({{"cpu", 3},
                               {"pinned", true},
                               {"policy", "SCHED_FIFO"},
                               {"priority", 50},
                               {"note", ""}}));
}

TEST(threads, cpu_list_text_joins_with_commas) {
  EXPECT_EQ(measure::cpu_list_text({2, 3, 5}), "2,3,5");
  EXPECT_EQ(measure::cpu_list_text({}), "none");
}

// ---- assign_cpus ------------------------------------------------------------------------------

TEST(assign_cpus, nothing_requested_assigns_nothing) { EXPECT_TRUE(assign_cpus({}).empty()); }

// Role names built with append(): "r" + std::to_string(i) trips a GCC 12 -Wrestrict false
// positive.
std::string role(char prefix, std::size_t i) {
  std::string name(1, prefix);
  name.append(std::to_string(i));
  return name;
}

TEST(assign_cpus, auto_roles_take_the_highest_cpus_and_cpu_zero_last) {
  const std::vector<int> allowed = allowed_cpus();
  std::vector<std::pair<std::string, int>> requested;
  for (std::size_t i = 0; i < allowed.size(); ++i) requested.emplace_back(role('r', i), -1);
  const auto got = assign_cpus(requested);
  ASSERT_EQ(got.size(), allowed.size());
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    // In request order, from the top down: the last role gets the lowest cpu (0 when allowed).
    EXPECT_EQ(got.at(role('r', i)), allowed[allowed.size() - 1 - i]);
  }
}

TEST(assign_cpus, auto_roles_avoid_fixed_ones) {
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 allowed cpus";
  const int top = allowed.back();
  const auto got = assign_cpus({{"sensor", -1}, {"actuator", top}});
  EXPECT_EQ(got.at("actuator"), top);
  EXPECT_EQ(got.at("sensor"), allowed[allowed.size() - 2]);
}

TEST(assign_cpus, fixed_roles_keep_their_cpu) {
  const int low = allowed_cpus().front();
  EXPECT_EQ(assign_cpus({{"host", low}}).at("host"), low);
}

TEST(assign_cpus, too_many_roles_say_how_many_cores_there_are) {
  const std::size_t n = allowed_cpus().size();
  std::vector<std::pair<std::string, int>> requested;
  for (std::size_t i = 0; i <= n; ++i) requested.emplace_back(role('t', i), -1);
  const std::string message =
      error_of<std::invalid_argument>([&] { (void)assign_cpus(requested); });
  EXPECT_THAT(message, HasSubstr(std::to_string(n + 1) + " threads need pinning but only " +
                                 std::to_string(n) + " cores are available: "));
  EXPECT_THAT(message, HasSubstr("t0"));
}

TEST(assign_cpus, two_roles_on_one_cpu_are_rejected) {
  const int cpu = allowed_cpus().front();
  const std::string message = error_of<std::invalid_argument>([&] {
    (void)assign_cpus({{"sensor", cpu}, {"actuator", cpu}});
  });
  EXPECT_THAT(message,
              HasSubstr("'sensor' and 'actuator' both ask for cpu " + std::to_string(cpu)));
}

TEST(assign_cpus, a_cpu_outside_the_affinity_mask_is_rejected) {
  EXPECT_THAT(error_of<std::invalid_argument>([] {
                (void)assign_cpus({{"sensor", 100000}});
              }),
              HasSubstr("'sensor' asks for cpu 100000, which this process may not use"));
}

TEST(assign_cpus, a_repeated_role_is_rejected) {
  EXPECT_THAT(error_of<std::invalid_argument>([] {
                (void)assign_cpus({{"sensor", -1}, {"sensor", -1}});
              }),
              HasSubstr("'sensor' is listed twice"));
}

TEST(assign_cpus, remaining_cpus_are_the_allowed_ones_not_used) {
  const std::vector<int> allowed = allowed_cpus();
  EXPECT_EQ(remaining_cpus({}), allowed);
  std::vector<int> rest(allowed.begin() + 1, allowed.end());
  EXPECT_EQ(remaining_cpus({allowed.front(), 100000}), rest);
  EXPECT_TRUE(remaining_cpus(allowed).empty());
}

}  // namespace
}  // namespace resident::test
