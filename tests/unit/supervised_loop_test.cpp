// The supervisor behind run_handle, driven by a host-only executor: callouts that throw never
// end the process, and a tear-down that times out never pulls the executor from under a thread
// reading the counters or the health.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "resident/app/error.hpp"
#include "resident/detail/supervised_loop.hpp"

namespace resident::detail {
namespace {

using namespace std::chrono_literals;

// What the test sets and sees of its fake executor; shared, so it outlives the executor.
struct fake_state {
  std::atomic<std::uint64_t> heartbeat{1};
  std::atomic<bool> stops{true};  // stopped() turns true once a stop was requested
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> failure_throws{false};
  std::atomic<bool> abandoned{false};
  std::atomic<bool> destroyed{false};
  std::atomic<std::uint64_t> calls_after_destruction{0};
  std::atomic<std::uint64_t> misses{0};  // the counters' deadline_misses
};

// The Executor interface over host memory only: a loop whose heartbeat, stop and failure the
// test controls.
class fake_executor final : public Executor {
 public:
  explicit fake_executor(std::shared_ptr<fake_state> s) : _s(std::move(s)) {}
  ~fake_executor() override { _s->destroyed.store(true); }
  [[nodiscard]] execution_mode mode() const noexcept override { return execution_mode::eager; }
  void launch() override {}
  void request_stop() noexcept override { _s->stop_requested.store(true); }
  [[nodiscard]] bool stopped() override { return _s->stops.load() && _s->stop_requested.load(); }
  [[nodiscard]] std::string failure() const override {
    note_call();
    if (_s->failure_throws.load()) throw std::runtime_error("the failure word is unreadable");
    return {};
  }
  void abandon() noexcept override { _s->abandoned.store(true); }
  [[nodiscard]] loop_counters counters() const noexcept override {
    note_call();
    const std::uint64_t beat = _s->heartbeat.load();
    loop_counters c{.iterations = beat, .processed = beat, .last_seq = beat};
    c.deadline_misses = _s->misses.load();
    return c;
  }
  [[nodiscard]] std::uint64_t heartbeat() const noexcept override {
    note_call();
    return _s->heartbeat.load();
  }
  void write_dot(const std::string&) const override {}
  void drain_telemetry(bool) override {}
  [[nodiscard]] const std::vector<telemetry_entry>& telemetry() const noexcept override {
    return _telemetry;
  }
  [[nodiscard]] std::uint64_t telemetry_lost() const noexcept override { return 0; }
  [[nodiscard]] double mean_iteration_ns() override { return 0; }
  [[nodiscard]] std::vector<int> sms_seen() override { return {}; }

 private:
  void note_call() const noexcept {
    if (_s->destroyed.load()) _s->calls_after_destruction.fetch_add(1);
  }
  std::shared_ptr<fake_state> _s;
  std::vector<telemetry_entry> _telemetry;
};

std::unique_ptr<supervised_loop> supervise(const std::shared_ptr<fake_state>& s,
                                           run_options options = {}) {
  return std::make_unique<supervised_loop>(std::make_unique<fake_executor>(s), "eager loop 'fake'",
                                           std::move(options));
}

// Polls `done` for up to 10 s (the supervisor wakes every few milliseconds).
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

TEST(supervised_loop, a_loop_that_stops_is_torn_down_once) {
  auto s = std::make_shared<fake_state>();
  auto loop = supervise(s);
  EXPECT_TRUE(loop->launched());
  EXPECT_TRUE(loop->health().launched);
  const tear_down_report r = loop->tear_down(1s);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(s->stop_requested.load());
  EXPECT_FALSE(loop->launched());
  EXPECT_FALSE(loop->health().launched);
  EXPECT_FALSE(loop->abandoned());
  const tear_down_report again = loop->tear_down(1s);
  EXPECT_NE(again.error.find("already torn down"), std::string::npos) << again.error;
}

// Deadline misses reach on_deadline_miss from the supervisor while the loop runs, each growth
// once, and the misses since its last look at tear-down; a callback that throws is reported.
TEST(supervised_loop, deadline_misses_are_reported_as_they_grow_and_at_tear_down) {
  auto s = std::make_shared<fake_state>();
  std::mutex m;
  std::vector<std::uint64_t> seen;
  run_options options;
  options.stall_timeout = 10s;
  options.on_deadline_miss = [&](const loop_counters& c) {
    std::lock_guard lock(m);
    seen.push_back(c.deadline_misses);
    if (c.deadline_misses == 7) throw std::runtime_error("the log is full");
  };
  auto loop = supervise(s, options);
  std::this_thread::sleep_for(30ms);
  {
    std::lock_guard lock(m);
    EXPECT_TRUE(seen.empty()) << "no miss, no call";
  }
  s->misses = 3;
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(m);
    return !seen.empty();
  }));
  std::this_thread::sleep_for(30ms);
  {
    std::lock_guard lock(m);
    EXPECT_EQ(seen, std::vector<std::uint64_t>{3}) << "reported once per growth";
  }
  s->misses = 7;
  const tear_down_report r = loop->tear_down(1s);
  EXPECT_TRUE(r.stopped);
  std::lock_guard lock(m);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 7U) << "the misses since the supervisor's last look come at tear-down";
  const bool reported =
      r.error.find("on_deadline_miss callback threw: the log is full") != std::string::npos ||
      loop->health().message.find("on_deadline_miss callback threw") != std::string::npos;
  EXPECT_TRUE(reported) << r.error << " / " << loop->health().message;
}

