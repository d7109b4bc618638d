#pragma once
// Shared machinery of the four modes: the loop's memory (host-mapped control block, device
// state), its streams, the counters, and the host-driven loop thread used by eager and
// host-graph.

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "resident/app/application.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/exec/executor.hpp"

namespace resident::detail {

/// Host side of a single-writer word the device writes in host-mapped memory.
template <class T>
[[nodiscard]] T host_load_acquire(const T& word) noexcept {
  return std::atomic_ref<T>(const_cast<T&>(word)).load(std::memory_order_acquire);
}
template <class T>
void host_store_release(T& word, T value) noexcept {
  std::atomic_ref<T>(word).store(value, std::memory_order_release);
}

/// Memory and streams of one loop. Allocated before launch; nothing is allocated afterwards.
struct loop_resources {
  loop_resources(const Application& app, execution_mode mode, const run_options& options);

  [[nodiscard]] loop_control* control() const noexcept {
    return control_mem.host_as<loop_control>();
  }
  [[nodiscard]] loop_state* state() const noexcept { return state_mem.data_as<loop_state>(); }
  /// Sets the starting sample and copies `config` to the device state (synchronously, before
  /// launch).
  void upload_config(std::uint64_t start_seq);

  host_mapped_buffer control_mem;
  device_buffer state_mem;
  stream loop_stream;
  stream handler_stream;  // the data-ready handler is captured on its own stream
  loop_state config{};    // host copy of the initial state
  std::uint64_t start_seq{0};
  // Telemetry (only when run_options::telemetry_samples > 0): the device ring, and what the
  // supervisor needs to drain it on a stream of its own.
  device_buffer ring_mem;
  stream drain_stream;
  pinned_buffer drain_staging;
  pinned_buffer drain_word;
};

/// Common base: owns the resources; counters and failure come from the control block.
class loop_executor : public Executor {
 public:
  loop_executor(Application& app, execution_mode mode, const run_options& options);

  [[nodiscard]] execution_mode mode() const noexcept override { return _mode; }
  [[nodiscard]] loop_counters counters() const noexcept override;
  [[nodiscard]] std::uint64_t heartbeat() const noexcept override;
  [[nodiscard]] std::string failure() const override;
  void abandon() noexcept override;
  void drain_telemetry(bool force) override;
  [[nodiscard]] const std::vector<telemetry_entry>& telemetry() const noexcept override {
    return _telemetry;
  }
  [[nodiscard]] std::uint64_t telemetry_lost() const noexcept override { return _telemetry_lost; }
  [[nodiscard]] double mean_iteration_ns() override;
  [[nodiscard]] std::vector<int> sms_seen() override;

 protected:
  [[nodiscard]] loop_resources& res() const noexcept { return *_res; }
  [[nodiscard]] const dag_plan& plan() const noexcept { return *_plan; }
  [[nodiscard]] Application& app() const noexcept { return _app; }
  [[nodiscard]] const run_options& options() const noexcept { return _options; }
  [[nodiscard]] loop_state* loop() const noexcept { return _res->state(); }
  /// What every launch() does first: initial state to the device, DOT dump if asked for.
  void prepare_launch();

 private:
  Application& _app;
  execution_mode _mode;
  run_options _options;
  const dag_plan* _plan;
  std::unique_ptr<loop_resources> _res;
  std::mutex _drain_mutex;
  std::vector<telemetry_entry> _telemetry;  // reserved before launch: draining never allocates
  std::uint64_t _drained{0};
  std::uint64_t _telemetry_lost{0};
};

/// eager and host-graph: a host thread polls, launches one iteration's work, synchronizes.
class host_driven_executor : public loop_executor {
 public:
  using loop_executor::loop_executor;
  ~host_driven_executor() override;

  void launch() final;
  void request_stop() noexcept final { _stop.store(true, std::memory_order_release); }
  [[nodiscard]] bool stopped() final;
  [[nodiscard]] std::string failure() const final;
  void abandon() noexcept final;
  [[nodiscard]] std::uint64_t heartbeat() const noexcept final {
    return _host_heartbeat.load(std::memory_order_relaxed);
  }

 protected:
  /// Enqueues one iteration (handler, controller, and the DAG if released), waits for it and
  /// returns whether the DAG ran.
  virtual bool run_iteration() = 0;

 private:
  void loop_thread();
  void idle_wait() const;

  std::thread _thread;
  std::atomic<bool> _stop{false};
  std::atomic<bool> _exited{false};
  std::atomic<std::uint64_t> _host_heartbeat{0};
  mutable std::mutex _error_mutex;
  std::string _error;
};

}  // namespace resident::detail
