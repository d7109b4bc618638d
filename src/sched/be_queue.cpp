#include "resident/sched/be_queue.hpp"

#include <stdexcept>
#include <utility>

namespace resident::sched {

namespace {

std::string who(const std::string& name, launch_id id) {
  return "kernel '" + name + "' (launch " + std::to_string(id) + ")";
}

[[noreturn]] void completed_twice(std::int64_t block, const std::string& name, launch_id id,
                                  const std::string& why) {
  throw std::logic_error("block " + std::to_string(block) + " of " + who(name, id) +
                         " completed twice: " + why);
}

}  // namespace

be_queue::be_queue(std::size_t window) : _window(window) {
  if (window == 0) {
    throw std::invalid_argument(
        "be_queue: window is 0; at least one best-effort launch must be allowed in flight");
  }
}

be_queue::launch& be_queue::at(launch_id id, const char* caller) {
  return const_cast<launch&>(std::as_const(*this).at(id, caller));
}

const be_queue::launch& be_queue::at(launch_id id, const char* caller) const {
  if (id >= _launches.size()) {
    throw std::invalid_argument(std::string(caller) + ": unknown launch " + std::to_string(id) +
                                " (" + std::to_string(_launches.size()) + " enqueued)");
  }
  return _launches[id];
}

launch_id be_queue::enqueue(std::string name, std::int64_t blocks, bool idempotent) {
  if (name.empty()) throw std::invalid_argument("be_queue::enqueue: empty kernel name");
  if (blocks <= 0) {
    throw std::invalid_argument("be_queue::enqueue: kernel '" + name + "' has " +
                                std::to_string(blocks) + " blocks; a launch needs at least one");
  }
  const launch_id id = _launches.size();
  launch l;
  l.name = std::move(name);
  l.blocks = blocks;
  l.idempotent = idempotent;
  l.done.assign(static_cast<std::size_t>(blocks), false);
  _launches.push_back(std::move(l));
  _ready.insert(id);
  ++_counters.enqueued;
  ++_counters.pending;
  return id;
}

std::optional<submission> be_queue::next_submission() {
  if (_preempted || _ready.empty() || _counters.in_flight >= _window) return std::nullopt;
  const launch_id id = *_ready.begin();
  _ready.erase(_ready.begin());
  auto& l = _launches[id];

  // The completed prefix: skipped by every kind of launch.
  std::int64_t first = 0;
  while (first < l.blocks && l.done[static_cast<std::size_t>(first)]) ++first;
  std::vector<std::int64_t> skip;
  for (std::int64_t b = 0; b < first; ++b) skip.push_back(b);
  // Blocks completed after a gap: a non-idempotent kernel must skip them (running one twice
  // would apply its side effects twice); an idempotent one may re-run them, which lets the
  // device resume from a single offset. Idempotence only widens what may be re-run.
  if (!l.idempotent) {
    for (std::int64_t b = first; b < l.blocks; ++b) {
      if (l.done[static_cast<std::size_t>(b)]) skip.push_back(b);
    }
  }

  l.where = state::in_flight;
  _in_flight.insert(id);
  l.first_block = first;
  l.skip = skip;
  ++l.attempts;
  ++_counters.submitted;
  if (l.attempts > 1) ++_counters.resumed_launches;
  --_counters.pending;
  ++_counters.in_flight;
  return submission{id, l.name, l.blocks, std::move(skip), first, l.attempts};
}

void be_queue::report_blocks(launch_id id, const std::vector<std::int64_t>& completed_blocks) {
  auto& l = at(id, "be_queue::report_blocks");
  if (l.attempts == 0) {
    throw std::logic_error("be_queue::report_blocks: " + who(l.name, id) +
                           " was never submitted, so no block of it can have run");
  }
  // Validate the whole record before applying any of it, so that a rejected record leaves the
  // bookkeeping as it was.
  std::vector<bool> in_record(static_cast<std::size_t>(l.blocks), false);
  std::int64_t fresh = 0;
  std::int64_t rerun = 0;
  for (const auto b : completed_blocks) {
    if (b < 0 || b >= l.blocks) {
      throw std::invalid_argument("be_queue::report_blocks: block " + std::to_string(b) + " of " +
                                  who(l.name, id) + " is outside its grid of " +
                                  std::to_string(l.blocks) + " blocks");
    }
    const auto i = static_cast<std::size_t>(b);
    if (in_record[i]) completed_twice(b, l.name, id, "it appears twice in one completion record");
    in_record[i] = true;
    if (!l.done[i]) {
      ++fresh;
      continue;
    }
    if (!l.idempotent) {
      completed_twice(b, l.name, id,
                      "it was reported on an earlier attempt and the kernel is "
                      "not idempotent, so it must have been skipped");
    }
    if (b < l.first_block) {
      completed_twice(b, l.name, id,
                      "it lies in the completed prefix this attempt (" +
                          std::to_string(l.attempts) + ") was told to skip");
    }
    ++rerun;
  }
  for (const auto b : completed_blocks) l.done[static_cast<std::size_t>(b)] = true;
  l.done_count += fresh;
  _counters.blocks_completed += static_cast<std::uint64_t>(fresh);
  _counters.blocks_rerun += static_cast<std::uint64_t>(rerun);
}

void be_queue::complete(launch_id id) {
  auto& l = at(id, "be_queue::complete");
  if (l.where != state::in_flight) {
    throw std::logic_error("be_queue::complete: " + who(l.name, id) + " is not in flight");
  }
  l.where = state::finished;
  _in_flight.erase(id);
  --_counters.in_flight;
  ++_counters.completed;
}

std::vector<launch_id> be_queue::preempt() {
  if (_preempted) {
    throw std::logic_error("be_queue::preempt: already preempted; resume first");
  }
  _preempted = true;
  return {_in_flight.begin(), _in_flight.end()};
}

void be_queue::preempted_exit(launch_id id) {
  auto& l = at(id, "be_queue::preempted_exit");
  if (!_preempted) {
    throw std::logic_error("be_queue::preempted_exit: " + who(l.name, id) +
                           " exited for a preemption, but the queue is not preempted");
  }
  if (l.where != state::in_flight) {
    throw std::logic_error("be_queue::preempted_exit: " + who(l.name, id) + " is not in flight");
  }
  _in_flight.erase(id);
  --_counters.in_flight;
  if (l.done_count == l.blocks) {
    // Its last block finished before it saw the preempt word: nothing to resume.
    l.where = state::finished;
    ++_counters.completed;
    return;
  }
  l.where = state::pending;
  _ready.insert(id);
  ++_counters.pending;
  ++_counters.preempted_launches;
}

void be_queue::resume() {
  if (!_preempted) throw std::logic_error("be_queue::resume: the queue is not preempted");
  if (!_in_flight.empty()) {
    const launch_id id = *_in_flight.begin();
    throw std::logic_error("be_queue::resume: " + who(_launches[id].name, id) +
                           " is still in flight; call complete or preempted_exit for it first");
  }
  _preempted = false;
}

bool be_queue::finished(launch_id id) const {
  return at(id, "be_queue::finished").where == state::finished;
}

std::int64_t be_queue::remaining_blocks(launch_id id) const {
  const auto& l = at(id, "be_queue::remaining_blocks");
  return l.blocks - l.done_count;
}

}  // namespace resident::sched
