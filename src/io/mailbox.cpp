#include "resident/io/mailbox.hpp"

#include <stdexcept>
#include <string>

#include "cuda/host_words.hpp"
#include "io/endpoint_device.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"

namespace resident::io {

namespace {

using ::resident::detail::host_load_acquire;

mailbox::config checked(mailbox::config c) {
  if (c.input_bytes == 0) throw composition_error("mailbox: input_bytes must be at least 1");
  if (c.device < 0) {
    throw composition_error("mailbox: device must be >= 0, got " + std::to_string(c.device));
  }
  if (device_count() > 0) {
    if (const std::string why = missing_device(c.device); !why.empty()) {
      throw composition_error("mailbox: device " + why);
    }
  }
  if (c.depth < 2) {
    throw composition_error(
        "mailbox: depth must be at least 2 (one slot to read while the "
        "sensor writes the next), got " +
        std::to_string(c.depth));
  }
  try {
    (void)detail::resolve_format(c.format, c.input_bytes, c.output_bytes);
  } catch (const std::invalid_argument& e) {
    throw composition_error(e.what());
  }
  return c;
}

detail::mailbox_layout layout_of(const mailbox::config& c) {
  return {.input_bytes = c.input_bytes,
          .output_bytes = c.output_bytes,
          .depth = c.depth,
          .lines = detail::resolve_format(c.format, c.input_bytes, c.output_bytes)};
}

}  // namespace

mailbox::mailbox(config c)
    : _config(checked(c)),
      _memory(layout_of(_config).total_bytes()),
      _protocol(layout_of(_config), {_memory.host_as<std::byte>(), _memory.size()}),
      _commits(zeroed_device_buffer(sizeof(std::uint64_t), _config.device)) {
  using layout = detail::mailbox_layout;
  const layout& l = _protocol.layout();
  auto* dev = _memory.device_as<std::byte>();
  _view.head = reinterpret_cast<const std::uint64_t*>(dev + layout::head_at);
  _view.out_begin = reinterpret_cast<std::uint64_t*>(dev + layout::out_begin_at);
  _view.out_end = reinterpret_cast<std::uint64_t*>(dev + layout::out_end_at);
  _view.out_seq = reinterpret_cast<std::uint64_t*>(dev + layout::out_seq_at);
  _view.commits = _commits.data_as<std::uint64_t>();
  _view.out_payload = dev + layout::out_payload_at;
  _view.output_bytes = _config.output_bytes;
  _view.slots = dev + l.slots_at();
  _view.slot_stride = l.slot_stride();
  _view.depth = _config.depth;
  _view.input_bytes = _config.input_bytes;
  _view.lines = l.lines;
}

std::uint64_t mailbox::publish(std::span<const std::byte> payload) {
  return _protocol.publish(payload);
}

std::uint64_t mailbox::published() const noexcept { return _protocol.published(); }

std::uint64_t mailbox::output_seq() const { return latest_output().seq; }

std::uint64_t mailbox::output_commit() const noexcept { return _protocol.output_commit(); }

output_stamp mailbox::latest_output() const { return _protocol.latest_output(torn_read_bound); }

output_stamp mailbox::read_output(std::span<std::byte> out) const {
  return _protocol.read_output(out, torn_read_bound);
}

output_stamp mailbox::wait_output(const output_stamp& after, std::span<std::byte> out,
                                  std::chrono::nanoseconds timeout) const {
  return _protocol.wait_output(after, out, timeout, torn_read_bound);
}

std::uint64_t mailbox::read_input(std::uint64_t after, std::span<std::byte> out,
                                  sample_policy policy) const {
  return _protocol.read_input(after, out, policy);
}

void mailbox::commit_output_from_host(std::uint64_t seq, std::span<const std::byte> payload) {
  _protocol.commit_output_from_host(seq, payload);
}

mailbox_view mailbox::device_view() const noexcept {
  mailbox_view v = _view;
  v.commit_floor = _protocol.newest_commit();
  return v;
}

std::function<bool(std::uint64_t, sample_policy)> mailbox::host_gate() const {
  const std::uint64_t* head = _protocol.head_word();
  return [head](std::uint64_t last, sample_policy policy) {
    const std::uint64_t newest = host_load_acquire(*head);
    return newest > last || (policy == sample_policy::newest && newest != 0);
  };
}

data_ready_handler mailbox::make_handler(std::shared_ptr<Operator> rx) const {
  const std::uint64_t* head = _protocol.head_word();
  return data_ready_handler{
      {std::move(rx)}, host_gate(), [head] { return host_load_acquire(*head); }};
}

void mailbox_rx::setup(OperatorSpec& spec) {
  spec.device_output("sample", _mailbox->settings().input_bytes);
  spec.can_carry(loop_step::controller);  // its kernel ends with the controller step when fused
}

void mailbox_rx::initialize() {
  detail::require_run_device(*this, "its mailbox (config.device) is", _mailbox->settings().device);
}

void mailbox_tx::initialize() {
  detail::require_run_device(*this, "its mailbox (config.device) is", _mailbox->settings().device);
}

void mailbox_rx::compute(CaptureContext& ctx) {
  detail::launch_mailbox_rx(_mailbox->device_view(), ctx.loop(),
                            ctx.device_memory<std::byte>("sample"), ctx.stream(),
                            ctx.capturing() && ctx.capture_target() == graph_kind::device_launched);
}

void mailbox_tx::setup(OperatorSpec& spec) {
  const std::size_t bytes = _mailbox->settings().output_bytes;
  spec.device_input("in", bytes == 0 ? 1 : bytes);
  spec.can_carry(loop_step::end_marker);  // its kernel ends with the end-marker step when fused
}

void mailbox_tx::compute(CaptureContext& ctx) {
  if (ctx.loop() == nullptr) {
    throw composition_error("operator '" + ctx.operator_name() +
                            "' (mailbox_tx) commits the sample a loop is processing, so it "
                            "needs an execution mode with a loop; direct submission has none");
  }
  detail::launch_mailbox_tx(_mailbox->device_view(), ctx.loop(),
                            ctx.device_memory<const std::byte>("in"), ctx.stream(),
                            ctx.capturing() && ctx.capture_target() == graph_kind::device_launched);
}

}  // namespace resident::io
