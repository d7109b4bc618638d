#pragma once
// Reset-based preemption on the GPU (REEF, for cooperating kernels): the preempt word that
// real-time work raises, and the runner that keeps a best-effort (BE) kernel sequence on the
// device through be_queue, preempting and resuming it exactly.
//
// Who raises the word: a resident loop does it itself (run_options::preempt = signal.hook();
// the handler raises when a sample is ready, the end marker clears), so no host sits between
// the sensor and the BE kernels leaving the SMs. A host-driven client, or a test, calls
// raise()/clear(). The runner watches the host-mapped mirror: it stops submitting while the
// word is raised, collects the device's completion records of the launches that drained, and
// resumes each from its first unfinished block once the word is clear.

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "resident/app/loop.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/be_queue.hpp"
#include "resident/sched/stamp_ring_view.hpp"

namespace resident::sched {

/// The preempt word (device memory: BE blocks poll it at L2 latency) and its host-mapped
/// mirror. One raiser at a time: a loop (through hook()) or the host (raise/clear).
class preempt_signal {
 public:
  /// Allocates the word on `device`; the caller's current device is left as it was.
  explicit preempt_signal(int device = 0);

  /// For run_options::preempt of a real-time loop.
  [[nodiscard]] preempt_hook hook() const noexcept;
  /// Device pointer for be_launch_view::preempt.
  [[nodiscard]] const std::uint32_t* word() const noexcept {
    return _word.data_as<std::uint32_t>();
  }

  /// Host-side raise and clear: a 4-byte copy on the signal's own stream, waited for, then the
  /// mirror. Not while a loop holds the hook.
  void raise();
  void clear();

  /// From the mirror (no CUDA call): whether the word is raised now, and how often it was.
  [[nodiscard]] bool raised() const noexcept;
  [[nodiscard]] std::uint64_t raises() const noexcept;
  [[nodiscard]] preempt_mirror mirror() const noexcept;

 private:
  preempt_signal(int device, const current_device_guard& on_device);
  void set(std::uint32_t value);

  int _device;
  device_buffer _word;
  host_mapped_buffer _mirror;
  pinned_buffer _staging;
  stream _stream;
};

struct be_runner_options {
  std::string name{"be"};
  /// Launches in flight at once (be_queue's window).
  std::size_t window{2};
  /// Launches carry the preempt word, and the runner preempts and resumes them. Off: the
  /// kernels ignore the word and run every block (multi-stream and priority policies).
  bool preemptible{true};
  /// Submit only while no real-time iteration is active (the word is clear), one launch at a
  /// time; a real-time iteration that starts meanwhile waits for that launch (the sequential
  /// policy). Implies a window of 1.
  bool sequential{false};
  /// Resumed attempts of idempotent launches also skip every block already done (one L2 read
  /// per block: the done words live in device memory). false: they only start at the first
  /// unfinished block and re-run the done blocks after it, as be_queue allows.
  bool exact_resume_always{true};
  /// Blocks of calls with a checkpoint size (be_call::saved_floats: gemm, conv2d) that the word
  /// stops part-way keep their partial sums in device memory, and the resumed attempt goes on
  /// from them: a preemption wastes at most one K-step per block instead of every block in
  /// flight. Costs 2 x blocks x saved_floats floats of device memory per such call.
  bool checkpoint{true};
  /// be_launch_view::min_saved_steps of the checkpointed launches.
  std::uint32_t checkpoint_min_steps{1};
  /// Spatial preemption (be_launch_view::rt_sms): device bitmap of the SMs real-time work runs
  /// on, or null. When set, a raised word clears only those SMs and the runner keeps submitting,
  /// `window` launches in flight. The launches take their blocks from a counter (with
  /// bounded_grid_per_sm blocks per SM on the grid, when set), and a block cut
  /// on an RT SM hands its logical block back to the blocks on the other SMs
  /// (be_launch_view::handback), so a launch finishes without the host. One that still ends
  /// short (every block able to take the rest was on an RT SM) halts the stream when another
  /// launch is in flight, and the runner resubmits what it left at once.
  const std::uint32_t* rt_sms{nullptr};
  /// Spatial preemption: room for real-time work on the RT SMs (be_launch_view::rt_sm_load).
  /// The caller's device array of rt_sm_load_words words, zero, shared by every runner beside
  /// the same real-time loop, or null (no limit). With it, at most `rt_sm_blocks` BE blocks run
  /// on an RT SM at once, so the loop's handler and kernels never wait there for BE blocks to
  /// leave. Needs rt_sms and preemptible.
  std::uint32_t* rt_sm_load{nullptr};
  /// With rt_sm_load: BE blocks an RT SM may hold at once, at least 1 (the library kernels fit
  /// four per SM, so 3 keeps one block's room free).
  std::uint32_t rt_sm_blocks{3};
  /// Time-shared preemption: when nonzero, every launch keeps at most this many blocks per SM
  /// on the grid (be_launch_view::max_grid), and they loop over the logical blocks. A raise
  /// then waits for the blocks on the SMs, instead of also for the queued blocks of a short
  /// kernel (thousands, for a bias or a row sum) to start, see the word and leave. 0: one grid
  /// block per logical block.
  std::int32_t bounded_grid_per_sm{0};
  /// With bounded_grid_per_sm: the blocks take their logical blocks from a work counter (a
  /// pair per launch in flight, zeroed by each launch's last block) instead of a fixed stride.
  bool bounded_grid_counter{false};
  /// Diagnostics: every launch records its running blocks here (be_launch_view::trace), or
  /// null.
  be_trace* trace{nullptr};
  /// Diagnostics, with `trace`: when BE blocks came onto the GPU and left it
  /// (be_launch_view::activity), or inactive.
  stamp_ring_view activity{};
  /// Called first on the scheduler thread (start(), run_sequences()); what it returns lives
  /// until the thread is done. E.g. a partition::green_context::current_scope, so the events
  /// are created in, and the launches made from, the context that owns the stream.
  std::function<std::shared_ptr<void>()> thread_scope;
  /// How long stop() waits for the launches in flight to finish. Past it, stop() throws,
  /// naming the oldest launch, instead of hanging on a stream the GPU does not run.
  std::chrono::milliseconds stop_timeout{10000};
};

/// Spatial preemption beside one real-time loop: the device bitmap of the SMs the loop runs on
/// (bit s of word s / 32, e.g. partition::green_context::sm_mask()) and, with rt_sm_blocks > 0,
/// the per-SM count of BE blocks there (zero). Share one between every runner beside that loop:
/// apply() points a runner's options at it (rt_sms, rt_sm_load, rt_sm_blocks). Device memory of
/// the current device; it must outlive the runners.
class spatial_share {
 public:
  /// invalid_argument for rt_sm_blocks above 64 or a mask that marks no SM.
  spatial_share(const std::array<std::uint32_t, 8>& rt_sm_mask, std::uint32_t rt_sm_blocks);
  void apply(be_runner_options& options) const;
  [[nodiscard]] const std::array<std::uint32_t, 8>& rt_sm_mask() const noexcept { return _mask; }
  [[nodiscard]] int sm_count() const noexcept;
  [[nodiscard]] std::uint32_t rt_sm_blocks() const noexcept { return _rt_sm_blocks; }

