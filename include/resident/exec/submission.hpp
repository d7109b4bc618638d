#pragma once
// Direct submission: an application's operator DAG enqueued on a stream by the caller, outside
// any loop (no handler, controller or end marker). This is the lab's submission-mode view of a
// pipeline: the caller picks the stream (the legacy default stream, an explicit one) or records
// the same work into a CUDA graph and replays it.

#include <vector>

#include "resident/app/application.hpp"
#include "resident/cuda/graph.hpp"
#include "resident/cuda/stream.hpp"

namespace resident {

/// How the kernels of a captured DAG depend on each other: `full` edges (each waits for the
/// previous node to finish before it is even scheduled) or `programmatic` ones (operators that
/// support it launch as programmatic dependents, sm_90: a kernel is scheduled while its
/// predecessor runs and waits on the device for its data, which takes most of a node's launch
/// latency off the chain).
enum class launch_edges { full, programmatic };

class direct_submission {
 public:
  /// Plans and materializes `app` and holds it (no loop may run it meanwhile). An application
  /// with a data-ready handler is refused: its handler needs a loop to publish samples.
  explicit direct_submission(Application& app);

  /// Enqueues every operator's compute() in topological order on `s`; operators see
  /// capturing() == false and loop() == nullptr. `s` may be cudaStreamLegacy.
  void submit(stream_view s);

  /// Enqueues one operator's compute() (index into order()), e.g. to see what each costs.
  void submit_operator(std::size_t index, stream_view s);

  /// Records the same work into one graph by stream capture on `s` (capturing() == true).
  /// Replays read and write the port buffers as they were bound at capture time. `edges`:
  /// see launch_edges (operators see it as CaptureContext::programmatic_launch()).
  [[nodiscard]] graph capture(stream_view s, launch_edges edges = launch_edges::full);

  [[nodiscard]] const std::vector<Operator*>& order() const noexcept { return _order; }

 private:
  void compute_all(stream_view s, bool capturing, bool programmatic = false);

  Application& _app;
  Application::run_guard _guard;
  std::vector<Operator*> _order;
};

}  // namespace resident
