#pragma once
// Operator: the unit of GPU work in a resident application.
//
//   setup(spec)     declares device ports (with byte sizes) and parameters; runs once, when the
//                   application creates the operator, and never touches the GPU.
//   initialize()    runs once after port memory is resolved and before the first capture:
//                   create library handles, allocate workspaces (capture never allocates).
//   compute(ctx)    enqueues the operator's CUDA work on ctx.stream(). In graph modes it runs
//                   once per capture and its work is replayed every iteration, so host logic
//                   inside compute() does NOT repeat per sample. In eager mode it runs every
//                   iteration. It must only enqueue work on ctx.stream(), which may differ
//                   from one operator to the next (run_options::capture = forked puts each
//                   branch on its own stream): an operator that keeps a stream (a library
//                   handle) binds ctx.stream() here, never in initialize().

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "resident/app/device_form.hpp"
#include "resident/app/loop.hpp"
#include "resident/app/operator_spec.hpp"
#include "resident/cuda/graph.hpp"

namespace resident {

class Operator;

/// What compute() sees: the stream to enqueue on, the port memory and the loop state.
class CaptureContext {
 public:
  CaptureContext(const Operator& op, cudaStream_t stream, loop_state* loop, bool capturing,
                 bool programmatic = false, graph_kind target = graph_kind::host_launched) noexcept;

  [[nodiscard]] cudaStream_t stream() const noexcept { return _stream; }
  /// Device pointer of a port (input or output) by name; throws naming the operator and port.
  template <class T>
  [[nodiscard]] T* device_memory(std::string_view port_name) const {
    return static_cast<T*>(port(port_name).bound);
  }
  [[nodiscard]] std::size_t port_bytes(std::string_view port_name) const {
    return port(port_name).bytes;
  }
  /// Device pointer to this run's loop state: handlers publish samples through it and egress
  /// operators read the sample being processed (see resident/app/loop_device.cuh).
  [[nodiscard]] loop_state* loop() const noexcept { return _loop; }
  /// False in eager mode, where compute() runs every iteration instead of being captured.
  [[nodiscard]] bool capturing() const noexcept { return _capturing; }
  /// While capturing: the kind of graph the work lands in, which decides the node types it may
  /// hold. host-graph and while modes capture the DAG into a conditional node's body (and while
  /// mode its handler too), tail mode into device-launched graphs; host-graph's handler and
  /// direct_submission::capture go into a graph the host launches. An operator whose work a
  /// kind cannot hold may refuse it here with a composition_error naming what it needs.
  [[nodiscard]] graph_kind capture_target() const noexcept { return _target; }
  /// True when the caller asked for programmatic dependent launch (sm_90): an operator may then
  /// launch its kernels with cudaLaunchAttributeProgrammaticStreamSerialization, provided each
  /// such kernel waits (cudaGridDependencySynchronize) before it reads or writes any memory the
  /// previous work on the stream touches. Kernels launched without it, memcpys and library
  /// calls stay fully ordered. Only direct_submission::capture(s, launch_edges::programmatic)
  /// sets it; the loop modes do not.
  [[nodiscard]] bool programmatic_launch() const noexcept { return _programmatic; }
  [[nodiscard]] const std::string& operator_name() const noexcept;

 private:
  [[nodiscard]] const port_spec& port(std::string_view name) const;

  const Operator& _op;
  cudaStream_t _stream;
  loop_state* _loop;
  bool _capturing;
  bool _programmatic;
  graph_kind _target;
};

class Operator {
 public:
  Operator() = default;
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;
  virtual ~Operator();

  virtual void setup(OperatorSpec& spec) = 0;
  virtual void initialize() {}
  virtual void compute(CaptureContext& ctx) = 0;
  /// persistent mode: this operator's device form with its arguments bound to its port memory
  /// (called after initialize(); resident/app/device_form.hpp). The default has none, and
  /// persistent mode refuses the operator by name.
  [[nodiscard]] virtual std::optional<device_form> persistent_form() const;

  /// The device memory bound to port `port` (after the application is materialized); throws
  /// composition_error naming the operator and the port when there is none.
  [[nodiscard]] void* bound_memory(std::string_view port) const;
  template <class T>
  [[nodiscard]] T* bound(std::string_view port) const {
    return static_cast<T*>(bound_memory(port));
  }
  /// The row pitch in bytes of an image port, as declared in setup().
  [[nodiscard]] std::size_t bound_pitch(std::string_view image_port) const;

  [[nodiscard]] const std::string& name() const noexcept { return _name; }
  /// Whether an Application has set the operator up (make_operator): spec() is valid only then.
  [[nodiscard]] bool composed() const noexcept { return _spec != nullptr; }
  [[nodiscard]] const OperatorSpec& spec() const noexcept { return *_spec; }
  [[nodiscard]] OperatorSpec& spec() noexcept { return *_spec; }

 private:
  friend class Application;
  std::string _name;
  std::unique_ptr<OperatorSpec> _spec;
};

}  // namespace resident
