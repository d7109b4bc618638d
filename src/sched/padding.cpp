#include "resident/sched/padding.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace resident::sched {

namespace {

// Profiled times are decimal microseconds; 0.3 / 0.1 is 2.9999999999999996 in binary. A
// relative slack this small turns that into the 3 rounds that were meant, and is far below
// any timing a profile can resolve.
constexpr double slack = 1e-9;

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("select_padding: " + message);
}

void validate(const rt_profile& rt, std::int64_t sm_count) {
  const std::string who = "RT kernel '" + rt.name + "'";
  require(sm_count > 0, "sm_count is " + std::to_string(sm_count) + "; it must be positive");
  require(rt.blocks > 0, who + " has " + std::to_string(rt.blocks) + " blocks; need > 0");
  require(rt.blocks_per_sm > 0,
          who + " has blocks_per_sm " + std::to_string(rt.blocks_per_sm) + "; need > 0");
  require(std::isfinite(rt.alone_us) && rt.alone_us > 0,
          who + " has alone_us " + std::to_string(rt.alone_us) + "; need a positive time");
}

void validate(const be_profile& be, std::size_t index) {
  const std::string who = "BE kernel '" + be.name + "' (candidate " + std::to_string(index) + ")";
  require(std::isfinite(be.block_us) && be.block_us > 0,
          who + " has block_us " + std::to_string(be.block_us) + "; need a positive time");
  require(be.blocks_per_sm > 0,
          who + " has blocks_per_sm " + std::to_string(be.blocks_per_sm) + "; need > 0");
  require(be.available_blocks >= 0,
          who + " has available_blocks " + std::to_string(be.available_blocks) + "; need >= 0");
}

}  // namespace

std::int64_t idle_slots(const rt_profile& rt, std::int64_t sm_count) {
  validate(rt, sm_count);
  const std::int64_t capacity = sm_count * rt.blocks_per_sm;
  const std::int64_t waves = (rt.blocks + capacity - 1) / capacity;
  return capacity * waves - rt.blocks;
}

std::optional<padding_choice> select_padding(const rt_profile& rt, std::int64_t sm_count,
                                             const std::vector<be_profile>& candidates,
                                             double tolerance) {
  require(std::isfinite(tolerance) && tolerance >= 0, "tolerance " + std::to_string(tolerance) +
                                                          " for RT kernel '" + rt.name +
                                                          "' must be a finite fraction >= 0");
  const std::int64_t idle = idle_slots(rt, sm_count);
  // Validate every candidate even when there is nothing to pad: a bad profile is a bug
  // whether or not this RT kernel happens to expose it.
  for (std::size_t i = 0; i < candidates.size(); ++i) validate(candidates[i], i);
  if (idle == 0) return std::nullopt;

  const double budget_us = rt.alone_us * (1 + tolerance);
  // Idle slots exist only in the last wave: BE work starts when the RT work runs out.
  const std::int64_t capacity = sm_count * rt.blocks_per_sm;
  const std::int64_t waves = (rt.blocks + capacity - 1) / capacity;
  const double start_us = rt.alone_us * static_cast<double>(waves - 1) / static_cast<double>(waves);
  std::optional<padding_choice> best;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& be = candidates[i];
    // A BE kernel with lower occupancy than the RT kernel needs more than one RT slot's share
    // of an SM per block.
    const std::int64_t slots =
        be.blocks_per_sm >= rt.blocks_per_sm ? idle : idle * be.blocks_per_sm / rt.blocks_per_sm;
    // In doubles until capped by available_blocks: a tiny block_us must not overflow.
    const double max_rounds = std::floor((budget_us - start_us) / be.block_us * (1 + slack));
    const double fit = static_cast<double>(slots) * max_rounds;
    const std::int64_t be_blocks = fit < static_cast<double>(be.available_blocks)
                                       ? static_cast<std::int64_t>(fit)
                                       : be.available_blocks;
    if (be_blocks == 0) continue;
    // Fewer blocks than slots * max_rounds spread over every slot: the busiest slot runs
    // ceil(be_blocks / slots) of them.
    const std::int64_t rounds = (be_blocks + slots - 1) / slots;
    const double predicted_us =
        std::max(rt.alone_us, start_us + static_cast<double>(rounds) * be.block_us);
    const double be_work_us = static_cast<double>(be_blocks) * be.block_us;
    if (best && be_work_us <= best->be_work_us) continue;
    best = padding_choice{i, be.name, slots, be_blocks, rounds, predicted_us, be_work_us};
  }
  return best;
}

padding_fit fit_padding_budget(std::int64_t proposed, double limit_us,
                               const std::function<double(std::int64_t)>& measure,
                               int refine_steps) {
  const auto fail = [](const std::string& message) {
    throw std::invalid_argument("fit_padding_budget: " + message);
  };
  if (proposed < 1) fail("proposed budget " + std::to_string(proposed) + " must be >= 1");
  if (!(std::isfinite(limit_us) && limit_us > 0)) {
    fail("limit " + std::to_string(limit_us) + " us must be a positive time");
  }
  if (refine_steps < 0) fail("refine_steps " + std::to_string(refine_steps) + " must be >= 0");
  padding_fit fit;
  const auto fits = [&](std::int64_t blocks) {
    const double us = measure(blocks);
    if (!std::isfinite(us)) {
      fail("the launch with " + std::to_string(blocks) + " BE blocks measured " +
           std::to_string(us) + " us");
    }
    fit.tried.push_back({blocks, us});
    if (us > limit_us) return false;
    fit.be_blocks = blocks;
    fit.padded_us = us;
    return true;
  };
  std::int64_t miss = 0;  // the smallest budget seen over the limit, 0: none
  for (std::int64_t b = proposed; !fits(b); b /= 2) {
    miss = b;
    if (b == 1) {
      fit.padded_us = fit.tried.back().padded_us;
      return fit;
    }
  }
  for (int step = 0; step < refine_steps && miss - fit.be_blocks > 1; ++step) {
    const std::int64_t mid = fit.be_blocks + (miss - fit.be_blocks) / 2;
    if (!fits(mid)) miss = mid;
  }
  return fit;
}

}  // namespace resident::sched
