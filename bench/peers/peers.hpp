#pragma once
// Minimal hand-written sensor -> GPU -> actuator loops: the yardsticks `resident bench io --peers`
// measures resident's modes against. Each speaks exactly the mailbox's protocol (the newest
// sample after the last one taken, read under the slot's sequence lock; the output written with
// a begin/end commit stamp and system-scope fences, as mailbox_rx and mailbox_tx do), so a ratio
// resident / peer prices the framework, not a simpler protocol. What a peer leaves out is what
// the framework adds: policies other than skip-duplicate, a controller, telemetry, heartbeat,
// stall detection, preemption, counters of drops and repeats.
//
//   while       WHILE { poll kernel (bounded in-kernel budget; sets both predicates)
//                       IF { [body] commit kernel } }
//   tail        M = poll kernel -> tail-launches W (sample) or M (none);
//               W = [body] commit kernel -> tail-launches M
//   host-graph  a pinned host thread: gate on the sensor word, launch one graph (empty: one
//               kernel that takes and commits; matmul6: take, body, commit), synchronize
//   persistent  one block, launched once: polls, takes, commits, loops (empty body only: cuBLAS
//               cannot run inside a kernel)
//
// Body: "empty" commits the sample's own payload; "matmul6" runs six dependent 512 x 512 fp32
// cuBLAS products of a fixed input (the io benchmark's matmul6 workload: same input, weights and
// math mode) and commits the first two values of the result.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "resident/io/mailbox.hpp"

namespace resident::peers {

enum class peer_kind { while_loop, tail, host_graph, persistent };

/// "while", "tail", "host-graph", "persistent".
[[nodiscard]] std::string_view to_string(peer_kind k) noexcept;
/// Throws std::invalid_argument naming the accepted names.
[[nodiscard]] peer_kind parse_peer(std::string_view name);

enum class peer_body { empty, matmul6 };

struct peer_config {
  peer_kind kind{peer_kind::while_loop};
  peer_body body{peer_body::empty};
  /// In-kernel polling budget of one pass (while, tail, persistent): how long a pass waits for
  /// a sample before it idles (and looks at the stop word).
  std::uint64_t poll_ns{20'000'000};
  /// host-graph: run first on the loop thread (pinning it, as the benchmark does).
  std::function<void()> on_loop_thread_start;
};

/// One peer loop serving `mailbox` (which must outlive it, and no other loop may serve it while
/// this one runs). Everything is allocated and captured in the constructor.
class peer_loop {
 public:
  peer_loop(const io::mailbox& mailbox, peer_config config);
  ~peer_loop();  // stops a running loop (bounded); a loop that does not stop is left its memory
  peer_loop(const peer_loop&) = delete;
  peer_loop& operator=(const peer_loop&) = delete;

  /// Starts serving samples published after now.
  void start();
  /// The last sample committed (0 before the first), and how many were.
  [[nodiscard]] std::uint64_t last_seq() const noexcept;
  [[nodiscard]] std::uint64_t processed() const noexcept;
  /// Asks the loop to stop and waits up to `limit`; true when it stopped. Throws
  /// std::runtime_error naming the peer and the CUDA error when the loop failed.
  bool stop(std::chrono::milliseconds limit);
  [[nodiscard]] std::string name() const;

  struct impl;

 private:
  std::unique_ptr<impl> _impl;
};

}  // namespace resident::peers