 private:
  std::array<std::uint32_t, 8> _mask;
  device_buffer _rt_sms;
  device_buffer _rt_sm_load;  // empty when rt_sm_blocks is 0 (no cap)
  std::uint32_t _rt_sm_blocks;
};

/// Live counts of a running be_runner, readable from any thread (e.g. a progress monitor).
struct be_runner_progress {
  std::uint64_t submissions{};  // launch attempts made
  std::uint64_t retired{};      // attempts whose event completed
};

struct be_runner_stats {
  std::uint64_t sequences{};    // whole passes of the call list completed
  std::uint64_t kernels{};      // launches that finished all their blocks
  std::uint64_t preemptions{};  // times the runner stopped submitting for real-time work
  std::uint64_t preempted_launches{};
  std::uint64_t resumed_launches{};
  std::uint64_t blocks_completed{};
  std::uint64_t blocks_rerun{};  // idempotent blocks run again on a resume
  std::uint64_t early_exits{};   // blocks that returned because of the word
  std::uint64_t checkpoints{};   // of those, blocks that kept their partial sums
  /// Spatial launches: logical blocks a cut block handed back to the rest of its launch.
  std::uint64_t handbacks{};
  /// Commits of a non-idempotent block that had already committed (0: every resume was
  /// exact), counted on the device.
  std::uint64_t repeated_commits{};
  std::uint64_t submissions{};  // launch attempts
};

/// Runs a BE call sequence (e.g. a model's inference) over and over on one stream. Not
/// thread-safe: either start()/stop() (a scheduler thread of its own) or run_sequences() on
/// the calling thread.
class be_runner {
 public:
  /// `signal` may be null only when !options.preemptible && !options.sequential. The stream
  /// is the caller's (e.g. a low-priority stream, or one of a green context). invalid_argument
  /// for an empty call list, a call with no blocks, or fewer calls than the window (record
  /// slots are reused every other sequence).
  be_runner(std::vector<be_call> calls, cudaStream_t stream, const preempt_signal* signal,
            be_runner_options options);
  ~be_runner();
  be_runner(const be_runner&) = delete;
  be_runner& operator=(const be_runner&) = delete;

  /// Starts the scheduler thread: sequences run until stop().
  void start();
  /// Stops submitting, drains what is in flight, joins; rethrows the thread's error.
  be_runner_stats stop();

