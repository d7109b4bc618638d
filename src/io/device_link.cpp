#include "resident/io/device_link.hpp"

#include <string>

#include "io/endpoint_device.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"

namespace resident::io {

namespace {

constexpr std::size_t most_bytes = std::size_t{1} << 30U;
constexpr std::size_t most_depth = 4096;

device_link::config checked(device_link::config c) {
  if (c.bytes == 0 || c.bytes > most_bytes) {
    throw composition_error("device_link: bytes must be 1 to " + std::to_string(most_bytes) +
                            ", got " + std::to_string(c.bytes));
  }
  if (c.depth < 2 || c.depth > most_depth) {
    throw composition_error("device_link: depth must be 2 to " + std::to_string(most_depth) +
                            " (one slot to read while the producer writes the next), got " +
                            std::to_string(c.depth));
  }
  for (const auto& [what, ordinal] : {std::pair{"producer_device", c.producer_device},
                                      std::pair{"consumer_device", c.consumer_device}}) {
    if (const std::string why = missing_device(ordinal); !why.empty()) {
      throw composition_error("device_link: " + std::string(what) + " " + why);
    }
  }
  if (c.producer_device != c.consumer_device) {
    int can = 0;
    RESIDENT_CUDA_TRY(cudaDeviceCanAccessPeer(&can, c.producer_device, c.consumer_device));
    if (can == 0) {
      throw composition_error("device_link: device " + std::to_string(c.producer_device) +
                              " cannot write device " + std::to_string(c.consumer_device) +
                              "'s memory (no peer access between them: see nvidia-smi topo -m)");
    }
  }
  return c;
}

detail::mailbox_layout layout_of(const device_link::config& c) {
  return {.input_bytes = c.bytes, .output_bytes = 0, .depth = c.depth, .lines = false};
}

stream stream_on(int device) {
  const current_device_guard on(device);
  return stream(0);
}

}  // namespace

device_link::device_link(config c)
    : _config(checked(c)),
      _layout(layout_of(_config)),
      _ring(zeroed_device_buffer(_layout.total_bytes(), _config.consumer_device)),
      _next(zeroed_device_buffer(3 * sizeof(std::uint64_t), _config.producer_device)),
      _reader(stream_on(_config.consumer_device)) {
  enable_peer_access(_config.producer_device, _config.consumer_device);
}

mailbox_view device_link::consumer_view() const noexcept {
  mailbox_view v{};
  auto* ring = _ring.data_as<std::byte>();
  v.head = reinterpret_cast<const std::uint64_t*>(ring + detail::mailbox_layout::head_at);
  v.slots = ring + _layout.slots_at();
  v.slot_stride = _layout.slot_stride();
  v.depth = _config.depth;
  v.input_bytes = _config.bytes;
  v.lines = false;
  v.stamped_arrival = true;  // the producer's egress start, in each slot's header
  return v;                  // no output side: a link_rx publishes to its loop, not to an actuator
}

link_writer_view device_link::producer_view() const noexcept {
  auto* words = _next.data_as<std::uint64_t>();
  return {_ring.data_as<std::byte>(),
          words,
          words + 1,
          reinterpret_cast<std::uint32_t*>(words + 2),
          _layout.slots_at(),
          _layout.slot_stride(),
          _config.depth,
          _config.bytes};
}

std::uint64_t device_link::published() const {
  std::uint64_t head = 0;
  const current_device_guard on(_config.consumer_device);
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(&head,
                                    _ring.data_as<std::byte>() + detail::mailbox_layout::head_at,
                                    sizeof head, cudaMemcpyDeviceToHost, _reader.get()));
  _reader.synchronize();
  return head;
}

data_ready_handler device_link::make_handler(std::shared_ptr<Operator> rx) const {
  return data_ready_handler{{std::move(rx)},
                            [this](std::uint64_t last, sample_policy policy) {
                              const std::uint64_t newest = published();
                              return newest > last ||
                                     (policy == sample_policy::newest && newest != 0);
                            },
                            [this] { return published(); }};
}

void link_rx::initialize() {
  detail::require_run_device(*this, "the link's consumer is", _link->settings().consumer_device);
}

void link_tx::initialize() {
  detail::require_run_device(*this, "the link's producer is", _link->settings().producer_device);
}

void link_rx::setup(OperatorSpec& spec) {
  spec.device_output("sample", _link->settings().bytes);
  spec.can_carry(loop_step::controller);  // the mailbox's handler kernel, which can carry it
}

void link_rx::compute(CaptureContext& ctx) {
  detail::launch_mailbox_rx(_link->consumer_view(), ctx.loop(),
                            ctx.device_memory<std::byte>("sample"), ctx.stream(),
                            ctx.capturing() && ctx.capture_target() == graph_kind::device_launched);
}

void link_tx::setup(OperatorSpec& spec) { spec.device_input("in", _link->settings().bytes); }

void link_tx::compute(CaptureContext& ctx) {
  detail::launch_link_publish(_link->producer_view(), ctx.loop(),
                              ctx.device_memory<const std::byte>("in"), ctx.stream());
}

}  // namespace resident::io
