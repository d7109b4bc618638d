#pragma once
// The mailbox's host protocol over any memory: where its words lie, and the sensor's, the
// actuator's and a host loop's side of its sequence locks. io::mailbox runs it over pinned
// host-mapped memory the GPU reads and writes; the unit tests run it over plain host memory,
// with a thread in the egress's place (the device side: resident/io/mailbox_forms.cuh).
//
// Every shared word has one writer and is read and written with acquire/release; payloads are
// copied word by word with relaxed atomics, so a sequence lock's reader that races a writer
// reads stale or mixed bytes (which its stamp check then discards), never undefined behaviour.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "resident/app/loop.hpp"
#include "resident/io/tagged_line.hpp"

namespace resident::io {

/// How a mailbox lays out its samples and its output (mailbox::config::format).
enum class mailbox_format : std::uint8_t {
  /// `lines` where the sample and the output fit one line each, else `sequence_lock`.
  automatic,
  /// A slot holds a stamp line then the payload; the reader reads the stamp, the payload and the
  /// stamp again, and the output is fenced between a begin and an end word: any size, and a
  /// read of host-mapped memory from the GPU is three PCIe round trips.
  sequence_lock,
  /// A slot is one 64-byte line, its number in word 0 and the payload in the other seven words,
  /// each tagged with the number (io/tagged_line.hpp); the output likewise (commit number, then
  /// the sample's number and the payload, tagged with the commit). One wide read takes a sample
  /// with its torn-read check, and a commit needs no fence between payload and number. Samples
  /// up to 49 bytes, outputs up to 42.
  lines,
};

[[nodiscard]] std::string_view to_string(mailbox_format f) noexcept;
/// "automatic", "lines" or "sequence-lock"; std::invalid_argument naming them otherwise.
[[nodiscard]] mailbox_format parse_mailbox_format(std::string_view name);

/// Which output the actuator read: the sample it belongs to and its commit number (1, 2, ...;
/// unique per commit, so a repeated sample has a new commit). Both 0: nothing yet, or a timeout.
struct output_stamp {
  std::uint64_t seq{0};
  std::uint64_t commit{0};
  [[nodiscard]] bool empty() const noexcept { return commit == 0; }
  friend bool operator==(const output_stamp&, const output_stamp&) = default;
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

/// The number of the egress's next commit: one past both its own count (`commits_before`,
/// device memory) and `floor`, the newest commit number published when the loop's view was
/// taken (host commits and earlier loops included), so numbers never repeat whichever side
/// committed before.
__host__ __device__ constexpr std::uint64_t next_commit(std::uint64_t commits_before,
                                                        std::uint64_t floor) {
  return (commits_before > floor ? commits_before : floor) + 1;
}

/// Where the mailbox's words lie: [header line: head] [output line: begin, end, seq]
/// [output payload] [depth slots: a 64-byte header {seq}, then the payload], each part on whole
/// 64-byte lines. Offsets in bytes from the start of the mailbox's memory. In the `lines`
/// format the output line holds the whole output (no payload lines follow it) and a slot is
/// its header line alone.
struct mailbox_layout {
  static constexpr std::size_t line = 64;
  static constexpr std::size_t head_at = 0;
  static constexpr std::size_t out_begin_at = line;
  static constexpr std::size_t out_end_at = line + 8;
  static constexpr std::size_t out_seq_at = line + 16;
  static constexpr std::size_t out_payload_at = 2 * line;
  /// The `lines` format: the most bytes a slot's line and the output line carry.
  static constexpr std::size_t input_line_capacity = tagged_line::capacity;  // 49
  static constexpr std::size_t output_line_capacity =
      (tagged_line::words - 2) * tagged_line::bytes_per_word;  // 42

  std::size_t input_bytes{8};
  std::size_t output_bytes{8};
  std::size_t depth{4};
  bool lines{false};  // the `lines` format (resolve_format)