// on_stall throws, once a std::exception and once something else: each is reported in the
// health message and the supervisor goes on to see the loop recover and stall again.
TEST(supervised_loop, an_on_stall_callback_that_throws_does_not_end_the_supervision) {
  auto s = std::make_shared<fake_state>();
  std::atomic<int> calls{0};
  run_options options;
  options.stall_timeout = 20ms;
  options.on_stall = [&calls](const std::string& message) {
    if (calls.fetch_add(1) == 0) throw std::runtime_error("the operator's pager is down");
    throw 7;
  };
  auto loop = supervise(s, options);
  ASSERT_TRUE(eventually([&] { return calls.load() == 1 && loop->health().stalled; }));
  ASSERT_TRUE(eventually([&] {
    return loop->health().message.find("on_stall callback threw: the operator's pager is down") !=
           std::string::npos;
  })) << loop->health().message;
  EXPECT_NE(loop->health().message.find("stall: the heartbeat"), std::string::npos);

  s->heartbeat.fetch_add(1);  // the loop moves again, then freezes again
  ASSERT_TRUE(eventually([&] { return calls.load() == 2 && loop->health().stall_events == 2; }));
  ASSERT_TRUE(eventually([&] {
    return loop->health().message.find("not a std::exception") != std::string::npos;
  })) << loop->health().message;
  EXPECT_TRUE(loop->tear_down(1s).stopped);
}

TEST(supervised_loop, a_failure_state_that_cannot_be_read_is_reported_not_fatal) {
  auto s = std::make_shared<fake_state>();
  s->failure_throws.store(true);
  run_options options;
  options.stall_timeout = 20ms;
  auto loop = supervise(s, options);
  ASSERT_TRUE(eventually([&] {
    return loop->health().message.find(
               "reading the failure state of the eager loop 'fake' "
               "failed: the failure word is unreadable") != std::string::npos;
  })) << loop->health().message;
  const tear_down_report r = loop->tear_down(1s);
  EXPECT_TRUE(r.stopped);
  EXPECT_NE(r.error.find("the failure word is unreadable"), std::string::npos) << r.error;
}

// The loop never stops: tear_down times out and abandons it while two threads read the counters
// and the health without pause. The executor stays until the supervised loop goes, so none of
// their calls reaches a destroyed one (ASan and TSan would see it too).
TEST(supervised_loop, a_tear_down_that_times_out_races_no_reader) {
  auto s = std::make_shared<fake_state>();
  s->stops.store(false);
  s->heartbeat.store(41);
  auto loop = supervise(s);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> reads{0};
  std::atomic<std::uint64_t> wrong{0};
  const auto read_counters = [&] {
    while (!done.load()) {
      const loop_counters c = loop->counters();
      if (c.last_seq != 41) wrong.fetch_add(1);
      reads.fetch_add(1);
    }
  };
  const auto read_health = [&] {
    while (!done.load()) {
      const loop_health h = loop->health();
      if (h.stall_events != 0) wrong.fetch_add(1);  // 2 s of stall timeout: none in 70 ms
      reads.fetch_add(1);
    }
  };
  std::thread a(read_counters);
  std::thread b(read_health);
  const tear_down_report r = loop->tear_down(50ms);
  std::this_thread::sleep_for(20ms);  // the readers go on after the abandonment
  done.store(true);
  a.join();
  b.join();
  EXPECT_FALSE(r.stopped);
  EXPECT_NE(r.error.find("did not stop within 50 ms"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("abandoned"), std::string::npos) << r.error;
  EXPECT_TRUE(s->abandoned.load());
  EXPECT_TRUE(loop->abandoned());
  EXPECT_EQ(r.counters.last_seq, 41U);
  EXPECT_EQ(loop->counters().last_seq, 41U) << "the counters at tear-down";
  EXPECT_FALSE(loop->health().launched);
  EXPECT_TRUE(loop->telemetry().empty());
  EXPECT_THROW(loop->write_dot("unused.dot"), execution_error);
  EXPECT_GT(reads.load(), 0U);
  EXPECT_EQ(wrong.load(), 0U);
  EXPECT_FALSE(s->destroyed.load()) << "the abandoned executor lives as long as its handle";
  loop.reset();
  EXPECT_TRUE(s->destroyed.load());
  EXPECT_EQ(s->calls_after_destruction.load(), 0U);
}

}  // namespace
}  // namespace resident::detail
