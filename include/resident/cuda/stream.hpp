#pragma once
// Owning CUDA stream and a non-owning view. resident never enqueues work on the legacy default
// stream by accident: every asynchronous function takes a stream_view.

#include <cuda_runtime_api.h>

#include <chrono>

namespace resident {

/// Non-owning handle to a stream; cheap to copy.
class stream_view {
 public:
  constexpr stream_view() noexcept = default;
  constexpr stream_view(cudaStream_t s) noexcept : _stream(s) {}  // NOLINT: implicit by design
  [[nodiscard]] constexpr cudaStream_t get() const noexcept { return _stream; }
  constexpr operator cudaStream_t() const noexcept { return _stream; }  // NOLINT

  void synchronize() const;
  /// Waits for the work enqueued so far, polling, for at most `limit`: true when it completed,
  /// false when it had not by then (for callers that must not hang on a stream the GPU does not
  /// run, e.g. beside a resident loop). Sleeps `poll` between queries; zero spins, for waits
  /// known to last microseconds where a sleep would cost more than it saves. Throws on an
  /// asynchronous error.
  [[nodiscard]] bool synchronize_for(std::chrono::nanoseconds limit,
                                     std::chrono::nanoseconds poll = default_poll) const;
  static constexpr std::chrono::nanoseconds default_poll = std::chrono::microseconds(20);
  /// True once all work enqueued so far has completed; throws on an asynchronous error.
  [[nodiscard]] bool ready() const;

 private:
  cudaStream_t _stream{};
};

/// Owning, non-blocking stream (never synchronizes with the legacy default stream).
class stream {
 public:
  /// priority: 0 is the lowest, more negative is higher (see cudaDeviceGetStreamPriorityRange).
  explicit stream(int priority = 0);
  /// Adopts an existing stream handle (e.g. a green-context stream); destroys it on destruction.
  static stream adopt(cudaStream_t s) noexcept;
  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream();

  [[nodiscard]] cudaStream_t get() const noexcept { return _stream; }
  [[nodiscard]] stream_view view() const noexcept { return {_stream}; }
  operator stream_view() const noexcept { return view(); }  // NOLINT
  void synchronize() const { view().synchronize(); }
  /// Whether every operation submitted so far has completed (cudaStreamQuery; errors throw).
  [[nodiscard]] bool ready() const { return view().ready(); }
  [[nodiscard]] bool synchronize_for(
      std::chrono::nanoseconds limit,
      std::chrono::nanoseconds poll = stream_view::default_poll) const {
    return view().synchronize_for(limit, poll);
  }

 private:
  struct adopt_tag {};
  stream(adopt_tag, cudaStream_t s) noexcept : _stream(s) {}
  cudaStream_t _stream{};
};

}  // namespace resident
