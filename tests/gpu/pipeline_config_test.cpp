// A pipeline file run by the runtime: the lab pipeline described by operator kinds (the shipped
// example, sized down) in every mode, outputs against the CPU reference and the same bits in
// every mode, counters exact; a file whose operators have no device form is refused by name in
// persistent mode and runs in the others.

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gpu/support.hpp"
#include "resident/ops/pipeline_config.hpp"

namespace resident::testing {
namespace {

constexpr std::int64_t elements = 1000;

/// The shipped example with its 4096 values made `elements`, scale and offset as there.
ops::pipeline_description example_pipeline() {
  std::ifstream in(std::filesystem::path(RESIDENT_SOURCE_DIR) / "examples/config/pipeline.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"elements: 4096", "elements: " + std::to_string(elements)},
           {"input_bytes: 16384", "input_bytes: " + std::to_string(elements * 4)}}) {
    for (auto at = yaml.find(from); at != std::string::npos; at = yaml.find(from, at)) {
      yaml.replace(at, from.size(), to);
    }
  }
  return ops::parse_pipeline_text(yaml, "pipeline.yaml");
}

TEST(pipeline_file,
     the_lab_pipeline_by_kinds_matches_the_reference_with_the_same_bits_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  ops::yaml_pipeline app(example_pipeline());
  ASSERT_TRUE(app.mailbox());
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 12; ++i) samples.push_back(random_floats(elements));
  expect_every_mode_gives_eagers_outputs(
      app, *app.mailbox(), samples, [&](std::size_t i, const std::vector<std::byte>& out) {
        const double want = lab_reference(samples[i], 0.5, -1.0);  // the example's affine
        EXPECT_LT(std::abs(as_float(out) - want), 1e-5 * std::max(1.0, want)) << i;
      });
}

TEST(pipeline_file, persistent_mode_names_the_operator_without_a_device_form) {
  RESIDENT_REQUIRE_GPU();
  const std::string yaml = R"(mailbox: {input_bytes: 1024, output_bytes: 1024, depth: 4}
operators:
  rx: {kind: io.mailbox_rx}
  mm: {kind: ops.matmul, n: 16}
  tx: {kind: io.mailbox_tx}
flows:
  - rx.sample -> mm.in
  - mm -> tx
)";
  ops::yaml_pipeline app(ops::parse_pipeline_text(yaml, "mm.yaml"));
  try {
    auto run = run_async(app, execution_mode::persistent);
    (void)run->tear_down();
    ADD_FAILURE() << "persistent mode ran an operator without a device form";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'mm'"));
  }
  // The same file runs in a graph mode: four different inputs, four different outputs.
  auto run = run_async(app, execution_mode::while_loop);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 4; ++i) samples.push_back(random_floats(256));
  const auto outputs = drive_lockstep(*app.mailbox(), samples);
  const tear_down_report report = run->tear_down();
  EXPECT_TRUE(report.error.empty()) << report.error;
  ASSERT_EQ(outputs.size(), samples.size());
  EXPECT_NE(outputs[0], outputs[1]);
  EXPECT_EQ(report.counters.processed, samples.size());
}

}  // namespace
}  // namespace resident::testing
