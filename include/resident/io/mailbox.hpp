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
#include "resident/io/mailbox_protocol.hpp"

namespace resident::io {

/// Device pointers into the mailbox (kernel arguments).
struct mailbox_view {
  const std::uint64_t* head;  // newest published sample (sensor-written)
  const std::byte* slots;     // depth slots: 64-byte header {seq} then the payload
  std::size_t slot_stride;
  std::size_t depth;
  std::size_t input_bytes;
  bool lines;  // the `lines` format: a slot is one tagged line, the output line holds it all
  // The slot header's second word holds the writer's clock when the write began (a device
  // link's producer): the handler stamps it as the sample's stage::arrival.
  bool stamped_arrival{false};
  // Output sequence lock (egress-written): begin and end hold the commit number, unique per
  // commit, so a repeat of one sample (sample_policy::newest) is a new version too.
  std::uint64_t* out_begin;
  std::uint64_t* out_end;
  std::uint64_t* out_seq;  // the sample the committed output belongs to
  std::byte* out_payload;
  std::size_t output_bytes;
  std::uint64_t* commits;  // device memory, egress-private: commits so far
  // The newest commit number published when the view was taken (host commits and earlier
  // loops included): the egress numbers its commits above it (detail::next_commit).
  std::uint64_t commit_floor;
};

class mailbox {
 public:
  struct config {
    std::size_t input_bytes{8};   // payload of one sensor sample
    std::size_t output_bytes{8};  // payload of one actuator output (0: the sequence number only)
    std::size_t depth{4};         // ring slots: how far the sensor may run ahead of the loop
    /// automatic: one tagged line per sample and for the output where both fit (samples up to
    /// 49 bytes, outputs up to 42: one PCIe round trip per read), else the sequence lock.
    mailbox_format format{mailbox_format::automatic};
    /// The device of the loop that uses it: the egress's commit counter lives there (host-mapped
    /// memory serves every device). The endpoints refuse, by name, a loop on another device.
    int device{0};
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
  // Bounded reads: latest_output(), read_output() and wait_output() retry while a commit
  // overlaps their read (microseconds), but never for longer than torn_read_bound: an output
  // still being overwritten then (its writer stopped midway, e.g. a loop that failed or was
  // abandoned mid-commit, or commits that follow each other faster than one read of
  // output_bytes) is reported by an execution_error that names the commit numbers, never
  // returned torn and never waited on for ever (the Python bindings hold the GIL there and
  // raise resident.ExecutionError). output_commit() never waits.
  static constexpr std::chrono::milliseconds torn_read_bound =
      detail::mailbox_protocol::default_torn_bound;
  /// Sequence number of the latest committed output (0: none yet); bounded as latest_output().
  [[nodiscard]] std::uint64_t output_seq() const;
  /// Commit number of the latest complete output (0: none yet), in one read of the word the
  /// egress writes last: it changes exactly when a new output is readable, and reading it never
  /// waits for a commit in progress (latest_output() retries until the commit is whole). The
  /// cheapest poll for "is there something new".
  [[nodiscard]] std::uint64_t output_commit() const noexcept;
  /// Sample and commit number of the latest committed output (empty: none yet), without its
  /// payload: what to pass to wait_output() as `after`. Throws execution_error when no commit
  /// is whole within torn_read_bound.
  [[nodiscard]] output_stamp latest_output() const;
  /// Copies a consistent snapshot of the latest output into `out` (output_bytes) and says which
  /// it is; empty when nothing was committed yet. Throws execution_error when no consistent
  /// copy succeeds within torn_read_bound.
  output_stamp read_output(std::span<std::byte> out) const;
  /// Busy-polls until an output newer than `after` is committed (a repeat of the same sample
  /// under sample_policy::newest counts: it is a new commit), then reads the latest one as
  /// read_output() does (and throws as it does). Empty on timeout. Commit numbers increase
  /// across host and device commits in any order, so a newer output always has a new number.
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
  /// sequence lock and a new commit number, as mailbox_tx does on the device: one above every
  /// commit published so far, so a loop built afterwards numbers its commits above it.
  void commit_output_from_host(std::uint64_t seq, std::span<const std::byte> payload);

  // ---- for the loop -------------------------------------------------------------------------
  /// The loop's view, numbering its commits above every commit published so far: take it when
  /// the loop is built (host commits after that and before the loop's first commit could
  /// repeat a number).
  [[nodiscard]] mailbox_view device_view() const noexcept;
  /// The host-side gate for host-driven modes: is there a sample the policy would take?
  [[nodiscard]] std::function<bool(std::uint64_t, sample_policy)> host_gate() const;
  /// A data-ready handler around `rx`: the host gate above, and a loop that starts after the
  /// newest sample published before its launch.
  [[nodiscard]] data_ready_handler make_handler(std::shared_ptr<Operator> rx) const;
  [[nodiscard]] const config& settings() const noexcept { return _config; }
  /// The format the mailbox resolved `settings().format` to: sequence_lock or lines.
  [[nodiscard]] mailbox_format format() const noexcept {
    return _protocol.layout().lines ? mailbox_format::lines : mailbox_format::sequence_lock;
  }

 private:
  config _config;
  host_mapped_buffer _memory;
  detail::mailbox_protocol _protocol;  // the host side, over _memory's host pointer
  mailbox_view _view{};
  device_buffer _commits;
};

/// Data-ready handler operator: picks the sample the policy asks for, copies its payload into
/// the "sample" output port and publishes its sequence number. Polls up to run_options::poll_ns.
class mailbox_rx final : public Operator {
 public:
  explicit mailbox_rx(std::shared_ptr<mailbox> mb) : _mailbox(std::move(mb)) {}
  void setup(OperatorSpec& spec) override;
  void initialize() override;  // refuses a run on another device than the mailbox's
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
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
  void initialize() override;  // refuses a run on another device than the mailbox's
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] const mailbox& box() const noexcept { return *_mailbox; }

 private:
  std::shared_ptr<mailbox> _mailbox;
};

namespace detail {
/// `device_launched`: the kernel lands in a device-launched graph (tail mode), so the loop step
/// it may carry (loop_state::fuse_controller, fuse_end_marker) is the tail-launching one.
void launch_mailbox_rx(const mailbox_view& mb, loop_state* loop, std::byte* sample, cudaStream_t s,
                       bool device_launched);
void launch_mailbox_tx(const mailbox_view& mb, loop_state* loop, const std::byte* in,
                       cudaStream_t s, bool device_launched);
}  // namespace detail

}  // namespace resident::io
