#include "resident/cuda/stream.hpp"

#include <thread>
#include <utility>

#include "resident/cuda/error.hpp"
#include "resident/cuda/live_objects.hpp"

namespace resident {

void stream_view::synchronize() const { RESIDENT_CUDA_TRY(cudaStreamSynchronize(_stream)); }

bool stream_view::synchronize_for(std::chrono::nanoseconds limit,
                                  std::chrono::nanoseconds poll) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (poll > std::chrono::nanoseconds::zero()) std::this_thread::sleep_for(poll);
  }
}

bool stream_view::ready() const {
  const cudaError_t status = cudaStreamQuery(_stream);
  if (status == cudaErrorNotReady) return false;
  RESIDENT_CUDA_TRY(status);
  return true;
}

stream::stream(int priority) {
  RESIDENT_CUDA_TRY(cudaStreamCreateWithPriority(&_stream, cudaStreamNonBlocking, priority));
  detail::note_created(detail::cuda_object::stream);
}

stream stream::adopt(cudaStream_t s) noexcept {
  if (s != nullptr) detail::note_created(detail::cuda_object::stream);
  return stream(adopt_tag{}, s);
}

stream::stream(stream&& other) noexcept : _stream(std::exchange(other._stream, nullptr)) {}

stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    if (_stream != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaStreamDestroy(_stream));
      detail::note_destroyed(detail::cuda_object::stream);
    }
    _stream = std::exchange(other._stream, nullptr);
  }
  return *this;
}

stream::~stream() {
  if (_stream != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaStreamDestroy(_stream));
    detail::note_destroyed(detail::cuda_object::stream);
  }
}

}  // namespace resident
