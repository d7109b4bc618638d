#include "resident/exec/run_handle.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "resident/cuda/device.hpp"
#include "resident/detail/supervised_loop.hpp"

#include "resident/partition/green_context.hpp"

namespace resident {

namespace {

std::string loop_name(const Application& app, execution_mode mode) {
  return std::string(to_string(mode)) + " loop of application '" + app.name() + "'";
}

// Once per process: lazy module loading and a loop that never lets the context go idle do not
// mix (see lazy_module_loading()). Only a note: a program that loads its kernels first is fine.
void note_lazy_loading() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!lazy_module_loading()) return;  // eager, or the driver cannot say
    std::fprintf(stderr,
                 "resident: note: CUDA loads kernels lazily in this process "
                 "(CUDA_MODULE_LOADING is not EAGER). A kernel launched for the first time while "
                 "a resident loop runs may not start until the loop ends. Set "
                 "CUDA_MODULE_LOADING=EAGER before the first CUDA call, or load such kernels "
                 "before run_async (resident::load_kernel).\n");
  });
}
}  // namespace

run_handle::run_handle(Application& app, execution_mode mode, run_options options)
    : _guard(app, std::string(to_string(mode))), _mode(mode) {
  std::unique_ptr<Executor> executor;
  {
    // Should anything below throw once the loop runs, the executor's destructor stops it.
    // With a partition: its context is current when the build starts. The executor allocates
    // in the device's primary context (current_device_guard), which outlives the partition, and
    // captures and launches on the partition's streams, so every node runs on its SMs.
    partition::green_context::current_scope in_partition(options.partition.get());
    executor = make_executor(app, mode, options);
    executor->launch();
  }
  if (is_resident(mode)) note_lazy_loading();
  _loop = std::make_unique<detail::supervised_loop>(std::move(executor), loop_name(app, mode),
                                                    std::move(options));
}

run_handle::~run_handle() {
  if (!_loop->torn_down()) {
    const tear_down_report r = tear_down();
    if (!r.stopped || !r.error.empty()) {
      std::fprintf(stderr, "resident: tear-down at destruction: %s\n", r.error.c_str());
    }
  }
}

bool run_handle::is_launched() const noexcept { return _loop->launched(); }

loop_counters run_handle::counters() const noexcept { return _loop->counters(); }

loop_health run_handle::health() const { return _loop->health(); }

tear_down_report run_handle::tear_down(std::chrono::milliseconds timeout) {
  const bool first = !_loop->torn_down();
  tear_down_report report = _loop->tear_down(timeout);
  if (first && _loop->abandoned()) {
    // The application stays reserved: a new run would share its port memory with this loop.
    (void)new Application::run_guard(std::move(_guard));
  }
  return report;
}

void run_handle::write_dot(const std::string& path) const { _loop->write_dot(path); }

const std::vector<telemetry_entry>& run_handle::telemetry() const noexcept {
  return _loop->telemetry();
}

std::vector<int> run_handle::sms_seen() const { return _loop->sms_seen(); }

std::uint64_t run_handle::telemetry_lost() const noexcept { return _loop->telemetry_lost(); }

std::unique_ptr<run_handle> run_async(Application& app, execution_mode mode, run_options options) {
  return std::make_unique<run_handle>(app, mode, std::move(options));
}

}  // namespace resident
