// while mode (WHL): one graph, launched once, loops on the GPU for the run's lifetime.
//
//   root:  WHILE(while_handle) {
//            handler operators          (captured on the handler stream)
//            controller_kernel          (tear-down, sample policy, sets both predicates, δ sleep)
//            IF(if_handle) { operator DAG (run_options::capture); end_marker_kernel }
//          }
//
// Fused (run_options::fuse, src/exec/fusion.hpp): a handler kernel that carries the controller
// step replaces controller_kernel, an egress kernel that carries the end marker's replaces
// end_marker_kernel: WHILE { handler; IF { DAG } }.

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

class while_executor final : public resident_executor {
 public:
  while_executor(Application& app, const run_options& options)
      : resident_executor(app, execution_mode::while_loop, options) {
    build_or_release(_root, [&] { build(); });
    _exec = std::make_unique<graph_exec>(_root.get());
    _exec->upload(res().loop_stream);
  }

  ~while_executor() override { stop_before_destruction(); }

  void write_dot(const std::string& path) const override {
    _root.write_dot(path, capture_order_note(options().capture));
  }

 protected:
  void launch_graphs() override { _exec->launch(res().loop_stream); }
  void leak_graphs() noexcept override { (void)_exec.release(); }

 private:
  void build() {
    // With a partition, the handles (and the kernels of the bodies) belong to its context.
    const partition::green_context* part = options().partition.get();
    const cudaGraphConditionalHandle while_handle =
        partition::make_conditional_handle(_root.get(), part, 1, cudaGraphCondAssignDefault);
    cudaGraph_t body = add_conditional(_root.get(), {}, while_handle, cudaGraphCondTypeWhile, part);
    // The IF handle belongs to the graph that holds the IF node: the WHILE body.
    const cudaGraphConditionalHandle if_handle =
        partition::make_conditional_handle(body, part, 0, cudaGraphCondAssignDefault);
    res().config.has_while = 1;
    res().config.has_if = 1;
    res().config.while_handle = while_handle;
    res().config.if_handle = if_handle;

    const auto handler =
        capture_operators(body, {}, plan().handler_order, res().handler_stream.get(), loop(),
                          "while", graph_kind::conditional_body);
    const auto ctrl =
        controller_after(body, handler, plan(), options().fuse, res(), launch_controller);
    cudaGraph_t dag_body = add_conditional(body, ctrl, if_handle, cudaGraphCondTypeIf, part);
    const auto dag =
        capture_operators(dag_body, {}, plan().body_order, streams(), res().dag_streams(), loop(),
                          "while", graph_kind::conditional_body);
    end_marker_after(dag_body, dag, plan(), options().fuse, res(), launch_end_marker);
    require_node_types(body, handler.owners, "while", "the WHILE body (data-ready handler)",
                       conditional_body_rules());
    require_node_types(dag_body, dag.owners, "while", "the IF body (operator DAG)",
                       conditional_body_rules());
  }

  graph _root;
  std::unique_ptr<graph_exec> _exec;
};

}  // namespace

std::unique_ptr<Executor> make_while_executor(Application& app, const run_options& options) {
  return std::make_unique<while_executor>(app, options);
}

}  // namespace resident::detail