  [[nodiscard]] static constexpr std::size_t round_up(std::size_t n) {
    return (n + line - 1) / line * line;
  }
  [[nodiscard]] constexpr std::size_t slots_at() const {
    return out_payload_at + (lines ? 0 : round_up(output_bytes));
  }
  [[nodiscard]] constexpr std::size_t slot_stride() const {
    return lines ? line : line + round_up(input_bytes);
  }
  /// The slot sample `seq` is written to (its header; the payload follows a line later).
  [[nodiscard]] constexpr std::size_t slot_at(std::uint64_t seq) const {
    return slots_at() + static_cast<std::size_t>(seq % depth) * slot_stride();
  }
  [[nodiscard]] constexpr std::size_t total_bytes() const {
    return slots_at() + depth * slot_stride();
  }
};

/// Whether `format` gives the `lines` layout for these sizes; std::invalid_argument when
/// `lines` is asked for and the sample or the output does not fit a line.
[[nodiscard]] bool resolve_format(mailbox_format format, std::size_t input_bytes,
                                  std::size_t output_bytes);

/// The tag of a slot's words for sample `seq`: the slot's lap (how many times the ring went
/// round), so two writes of the same slot differ (io/tagged_line.hpp). The output line's tag is
/// its commit number's low byte.
__host__ __device__ constexpr std::uint64_t slot_tag(std::uint64_t seq, std::size_t depth) {
  return (seq / depth) & 0xFFU;
}

/// The host side of one mailbox over `memory` (layout.total_bytes(), zeroed, 8-byte aligned;
/// it must outlive the protocol). One sensor thread publishes, actuator threads read the
/// output, and either the loop's egress or a host loop (read_input, commit_output_from_host)
/// processes, never both at once. io::mailbox documents each call.
class mailbox_protocol {
 public:
  /// How long a read of the output retries while a commit overlaps it before it gives up.
  static constexpr std::chrono::milliseconds default_torn_bound{1000};

  mailbox_protocol(mailbox_layout layout, std::span<std::byte> memory);

  // ---- sensor side (one thread) -----------------------------------------------------------
  std::uint64_t publish(std::span<const std::byte> payload);
  [[nodiscard]] std::uint64_t published() const noexcept;

  // ---- actuator side ------------------------------------------------------------------------
  [[nodiscard]] std::uint64_t output_commit() const noexcept;
  /// The newest commit number written so far, complete or in progress (max of begin and end):
  /// every later commit, the host's or the device's, must be numbered above it.
  [[nodiscard]] std::uint64_t newest_commit() const noexcept;
  /// Throw execution_error when no consistent read succeeds within `bound` (a commit stopped
  /// midway, or commits follow each other faster than one read takes).
  [[nodiscard]] output_stamp latest_output(
      std::chrono::nanoseconds bound = default_torn_bound) const;
  output_stamp read_output(std::span<std::byte> out,
                           std::chrono::nanoseconds bound = default_torn_bound) const;
  output_stamp wait_output(const output_stamp& after, std::span<std::byte> out,
                           std::chrono::nanoseconds timeout,
                           std::chrono::nanoseconds bound = default_torn_bound) const;

  // ---- a host loop in place of the GPU loop ---------------------------------------------------
  std::uint64_t read_input(std::uint64_t after, std::span<std::byte> out,
                           sample_policy policy) const;
  void commit_output_from_host(std::uint64_t seq, std::span<const std::byte> payload);

  [[nodiscard]] const mailbox_layout& layout() const noexcept { return _layout; }
  /// The sensor-written word holding the newest sequence number (for host gates).
  [[nodiscard]] const std::uint64_t* head_word() const noexcept { return &word(_layout.head_at); }

 private:
  [[nodiscard]] std::uint64_t& word(std::size_t at) const noexcept {
    return *reinterpret_cast<std::uint64_t*>(_memory + at);
  }
  [[nodiscard]] std::byte* bytes_at(std::size_t at) const noexcept { return _memory + at; }
  [[noreturn]] void throw_torn(const char* what, std::chrono::nanoseconds bound) const;
  // The `lines` format's halves of publish, read_output, read_input and the host commit.
  void publish_line(std::uint64_t seq, std::span<const std::byte> payload);
  output_stamp read_output_line(std::span<std::byte> out, std::chrono::nanoseconds bound,
                                const char* what) const;
  [[nodiscard]] bool read_slot_line(std::uint64_t pick, std::span<std::byte> out) const;
  void commit_line(std::uint64_t commit, std::uint64_t seq, std::span<const std::byte> payload);

  mailbox_layout _layout;
  std::byte* _memory;
  std::uint64_t _next{0};          // sensor-private
  std::uint64_t _host_commits{0};  // the latest commit_output_from_host's number
};

/// Copies between private memory and the protocol's shared payload words (8-byte aligned),
/// word by word with relaxed atomics: what a sequence lock's writer and reader use.
void copy_to_shared(std::byte* shared, std::span<const std::byte> from) noexcept;
void copy_from_shared(std::span<std::byte> to, const std::byte* shared) noexcept;

}  // namespace detail

}  // namespace resident::io
