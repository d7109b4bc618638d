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
      : host_driven_executor(app, execution_mode::eager, options),
        _released(sizeof(std::uint32_t)) {}

  void write_dot(const std::string& path) const override {
    (void)path;
    throw composition_error(
        "eager mode builds no CUDA graph to write as DOT; use Application::to_dot() for the "
        "operator DAG or a graph mode");
  }

 private:
  bool run_iteration() override {
    const cudaStream_t s = res().loop_stream.get();
    compute_eager(plan().handler_order, s, loop());
    launch_controller(loop(), s);
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(_released.data(), &loop()->released, sizeof(std::uint32_t),
                                      cudaMemcpyDeviceToHost, s));
    res().loop_stream.synchronize();
    if (*_released.data_as<std::uint32_t>() == 0) return false;
    compute_eager(plan().body_order, s, loop());
    launch_end_marker(loop(), s);
    res().loop_stream.synchronize();
    return true;
  }

  pinned_buffer _released;  // the controller's verdict, read back every iteration
};

}  // namespace

std::unique_ptr<Executor> make_eager_executor(Application& app, const run_options& options) {
  return std::make_unique<eager_executor>(app, options);
}

}  // namespace resident::detail
