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
  // Output sequence lock (egress-written): begin and end hold the commit number, unique per
  // commit, so a repeat of one sample (sample_policy::newest) is a new version too.
  std::uint64_t* out_begin;
  std::uint64_t* out_end;
  std::uint64_t* out_seq;  // the sample the committed output belongs to
  std::byte* out_payload;
  std::size_t output_bytes;
  std::uint64_t* commits;  // device memory, egress-private: commits so far
};

/// Which output the actuator read: the sample it belongs to and its commit number (1, 2, ...;
/// unique per commit, so a repeated sample has a new commit). Both 0: nothing yet, or a timeout.
struct output_stamp {
  std::uint64_t seq{0};
  std::uint64_t commit{0};
  [[nodiscard]] bool empty() const noexcept { return commit == 0; }
  friend bool operator==(const output_stamp&, const output_stamp&) = default;
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
  /// Commit number of the latest complete output (0: none yet), in one read of the word the
  /// egress writes last: it changes exactly when a new output is readable, and reading it never
  /// waits for a commit in progress (latest_output() retries until the commit is whole). The
  /// cheapest poll for "is there something new".
  [[nodiscard]] std::uint64_t output_commit() const noexcept;
  /// Sample and commit number of the latest committed output (empty: none yet), without its
  /// payload: what to pass to wait_output() as `after`.
  [[nodiscard]] output_stamp latest_output() const noexcept;
  /// Copies a consistent snapshot of the latest output into `out` (output_bytes) and says which
  /// it is; empty when nothing was committed yet.
  output_stamp read_output(std::span<std::byte> out) const;
  /// Busy-polls until an output newer than `after` is committed (a repeat of the same sample
  /// under sample_policy::newest counts: it is a new commit), then reads the latest one as
  /// read_output() does. Empty on timeout.
  output_stamp wait_output(const output_stamp& after, std::span<std::byte> out,
                           std::chrono::nanoseconds timeout) const;

  // ---- a host loop in place of the GPU loop (a CPU-driven peer; never while a loop runs) -----
  /// The sample `policy` takes after `after` (every: the next one, or the oldest the ring still
  /// holds when the sensor lapped it; otherwise the newest): copies its payload (input_bytes)
  /// into `out` with the slot's sequence lock and returns its sequence number; 0 when there is
  /// none newer.
  std::uint64_t read_input(std::uint64_t after, std::span<std::byte> out,
                           sample_policy policy = sample_policy::skip_duplicate) const;
  /// Commits `payload` (output_bytes) as sample `seq`'s output from the host, with the same
  /// sequence lock and a new commit number, as mailbox_tx does on the device.
  void commit_output_from_host(std::uint64_t seq, std::span<const std::byte> payload);

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
  device_buffer _commits;
  const std::uint64_t* _out_begin_host{};
  const std::uint64_t* _out_end_host{};
  const std::uint64_t* _out_seq_host{};
  const std::byte* _out_payload_host{};
  std::uint64_t _next{0};          // sensor-private
  std::uint64_t _host_commits{0};  // commit numbers of commit_output_from_host
};

/// Data-ready handler operator: picks the sample the policy asks for, copies its payload into
/// the "sample" output port and publishes its sequence number. Polls up to run_options::poll_ns.
class mailbox_rx final : public Operator {
 public:
  explicit mailbox_rx(std::shared_ptr<mailbox> mb) : _mailbox(std::move(mb)) {}
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] const mailbox& box() const noexcept { return *_mailbox; }

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
  [[nodiscard]] const mailbox& box() const noexcept { return *_mailbox; }

 private:
  std::shared_ptr<mailbox> _mailbox;
};

namespace detail {
/// Which sample `policy` takes from a ring of `depth` slots whose newest is `head`, after the
/// loop's `last` (0: none to take). `have_processed`: the loop processed a sample already (before
/// that, `last` is only its start point and `newest` has nothing to repeat). The mailbox's
/// handler kernel and its host-loop read (mailbox::read_input) both choose with it.
__host__ __device__ constexpr std::uint64_t select_sample(std::uint64_t head, std::uint64_t last,
                                                          bool have_processed, sample_policy policy,
                                                          std::size_t depth) {
  if (head == 0) return 0;
  switch (policy) {
    case sample_policy::every: {
      if (head <= last) return 0;
      const std::uint64_t oldest_held = head >= depth ? head - depth + 1 : 1;
      return last + 1 > oldest_held ? last + 1 : oldest_held;
    }
    case sample_policy::newest:
      // head == last: re-publish it and the controller counts a repeat.
      return head > last || have_processed ? head : 0;
    case sample_policy::skip_duplicate:
    default:
      return head > last ? head : 0;
  }
}

/// `device_launched`: the kernel lands in a device-launched graph (tail mode), so the loop step
/// it may carry (loop_state::fuse_controller, fuse_end_marker) is the tail-launching one.
void launch_mailbox_rx(const mailbox_view& mb, loop_state* loop, std::byte* sample, cudaStream_t s,
                       bool device_launched);
void launch_mailbox_tx(const mailbox_view& mb, loop_state* loop, const std::byte* in,
                       cudaStream_t s, bool device_launched);
}  // namespace detail

}  // namespace resident::io
