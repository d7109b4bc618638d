// A user's operator, outside the library, in all five modes: conv_norm (conv_norm.cu) between
// the mailbox's endpoints. Each mode's outputs must equal the CPU reference and carry the same
// bits as every other mode's.
//
//   sensor ──▶ rx ──▶ conv_norm (3x3 convolution, then / RMS) ──▶ tx ──▶ actuator
//
// Exit status: 0 all equal, 1 a mismatch or a failure, 2 no usable GPU.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "conv_norm.hpp"

namespace {

constexpr int width = 64;
constexpr int height = 48;
constexpr int samples = 20;

class conv_app final : public resident::Application {
 public:
  conv_app()
      : Application("custom_persistent"),
        mailbox(std::make_shared<resident::io::mailbox>(
            resident::io::mailbox::config{.input_bytes = width * height * sizeof(float),
                                          .output_bytes = width * height * sizeof(float)})) {}

  void compose() override {
    using resident::arg;
    auto rx = make_operator<resident::io::mailbox_rx>("rx", mailbox);
    conv =
        make_operator<custom::conv_norm>("conv_norm", arg("width", width), arg("height", height));
    auto tx = make_operator<resident::io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, conv, {{"sample", "in"}});
    add_flow(conv, tx);
  }

  std::shared_ptr<resident::io::mailbox> mailbox;
  std::shared_ptr<custom::conv_norm> conv;
};

/// One run: every sample published, its output awaited; returns the outputs (empty on failure).
std::vector<std::vector<float>> run_mode(conv_app& app, resident::execution_mode mode, int blocks,
                                         const std::vector<std::vector<float>>& inputs) {
  using namespace std::chrono_literals;
  resident::run_options options;
  options.persistent_blocks = blocks;
  auto run = resident::run_async(app, mode, options);
  std::vector<std::vector<float>> outputs;
  for (const auto& x : inputs) {
    const resident::io::output_stamp before = app.mailbox->latest_output();
    const std::uint64_t seq = app.mailbox->publish(std::as_bytes(std::span(x)));
    std::vector<float> y(x.size());
    if (app.mailbox->wait_output(before, std::as_writable_bytes(std::span(y)), 2s).seq != seq) {
      std::fprintf(stderr, "%s: no output for sample %llu\n",
                   std::string(resident::to_string(mode)).c_str(),
                   static_cast<unsigned long long>(seq));
      return {};
    }
    outputs.push_back(std::move(y));
  }
  const resident::tear_down_report report = run->tear_down();
  if (!report.stopped || !report.error.empty()) {
    std::fprintf(stderr, "%s: tear-down: %s\n", std::string(resident::to_string(mode)).c_str(),
                 report.error.c_str());
    return {};
  }
  return outputs;
}

}  // namespace

int main() {
  resident::request_eager_module_loading();
  if (resident::device_count() == 0) {
    std::fprintf(stderr, "custom_persistent: no usable CUDA GPU or driver (%s); built only.\n",
                 resident::no_device_reason().c_str());
    return 2;
  }
  conv_app app;
  std::mt19937 rng(51);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<std::vector<float>> inputs(samples, std::vector<float>(width * height));
  for (auto& x : inputs) {
    for (auto& v : x) v = dist(rng);
  }

  struct variant {
    resident::execution_mode mode;
    int blocks;
  };
  const variant variants[] = {
      {resident::execution_mode::eager, 1},      {resident::execution_mode::host_graph, 1},
      {resident::execution_mode::while_loop, 1}, {resident::execution_mode::tail, 1},
      {resident::execution_mode::persistent, 1}, {resident::execution_mode::persistent, 6}};
  std::vector<std::vector<float>> first;
  int failures = 0;
  for (const variant& v : variants) {
    const auto outputs = run_mode(app, v.mode, v.blocks, inputs);
    bool cpu_ok = outputs.size() == inputs.size();
    bool same_bits = cpu_ok;
    double worst = 0;
    for (std::size_t k = 0; cpu_ok && k < inputs.size(); ++k) {
      const auto want = custom::conv_norm_reference(inputs[k], width, height, app.conv->weights());
      for (std::size_t i = 0; i < want.size(); ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(outputs[k][i] - want[i])));
      }
      if (!first.empty()) {
        same_bits = same_bits && std::memcmp(outputs[k].data(), first[k].data(),
                                             first[k].size() * sizeof(float)) == 0;
      }
    }
    cpu_ok = cpu_ok && worst <= 1e-5;
    if (first.empty() && cpu_ok) first = outputs;
    const bool ok = cpu_ok && same_bits;
    failures += ok ? 0 : 1;
    std::printf("%-10s %d block(s): %d samples, max |gpu - cpu| %.2e, same bits as eager: %s  %s\n",
                std::string(resident::to_string(v.mode)).c_str(), v.blocks, samples, worst,
                same_bits ? "yes" : "no", ok ? "ok" : "WRONG");
  }
  return failures == 0 ? 0 : 1;
}