  /// Runs `sequences` whole passes on the calling thread; `each_poll(poll)` is called once per
  /// scheduling pass (a test raises and clears the signal from it).
  be_runner_stats run_sequences(std::uint64_t sequences,
                                const std::function<void(std::uint64_t)>& each_poll = {});

  [[nodiscard]] const be_queue& queue() const noexcept { return _queue; }
  [[nodiscard]] be_runner_progress progress() const noexcept {
    return {_live_submissions.load(std::memory_order_relaxed),
            _live_retired.load(std::memory_order_relaxed)};
  }
  [[nodiscard]] const std::vector<be_call>& calls() const noexcept { return _calls; }

 private:
  struct launch_meta {
    std::size_t call{};
    std::size_t parity{};
    std::uint64_t sequence{};
  };
  struct flight {
    launch_id id{};
    std::uint32_t attempt{};
    std::size_t event{};               // index into _events
    std::uint64_t raises_at_submit{};  // the mirror's raise count when it was submitted
  };

  /// One scheduling pass: notice the word, retire what drained, resume, then (when `submit`)
  /// fill the window, enqueueing a new sequence first when `enqueue` and nothing is pending.
  void poll_once(bool submit, bool enqueue);
  void enqueue_sequence();
  void retire(const flight& f, std::uint64_t floor);
  /// Device address of a launch's done words.
  [[nodiscard]] std::uint32_t* done_words(const launch_meta& m) const;
  /// Device address of control word i of _words (its own 128-byte line).
  [[nodiscard]] std::uint32_t* word(std::size_t i) const;
  void drain();
  /// On the scheduler thread, once: the events and the cleared halt word.
  void prepare();
  /// The counters, with the device's exits and repeats (a synchronous copy).
  [[nodiscard]] be_runner_stats collect() const;

  std::vector<be_call> _calls;
  cudaStream_t _stream;
  const preempt_signal* _signal;
  be_runner_options _options;
  be_queue _queue;
  std::vector<std::size_t> _offsets;  // per call: first record word
  std::size_t _record_words{};
  std::vector<std::size_t> _saved_offsets;  // per call: first float of its checkpoints
  std::size_t _saved_per_parity{};          // floats
  device_buffer _saved;                     // 2 parities of checkpoints (empty: none)
  device_buffer _progress;                  // the record layout: K-steps checkpointed
  /// 2 parities x all calls' blocks, in device memory: thousands of commits a launch as posted
  /// writes across PCIe would queue the real-time loop's own PCIe reads behind them. The
  /// runner copies a launch's words back when it retires it.
  device_buffer _done;
  pinned_buffer _done_host;       // the copy of one launch's words
  std::unique_ptr<stream> _copy;  // created by prepare(), in the thread's context
  device_buffer _runs;            // the same layout, device atomics
  /// Device words, each on its own 128-byte line (word(i)): [0] halt (be_launch_view::halt of
  /// this stream), [1] exits, [2] repeats, [3] hand-backs, [4] checkpoints. Apart,
  /// because every BE block reads the halt word at each check while, when the preempt word goes
  /// up, hundreds of blocks add to the exit and checkpoint counts.
  static constexpr std::size_t k_words = 5;
  static constexpr std::size_t k_word_stride = 32;
  device_buffer _words;
  /// Spatial or bounded_grid_counter launches: a (next, next_left) pair per event slot, so
  /// each launch in flight has its own; the launch's last block zeroes them.
  device_buffer _counters;
  /// Spatial launches: a be_launch_view::handback area per event slot, _handback_stride words
  /// apart, each with _handback_capacity entries.
  device_buffer _handback;
  std::size_t _handback_stride{0};
  std::int32_t _handback_capacity{0};
  std::int32_t _max_grid{0};   // bounded_grid_per_sm x SMs, set by prepare()
  std::vector<event> _events;  // created by prepare()
  std::shared_ptr<void> _scope;
  std::vector<std::size_t> _free_events;
  std::vector<flight> _in_flight;  // submission order
  std::map<launch_id, launch_meta> _meta;
  std::atomic<std::uint64_t> _live_submissions{0};
  std::atomic<std::uint64_t> _live_retired{0};
  std::uint64_t _next_sequence{0};
  std::uint64_t _seen_raises{0};
  /// A launch came back short before the mirror showed the raise that cut it (the mirror is
  /// written just after the word). Resuming before that raise is visible would resubmit work
  /// that leaves at once, over and over, flooding the SMs the real-time work needs; so the
  /// runner waits until the count passes `_await_floor` (or a millisecond has gone by).
  bool _await_raise{false};
  std::uint64_t _await_floor{0};
  std::int64_t _await_since_ns{0};
  be_runner_stats _stats;
  std::atomic<bool> _stop{false};
  std::thread _thread;
  std::exception_ptr _error;
};

}  // namespace resident::sched
