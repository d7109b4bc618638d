// Capture order (run_options::capture): forked, a DAG's independent branches overlap, so the
// egress of a fast branch commits while a slow branch still runs; chained, the fast branch waits
// for the slow one. Both orders give the same outputs, in every mode.

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

constexpr std::int64_t elements = 1024;
constexpr std::size_t bytes = elements * sizeof(float);

/// How long the slow branch spins per sample in the timing tests, and the margins the timings
/// are judged with: the fast branch (a mailbox copy, one affine kernel, the egress) takes
/// microseconds, so these are wide on any GPU.
constexpr std::int64_t slow_ns = 30'000'000;      // 30 ms
constexpr double fast_visible_within_ms = 10.0;   // forked: fast output this soon
constexpr double slow_branch_at_least_ms = 25.0;  // what waiting for the slow branch costs

// rx -> {slow_copy, square} -> add2 -> slow_tx (mailbox `slow_box`), and rx -> affine -> fast_tx
// (mailbox `fast_box`, whose sensor side feeds rx). Two egresses, one per branch. The slow
// branch is created first, so a chain captures all of it before the fast branch.
class two_branch_app final : public Application {
 public:
  explicit two_branch_app(std::int64_t slow_spin_ns)
      : Application("two_branches"),
        fast_box(std::make_shared<io::mailbox>(io::mailbox::config{bytes, bytes, 4})),
        slow_box(std::make_shared<io::mailbox>(io::mailbox::config{1, bytes, 2})),
        _slow_ns(slow_spin_ns) {}

  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", fast_box);
    auto slow = make_operator<slow_copy>("slow", arg("elements", elements), arg("ns", _slow_ns));
    auto sq = make_operator<ops::square>("square", arg("elements", elements));
    auto add = make_operator<add2>("add", arg("elements", elements));
    auto slow_tx = make_operator<io::mailbox_tx>("slow_tx", slow_box);
    auto aff = make_operator<ops::affine>("affine", arg("elements", elements));
    auto fast_tx = make_operator<io::mailbox_tx>("fast_tx", fast_box);
    register_data_ready_handler(fast_box->make_handler(rx));
    add_flow(rx, slow, {{"sample", "in"}});
    add_flow(rx, sq, {{"sample", "in"}});
    add_flow(slow, add, {{"out", "a"}});
    add_flow(sq, add, {{"out", "b"}});
    add_flow(add, slow_tx);
    add_flow(rx, aff, {{"sample", "in"}});
    add_flow(aff, fast_tx);
  }

  std::shared_ptr<io::mailbox> fast_box;
  std::shared_ptr<io::mailbox> slow_box;

 private:
  std::int64_t _slow_ns;
};

/// What one published sample gave: both outputs, when the host saw each, and whether the slow
/// output was already committed when the fast one was first seen.
struct sample_result {
  std::vector<std::byte> fast = std::vector<std::byte>(bytes);
  std::vector<std::byte> slow = std::vector<std::byte>(bytes);
  double fast_ms{};
  double slow_ms{};
  bool slow_done_when_fast_seen{};
  bool arrived{};
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

sample_result publish_one(two_branch_app& app, const std::vector<float>& sample) {
  sample_result r;
  const io::output_stamp fast_before = app.fast_box->latest_output();
  const io::output_stamp slow_before = app.slow_box->latest_output();
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t seq = app.fast_box->publish(as_bytes(sample));
  const io::output_stamp fast = app.fast_box->wait_output(fast_before, r.fast, 5s);
  r.fast_ms = ms_since(t0);
  r.slow_done_when_fast_seen = app.slow_box->latest_output().commit != slow_before.commit;
  const io::output_stamp slow = app.slow_box->wait_output(slow_before, r.slow, 5s);
  r.slow_ms = ms_since(t0);
  EXPECT_EQ(fast.seq, seq) << "no fast output for sample " << seq << " within 5 s";
  EXPECT_EQ(slow.seq, seq) << "no slow output for sample " << seq << " within 5 s";
  r.arrived = fast.seq == seq && slow.seq == seq;
  return r;
}

/// Runs `samples` one at a time (each waited for) through `app` in `mode` and `order`.
std::vector<sample_result> run_samples(two_branch_app& app, execution_mode mode,
                                       capture_order order,
                                       const std::vector<std::vector<float>>& samples) {
  run_options options;
  options.capture = order;
  auto run = run_async(app, mode, options);
  std::vector<sample_result> results;
  for (const auto& sample : samples) {
    results.push_back(publish_one(app, sample));
    if (!results.back().arrived) break;
  }
  const tear_down_report report = run->tear_down();
  EXPECT_TRUE(report.stopped) << report.error;
  EXPECT_TRUE(report.error.empty()) << report.error;
  EXPECT_EQ(report.counters.processed, results.size());
  EXPECT_EQ(report.counters.dropped, 0U);
  return results;
}

std::vector<std::vector<float>> fresh_samples(int count) {
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < count; ++i) samples.push_back(random_floats(elements));
  return samples;
}

