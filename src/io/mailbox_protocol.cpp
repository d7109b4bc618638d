#include "resident/io/mailbox_protocol.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/host_words.hpp"
#include "resident/app/error.hpp"

namespace resident::io {

std::string_view to_string(mailbox_format f) noexcept {
  switch (f) {
    case mailbox_format::automatic:
      return "automatic";
    case mailbox_format::sequence_lock:
      return "sequence-lock";
    case mailbox_format::lines:
      return "lines";
  }
  return "?";
}

mailbox_format parse_mailbox_format(std::string_view name) {
  for (const auto f :
       {mailbox_format::automatic, mailbox_format::lines, mailbox_format::sequence_lock}) {
    if (name == to_string(f)) return f;
  }
  throw std::invalid_argument("unknown mailbox format '" + std::string(name) +
                              "'; formats: automatic, lines, sequence-lock");
}

namespace detail {

namespace {

using ::resident::detail::host_load_acquire;
using ::resident::detail::host_store_release;
using clock = std::chrono::steady_clock;

void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Retries of a sequence-locked read: the clock is read every 64 attempts only, since a read
// overlapped by a commit lasts until that commit's last word arrives (microseconds).
class retry_bound {
 public:
  explicit retry_bound(std::chrono::nanoseconds bound) : _deadline(clock::now() + bound) {}
  [[nodiscard]] bool expired() noexcept {
    pause();
    return ++_attempts % 64 == 0 && clock::now() >= _deadline;
  }

 private:
  clock::time_point _deadline;
  std::uint32_t _attempts{0};
};

void check_size(const char* what, const char* buffer, std::size_t got, const char* of,
                std::size_t want) {
  if (got == want) return;
  throw std::invalid_argument(std::string("mailbox::") + what + ": " + buffer + " is " +
                              std::to_string(got) + " bytes, the " + of + " " +
                              std::to_string(want));
}

namespace tl = tagged_line;

/// The eight words of the line at `line`: word 0 with acquire, the others relaxed (their tags,
/// not their order, tell a torn read).
void load_line(const std::uint64_t* line, std::uint64_t* w) noexcept {
  auto* words = const_cast<std::uint64_t*>(line);
  w[0] = host_load_acquire(words[0]);
  for (std::size_t i = 1; i < tl::words; ++i) {
    w[i] = std::atomic_ref<std::uint64_t>(words[i]).load(std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

/// Stores a line's words: the payload words first, word 0 (the number) last with release, so a
/// poll of word 0 sees the number once the rest is on its way.
void store_line(std::uint64_t* line, const std::uint64_t* w) noexcept {
  for (std::size_t i = tl::words; i-- > 1;) {
    std::atomic_ref<std::uint64_t>(line[i]).store(w[i], std::memory_order_relaxed);
  }
  host_store_release(line[0], w[0]);
}

}  // namespace

bool resolve_format(mailbox_format format, std::size_t input_bytes, std::size_t output_bytes) {
  const bool fits = input_bytes <= mailbox_layout::input_line_capacity &&
                    output_bytes <= mailbox_layout::output_line_capacity;
  if (format == mailbox_format::lines && !fits) {
    throw std::invalid_argument(
        "mailbox: format 'lines' carries samples of at most " +
        std::to_string(mailbox_layout::input_line_capacity) + " bytes and outputs of at most " +
        std::to_string(mailbox_layout::output_line_capacity) + "; this mailbox has " +
        std::to_string(input_bytes) + " and " + std::to_string(output_bytes) +
        " (use 'sequence-lock' or 'automatic')");
  }
  return format == mailbox_format::lines || (format == mailbox_format::automatic && fits);
}

void copy_to_shared(std::byte* shared, std::span<const std::byte> from) noexcept {
  const std::size_t words = from.size() / 8;
  auto* shared_words = reinterpret_cast<std::uint64_t*>(shared);
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, from.data() + i * 8, 8);
    std::atomic_ref<std::uint64_t>(shared_words[i]).store(w, std::memory_order_relaxed);
  }
  for (std::size_t i = words * 8; i < from.size(); ++i) {
    std::atomic_ref<unsigned char>(reinterpret_cast<unsigned char&>(shared[i]))
        .store(static_cast<unsigned char>(from[i]), std::memory_order_relaxed);
  }
}

void copy_from_shared(std::span<std::byte> to, const std::byte* shared) noexcept {
  const std::size_t words = to.size() / 8;
  auto* shared_words = reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(shared));
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint64_t w =
        std::atomic_ref<std::uint64_t>(shared_words[i]).load(std::memory_order_relaxed);
    std::memcpy(to.data() + i * 8, &w, 8);
  }
  auto* shared_bytes = reinterpret_cast<unsigned char*>(const_cast<std::byte*>(shared));
  for (std::size_t i = words * 8; i < to.size(); ++i) {
    to[i] = static_cast<std::byte>(
        std::atomic_ref<unsigned char>(shared_bytes[i]).load(std::memory_order_relaxed));
  }
}

mailbox_protocol::mailbox_protocol(mailbox_layout layout, std::span<std::byte> memory)
    : _layout(layout), _memory(memory.data()) {
  if (memory.size() < _layout.total_bytes()) {
    throw std::invalid_argument("mailbox_protocol: its memory is " + std::to_string(memory.size()) +
                                " bytes, the layout needs " +
                                std::to_string(_layout.total_bytes()));
  }
  if (reinterpret_cast<std::uintptr_t>(_memory) % 8 != 0) {
    throw std::invalid_argument("mailbox_protocol: its memory must be 8-byte aligned");
  }
}

std::uint64_t mailbox_protocol::publish(std::span<const std::byte> payload) {
  check_size("publish", "payload", payload.size(), "mailbox takes", _layout.input_bytes);
  const std::uint64_t seq = ++_next;
  if (_layout.lines) {
    publish_line(seq, payload);
    return seq;
  }
  const std::size_t slot = _layout.slot_at(seq);
  // Sequence lock: mark the slot busy, write, then stamp it. A reader that sees the same stamp
  // before and after its copy got a consistent payload.
  host_store_release(word(slot), std::uint64_t{0});
  std::atomic_thread_fence(std::memory_order_release);
  copy_to_shared(bytes_at(slot + mailbox_layout::line), payload);
  host_store_release(word(slot), seq);
  host_store_release(word(_layout.head_at), seq);
  return seq;
}

void mailbox_protocol::publish_line(std::uint64_t seq, std::span<const std::byte> payload) {
  // One line: the number, then the payload words tagged with the slot's lap. No busy mark and
  // no fence between them: a reader that takes words of two writes sees two tags.
  std::uint64_t w[tl::words];
  w[0] = seq;
  tl::pack(reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), w + 1,
           tl::words - 1, slot_tag(seq, _layout.depth));
  store_line(&word(_layout.slot_at(seq)), w);
  host_store_release(word(_layout.head_at), seq);
}

