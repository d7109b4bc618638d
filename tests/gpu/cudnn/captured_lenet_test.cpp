// A cuDNN network (examples/cudnn/lenet.hpp) captured into a graph outside resident and run as
// one ops::captured_graph operator: its logits match a CPU reference of the same network in
// every mode. Its own binary (resident_cudnn_tests), so that only it needs cuDNN at run time.

#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "gpu/support.hpp"
#include "lenet.hpp"

namespace resident::testing {
namespace {

using examples::lenet;

// rx (writes the image into the network's input) -> lenet -> tx (reads the logits)
class classifier_app final : public Application {
 public:
  explicit classifier_app(lenet& net)
      : Application("cudnn_classifier"),
        mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{lenet::input_bytes, lenet::logits_bytes, 4})),
        _net(net),
        _graph(net.capture()) {}

  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", mailbox);
    auto net = make_operator<ops::captured_graph>(
        "lenet", _graph.get(),  // borrowed: the operator keeps a clone
        ops::graph_ports{.inputs = {{"image", _net.input(), lenet::input_bytes}},
                         .outputs = {{"logits", _net.logits(), lenet::logits_bytes}}});
    auto tx = make_operator<io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, net, {{"sample", "image"}});
    add_flow(net, tx);
  }

  std::shared_ptr<io::mailbox> mailbox;

 private:
  lenet& _net;
  graph _graph;
};

std::vector<float> random_image() {
  std::vector<float> image = random_floats(lenet::input_elements);  // [-1, 1)
  for (auto& v : image) v = 0.5F * (v + 1.0F);                      // pixels in [0, 1)
  return image;
}

TEST(captured_graph_cudnn, lenet_logits_match_cpu_reference_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  RecordProperty("libraries", lenet::library_versions());
  lenet net(/*seed=*/7);
  classifier_app app(net);
  std::map<execution_mode, std::vector<std::vector<std::byte>>> results;
  std::vector<std::vector<float>> images{random_image(), random_image(), random_image()};
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)) + ", " + lenet::library_versions());
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(*app.mailbox, images);
    const tear_down_report report = run->tear_down();
    EXPECT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs.size(), images.size());
    for (std::size_t i = 0; i < images.size(); ++i) {
      ASSERT_EQ(outputs[i].size(), lenet::logits_bytes);
      std::vector<float> logits(lenet::classes);
      std::memcpy(logits.data(), outputs[i].data(), lenet::logits_bytes);
      const lenet::reference_result want = net.reference(images[i]);
      for (int o = 0; o < lenet::classes; ++o) {
        // fp32 rounding over three layers (25, 200 and 784 terms) stays far below 2e-4 of the
        // sum of the magnitudes of a logit's terms; a wrong weight, layout or layer does not.
        const auto k = static_cast<std::size_t>(o);
        EXPECT_NEAR(logits[k], want.logits[k], 2e-4 * want.scale[k])
            << "image " << i << ", logit " << o;
      }
    }
    EXPECT_EQ(report.counters.processed, images.size());
    results[mode] = outputs;
  }
  // One graph, the same kernels in every mode: the very same bits.
  for (const execution_mode mode : all_execution_modes) {
    EXPECT_EQ(results[mode], results[execution_mode::eager]) << to_string(mode);
  }
}

}  // namespace
}  // namespace resident::testing