std::string trace(execution_mode mode, capture_order order) {
  return std::string(to_string(mode)) + ", " + std::string(to_string(order));
}

TEST(capture_order, forked_fast_branch_commits_while_the_slow_branch_still_runs) {
  RESIDENT_REQUIRE_GPU();
  two_branch_app app(slow_ns);
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(trace(mode, capture_order::forked));
    const auto results = run_samples(app, mode, capture_order::forked, fresh_samples(4));
    ASSERT_EQ(results.size(), 4U);
    // The first sample warms the loop up; the others are timed.
    for (std::size_t i = 1; i < results.size(); ++i) {
      const sample_result& r = results[i];
      EXPECT_FALSE(r.slow_done_when_fast_seen)
          << "sample " << i << ": the slow branch had committed when the fast output was seen ("
          << r.fast_ms << " ms after the publish)";
      EXPECT_LT(r.fast_ms, fast_visible_within_ms) << "sample " << i;
      EXPECT_GE(r.slow_ms, slow_branch_at_least_ms) << "sample " << i;
    }
  }
}

TEST(capture_order, chained_fast_branch_waits_for_the_slow_branch) {
  RESIDENT_REQUIRE_GPU();
  two_branch_app app(slow_ns);
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(trace(mode, capture_order::chain));
    const auto results = run_samples(app, mode, capture_order::chain, fresh_samples(4));
    ASSERT_EQ(results.size(), 4U);
    for (std::size_t i = 1; i < results.size(); ++i) {
      const sample_result& r = results[i];
      EXPECT_TRUE(r.slow_done_when_fast_seen)
          << "sample " << i << ": the fast output came before the slow branch committed";
      EXPECT_GE(r.fast_ms, slow_branch_at_least_ms) << "sample " << i;
    }
  }
}

