// eager mode: the host thread launches every operator's work itself, every iteration, and
// decides on the host whether the DAG runs (reading the controller's verdict back), or, where
// the host's gate decides exactly (host_gate_decides), launches the whole iteration and waits
// once. With
// run_options::capture = forked the DAG's branches go on their own streams, joined by events
// made at construction (an iteration allocates nothing).

#include "exec/capture.hpp"
#include "exec/fusion.hpp"
#include "exec/loop_executor.hpp"
#include "exec/loop_kernels.hpp"
#include "exec/modes.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/event.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

namespace {

class eager_executor final : public host_driven_executor {
 public:
  eager_executor(Application& app, const run_options& options)
      : host_driven_executor(app, execution_mode::eager, options) {
    // One event per operator another stream waits for, made in the loop's partition (if any),
    // the context its streams belong to.
    const partition::green_context::current_scope in_partition(options.partition.get());
    // Fused iteration (run_options::fuse): the mailbox's kernels run the controller and
    // end-marker steps, so an iteration launches two kernels fewer. The egress carries the end
    // marker only when the DAG is one chain on the loop stream (it then runs last).
    const bool chain = streams().streams == 1 && streams().join.empty();
    res().config.fuse_controller =
        options.fuse && handler_can_carry_controller(plan().handler_order, plan().body_order) ? 1U
                                                                                              : 0U;
    res().config.fuse_end_marker =
        options.fuse && chain &&
                egress_can_carry_end_marker(plan().handler_order, plan().body_order)
            ? 1U
            : 0U;
    _branches->handles.assign(plan().body_order.size(), nullptr);
    for (std::size_t i = 0; i < streams().steps.size(); ++i) {
      if (!streams().steps[i].signals) continue;
      _branches->events.emplace_back();
      _branches->handles[i] = _branches->events.back().get();
    }
  }

  void write_dot(const std::string& path) const override {
    (void)path;
    throw composition_error(
        "eager mode builds no CUDA graph to write as DOT; use Application::to_dot() for the "
        "operator DAG or a graph mode");
  }

 private:
  // The events that join the DAG's branches (none for a chain); shared with the loop thread.
  struct branch_events {
    std::vector<event> events;
    std::vector<cudaEvent_t> handles;  // by operator: its event, or null when none waits for it
  };

  iteration_fn make_iteration() override {
    // Shared state only: the thread may outlive the executor (see host_driven_executor).
    return [res = shared_res(), released = _released, branches = _branches,
            handler_order = plan().handler_order, body_order = plan().body_order,
            streams = streams(), dag_streams = shared_res()->dag_streams(),
            fuse_controller = shared_res()->config.fuse_controller != 0U,
            fuse_end_marker = shared_res()->config.fuse_end_marker != 0U,
            // One wait only where the DAG is one chain on the loop stream: forked branches are
            // ordered after the handler by the read-back's synchronization.
            gated = host_gate_decides(plan(), options().fuse) && streams().streams == 1 &&
                    streams().join.empty()] {
      const cudaStream_t s = res->loop_stream.get();
      loop_state* loop = res->state();
      const loop_control& c = *res->control();
      const auto runs_before = host_load_acquire(c.processed) + host_load_acquire(c.repeated);
      compute_eager(handler_order, s, loop);
      if (!fuse_controller) launch_controller(loop, s);
      if (!gated) {
        // The controller's verdict, read back: the DAG is launched only for a released sample.
        RESIDENT_CUDA_TRY(cudaMemcpyAsync(released->data(), &loop->released, sizeof(std::uint32_t),
                                          cudaMemcpyDeviceToHost, s));
        res->loop_stream.synchronize();
        if (*released->data_as<std::uint32_t>() == 0) return false;
      }
      // The synchronization above orders every branch stream after the controller, and the
      // previous iteration's branches joined stream 0 before its end marker.
      compute_eager(body_order, streams, dag_streams, branches->handles, loop);
      if (!fuse_end_marker) launch_end_marker(loop, s);
      res->loop_stream.synchronize();
      if (!gated) return true;
      return host_load_acquire(c.processed) + host_load_acquire(c.repeated) != runs_before;
    };
  }

  // The controller's verdict, read back every iteration.
  std::shared_ptr<pinned_buffer> _released = std::make_shared<pinned_buffer>(sizeof(std::uint32_t));
  std::shared_ptr<branch_events> _branches = std::make_shared<branch_events>();
};

}  // namespace

std::unique_ptr<Executor> make_eager_executor(Application& app, const run_options& options) {
  return std::make_unique<eager_executor>(app, options);
}

}  // namespace resident::detail
