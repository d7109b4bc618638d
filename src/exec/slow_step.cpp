#include "resident/detail/slow_step.hpp"

#include <cstdio>
#include <system_error>

namespace resident::detail {

slow_step_notice::slow_step_notice(const char* step, const std::string& subject,
                                   std::chrono::milliseconds after)
    : _step(step), _subject(subject), _start(std::chrono::steady_clock::now()) {
  try {
    _watcher = std::thread([this, after] { watch(after); });
  } catch (const std::system_error&) {
    // No thread to spare: the step runs unwatched rather than not at all.
  }
}

slow_step_notice::~slow_step_notice() {
  {
    std::lock_guard lock(_mutex);
    _done = true;
  }
  _done_cv.notify_all();
  if (_watcher.joinable()) _watcher.join();
  if (_noticed) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - _start).count();
    std::fprintf(stderr, "resident: %s the %s finished after %.1f s\n", _step, _subject.c_str(), s);
  }
}

void slow_step_notice::watch(std::chrono::milliseconds after) {
  std::unique_lock lock(_mutex);
  if (_done_cv.wait_for(lock, after, [this] { return _done; })) return;
  _noticed = true;
  std::fprintf(stderr,
               "resident: %s the %s has taken %.1f s so far. A CUDA set-up or clean-up call (graph "
               "instantiation or destruction, a free) can wait for the device to go idle, which "
               "it never does while another resident loop or a display engine runs: set a "
               "program's loops up together (run_together) and free a run after the loops "
               "beside it are torn down.\n",
               _step, _subject.c_str(), std::chrono::duration<double>(after).count());
}

}  // namespace resident::detail
