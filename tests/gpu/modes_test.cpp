// The same application object, run in every execution mode, gives the same results, and they
// match a CPU reference. Fresh random inputs every run.

#include <cmath>
#include <map>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

constexpr std::int64_t elements = 4096;

double relative_error(double got, double want) {
  return std::abs(got - want) / std::max(std::abs(want), 1e-30);
}

TEST(execution_modes, same_app_gives_same_results_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 8; ++i) samples.push_back(random_floats(elements));

  std::map<execution_mode, std::vector<float>> results;
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    ASSERT_TRUE(run->is_launched());
    const auto outputs = drive_lockstep(*app.mailbox(), samples);
    const tear_down_report report = run->tear_down();
    EXPECT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double want = lab_reference(samples[i]);
      EXPECT_LT(relative_error(as_float(outputs[i]), want), 1e-5) << "sample " << i;
      results[mode].push_back(as_float(outputs[i]));
    }
    EXPECT_EQ(report.counters.processed, samples.size());
    EXPECT_EQ(report.counters.dropped, 0U);
    EXPECT_EQ(report.counters.repeated, 0U);
    EXPECT_EQ(report.counters.last_seq - report.counters.start_seq, samples.size());
  }
  // The kernels are deterministic: every mode produces the very same bits.
  for (const execution_mode mode : all_execution_modes) {
    EXPECT_EQ(results[mode], results[execution_mode::eager]) << to_string(mode);
  }
}

TEST(execution_modes, fused_and_separate_framework_kernels_give_the_same_bits_and_counts) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 8; ++i) samples.push_back(random_floats(elements));
  for (const execution_mode mode : all_execution_modes) {
    std::map<bool, std::vector<float>> results;
    for (const bool fuse : {false, true}) {
      SCOPED_TRACE(std::string(to_string(mode)) + (fuse ? " fused" : " separate"));
      run_options options;
      options.fuse = fuse;
      auto run = run_async(app, mode, options);
      const auto outputs = drive_lockstep(*app.mailbox(), samples);
      // A resident loop passes idle after the last sample; the count must include those passes.
      if (is_resident(mode)) {
        EXPECT_TRUE(wait_for_passes_beyond(*run, samples.size()));
      }
      const tear_down_report report = run->tear_down();
      ASSERT_TRUE(report.stopped) << report.error;
      ASSERT_EQ(outputs.size(), samples.size());
      for (const auto& out : outputs) results[fuse].push_back(as_float(out));
      EXPECT_EQ(report.counters.processed, samples.size());
      EXPECT_EQ(report.counters.dropped + report.counters.repeated, 0U);
      // The controller step counted its passes either way, idle ones included.
      if (is_resident(mode)) {
        EXPECT_GT(report.counters.iterations, samples.size());
      } else {
        EXPECT_GE(report.counters.iterations, samples.size());
      }
    }
    EXPECT_EQ(results[true], results[false]) << to_string(mode);
  }
}

// rx -> {affine, square} -> add2 -> sum -> tx: a diamond whose fan-out shares rx's buffer.
class diamond_app final : public Application {
 public:
  diamond_app()
      : _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{elements * sizeof(float), sizeof(float), 4})) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto aff = make_operator<ops::affine>("affine", arg("elements", elements), arg("scale", 3.0),
                                          arg("offset", -0.5));
    auto sq = make_operator<ops::square>("square", arg("elements", elements));
    auto add = make_operator<add2>("add", arg("elements", elements));
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", elements));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, aff, {{"sample", "in"}});
    add_flow(rx, sq, {{"sample", "in"}});
    add_flow(aff, add, {{"out", "a"}});
    add_flow(sq, add, {{"out", "b"}});
    add_flow(add, sum);
    add_flow(sum, tx);
  }
  std::shared_ptr<io::mailbox> _mailbox;
};

