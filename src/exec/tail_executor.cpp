// tail mode (DVG): two device-launchable graphs that tail-launch each other.
//
//   M: handler operators -> tail_dispatcher_kernel   (release: launch W; idle: δ, launch M)
//   W: operator DAG -> tail_end_marker_kernel        (commit, launch M)
//
// Fused (run_options::fuse, src/exec/fusion.hpp): M is the handler kernel alone when it carries
// the dispatcher step, and W ends with the egress kernel when it carries the end marker's.
//
// The host launches M once. A device-launchable graph holds only kernel, memcpy, memset and
// child-graph nodes, so the captured work is checked before instantiation and an operator
// that needs anything else is refused by name.

#include <filesystem>

#include "exec/capture.hpp"
#include "exec/fusion.hpp"
#include "exec/loop_executor.hpp"
#include "exec/loop_kernels.hpp"
#include "exec/modes.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/graph.hpp"

namespace resident::detail {

namespace {

graph_exec instantiate_for_device(const graph& g, const char* name, bool partitioned) {
  try {
    return graph_exec(g.get(), cudaGraphInstantiateFlagDeviceLaunch);
  } catch (const cuda_error& e) {
    // Seen on the H200 (driver 580): an app whose DAG holds cuBLAS kernels runs in tail mode
    // on the whole GPU, but its graph W is refused for device launch inside a green context,
    // even one spanning every SM; while mode runs the same app in the partition.
    throw execution_error(
        std::string("tail mode: graph ") + name +
        " cannot be instantiated for device launch: " + e.what() +
        (partitioned ? " (inside an SM partition this was seen with library kernels such as "
                       "cuBLAS'; run this application in while mode)"
                     : ""));
  }
}

class tail_executor final : public resident_executor {
 public:
  tail_executor(Application& app, const run_options& options)
      : resident_executor(app, execution_mode::tail, options) {
    build_or_release(_main, [&] {
      const auto handler =
          capture_operators(_main.get(), {}, plan().handler_order, res().handler_stream.get(),
                            loop(), "tail", graph_kind::device_launched);
      (void)controller_after(_main.get(), handler, plan(), options.fuse, res(),
                             launch_tail_dispatcher);
      require_node_types(_main.get(), handler.owners, "tail", "graph M (data-ready handler)",
                         device_launch_rules());
    });
    build_or_release(_work, [&] {
      const auto dag =
          capture_operators(_work.get(), {}, plan().body_order, streams(), res().dag_streams(),
                            loop(), "tail", graph_kind::device_launched);
      end_marker_after(_work.get(), dag, plan(), options.fuse, res(), launch_tail_end_marker);
      require_node_types(_work.get(), dag.owners, "tail", "graph W (operator DAG)",
                         device_launch_rules());
    });

    _main_exec = std::make_unique<graph_exec>(
        instantiate_for_device(_main, "M", options.partition != nullptr));
    _work_exec = std::make_unique<graph_exec>(
        instantiate_for_device(_work, "W", options.partition != nullptr));
    _main_exec->upload(res().loop_stream);
    _work_exec->upload(res().loop_stream);
    res().config.main_exec = _main_exec->get();
    res().config.work_exec = _work_exec->get();
  }

  ~tail_executor() override { stop_before_destruction(); }

  void write_dot(const std::string& path) const override {
    _main.write_dot(path, capture_order_note(options().capture));
    std::filesystem::path work(path);
    work.replace_extension(".work.dot");
    _work.write_dot(work.string(), capture_order_note(options().capture));
  }

 protected:
  void launch_graphs() override { _main_exec->launch(res().loop_stream); }
  void leak_graphs() noexcept override {
    (void)_main_exec.release();
    (void)_work_exec.release();
  }

 private:
  graph _main;
  graph _work;
  std::unique_ptr<graph_exec> _main_exec;
  std::unique_ptr<graph_exec> _work_exec;
};

}  // namespace

std::unique_ptr<Executor> make_tail_executor(Application& app, const run_options& options) {
  return std::make_unique<tail_executor>(app, options);
}

}  // namespace resident::detail
