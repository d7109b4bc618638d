#pragma once
// A logical issue-order simulator for streams: the host submits operations one per tick, the
// device runs each one when its stream, its waits and its submission allow. It shows two things
// a real timeline hides behind noise: host submission and device completion are separate
// clocks (their spans overlap and must not be added), and two operations that share a buffer
// without a happens-before ordering are a hazard even when the timing happens to separate them.
//
// It is not a model of a GPU: no API overhead, no copy/compute engine limits, no resource
// contention. Every operation on a stream runs as soon as its dependencies end; streams never
// compete. Use it to reason about ordering, never to predict a timeline.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace resident::sim {

/// An invalid operation list (names, streams, durations, waits) or input file. The message
/// names the operation and, for files, origin:line:col.
class sim_error : public std::invalid_argument {
 public:
  explicit sim_error(const std::string& what) : std::invalid_argument(what) {}
};

/// One unit of device work. Operations are submitted in vector order, one host tick each: the
/// k-th is issued at tick k.
struct operation {
  std::string name;                    // unique
  std::string stream;                  // earlier work on the same stream precedes it
  std::int64_t duration{};             // ticks, > 0
  std::vector<std::string> waits_for;  // operations submitted earlier (an event wait)
  std::vector<std::string> reads;      // buffers it reads
  std::vector<std::string> writes;     // buffers it writes
};

/// Where one operation landed in the simulated schedule.
struct scheduled_operation {
  std::string name;
  std::string stream;
  std::int64_t issue_tick{};  // when the host submitted it
  std::int64_t start{};       // max(issue, end of the stream's previous op, ends of its waits)
  std::int64_t end{};         // start + duration
};

/// The simulated schedule and the lab's timing arithmetic. The start event marker completes at
/// tick 0; the stop marker is submitted after the host loop, so it completes at
/// max(host_span, device_complete_tick).
struct schedule_result {
  std::vector<scheduled_operation> operations;  // in submission order
  std::int64_t host_return_tick{};              // = number of operations
  std::int64_t device_complete_tick{};          // the latest end
  std::int64_t host_span{};                     // host wall time around the submission loop
  std::int64_t event_span{};                    // stop marker - start marker (gaps included)
  std::int64_t end_to_end{};                    // submission start to the final synchronize
  /// host_span + event_span: the wrong total. The two intervals overlap (the device works
  /// while the host submits), so adding them counts the overlap twice.
  std::int64_t incorrect_addition{};

  /// The operation called `name`; sim_error when there is none.
  [[nodiscard]] const scheduled_operation& at(std::string_view name) const;
};

/// Throws sim_error for the first mistake: an empty list, an empty or duplicate name, an empty
/// stream, a non-positive duration, a wait on an unknown operation, on one submitted later, or
/// on itself, an empty buffer name.
void validate(const std::vector<operation>& operations);

/// Validates, then simulates the submission of `operations` (see the file comment).
[[nodiscard]] schedule_result schedule(const std::vector<operation>& operations);

/// Named after what goes wrong for the later-submitted operation of the pair.
enum class hazard_kind {
  read_before_write,  // the later op reads a buffer the earlier op writes: it may read too soon
  write_after_read,   // the later op writes a buffer the earlier op reads: it may clobber it
  write_after_write,  // both write: the final contents depend on timing
};
[[nodiscard]] std::string_view to_string(hazard_kind kind) noexcept;

/// Two operations that touch the same buffer, at least one writing, with no happens-before
/// ordering between them. first was submitted before second.
struct hazard {
  hazard_kind kind{};
  std::string buffer;
  std::string first;
  std::string second;
  /// In the simulated schedule, second starts before first ends (they run together, or in
  /// reverse order). False means the timing separated them by luck, not by ordering: the
  /// hazard is reported all the same.
  bool overlapped{};
};

/// Whether `first` happens before `second`: the transitive closure of "earlier on the same
/// stream" and "waits_for". Validates; sim_error for unknown names.
[[nodiscard]] bool happens_before(const std::vector<operation>& operations, std::string_view first,
                                  std::string_view second);

/// Every hazard, one per pair of operations and buffer, ordered by the later operation's
/// submission, then the earlier's, then where the later operation first lists the buffer
/// (reads before writes). When several kinds apply to one pair and buffer, the first of
/// read-before-write, write-after-write, write-after-read is reported. Validates.
[[nodiscard]] std::vector<hazard> find_hazards(const std::vector<operation>& operations);

/// True when find_hazards finds nothing: every pair that shares a written buffer is ordered.
[[nodiscard]] bool hazard_free(const std::vector<operation>& operations);

/// The lab's pipeline: copy (stream copy, 3 ticks, input -> work), then on stream compute
/// affine (4, waits for copy, work -> affine), square (2, affine -> squared) and reduce
/// (1, squared -> result).
[[nodiscard]] std::vector<operation> lab_example();

/// What the lab pipeline computes on integers: the sum of (2x + 1)^2 (164 for 1, 2, 3, 4). A
/// check of the pipeline's arithmetic, not part of the simulation.
[[nodiscard]] std::int64_t lab_result(const std::vector<std::int64_t>& inputs);

/// `operations` with `from` removed from `to`'s waits_for: the bug the simulator is for.
/// sim_error when `to` does not exist or does not wait for `from`.
[[nodiscard]] std::vector<operation> without_dependency(std::vector<operation> operations,
                                                        const std::string& from,
                                                        const std::string& to);

/// Reads a YAML operation list (the format is in docs/sim.md):
///
///   operations:
///     - {name: copy, stream: copy, duration: 3, reads: [input], writes: [work]}
///     - {name: affine, stream: compute, duration: 4, waits_for: [copy], reads: [work]}
///
/// Unknown keys, missing keys and wrong types are sim_errors with origin:line:col; the list is
/// then validated, and those errors point at the offending operation too.
[[nodiscard]] std::vector<operation> parse_operations(std::string_view yaml, std::string origin);
[[nodiscard]] std::vector<operation> load_operations(const std::filesystem::path& file);

/// {operations: [{name, stream, issue_tick, start, end}], host_return_tick,
///  device_complete_tick, timing: {host_span, event_span, end_to_end, incorrect_addition},
///  hazards: [{kind, buffer, first, second, overlapped}], hazard_free}
[[nodiscard]] nlohmann::json to_json(const schedule_result& result,
                                     const std::vector<hazard>& hazards);

/// The schedule as lines: host_return_tick=4, "copy stream=copy issue=0 start=0 end=3" per
/// operation, device_complete_tick=10, the host/event/end-to-end arithmetic, then each hazard in
/// words (or a line saying there are none). Hazards must name operations of `result`.
[[nodiscard]] std::string render_text(const schedule_result& result,
                                      const std::vector<hazard>& hazards);

}  // namespace resident::sim
