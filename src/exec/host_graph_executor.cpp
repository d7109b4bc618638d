// host-graph mode (the paper's CPU-CG): the host thread launches one captured graph per
// iteration and synchronizes. The graph is the same body a WHILE iteration runs (handler ->
// controller -> IF[DAG -> end marker]); only who releases the iteration differs. Where the host's
// gate decides exactly (host_gate_decides: the mailbox's handler, fused), the graph is handler ->
// DAG -> egress without the IF.

#include "exec/capture.hpp"
#include "exec/fusion.hpp"
#include "exec/loop_executor.hpp"
#include "exec/loop_kernels.hpp"
#include "exec/modes.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/graph.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

namespace {

class host_graph_executor final : public host_driven_executor {
 public:
  host_graph_executor(Application& app, const run_options& options)
      : host_driven_executor(app, execution_mode::host_graph, options) {
    build_or_release(_graph, [&] { build(); });
    _exec = std::make_shared<graph_exec>(_graph.get());
    _exec->upload(res().loop_stream);
  }

  void write_dot(const std::string& path) const override {
    _graph.write_dot(path, capture_order_note(options().capture));
  }

 private:
  void build() {
    const auto handler =
        capture_operators(_graph.get(), {}, plan().handler_order, res().handler_stream.get(),
                          loop(), "host-graph", graph_kind::host_launched);
    // Fused where the handler and egress can carry the loop steps (src/exec/fusion.hpp).
    const auto ctrl =
        controller_after(_graph.get(), handler, plan(), options().fuse, res(), launch_controller);
    if (host_gate_decides(plan(), options().fuse)) {
      // The host's gate decided already: the DAG follows the handler in the one graph.
      res().config.has_if = 0;
      const auto dag =
          capture_operators(_graph.get(), ctrl, plan().body_order, streams(), res().dag_streams(),
                            loop(), "host-graph", graph_kind::host_launched);
      end_marker_after(_graph.get(), dag, plan(), options().fuse, res(), launch_end_marker);
      return;
    }
    const cudaGraphConditionalHandle if_handle = partition::make_conditional_handle(
        _graph.get(), options().partition.get(), 0, cudaGraphCondAssignDefault);
    res().config.has_if = 1;
    res().config.if_handle = if_handle;
    cudaGraph_t body = add_conditional(_graph.get(), ctrl, if_handle, cudaGraphCondTypeIf,
                                       options().partition.get());
    const auto dag = capture_operators(body, {}, plan().body_order, streams(), res().dag_streams(),
                                       loop(), "host-graph", graph_kind::conditional_body);
    end_marker_after(body, dag, plan(), options().fuse, res(), launch_end_marker);
    // The DAG sits in an IF body, whose node types are restricted like a WHILE body's.
    require_node_types(body, dag.owners, "host-graph", "the IF body (operator DAG)",
                       conditional_body_rules());
  }

  iteration_fn make_iteration() override {
    // Shared state only: the thread may outlive the executor (see host_driven_executor).
    return [res = shared_res(), exec = _exec] {
      const loop_control& c = *res->control();
      const auto runs_before = host_load_acquire(c.processed) + host_load_acquire(c.repeated);
      exec->launch(res->loop_stream);
      res->loop_stream.synchronize();
      const auto runs_after = host_load_acquire(c.processed) + host_load_acquire(c.repeated);
      return runs_after != runs_before;
    };
  }

  graph _graph;
  std::shared_ptr<graph_exec> _exec;
};

}  // namespace

std::unique_ptr<Executor> make_host_graph_executor(Application& app, const run_options& options) {
  return std::make_unique<host_graph_executor>(app, options);
}

}  // namespace resident::detail
