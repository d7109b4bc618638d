#include "resident/exec/run_handle.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/cuda/device.hpp"
#include "resident/detail/slow_step.hpp"
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
    : run_handle(app, mode, std::move(options), build_only{}) {
  launch();
}

run_handle::run_handle(Application& app, execution_mode mode, run_options options, build_only)
    : _guard(app, std::string(to_string(mode))),
      _mode(mode),
      _name(loop_name(app, mode)),
      _options(std::move(options)) {
  // With a partition: its context is current when the build starts. The executor allocates in
  // the device's primary context (current_device_guard), which outlives the partition, and
  // captures and launches on the partition's streams, so every node runs on its SMs.
  partition::green_context::current_scope in_partition(_options.partition.get());
  const detail::slow_step_notice notice("setting up", _name);
  _built = make_executor(app, mode, _options);
}

void run_handle::launch() {
  {
    // Should anything below throw once the loop runs, the executor's destructor stops it.
    partition::green_context::current_scope in_partition(_options.partition.get());
    _built->launch();
  }
  if (is_resident(_mode)) note_lazy_loading();
  _loop = std::make_unique<detail::supervised_loop>(std::move(_built), _name, std::move(_options));
}

run_handle::~run_handle() {
  // A loop built by run_together and never launched has no _loop: nothing of it runs.
  if (_loop != nullptr && !_loop->torn_down()) {
    const tear_down_report r = tear_down();
    if (!r.stopped || !r.error.empty()) {
      std::fprintf(stderr, "resident: tear-down at destruction: %s\n", r.error.c_str());
    }
  }
  const detail::slow_step_notice notice("freeing", _name);
  _loop.reset();
  _built.reset();
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

namespace {

/// Refuses a request without an application, or one application asked for twice, before
/// anything is built.
void check_requests(const std::vector<loop_request>& loops) {
  for (std::size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].app == nullptr) {
      throw std::invalid_argument("run_together: loop " + std::to_string(i) +
                                  " names no application");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (loops[j].app == loops[i].app) {
        throw std::invalid_argument("run_together: application '" + loops[i].app->name() +
                                    "' is asked for twice (loops " + std::to_string(j) + " and " +
                                    std::to_string(i) +
                                    "); an application runs one loop at a time");
      }
    }
  }
}

}  // namespace

std::vector<std::unique_ptr<run_handle>> run_together(std::vector<loop_request> loops) {
  check_requests(loops);
  std::vector<std::unique_ptr<run_handle>> runs;
  runs.reserve(loops.size());
  // Every build before any launch. Should one fail, the loops built so far are freed unlaunched.
  for (loop_request& r : loops) {
    runs.push_back(std::unique_ptr<run_handle>(
        new run_handle(*r.app, r.mode, std::move(r.options), run_handle::build_only{})));
  }
  std::size_t launched = 0;
  try {
    for (; launched < runs.size(); ++launched) runs[launched]->launch();
  } catch (const std::exception& e) {
    // Tear the running loops down (the last launched first) before anything is freed: a free
    // beside a running loop waits for an idle device.
    std::string stops;
    for (std::size_t i = launched; i-- > 0;) {
      const tear_down_report r = runs[i]->tear_down();
      if (!r.stopped || !r.error.empty()) stops += "; " + runs[i]->_name + ": " + r.error;
    }
    const std::string what =
        "run_together: launching the " + runs[launched]->_name + " failed: " + e.what() +
        (launched == 0 ? std::string()
                       : " (the " + std::to_string(launched) +
                             " loop(s) launched before it were torn down" + stops + ")");
    runs.clear();
    throw std::runtime_error(what);
  }
  return runs;
}

}  // namespace resident
