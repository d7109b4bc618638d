// eager mode: the host thread launches every operator's work itself, every iteration, and
// decides on the host whether the DAG runs (reading the controller's verdict back).

#include "exec/capture.hpp"
#include "exec/loop_executor.hpp"
#include "exec/loop_kernels.hpp"
#include "exec/modes.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

class eager_executor final : public host_driven_executor {
 public:
  eager_executor(Application& app, const run_options& options)
      : host_driven_executor(app, execution_mode::eager, options) {}

  void write_dot(const std::string& path) const override {
    (void)path;
    throw composition_error(
        "eager mode builds no CUDA graph to write as DOT; use Application::to_dot() for the "
        "operator DAG or a graph mode");
  }

 private:
  iteration_fn make_iteration() override {
    // Shared state only: the thread may outlive the executor (see host_driven_executor).
    return [res = shared_res(), released = _released, handler_order = plan().handler_order,
            body_order = plan().body_order] {
      const cudaStream_t s = res->loop_stream.get();
      loop_state* loop = res->state();
      compute_eager(handler_order, s, loop);
      launch_controller(loop, s);
      RESIDENT_CUDA_TRY(cudaMemcpyAsync(released->data(), &loop->released, sizeof(std::uint32_t),
                                        cudaMemcpyDeviceToHost, s));
      res->loop_stream.synchronize();
      if (*released->data_as<std::uint32_t>() == 0) return false;
      compute_eager(body_order, s, loop);
      launch_end_marker(loop, s);
      res->loop_stream.synchronize();
      return true;
    };
  }

  // The controller's verdict, read back every iteration.
  std::shared_ptr<pinned_buffer> _released = std::make_shared<pinned_buffer>(sizeof(std::uint32_t));
};

}  // namespace

std::unique_ptr<Executor> make_eager_executor(Application& app, const run_options& options) {
  return std::make_unique<eager_executor>(app, options);
}

}  // namespace resident::detail
