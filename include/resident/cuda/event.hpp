#pragma once

#include <cuda_runtime_api.h>

#include "resident/cuda/stream.hpp"

namespace resident {

/// Owning CUDA event. Timing events are opt-in: plain synchronization events are cheaper.
class event {
 public:
  explicit event(bool timing = false);
  event(event&& other) noexcept;
  event& operator=(event&& other) noexcept;
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event();

  void record(stream_view s) const;
  void synchronize() const;
  [[nodiscard]] bool ready() const;
  /// Milliseconds between two completed timing events.
  [[nodiscard]] static float elapsed_ms(const event& start, const event& stop);
  [[nodiscard]] cudaEvent_t get() const noexcept { return _event; }

 private:
  cudaEvent_t _event{};
};

}  // namespace resident
