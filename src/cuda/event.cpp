#include "resident/cuda/event.hpp"

#include <utility>

#include "resident/cuda/error.hpp"
#include "resident/cuda/live_objects.hpp"

namespace resident {

event::event(bool timing) {
  RESIDENT_CUDA_TRY(
      cudaEventCreateWithFlags(&_event, timing ? cudaEventDefault : cudaEventDisableTiming));
  detail::note_created(detail::cuda_object::event);
}

event::event(event&& other) noexcept : _event(std::exchange(other._event, nullptr)) {}

event& event::operator=(event&& other) noexcept {
  if (this != &other) {
    if (_event != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaEventDestroy(_event));
      detail::note_destroyed(detail::cuda_object::event);
    }
    _event = std::exchange(other._event, nullptr);
  }
  return *this;
}

event::~event() {
  if (_event != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaEventDestroy(_event));
    detail::note_destroyed(detail::cuda_object::event);
  }
}

void event::record(stream_view s) const { RESIDENT_CUDA_TRY(cudaEventRecord(_event, s.get())); }

void event::synchronize() const { RESIDENT_CUDA_TRY(cudaEventSynchronize(_event)); }

bool event::ready() const {
  const cudaError_t status = cudaEventQuery(_event);
  if (status == cudaErrorNotReady) return false;
  RESIDENT_CUDA_TRY(status);
  return true;
}

float event::elapsed_ms(const event& start, const event& stop) {
  float ms = 0.0F;
  RESIDENT_CUDA_TRY(cudaEventElapsedTime(&ms, start._event, stop._event));
  return ms;
}

}  // namespace resident
