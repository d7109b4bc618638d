#pragma once
// A link between loops on two GPUs with no host between them: the producer loop's egress
// (link_tx) writes each sample into a ring in the consumer GPU's memory over peer access and
// publishes its sequence number there; the consumer loop's data-ready handler (link_rx) polls
// that ring as the mailbox's handler polls its own, with the same sequence lock, policies and
// exact accounting (processed + dropped = published). The two devices may be the same one
// (two loops on one GPU).
//
// The ring has the mailbox's input layout (mailbox_layout, no output side): the head word, then
// `depth` slots of a 64-byte header {seq, egress start} and the payload. The producer's blocks
// share the copy: each marks the slot busy (seq 0) before writing its part, and the last block
// to finish writes the egress start (the producer's device clock when the publish began) and
// stamps the slot and the head with system-scope release stores, the order the host sensor
// keeps; a reader whose copy overlapped a rewrite sees the stamp change and chooses again. The
// consumer's handler stamps the egress start as the sample's stage::arrival (on the producer's
// clock).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "resident/app/application.hpp"
#include "resident/app/device_form.hpp"
#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/io/mailbox.hpp"

namespace resident::io {

/// What the producer's egress needs (plain data, passed by value to kernels).
struct link_writer_view {
  std::byte* ring{};          // the consumer device's ring (a peer pointer on the producer)
  std::uint64_t* next{};      // producer-device word: the sequence number published last
  std::uint64_t* started{};   // producer-device word: the clock when this publish began
  std::uint32_t* arrivals{};  // producer-device word: blocks done with this publish (kernels)
  std::size_t slots_at{};     // byte offset of slot 0 in the ring
  std::size_t slot_stride{};  // header line + payload, rounded to lines
  std::size_t depth{};
  std::size_t bytes{};  // payload of one sample
};

class device_link {
 public:
  struct config {
    std::size_t bytes{8};  // payload of one sample
    std::size_t depth{4};  // ring slots: how far the producer may run ahead of the consumer
    int producer_device{0};
    int consumer_device{0};
  };

  /// Checks the configuration (composition_error naming the field: bytes 1 to 1 GiB, depth 2
  /// to 4096, devices that exist and, when they differ, can reach each other's memory), enables
  /// peer access from the producer to the consumer, and allocates the ring (consumer device) and
  /// the producer's counter (producer device). The caller's current device is left as it was.
  explicit device_link(config c);
  device_link(const device_link&) = delete;
  device_link& operator=(const device_link&) = delete;

  [[nodiscard]] const config& settings() const noexcept { return _config; }
  /// For the consumer's handler: the ring as a mailbox's input side (no output side).
  [[nodiscard]] mailbox_view consumer_view() const noexcept;
  /// For the producer's egress.
  [[nodiscard]] link_writer_view producer_view() const noexcept;
  /// The sequence number published last (a synchronous read of the head from the host).
  [[nodiscard]] std::uint64_t published() const;
  /// A data-ready handler around `rx` (a link_rx of this link): host-driven modes read the head
  /// from the host before each iteration (a device-to-host copy: slower than a mailbox's gate),
  /// and the loop starts after the sample published last before its launch.
  [[nodiscard]] data_ready_handler make_handler(std::shared_ptr<Operator> rx) const;

 private:
  config _config;
  detail::mailbox_layout _layout;
  device_buffer _ring;  // consumer device
  device_buffer _next;  // producer device: next, started, arrivals
  stream _reader;       // consumer device: published()
};

/// The consumer's data-ready handler: the sample the policy asks for, copied from the ring into
/// its "sample" output port (settings().bytes), its sequence number published to the loop.
/// Polls up to run_options::poll_ns. The run's device must be the link's consumer device.
class link_rx final : public Operator {
 public:
  explicit link_rx(std::shared_ptr<const device_link> link) : _link(std::move(link)) {}
  void setup(OperatorSpec& spec) override;
  void initialize() override;  // refuses a run on another device than the consumer
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;

 private:
  std::shared_ptr<const device_link> _link;
};

/// The producer's egress: publishes its "in" port (settings().bytes) into the link's ring, one
/// sample per processed iteration. The run's device must be the link's producer device.
class link_tx final : public Operator {
 public:
  explicit link_tx(std::shared_ptr<const device_link> link) : _link(std::move(link)) {}
  void setup(OperatorSpec& spec) override;
  void initialize() override;  // refuses a run on another device than the producer
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;

 private:
  std::shared_ptr<const device_link> _link;
};

namespace detail {
/// The producer's publish as a kernel of its own (graph and eager modes), on as many blocks as
/// the payload needs (link_publish_blocks); `loop` may be null (direct submission: every call
/// publishes).
[[nodiscard]] unsigned link_publish_blocks(std::size_t bytes) noexcept;
void launch_link_publish(const link_writer_view& w, loop_state* loop, const std::byte* in,
                         cudaStream_t s);
}  // namespace detail

}  // namespace resident::io
