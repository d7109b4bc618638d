#include "resident/io/mailbox.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/host_words.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"

namespace resident::io {

namespace {

constexpr std::size_t line = 64;

constexpr std::size_t round_up(std::size_t n) { return (n + line - 1) / line * line; }

using ::resident::detail::host_load_acquire;
using ::resident::detail::host_store_release;

// Layout: [header line: head] [output line: begin, end, seq] [output payload] [slots...]
std::size_t total_bytes(const mailbox::config& c) {
  return line + line + round_up(c.output_bytes) + c.depth * (line + round_up(c.input_bytes));
}

mailbox::config checked(mailbox::config c) {
  if (c.input_bytes == 0) throw composition_error("mailbox: input_bytes must be at least 1");
  if (c.depth < 2) {
    throw composition_error(
        "mailbox: depth must be at least 2 (one slot to read while the "
        "sensor writes the next), got " +
        std::to_string(c.depth));
  }
  return c;
}

}  // namespace

mailbox::mailbox(config c)
    : _config(checked(c)), _memory(total_bytes(_config)), _commits(sizeof(std::uint64_t)) {
  RESIDENT_CUDA_TRY(cudaMemset(_commits.data(), 0, sizeof(std::uint64_t)));
  auto* host = _memory.host_as<std::byte>();
  auto* dev = _memory.device_as<std::byte>();
  const std::size_t out_at = line;
  const std::size_t payload_at = 2 * line;
  const std::size_t slots_at = payload_at + round_up(_config.output_bytes);

  _head_host = reinterpret_cast<std::uint64_t*>(host);
  _out_begin_host = reinterpret_cast<const std::uint64_t*>(host + out_at);
  _out_end_host = reinterpret_cast<const std::uint64_t*>(host + out_at + 8);
  _out_seq_host = reinterpret_cast<const std::uint64_t*>(host + out_at + 16);
  _out_payload_host = host + payload_at;
  _slots_host = host + slots_at;

  _view.head = reinterpret_cast<const std::uint64_t*>(dev);
  _view.out_begin = reinterpret_cast<std::uint64_t*>(dev + out_at);
  _view.out_end = reinterpret_cast<std::uint64_t*>(dev + out_at + 8);
  _view.out_seq = reinterpret_cast<std::uint64_t*>(dev + out_at + 16);
  _view.commits = _commits.data_as<std::uint64_t>();
  _view.out_payload = dev + payload_at;
  _view.output_bytes = _config.output_bytes;
  _view.slots = dev + slots_at;
  _view.slot_stride = line + round_up(_config.input_bytes);
  _view.depth = _config.depth;
  _view.input_bytes = _config.input_bytes;
}

std::uint64_t mailbox::publish(std::span<const std::byte> payload) {
  if (payload.size() != _config.input_bytes) {
    throw std::invalid_argument("mailbox::publish: payload is " + std::to_string(payload.size()) +
                                " bytes, the mailbox takes " + std::to_string(_config.input_bytes));
  }
  const std::uint64_t seq = ++_next;
  std::byte* slot = _slots_host + (seq % _config.depth) * _view.slot_stride;
  auto& slot_seq = *reinterpret_cast<std::uint64_t*>(slot);
  // Sequence lock: mark the slot busy, write, then stamp it. A reader that sees the same stamp
  // before and after its copy got a consistent payload.
  host_store_release(slot_seq, std::uint64_t{0});
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(slot + line, payload.data(), payload.size());
  host_store_release(slot_seq, seq);
  host_store_release(*_head_host, seq);
  return seq;
}

std::uint64_t mailbox::published() const noexcept { return host_load_acquire(*_head_host); }

std::uint64_t mailbox::output_seq() const noexcept { return latest_output().seq; }

std::uint64_t mailbox::output_commit() const noexcept { return host_load_acquire(*_out_end_host); }

output_stamp mailbox::latest_output() const noexcept {
  for (;;) {
    const std::uint64_t end = host_load_acquire(*_out_end_host);
    if (end == 0) return {};
    const std::uint64_t seq = host_load_acquire(*_out_seq_host);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (host_load_acquire(*_out_begin_host) == end) return {seq, end};
  }
}

output_stamp mailbox::read_output(std::span<std::byte> out) const {
  if (out.size() != _config.output_bytes) {
    throw std::invalid_argument("mailbox::read_output: buffer is " + std::to_string(out.size()) +
                                " bytes, the output is " + std::to_string(_config.output_bytes));
  }
  for (;;) {
    // Sequence lock over the commit number: begin == end after the copy means no commit
    // overlapped it, a repeat of the same sample included (its commit number differs).
    const std::uint64_t end = host_load_acquire(*_out_end_host);
    if (end == 0) return {};
    const std::uint64_t seq = host_load_acquire(*_out_seq_host);
    std::memcpy(out.data(), _out_payload_host, out.size());
    std::atomic_thread_fence(std::memory_order_acquire);
    if (host_load_acquire(*_out_begin_host) == end) return {seq, end};
  }
}

output_stamp mailbox::wait_output(const output_stamp& after, std::span<std::byte> out,
                                  std::chrono::nanoseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (host_load_acquire(*_out_end_host) == after.commit) {
    if (std::chrono::steady_clock::now() > deadline) return {};
  }
  return read_output(out);
}

std::uint64_t mailbox::read_input(std::uint64_t after, std::span<std::byte> out,
                                  sample_policy policy) const {
  if (out.size() != _config.input_bytes) {
    throw std::invalid_argument("mailbox::read_input: buffer is " + std::to_string(out.size()) +
                                " bytes, the input is " + std::to_string(_config.input_bytes));
  }
  for (;;) {
    const std::uint64_t newest = host_load_acquire(*_head_host);
    if (newest <= after) return 0;
    // A host loop has no repeats to make: `newest` takes the newest, like skip-duplicate.
    const std::uint64_t pick = detail::select_sample(newest, after, false, policy, _config.depth);
    const std::byte* slot = _slots_host + (pick % _config.depth) * _view.slot_stride;
    const auto& slot_seq = *reinterpret_cast<const std::uint64_t*>(slot);
    if (host_load_acquire(slot_seq) != pick) continue;  // being rewritten: choose again
    std::memcpy(out.data(), slot + line, out.size());
    std::atomic_thread_fence(std::memory_order_acquire);
    if (host_load_acquire(slot_seq) == pick) return pick;
  }
}

void mailbox::commit_output_from_host(std::uint64_t seq, std::span<const std::byte> payload) {
  if (payload.size() != _config.output_bytes) {
    throw std::invalid_argument("mailbox::commit_output_from_host: payload is " +
                                std::to_string(payload.size()) + " bytes, the output is " +
                                std::to_string(_config.output_bytes));
  }
  // After any commit the device made (a loop ran before): commit numbers stay unique.
  _host_commits = std::max(_host_commits, latest_output().commit) + 1;
  auto* begin = const_cast<std::uint64_t*>(_out_begin_host);
  auto* end = const_cast<std::uint64_t*>(_out_end_host);
  auto* out_seq = const_cast<std::uint64_t*>(_out_seq_host);
  host_store_release(*begin, _host_commits);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(const_cast<std::byte*>(_out_payload_host), payload.data(), payload.size());
  host_store_release(*out_seq, seq);
  host_store_release(*end, _host_commits);
}

std::function<bool(std::uint64_t, sample_policy)> mailbox::host_gate() const {
  const std::uint64_t* head = _head_host;
  return [head](std::uint64_t last, sample_policy policy) {
    const std::uint64_t newest = host_load_acquire(*head);
    return newest > last || (policy == sample_policy::newest && newest != 0);
  };
}

data_ready_handler mailbox::make_handler(std::shared_ptr<Operator> rx) const {
  const std::uint64_t* head = _head_host;
  return data_ready_handler{
      {std::move(rx)}, host_gate(), [head] { return host_load_acquire(*head); }};
}

void mailbox_rx::setup(OperatorSpec& spec) {
  spec.device_output("sample", _mailbox->settings().input_bytes);
}

void mailbox_rx::compute(CaptureContext& ctx) {
  detail::launch_mailbox_rx(_mailbox->device_view(), ctx.loop(),
                            ctx.device_memory<std::byte>("sample"), ctx.stream(),
                            ctx.capturing() && ctx.capture_target() == graph_kind::device_launched);
}

void mailbox_tx::setup(OperatorSpec& spec) {
  const std::size_t bytes = _mailbox->settings().output_bytes;
  spec.device_input("in", bytes == 0 ? 1 : bytes);
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
