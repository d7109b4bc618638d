// A notice for a set-up or clean-up step that can wait on the device without bound.
//
// Some CUDA calls a loop's set-up and clean-up make (graph instantiation and destruction, frees)
// can wait for the device to go idle, which it never does while a resident loop or a display
// engine runs beside them; nothing can interrupt such a call. Such a step is never silent: past
// `after` the notice names the step on stderr and says what holds it; when the step ends, it
// says how long it took.

#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace resident::detail {

class slow_step_notice {
 public:
  static constexpr std::chrono::milliseconds default_after{10000};

  /// Watches "<step> the <subject>" (e.g. "freeing", "while loop of application 'camera'"):
  /// both must outlive the notice, which copies neither, so watching allocates nothing.
  slow_step_notice(const char* step, const std::string& subject,
                   std::chrono::milliseconds after = default_after);
  ~slow_step_notice();
  slow_step_notice(const slow_step_notice&) = delete;
  slow_step_notice& operator=(const slow_step_notice&) = delete;

 private:
  void watch(std::chrono::milliseconds after);

  const char* _step;
  const std::string& _subject;
  std::chrono::steady_clock::time_point _start;
  std::mutex _mutex;
  std::condition_variable _done_cv;
  bool _done{false};
  bool _noticed{false};
  std::thread _watcher;
};

}  // namespace resident::detail