TEST(execution_modes, diamond_with_fan_out_matches_reference_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  diamond_app app;
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffer_of(app.find_operator("affine"), "in"),
            plan.buffer_of(app.find_operator("square"), "in"));
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    std::vector<std::vector<float>> samples{random_floats(elements), random_floats(elements)};
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(*app._mailbox, samples);
    EXPECT_TRUE(run->tear_down().stopped);
    ASSERT_EQ(outputs.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      double want = 0.0;
      for (const float x : samples[i]) want += (3.0 * x - 0.5) + double{x} * x;
      EXPECT_LT(std::abs(as_float(outputs[i]) - want), 1e-3 * std::max(1.0, std::abs(want)));
    }
  }
}

// Two sources (the handler's sample and a bias in memory the test owns) meet in add2, whose
// output is written straight into memory the test owns through an external sink.
class two_source_app final : public Application {
 public:
  two_source_app(void* bias, void* result)
      : _bias(bias),
        _result(result),
        _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{elements * sizeof(float), sizeof(float), 4})) {}
  void compose() override {
    constexpr std::size_t bytes = elements * sizeof(float);
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto bias = make_operator<external_source>("bias", _bias, bytes);
    auto add = make_operator<add2>("add", arg("elements", elements));
    auto sink = make_operator<external_sink>("result", _result, bytes);
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", elements));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, add, {{"sample", "a"}});
    add_flow(bias, add, {{"out", "b"}});
    add_flow(add, sink);
    add_flow(add, sum);
    add_flow(sum, tx);
  }
  void* _bias;
  void* _result;
  std::shared_ptr<io::mailbox> _mailbox;
};

TEST(execution_modes, several_sources_and_external_memory_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::size_t bytes = elements * sizeof(float);
  device_buffer bias(bytes);
  device_buffer result(bytes);
  const auto bias_values = random_floats(elements);
  RESIDENT_CUDA_TRY(cudaMemcpy(bias.data(), bias_values.data(), bytes, cudaMemcpyHostToDevice));
  two_source_app app(bias.data(), result.data());
  const dag_plan& plan = app.plan();
  EXPECT_EQ(plan.buffers[plan.buffer_of(app.find_operator("add"), "out")].external, result.data());
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    const auto sample = random_floats(elements);
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(*app._mailbox, {sample});
    EXPECT_TRUE(run->tear_down().stopped);
    ASSERT_EQ(outputs.size(), 1U);
    std::vector<float> written(elements);
    RESIDENT_CUDA_TRY(cudaMemcpy(written.data(), result.data(), bytes, cudaMemcpyDeviceToHost));
    double want_sum = 0.0;
    for (std::int64_t i = 0; i < elements; ++i) {
      ASSERT_EQ(written[i], sample[i] + bias_values[i]) << "element " << i;
      want_sum += double{sample[i]} + bias_values[i];
    }
    EXPECT_LT(std::abs(as_float(outputs[0]) - want_sum), 1e-3);
  }
}

// Two dependent 512 x 512 cuBLAS products between the mailbox ends.
class matmul_app final : public Application {
 public:
  static constexpr std::int64_t n = 512;
  matmul_app()
      : _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{n * n * sizeof(float), n * n * sizeof(float), 2})) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    first = make_operator<ops::matmul>("mm1", arg("n", n), arg("seed", 11));
    second = make_operator<ops::matmul>("mm2", arg("n", n), arg("seed", 12));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, first, {{"sample", "in"}});
    add_flow(first, second);
    add_flow(second, tx);
  }
  std::shared_ptr<io::mailbox> _mailbox;
  std::shared_ptr<ops::matmul> first;
  std::shared_ptr<ops::matmul> second;
};

TEST(execution_modes, cublas_matmul_chain_matches_fp64_reference_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  matmul_app app;
  constexpr auto n = static_cast<std::size_t>(matmul_app::n);
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    const auto sample = random_floats(n * n);
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(*app._mailbox, {sample});
    EXPECT_TRUE(run->tear_down().stopped);
    ASSERT_EQ(outputs.size(), 1U);
    const std::vector<double> in(sample.begin(), sample.end());
    const auto want =
        matmul_reference(matmul_reference(in, app.first->weights(), n), app.second->weights(), n);
    std::vector<float> got(n * n);
    std::memcpy(got.data(), outputs[0].data(), outputs[0].size());
    double err = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < n * n; ++i) {
      err += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-5);
  }
}

}  // namespace
}  // namespace resident::testing