std::uint64_t mailbox_protocol::published() const noexcept {
  return host_load_acquire(word(_layout.head_at));
}

std::uint64_t mailbox_protocol::output_commit() const noexcept {
  // The lines format: word 0 of the output line, the commit number (its last word written).
  return host_load_acquire(word(_layout.lines ? _layout.out_begin_at : _layout.out_end_at));
}

std::uint64_t mailbox_protocol::newest_commit() const noexcept {
  if (_layout.lines) return host_load_acquire(word(_layout.out_begin_at));
  return std::max(host_load_acquire(word(_layout.out_end_at)),
                  host_load_acquire(word(_layout.out_begin_at)));
}

void mailbox_protocol::throw_torn(const char* what, std::chrono::nanoseconds bound) const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(bound).count();
  if (_layout.lines) {
    throw execution_error(std::string("mailbox::") + what +
                          ": no consistent read of the output within " + std::to_string(ms) +
                          " ms: the output line (commit " + std::to_string(output_commit()) +
                          " in word 0) held words of another commit at every read; its writer "
                          "(the loop's egress or a host commit) stopped midway, or commits "
                          "follow each other faster than one read of the line");
  }
  throw execution_error(
      std::string("mailbox::") + what + ": no consistent read of the output within " +
      std::to_string(ms) + " ms: commit " + std::to_string(output_commit()) +
      " is being overwritten by commit " +
      std::to_string(host_load_acquire(word(_layout.out_begin_at))) +
      " (begin word) throughout; its writer (the loop's egress or a host commit) stopped "
      "midway, or commits of " +
      std::to_string(_layout.output_bytes) + " bytes follow each other faster than one read");
}

output_stamp mailbox_protocol::latest_output(std::chrono::nanoseconds bound) const {
  if (_layout.lines) return read_output_line({}, bound, "latest_output");
  retry_bound retries(bound);
  for (;;) {
    const std::uint64_t end = host_load_acquire(word(_layout.out_end_at));
    if (end == 0) return {};
    const std::uint64_t seq = host_load_acquire(word(_layout.out_seq_at));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (host_load_acquire(word(_layout.out_begin_at)) == end) return {seq, end};
    if (retries.expired()) throw_torn("latest_output", bound);
  }
}

