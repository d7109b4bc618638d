#pragma once
// Shared machinery of the four modes: the loop's memory (host-mapped control block, device
// state), its streams, the counters, and the host-driven loop thread used by eager and
// host-graph.

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda/host_words.hpp"
#include "resident/app/application.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/detail/loop_state.hpp"
#include "resident/exec/executor.hpp"

namespace resident::detail {

/// Memory and streams of one loop. Allocated before launch; nothing is allocated afterwards.
struct loop_resources {
  /// `streams`: how many streams the operator DAG is captured on (stream_plan::streams); the
  /// loop stream is the first, the others are made like it.
  loop_resources(const Application& app, execution_mode mode, const run_options& options,
                 std::size_t streams);

  [[nodiscard]] loop_control* control() const noexcept {
    return control_mem.host_as<loop_control>();
  }
  [[nodiscard]] loop_state* state() const noexcept { return state_mem.data_as<loop_state>(); }
  /// Sets the starting sample and copies `config` to the device state (synchronously, before
  /// launch).
  void upload_config(std::uint64_t start_seq);
  /// The streams of the operator DAG, by stream_plan index: the loop stream, then the branches.
  [[nodiscard]] std::vector<cudaStream_t> dag_streams() const;

  host_mapped_buffer control_mem;
  device_buffer state_mem;
  stream loop_stream;
  stream handler_stream;  // the data-ready handler is captured on its own stream
  loop_state config{};    // host copy of the initial state
  // Forked capture: streams 1.. of the stream plan (made like the loop stream).
  std::vector<stream> branch_streams;
  std::uint64_t start_seq{0};
  // Telemetry (only when run_options::telemetry_samples > 0): the device ring, and what the
  // supervisor needs to drain it on a stream of its own.
  device_buffer ring_mem;
  stream drain_stream;
  pinned_buffer drain_staging;
  pinned_buffer drain_word;
};

/// What a loop may touch besides its own memory, taken from the Application at construction:
/// its operators (with their memory and the mailboxes they hold) and its port memory. The
/// executor never refers to the Application afterwards, so a loop that could not be stopped
/// never touches freed memory, even once the Application is gone.
struct app_lifetime {
  std::vector<std::shared_ptr<Operator>> operators;
  std::shared_ptr<const void> port_memory;
};

/// Common base: owns the resources; counters and failure come from the control block.
class loop_executor : public Executor {
 public:
  loop_executor(Application& app, execution_mode mode, const run_options& options);

  [[nodiscard]] execution_mode mode() const noexcept override { return _mode; }
  [[nodiscard]] loop_counters counters() const noexcept override;
  [[nodiscard]] std::uint64_t heartbeat() const noexcept override;
  [[nodiscard]] std::string failure() const override;
  void drain_telemetry(bool force) override;
  [[nodiscard]] const std::vector<telemetry_entry>& telemetry() const noexcept override {
    return _telemetry;
  }
  [[nodiscard]] std::uint64_t telemetry_lost() const noexcept override { return _telemetry_lost; }
  [[nodiscard]] double mean_iteration_ns() override;
  [[nodiscard]] std::vector<int> sms_seen() override;

 protected:
  [[nodiscard]] loop_resources& res() const noexcept { return *_res; }
  [[nodiscard]] const std::shared_ptr<loop_resources>& shared_res() const noexcept { return _res; }
  [[nodiscard]] const dag_plan& plan() const noexcept { return _plan; }
  /// Where each DAG operator is captured (run_options::capture).
  [[nodiscard]] const stream_plan& streams() const noexcept { return _streams; }
  [[nodiscard]] const data_ready_handler& handler() const noexcept { return _handler; }
  [[nodiscard]] const std::string& app_name() const noexcept { return _app_name; }
  [[nodiscard]] const run_options& options() const noexcept { return _options; }
  [[nodiscard]] loop_state* loop() const noexcept { return _res->state(); }
  /// "<mode> loop of application '<name>'", for messages.
  [[nodiscard]] std::string loop_name() const;
  /// What every launch() does first: initial state to the device, DOT dump if asked for.
  void prepare_launch();
  /// Gives up the loop's memory without freeing it (the GPU may still touch it): the loop
  /// resources and what the Application lent stay allocated for the rest of the process.
  void leak_loop_memory() noexcept;

 private:
  execution_mode _mode;
  run_options _options;
  std::string _app_name;
  dag_plan _plan;
  stream_plan _streams;
  data_ready_handler _handler;
  std::shared_ptr<const app_lifetime> _lifetime;
  std::shared_ptr<loop_resources> _res;
  std::mutex _drain_mutex;
  std::vector<telemetry_entry> _telemetry;  // reserved before launch: draining never allocates
  std::uint64_t _drained{0};
  std::chrono::steady_clock::time_point _last_drain{};  // of a streaming ring (on_telemetry)
  std::uint64_t _telemetry_lost{0};
};

/// while and tail: the GPU releases every iteration; the host only sets the tear-down word and
/// watches `stopped`. The destructor tears a running loop down (bounded); a loop that does not
/// stop in time has its memory leaked rather than freed under it.
class resident_executor : public loop_executor {
 public:
  resident_executor(Application& app, execution_mode mode, const run_options& options);
  ~resident_executor() override;

  void launch() final;
  void request_stop() noexcept final;
  [[nodiscard]] bool stopped() final;
  void abandon() noexcept final;

 protected:
  /// Launches the loop's entry graph once on the loop stream (after prepare_launch()).
  virtual void launch_graphs() = 0;
  /// The mode's graph executables, leaked with the loop memory on abandon().
  virtual void leak_graphs() noexcept = 0;
  /// Every mode's destructor calls this first, while its graphs still exist: a running loop is
  /// stopped (bounded wait) or abandoned before anything it uses is destroyed.
  void stop_before_destruction() noexcept;

 private:
  bool _running{false};  // launched and not yet seen stopped
};

/// eager and host-graph: a host thread polls, launches one iteration's work, synchronizes.
/// The thread holds everything it touches through `host_loop`, shared with the executor, so an
/// abandoned thread that returns late from a wait frees it then, and never touches the executor.
class host_driven_executor : public loop_executor {
 public:
  using loop_executor::loop_executor;
  ~host_driven_executor() override;

  void launch() final;
  void request_stop() noexcept final;
  [[nodiscard]] bool stopped() final;
  [[nodiscard]] std::string failure() const final;
  void abandon() noexcept final;
  [[nodiscard]] std::uint64_t heartbeat() const noexcept final;

 protected:
  /// One iteration's work (handler, controller, and the DAG if released), waited for; returns
  /// whether the DAG ran. It must capture only shared state (never the executor).
  using iteration_fn = std::function<bool()>;
  [[nodiscard]] virtual iteration_fn make_iteration() = 0;

 private:
  struct host_loop;
  static void loop_thread(const std::shared_ptr<host_loop>& loop);

  std::shared_ptr<host_loop> _loop;
  std::thread _thread;
};

}  // namespace resident::detail