TEST(capture_order, forked_and_chained_captures_give_the_same_outputs_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  two_branch_app app(100'000);  // 0.1 ms: the branches still overlap, the test stays quick
  const auto samples = fresh_samples(3);
  std::map<std::pair<execution_mode, capture_order>, std::vector<sample_result>> outputs;
  for (const execution_mode mode : all_execution_modes) {
    for (const capture_order order : {capture_order::chain, capture_order::forked}) {
      SCOPED_TRACE(trace(mode, order));
      auto& results = outputs[std::make_pair(mode, order)];
      results = run_samples(app, mode, order, samples);
      ASSERT_EQ(results.size(), samples.size());
    }
  }
  // A CPU reference (affine 2x + 1 on the fast branch, x + x^2 on the slow one) ...
  const auto& reference = outputs[std::make_pair(execution_mode::eager, capture_order::chain)];
  for (std::size_t i = 0; i < samples.size(); ++i) {
    std::vector<float> fast(elements);
    std::vector<float> slow(elements);
    std::memcpy(fast.data(), reference[i].fast.data(), bytes);
    std::memcpy(slow.data(), reference[i].slow.data(), bytes);
    for (std::int64_t k = 0; k < elements; ++k) {
      const double x = samples[i][k];
      ASSERT_NEAR(fast[k], 2.0 * x + 1.0, 1e-6) << "sample " << i << " element " << k;
      ASSERT_NEAR(slow[k], x + x * x, 1e-6) << "sample " << i << " element " << k;
    }
  }
  // ... and every mode and order gives the very same bits (deterministic kernels).
  for (const auto& [key, results] : outputs) {
    SCOPED_TRACE(trace(key.first, key.second));
    for (std::size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(results[i].fast, reference[i].fast) << "sample " << i;
      EXPECT_EQ(results[i].slow, reference[i].slow) << "sample " << i;
    }
  }
}

TEST(capture_order, graph_dot_says_which_capture_order_was_used) {
  RESIDENT_REQUIRE_GPU();
  two_branch_app app(0);
  const auto path = std::filesystem::temp_directory_path() / "resident_capture_order_test.dot";
  for (const capture_order order : {capture_order::chain, capture_order::forked}) {
    SCOPED_TRACE(std::string(to_string(order)));
    run_options options;
    options.capture = order;
    options.dot_path = path.string();
    auto run = run_async(app, execution_mode::host_graph, options);
    EXPECT_TRUE(run->tear_down().stopped);
    std::ifstream in(path);
    const std::string dot((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string note = "run_options::capture = " + std::string(to_string(order));
    EXPECT_NE(dot.find(note), std::string::npos) << dot.substr(0, 400);
  }
  std::filesystem::remove(path);
}

// Two cuBLAS products side by side (rx -> {mm1, mm2} -> add2 -> tx): each handle is bound to
// the stream its operator is captured (or launched) on, in compute(), so forked branches may
// run them concurrently.
class matmul_branches_app final : public Application {
 public:
  static constexpr std::int64_t n = 256;
  matmul_branches_app()
      : Application("matmul_branches"),
        mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{n * n * sizeof(float), n * n * sizeof(float), 2})) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", mailbox);
    first = make_operator<ops::matmul>("mm1", arg("n", n), arg("seed", 21));
    second = make_operator<ops::matmul>("mm2", arg("n", n), arg("seed", 22));
    auto add = make_operator<add2>("add", arg("elements", n * n));
    auto tx = make_operator<io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, first, {{"sample", "in"}});
    add_flow(rx, second, {{"sample", "in"}});
    add_flow(first, add, {{"out", "a"}});
    add_flow(second, add, {{"out", "b"}});
    add_flow(add, tx);
  }
  std::shared_ptr<io::mailbox> mailbox;
  std::shared_ptr<ops::matmul> first;
  std::shared_ptr<ops::matmul> second;
};

TEST(capture_order, forked_cublas_branches_match_the_fp64_reference_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  matmul_branches_app app;
  constexpr auto n = static_cast<std::size_t>(matmul_branches_app::n);
  (void)app.plan();
  const auto sample = random_floats(n * n);
  const std::vector<double> in(sample.begin(), sample.end());
  const auto a = matmul_reference(in, app.first->weights(), n);
  const auto b = matmul_reference(in, app.second->weights(), n);
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    run_options options;
    options.capture = capture_order::forked;
    auto run = run_async(app, mode, options);
    const auto outputs = drive_lockstep(*app.mailbox, {sample});
    const tear_down_report report = run->tear_down();
    EXPECT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs.size(), 1U);
    std::vector<float> got(n * n);
    std::memcpy(got.data(), outputs[0].data(), outputs[0].size());
    double err = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < n * n; ++i) {
      const double want = a[i] + b[i];
      err += (got[i] - want) * (got[i] - want);
      norm += want * want;
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-5);
  }
}

}  // namespace
}  // namespace resident::testing
