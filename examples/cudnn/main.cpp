// C++ inference without Python: a small cuDNN network (examples/cudnn/lenet.hpp), captured into a
// CUDA graph outside resident, runs as one ops::captured_graph operator between an emulated
// sensor and actuator, unchanged in all four execution modes.
//
//   sensor ──▶ rx (handler) ──▶ lenet (captured graph) ──▶ tx (egress) ──▶ actuator
//
// The image goes straight into the network's own input memory and tx reads its logits: the
// graph's input and output are the operator's ports, bound to that memory.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lenet.hpp"
#include "resident/resident.hpp"

namespace {

using resident::examples::lenet;

class classifier_app final : public resident::Application {
 public:
  explicit classifier_app(lenet& net)
      : Application("cudnn_classifier"),
        mailbox(std::make_shared<resident::io::mailbox>(resident::io::mailbox::config{
            .input_bytes = lenet::input_bytes, .output_bytes = lenet::logits_bytes})),
        _net(net),
        _graph(net.capture()) {}

  void compose() override {
    auto rx = make_operator<resident::io::mailbox_rx>("rx", mailbox);
    auto net = make_operator<resident::ops::captured_graph>(
        "lenet", std::move(_graph),
        resident::ops::graph_ports{.inputs = {{"image", _net.input(), lenet::input_bytes}},
                                   .outputs = {{"logits", _net.logits(), lenet::logits_bytes}}});
    auto tx = make_operator<resident::io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, net, {{"sample", "image"}});
    add_flow(net, tx);
    std::printf("captured graph: %zu nodes\n", net->node_count());
  }

  std::shared_ptr<resident::io::mailbox> mailbox;

 private:
  lenet& _net;
  resident::graph _graph;
};

// Within 2e-4 of each logit's term scale (the fp32 rounding of three layers is far smaller).
bool close_to_reference(const lenet& net, std::span<const float> image,
                        std::span<const float> logits, double& worst) {
  const lenet::reference_result want = net.reference(image);
  bool ok = true;
  for (std::size_t o = 0; o < logits.size(); ++o) {
    const double error = std::abs(logits[o] - want.logits[o]);
    worst = std::max(worst, error / want.scale[o]);
    ok = ok && error <= 2e-4 * want.scale[o];
  }
  return ok;
}

}  // namespace

int main() {
  using namespace std::chrono_literals;
  resident::request_eager_module_loading();  // before the first CUDA call (docs/api.md, "Running")
  if (resident::device_count() == 0) {
    std::fprintf(stderr, "resident cuDNN example: no CUDA GPU on this machine (%s).\n",
                 resident::no_device_reason().c_str());
    return 2;
  }
  std::printf("%s\n", lenet::library_versions().c_str());
  lenet net(/*seed=*/7);
  classifier_app app(net);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> pixel(0.0F, 1.0F);
  int failures = 0;
  for (const auto mode : resident::all_execution_modes) {
    auto run = resident::run_async(app, mode);
    double worst = 0.0;
    for (int i = 0; i < 4; ++i) {
      std::vector<float> image(lenet::input_elements);
      for (auto& v : image) v = pixel(rng);
      const resident::io::output_stamp before = app.mailbox->latest_output();
      const std::uint64_t seq = app.mailbox->publish(std::as_bytes(std::span(image)));
      std::vector<float> logits(lenet::classes);
      const std::uint64_t got =
          app.mailbox->wait_output(before, std::as_writable_bytes(std::span(logits)), 2s).seq;
      const bool ok = got == seq && close_to_reference(net, image, logits, worst);
      failures += ok ? 0 : 1;
      const auto top = std::max_element(logits.begin(), logits.end()) - logits.begin();
      std::printf("%-10s image %llu: class %td (logit %+.4f)  %s\n",
                  std::string(resident::to_string(mode)).c_str(),
                  static_cast<unsigned long long>(seq), top, logits[static_cast<std::size_t>(top)],
                  ok ? "ok" : "WRONG");
    }
    const resident::tear_down_report report = run->tear_down();
    std::printf("%-10s stopped=%s; processed=%llu; worst error %.2e of the term scale%s%s\n",
                std::string(resident::to_string(mode)).c_str(), report.stopped ? "yes" : "NO",
                static_cast<unsigned long long>(report.counters.processed), worst,
                report.error.empty() ? "" : "; ", report.error.c_str());
    failures += report.stopped ? 0 : 1;
  }
  std::printf("%s\n",
              failures == 0 ? "all modes agree with the CPU reference" : "FAILED: see above");
  return failures == 0 ? 0 : 1;
}
