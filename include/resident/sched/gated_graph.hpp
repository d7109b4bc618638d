#pragma once
// Kernel-boundary preemption for kernels nobody can edit: a captured CUDA graph (PyTorch's,
// cuDNN's, cuBLAS's) run as best-effort work that stops at its next kernel boundary while a
// real-time loop holds its preempt word up, with no host on that path.
//
// How: a copy of the graph gets a gate before its kernel nodes (every one, or every n-th in
// topological order): a one-thread kernel whose node takes over the kernel's in-edges and that
// the kernel then depends on. A gate reads the preempt word; down, it returns at once; up, it
// waits on the device until the word falls, so the kernels after it are not started while the
// real-time work runs, and the ones already running finish (closed kernels cannot be cut
// part-way; the preemption latency is at most the longest kernel in flight). Why gates in the
// graph rather than a device-launched driver of segments: the graph stays one launch, with the
// same node order and concurrency as captured, needs nothing of the kernels, and costs one tiny
// kernel node per gate when the word is never raised (measured per model in bench disb).
//
// A gate never waits for ever: a word up for longer than `timeout` (a real-time loop that died
// with it raised) releases the gate, which counts a timeout that stats() reports.
//
// Only the graph's top-level kernel nodes are gated (not the bodies of child or conditional
// nodes), and a kernel whose in-edges carry edge data (programmatic edges) keeps them ungated.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/graph.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/sched/stamp_ring.hpp"

namespace resident::sched {

struct gate_options {
  /// A gate before every `every`-th kernel node in topological order (1: before each kernel).
  std::int32_t every{1};
  /// How long a gate waits on a raised word before it lets the graph go on and counts a
  /// timeout.
  std::chrono::nanoseconds timeout{std::chrono::milliseconds(100)};
  /// Diagnostics: a ring of this many stamps (a power of two, see stamp_ring) records when
  /// each gate that found the word up began to hold; with the real-time loop's raise stamps
  /// it gives every raise's preemption latency. 0: none kept.
  std::size_t hold_stamps{0};
};

/// What the gates counted since the gated graph was built.
struct gate_stats {
  std::uint64_t passes{};     // gates executed
  std::uint64_t waits{};      // gates that found the word raised
  std::uint64_t waited_ns{};  // their time waiting, in all (device clock)
  std::uint64_t max_wait_ns{};
  std::uint64_t timeouts{};  // gates released by the timeout with the word still raised
  /// %globaltimer when the first gate since reset_first_wait() found the word raised (UINT64_MAX:
  /// none did), written as that gate begins to wait: a reader sees a gate holding while it still
  /// holds (the counts above are added when a wait ends). With raise_on_device's stamp,
  /// first_wait_ns - raised_ns is the preemption latency: how long the kernels in flight at the
  /// raise took to reach their next gate.
  std::uint64_t first_wait_ns{};
};

/// Raises `word` from the device, stream-ordered on `s`: a one-thread kernel stores
/// %globaltimer into *raised_ns (device memory) and then the word (release, system scope), so
/// the stamp is on the gates' clock. For measuring preemption latency; a loop raises its word
/// itself.
void raise_on_device(std::uint32_t* word, std::uint64_t* raised_ns, stream_view s);

class gated_graph {
 public:
  /// Copies `source` (left as it is) and gates the copy; `preempt_word` is the device word a
  /// real-time loop raises (preempt_signal::word()). invalid_argument for a null graph or word,
  /// every < 1 or a timeout <= 0; cuda_error naming the call when CUDA refuses.
  gated_graph(cudaGraph_t source, const std::uint32_t* preempt_word, gate_options options = {});
  /// Waits for the last launch to end before freeing what its gates write: a launch held by a
  /// raised word ends within its gates' timeouts, so the wait is bounded (no memory is freed
  /// under the GPU).
  ~gated_graph();
  gated_graph(const gated_graph&) = delete;
  gated_graph& operator=(const gated_graph&) = delete;

  /// Launches the gated graph on `s` (as cudaGraphLaunch), and notes the launch's end.
  void launch(stream_view s) const;
  [[nodiscard]] std::int32_t gates() const noexcept { return _gates; }
  /// Kernel nodes of the graph's top level.
  [[nodiscard]] std::int32_t kernels() const noexcept { return _kernels; }
  /// Kernel nodes left ungated because an in-edge carries edge data.
  [[nodiscard]] std::int32_t ungated_edges() const noexcept { return _ungated; }
  /// The counters, read on a stream of their own (the graph may be running).
  [[nodiscard]] gate_stats stats() const;
  /// Forgets first_wait_ns (synchronously, on the reader stream), before the next raise.
  void reset_first_wait() const;
  /// With gate_options::hold_stamps: when each gate began to hold, oldest first, and how many
  /// older ones the ring dropped (synchronous). Without: empty and 0.
  [[nodiscard]] std::vector<std::uint64_t> holds() const;
  [[nodiscard]] std::uint64_t holds_lost() const;
  /// The gated copy (for a DOT file).
  [[nodiscard]] const graph& gated() const noexcept { return _graph; }

 private:
  /// The gated copy of `source`; counts into _gates, _kernels and _ungated.
  [[nodiscard]] graph build(cudaGraph_t source, const std::uint32_t* word,
                            const gate_options& options);

  device_buffer _stats;  // gate_stats, written by the gates
  std::optional<stamp_ring> _holds;
  stream _reader;
  std::int32_t _gates{0};
  std::int32_t _kernels{0};
  std::int32_t _ungated{0};
  graph _graph;  // after the members build() writes
  graph_exec _exec;
  event _last;  // recorded after every launch
};

}  // namespace resident::sched
