// What each mode can hold, and the errors for what it cannot; DOT output of the built graphs.

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// rx -> tx with one extra body operator of type Extra.
template <class Extra>
class with_extra final : public Application {
 public:
  with_extra() : _mailbox(std::make_shared<io::mailbox>(io::mailbox::config{8, 8, 4})) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto extra = make_operator<Extra>("extra");
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, tx, {{"sample", "in"}});
    (void)extra;
  }
  std::shared_ptr<io::mailbox> _mailbox;
};

std::string error_of(Application& app, execution_mode mode, run_options options = {}) {
  try {
    auto run = run_async(app, mode, std::move(options));
    (void)run->tear_down();
  } catch (const composition_error& e) {
    return e.what();
  }
  return {};
}

bool round_trip(io::mailbox& mb) {
  const std::uint64_t v = 42;
  const io::output_stamp before = mb.latest_output();
  const std::uint64_t seq = mb.publish(std::as_bytes(std::span(&v, 1)));
  std::vector<std::byte> out(8);
  return mb.wait_output(before, out, 5s).seq == seq;
}

TEST(tail_mode, refuses_an_operator_whose_work_a_device_graph_cannot_hold) {
  RESIDENT_REQUIRE_GPU();
  with_extra<empty_node> app;
  const std::string error = error_of(app, execution_mode::tail);
  EXPECT_THAT(error, HasSubstr("tail mode cannot hold operator 'extra'"));
  EXPECT_THAT(error, HasSubstr("empty node"));
  EXPECT_THAT(error, HasSubstr("while mode"));
  // The same application runs in while mode, where an empty node is fine.
  auto run = run_async(app, execution_mode::while_loop);
  EXPECT_TRUE(round_trip(*app._mailbox));
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST(graph_modes, refuse_a_host_node_in_a_conditional_body_eager_and_gated_host_graph_run_it) {
  RESIDENT_REQUIRE_GPU();
  with_extra<host_callback> app;
  // host-graph has its DAG in an IF body when not fused (fused, the mailbox's host gate decides:
  // no IF body, below).
  run_options separate;
  separate.fuse = false;
  for (const auto mode : {execution_mode::while_loop, execution_mode::host_graph}) {
    const std::string error = error_of(app, mode, separate);
    EXPECT_THAT(error,
                HasSubstr(std::string(to_string(mode)) + " mode cannot hold operator 'extra'"));
    EXPECT_THAT(error, HasSubstr("host node"));
    EXPECT_THAT(error, HasSubstr("eager mode"));
  }
  EXPECT_THAT(error_of(app, execution_mode::tail), HasSubstr("host node"));
  EXPECT_THAT(error_of(app, execution_mode::while_loop), HasSubstr("host node"));
  for (const auto mode : {execution_mode::eager, execution_mode::host_graph}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    EXPECT_TRUE(round_trip(*app._mailbox));
    EXPECT_TRUE(run->tear_down().stopped);
  }
}

TEST(capture, cuda_error_in_compute_names_the_operator_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  with_extra<bad_launch> app;
  for (const auto mode :
       {execution_mode::host_graph, execution_mode::while_loop, execution_mode::tail}) {
    try {
      auto run = run_async(app, mode);
      FAIL() << "expected execution_error in " << to_string(mode);
    } catch (const execution_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("operator 'extra' compute() failed"));
      EXPECT_THAT(e.what(), HasSubstr("noop_kernel<<<1, 4096>>>"));
    }
  }
  // Eager captures nothing: the failure surfaces in the loop and is reported at tear-down.
  auto run = run_async(app, execution_mode::eager);
  const std::uint64_t v = 1;
  app._mailbox->publish(std::as_bytes(std::span(&v, 1)));
  std::this_thread::sleep_for(50ms);
  const tear_down_report report = run->tear_down();
  EXPECT_THAT(report.error, HasSubstr("operator 'extra' compute() failed in eager mode"));
}

// Makes a call that CUDA refuses during stream capture, and ignores the error it returns: the
// capture is invalidated without an exception from compute().
class breaks_capture final : public Operator {
 public:
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override {
    if (ctx.capturing()) (void)cudaStreamSynchronize(ctx.stream());
  }
};

TEST(capture, invalidated_without_an_exception_names_the_operator) {
  RESIDENT_REQUIRE_GPU();
  with_extra<breaks_capture> app;
  for (const auto mode :
       {execution_mode::host_graph, execution_mode::while_loop, execution_mode::tail}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    try {
      auto run = run_async(app, mode);
      FAIL() << "expected execution_error in " << to_string(mode);
    } catch (const execution_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("operator 'extra' compute() failed"));
      EXPECT_THAT(e.what(), HasSubstr("capture was invalidated"));
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
  // Nothing broken was left behind: the same process runs a good application in every mode.
  lab_app good(128);
  for (const auto mode : all_execution_modes) {
    auto run = run_async(good, mode);
    EXPECT_EQ(drive_lockstep(*good.mailbox(), {random_floats(128)}).size(), 1U);
    EXPECT_TRUE(run->tear_down().stopped);
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(dot, graph_modes_write_the_built_graph) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(128);
  const auto dir = std::filesystem::temp_directory_path();
  for (const auto mode :
       {execution_mode::host_graph, execution_mode::while_loop, execution_mode::tail}) {
    for (const bool fuse : {false, true}) {
      SCOPED_TRACE(std::string(to_string(mode)) + (fuse ? " fused" : " not fused"));
      run_options options;
      options.fuse = fuse;
      options.dot_path = (dir / ("resident_" + std::string(to_string(mode)) + ".dot")).string();
      auto run = run_async(app, mode, options);
      EXPECT_TRUE(run->tear_down().stopped);
      const std::string text = read_text(options.dot_path);
      EXPECT_THAT(text, HasSubstr("digraph"));
      EXPECT_THAT(text, HasSubstr("mailbox_rx_kernel"));
      EXPECT_THAT(text, HasSubstr("topological order on one stream"));
      // Fused, the mailbox's handler kernel carries the controller step and its egress the end
      // marker's: neither framework kernel is in the graph.
      const std::string controller =
          mode == execution_mode::tail ? "tail_dispatcher_kernel" : "controller_kernel";
      const std::string end_marker =
          mode == execution_mode::tail ? "tail_end_marker_kernel" : "end_marker_kernel";
      const std::string work = mode == execution_mode::tail
                                   ? read_text((dir / "resident_tail.work.dot").string())
                                   : text;
      if (fuse) {
        EXPECT_THAT(text, Not(HasSubstr(controller)));
        EXPECT_THAT(work, Not(HasSubstr(end_marker)));
      } else {
        EXPECT_THAT(text, HasSubstr(controller));
        EXPECT_THAT(work, HasSubstr(end_marker));
      }
    }
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "resident_tail.work.dot"));
}

}  // namespace
}  // namespace resident::testing
