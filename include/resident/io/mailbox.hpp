#pragma once
// A host-mapped mailbox: an emulated sensor writes samples into a ring in pinned host memory
// that the GPU reads directly, and the loop's egress writes results back the same way for an
// emulated actuator. Usable from every execution mode:
//
//   sensor thread ── publish() ──▶ [ring of `depth` slots] ──▶ mailbox_rx (data-ready handler)
//                                                                    │ "sample" port
//                                                                 operator DAG
//                                                                    │ "in" port
//   actuator thread ◀── read_output()/wait_output() ◀── [output] ◀── mailbox_tx (egress)
//
// Every shared word has one writer. Slots and the output use sequence locks, so a reader never
// uses a sample that was overwritten while it copied it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "resident/app/application.hpp"
#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"

namespace resident::io {

/// Device pointers into the mailbox (kernel arguments).
struct mailbox_view {
  const std::uint64_t* head;  // newest published sample (sensor-written)
  const std::byte* slots;     // depth slots: 64-byte header {seq} then the payload
  std::size_t slot_stride;
  std::size_t depth;
  std::size_t input_bytes;
  std::uint64_t* out_begin;  // output sequence lock (egress-written)
  std::uint64_t* out_end;
  std::byte* out_payload;
  std::size_t output_bytes;
};

class mailbox {
 public:
  struct config {
    std::size_t input_bytes{8};   // payload of one sensor sample
    std::size_t output_bytes{8};  // payload of one actuator output (0: the sequence number only)
    std::size_t depth{4};         // ring slots: how far the sensor may run ahead of the loop
  };

  explicit mailbox(config c);  // allocates host-mapped memory: needs a GPU
  mailbox(const mailbox&) = delete;
  mailbox& operator=(const mailbox&) = delete;

  // ---- sensor side (one thread) -----------------------------------------------------------
  /// Writes the next sample (exactly input_bytes) and returns its sequence number (1, 2, ...).
  std::uint64_t publish(std::span<const std::byte> payload);
  /// The newest published sequence number (0 before the first).
  [[nodiscard]] std::uint64_t published() const noexcept;

  // ---- actuator side (one thread) ---------------------------------------------------------
  /// Sequence number of the latest committed output (0: none yet).
  [[nodiscard]] std::uint64_t output_seq() const noexcept;
  /// Copies a consistent snapshot of the latest output into `out` (output_bytes); returns its
  /// sequence number, 0 when nothing was committed yet.
  std::uint64_t read_output(std::span<std::byte> out) const;
  /// Busy-polls until an output with a sequence number other than `after` is committed, then
  /// reads it as read_output() does. Returns 0 on timeout.
  std::uint64_t wait_output(std::uint64_t after, std::span<std::byte> out,
                            std::chrono::nanoseconds timeout) const;

  // ---- for the loop -------------------------------------------------------------------------
  [[nodiscard]] mailbox_view device_view() const noexcept { return _view; }
  /// The host-side gate for host-driven modes: is there a sample the policy would take?
  [[nodiscard]] std::function<bool(std::uint64_t, sample_policy)> host_gate() const;
  /// A data-ready handler around `rx`: the host gate above, and a loop that starts after the
  /// newest sample published before its launch.
  [[nodiscard]] data_ready_handler make_handler(std::shared_ptr<Operator> rx) const;
  [[nodiscard]] const config& settings() const noexcept { return _config; }

 private:
  config _config;
  host_mapped_buffer _memory;
  mailbox_view _view{};
  std::uint64_t* _head_host{};
  std::byte* _slots_host{};
  const std::uint64_t* _out_begin_host{};
  const std::uint64_t* _out_end_host{};
  const std::byte* _out_payload_host{};
  std::uint64_t _next{0};  // sensor-private
};

/// Data-ready handler operator: picks the sample the policy asks for, copies its payload into
/// the "sample" output port and publishes its sequence number. Polls up to run_options::poll_ns.
class mailbox_rx final : public Operator {
 public:
  explicit mailbox_rx(std::shared_ptr<mailbox> mb) : _mailbox(std::move(mb)) {}
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::shared_ptr<mailbox> _mailbox;
};

/// Egress operator: commits its "in" port (output_bytes, or 1 byte when output_bytes is 0)
/// as the output of the sample being processed.
class mailbox_tx final : public Operator {
 public:
  explicit mailbox_tx(std::shared_ptr<mailbox> mb) : _mailbox(std::move(mb)) {}
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::shared_ptr<mailbox> _mailbox;
};

namespace detail {
void launch_mailbox_rx(const mailbox_view& mb, loop_state* loop, std::byte* sample, cudaStream_t s);
void launch_mailbox_tx(const mailbox_view& mb, loop_state* loop, const std::byte* in,
                       cudaStream_t s);
}  // namespace detail

}  // namespace resident::io
