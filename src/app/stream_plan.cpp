#include "resident/app/stream_plan.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace resident {

std::string_view to_string(capture_order c) noexcept {
  switch (c) {
    case capture_order::chain:
      return "chain";
    case capture_order::forked:
      return "forked";
  }
  return "unknown";
}

capture_order parse_capture_order(std::string_view name) {
  for (const auto c : {capture_order::chain, capture_order::forked}) {
    if (to_string(c) == name) return c;
  }
  throw std::invalid_argument("unknown capture order '" + std::string(name) +
                              "'; capture orders: chain, forked");
}

namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

// The producers of operator i, sorted and unique, checked to come before it.
std::vector<std::size_t> checked_producers(const std::vector<std::vector<std::size_t>>& producers,
                                           std::size_t i) {
  std::vector<std::size_t> p = producers[i];
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  if (!p.empty() && p.back() >= i) {
    throw std::invalid_argument("plan_streams: operator " + std::to_string(i) +
                                " is fed by operator " + std::to_string(p.back()) +
                                ", which does not come before it in topological order");
  }
  return p;
}

}  // namespace

stream_plan plan_streams(const std::vector<std::vector<std::size_t>>& producers,
                         capture_order order) {
  stream_plan plan;
  plan.order = order;
  const std::size_t n = producers.size();
  plan.steps.resize(n);
  if (order == capture_order::chain) {
    if (n > 0) plan.steps[0].starts_stream = true;
    return plan;
  }
  plan.streams = 0;
  std::vector<std::size_t> tail;  // the last operator on each stream so far
  std::vector<bool> consumed(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<std::size_t> from = checked_producers(producers, i);
    stream_step& step = plan.steps[i];
    // Continue the lowest-numbered stream whose last operator feeds this one: the main path
    // stays on stream 0, and the stream's earlier operators are all ancestors of this one.
    std::size_t continued = none;
    for (const std::size_t p : from) {
      consumed[p] = true;
      const std::size_t s = plan.steps[p].stream;
      if (tail[s] == p && (continued == none || s < plan.steps[continued].stream)) continued = p;
    }
    if (continued == none) {
      step.stream = plan.streams++;
      step.starts_stream = true;
      tail.push_back(i);
    } else {
      step.stream = plan.steps[continued].stream;
      tail[step.stream] = i;
    }
    for (const std::size_t p : from) {
      if (p == continued) continue;
      step.waits.push_back(p);
      plan.steps[p].signals = true;
    }
  }
  // A stream's last operator that feeds nothing: stream 0 joins it. One that feeds an operator
  // on another stream is joined through that operator's stream.
  for (std::size_t s = 1; s < plan.streams; ++s) {
    if (consumed[tail[s]]) continue;
    plan.join.push_back(tail[s]);
    plan.steps[tail[s]].signals = true;
  }
  std::sort(plan.join.begin(), plan.join.end());
  plan.streams = std::max<std::size_t>(plan.streams, 1);
  return plan;
}

}  // namespace resident