output_stamp mailbox_protocol::read_output(std::span<std::byte> out,
                                           std::chrono::nanoseconds bound) const {
  check_size("read_output", "buffer", out.size(), "output is", _layout.output_bytes);
  if (_layout.lines) return read_output_line(out, bound, "read_output");
  retry_bound retries(bound);
  for (;;) {
    // Sequence lock over the commit number: begin == end after the copy means no commit
    // overlapped it, a repeat of the same sample included (its commit number differs).
    const std::uint64_t end = host_load_acquire(word(_layout.out_end_at));
    if (end == 0) return {};
    const std::uint64_t seq = host_load_acquire(word(_layout.out_seq_at));
    copy_from_shared(out, bytes_at(_layout.out_payload_at));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (host_load_acquire(word(_layout.out_begin_at)) == end) return {seq, end};
    if (retries.expired()) throw_torn("read_output", bound);
  }
}

output_stamp mailbox_protocol::read_output_line(std::span<std::byte> out,
                                                std::chrono::nanoseconds bound,
                                                const char* what) const {
  // Word 0 is the commit number, word 1 the sample's number, the rest the payload: all tagged
  // with the commit's low byte. A read that took words of two commits sees two tags.
  retry_bound retries(bound);
  std::uint64_t w[tl::words];
  for (;;) {
    load_line(&word(_layout.out_begin_at), w);
    if (w[0] == 0) return {};
    if (tl::tagged_alike(w + 1, tl::words - 1, w[0])) {
      tl::unpack(w + 2, reinterpret_cast<unsigned char*>(out.data()), out.size());
      return {tl::low56(w[1]), w[0]};
    }
    if (retries.expired()) throw_torn(what, bound);
  }
}

output_stamp mailbox_protocol::wait_output(const output_stamp& after, std::span<std::byte> out,
                                           std::chrono::nanoseconds timeout,
                                           std::chrono::nanoseconds bound) const {
  const auto deadline = clock::now() + timeout;
  while (output_commit() == after.commit) {
    if (clock::now() > deadline) return {};
  }
  return read_output(out, bound);
}

std::uint64_t mailbox_protocol::read_input(std::uint64_t after, std::span<std::byte> out,
                                           sample_policy policy) const {
  check_size("read_input", "buffer", out.size(), "input is", _layout.input_bytes);
  for (;;) {
    const std::uint64_t newest = host_load_acquire(word(_layout.head_at));
    if (newest <= after) return 0;
    // A host loop has no repeats to make: `newest` takes the newest, like skip-duplicate.
    const std::uint64_t pick = select_sample(newest, after, false, policy, _layout.depth);
    if (_layout.lines) {
      if (read_slot_line(pick, out)) return pick;
      continue;  // being rewritten: choose again
    }
    const std::size_t slot = _layout.slot_at(pick);
    if (host_load_acquire(word(slot)) != pick) continue;  // being rewritten: choose again
    copy_from_shared(out, bytes_at(slot + mailbox_layout::line));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (host_load_acquire(word(slot)) == pick) return pick;
  }
}

bool mailbox_protocol::read_slot_line(std::uint64_t pick, std::span<std::byte> out) const {
  std::uint64_t w[tl::words];
  load_line(&word(_layout.slot_at(pick)), w);
  if (w[0] != pick || !tl::tagged_alike(w + 1, tl::words - 1, slot_tag(pick, _layout.depth))) {
    return false;
  }
  tl::unpack(w + 1, reinterpret_cast<unsigned char*>(out.data()), out.size());
  return true;
}

void mailbox_protocol::commit_line(std::uint64_t commit, std::uint64_t seq,
                                   std::span<const std::byte> payload) {
  std::uint64_t w[tl::words];
  w[0] = commit;
  w[1] = tl::tag_word(seq, commit);
  tl::pack(reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), w + 2,
           tl::words - 2, commit);
  store_line(&word(_layout.out_begin_at), w);
}

void mailbox_protocol::commit_output_from_host(std::uint64_t seq,
                                               std::span<const std::byte> payload) {
  check_size("commit_output_from_host", "payload", payload.size(), "output is",
             _layout.output_bytes);
  // Above every commit written so far, the device's (a loop ran before) included: commit
  // numbers stay unique and increasing.
  _host_commits = std::max(_host_commits, newest_commit()) + 1;
  if (_layout.lines) {
    commit_line(_host_commits, seq, payload);
    return;
  }
  host_store_release(word(_layout.out_begin_at), _host_commits);
  std::atomic_thread_fence(std::memory_order_release);
  copy_to_shared(bytes_at(_layout.out_payload_at), payload);
  host_store_release(word(_layout.out_seq_at), seq);
  host_store_release(word(_layout.out_end_at), _host_commits);
}

}  // namespace detail
}  // namespace resident::io
