#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "resident/app/loop.hpp"
#include "resident/app/stream_plan.hpp"

namespace resident {

namespace partition {
class green_context;
}

struct loop_counters;  // resident/exec/executor.hpp

struct run_options {
  /// δ: how long the controller sleeps in an iteration that released nothing (0 spins).
  /// Host-driven modes sleep on the host instead.
  std::uint64_t idle_sleep_ns{0};
  /// How long a handler kernel may poll for input before giving the iteration up (resident
  /// modes; host-driven modes poll on the host and pass 0 to the handler).
  std::uint64_t poll_ns{0};
  sample_policy policy{sample_policy::skip_duplicate};
  /// A heartbeat frozen this long is reported as a stall (never a silent hang).
  std::chrono::milliseconds stall_timeout{2000};
  /// Called from the supervisor thread with a description when a stall is detected.
  /// Default: print to stderr.
  std::function<void(const std::string&)> on_stall;
  /// When non-empty, the built CUDA graph is written there as Graphviz DOT at launch
  /// (tail mode also writes graph W next to it, as <name>.work.dot).
  std::string dot_path;
  /// CUDA device ordinal.
  int device{0};
  /// Per-iteration device timestamps to keep (0: telemetry off). The loop files them into a
  /// device ring that the supervisor drains off the critical path; the host memory for all of
  /// them is taken before launch.
  std::size_t telemetry_samples{0};
  /// Streaming telemetry, for runs of any length: when set, the supervisor hands each batch it
  /// drains to this function (on its own thread, off the critical path, oldest entry first) and
  /// keeps none itself, so run_handle::telemetry() stays empty and the run's memory does not
  /// grow with its length. telemetry_samples then sizes only the device ring, which the
  /// supervisor drains once half full or once its oldest undrained entry may be
  /// telemetry_max_age old (below); entries the loop overwrote before they were drained, and
  /// a batch during which this function threw, count in run_handle::telemetry_lost() (the
  /// supervisor prints the exception and goes on; at tear-down the report's error names it).
  /// The entries are valid only during the call. Needs telemetry_samples > 0.
  std::function<void(std::span<const telemetry_entry>)> on_telemetry;
  /// With on_telemetry: how stale the consumer's view may get. The supervisor also drains the
  /// ring when entries have waited this long, so a slow loop's entries arrive within about this
  /// plus the supervisor's 50 ms tick, not only when half the ring is full (a 60 Hz camera takes
  /// a minute to fill half of 8,192 entries). Each drain is three small copies on the
  /// supervisor's stream; 0 drains only when half full.
  std::chrono::milliseconds telemetry_max_age{250};
  /// Host-driven modes: called first on the loop thread (e.g. to pin it and raise its
  /// priority). Resident modes have no loop thread and never call it.
  std::function<void()> on_loop_thread_start;
  /// An SM partition (resident/partition/green_context.hpp) to confine the loop to: every
  /// kernel of the loop (handler, controller, operators, end marker) runs on its SMs only.
  /// Null: the whole GPU. Modes that cannot honour a partition refuse it at run_async.
  std::shared_ptr<const partition::green_context> partition;
  /// Record which SMs the loop's own kernels (handler, controller, end marker) ran on, for
  /// run_handle::sms_seen(): one atomic OR per kernel, so off unless asked for.
  bool record_sms{false};
  /// Real-time loop sharing the GPU with cooperative best-effort kernels (resident/sched): the
  /// handler raises `preempt.word` as soon as a new sample is ready (the controller raises it
  /// when it releases a repeat) and the end marker clears it, so best-effort blocks leave the
  /// SMs with no host on the path. Resident and host-driven modes alike; null: off.
  preempt_hook preempt;
  /// Priority of the stream the loop is launched on (cudaDeviceGetStreamPriorityRange: lower
  /// is higher priority; 0 the default). Resident modes launch their graph once on it, so every
  /// kernel of the loop inherits it.
  int stream_priority{0};
  /// How the operator DAG is captured (docs/design.md, "Capture order"): `chain` (topological
  /// order on one stream; branches run one after another) or `forked` (independent branches on
  /// forked streams, so an egress commits as soon as its own branch is done; the next iteration
  /// still waits for the slowest branch). Every mode honours it; eager launches the branches on
  /// real streams joined by events. The data-ready handler is captured as a chain either way.
  capture_order capture{capture_order::chain};
  /// Fused iteration (graph modes): a data-ready handler that is one framework kernel (the
  /// mailbox's) runs the controller step at its end, and an egress that is the DAG's only sink
  /// (the mailbox's) runs the end marker's, so an iteration has two kernels fewer. Counters,
  /// policies, tear-down and stall detection are the same either way; false keeps the separate
  /// controller and end-marker kernels everywhere (for comparison).
  bool fuse{true};
  /// persistent mode: thread blocks of its kernel. 1 (default): one block, block barriers
  /// between forms. More: a cooperative launch, grid barriers between forms, the element-wise
  /// forms spread over every block; refused when more than fit at once on the device (or the
  /// partition). 0: as many as fit, less 4 SMs' worth when the DAG holds io.frame_rx (the
  /// sensor bridge's commit kernel must find room beside the loop for frames to arrive).
  int persistent_blocks{1};
  /// persistent mode: the kernel's first thread stamps the device clock after every barrier of
  /// a DAG pass (each phase of each device form, the end-marker step, the closing barrier) into
  /// a device table, and tear_down_report::phases summarizes them. A separate kernel
  /// instantiation: off, the loop runs no timing code. Other modes refuse it.
  bool phase_times{false};
  /// Rows of that table (2 to 2^20): the summary covers the latest phase_rows - 1 DAG passes.
  std::uint32_t phase_rows{1U << 16};
  /// The loop's relative deadline (0: none). For every processed sample the device measures
  /// release -> commit (the controller's release of the DAG to the egress's commit, or to the
  /// end marker where no egress stamps one) and, where the handler knows when the sample
  /// arrived (the sensor bridge's record), arrival -> commit; a response longer than the
  /// deadline is a miss. Misses, the worst overrun and the longest response are counted exactly
  /// in loop_counters (every mode; at most 1 s).
  std::chrono::nanoseconds deadline{0};
  /// Called from the supervisor thread (off the critical path) when the miss count grew since it
  /// last looked: the counters at that moment. Default: none (the counters still count).
  std::function<void(const loop_counters&)> on_deadline_miss;

  /// Throws std::invalid_argument for inconsistent values (e.g. a stall timeout shorter than δ).
  void validate() const;
};

[[nodiscard]] std::string_view to_string(sample_policy p) noexcept;
/// "newest", "every", "skip-duplicate"; throws std::invalid_argument listing them.
[[nodiscard]] sample_policy parse_sample_policy(std::string_view name);

}  // namespace resident
