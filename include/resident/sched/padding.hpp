#pragma once
// Dynamic kernel padding (REEF): a real-time (RT) kernel that does not fill the GPU leaves
// block slots idle; best-effort (BE) blocks launched alongside it use them, as long as the RT
// kernel is predicted to finish no later than its tolerance allows.
//
// The model, from profiles measured beforehand:
//   - capacity = sm_count * rt.blocks_per_sm slots; the RT kernel runs in
//     waves = ceil(rt.blocks / capacity), and its last (or only) wave leaves
//     idle = capacity * waves - rt.blocks slots empty.
//   - A slot holds one BE block. When be.blocks_per_sm >= rt.blocks_per_sm a BE block fits an
//     RT slot; otherwise the BE kernel is heavier per block, and only
//     floor(idle * be.blocks_per_sm / rt.blocks_per_sm) slots are usable.
//   - The merged launch hands out RT work first, so the idle slots take BE blocks only once the
//     last RT wave starts: start_us = (waves - 1) * rt.alone_us / waves.
//   - budget_us = rt.alone_us * (1 + tolerance). A slot runs BE blocks one after another from
//     start_us: at most floor((budget_us - start_us) / be.block_us) rounds.
//   - be_blocks = min(slots * max_rounds, be.available_blocks); rounds = ceil(be_blocks /
//     slots); predicted_us = max(rt.alone_us, start_us + rounds * be.block_us).
//
// It assumes equal waves and that co-resident BE blocks slow the RT blocks no more than
// block_us already measured; the tolerance absorbs what the model leaves out.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace resident::sched {

/// A real-time kernel, profiled alone.
struct rt_profile {
  std::string name;
  std::int64_t blocks{};         // grid size, > 0
  std::int64_t blocks_per_sm{};  // occupancy, > 0
  double alone_us{};             // measured time of the kernel alone, > 0
};

/// A best-effort kernel that could pad the RT kernel.
struct be_profile {
  std::string name;
  double block_us{};                // one BE block's time when co-resident with RT work, > 0
  std::int64_t blocks_per_sm{};     // occupancy, > 0
  std::int64_t available_blocks{};  // blocks it still has to run, >= 0
};

struct padding_choice {
  std::size_t candidate{};  // index into the candidates
  std::string name;
  std::int64_t slots{};      // idle RT slots this BE kernel can use
  std::int64_t be_blocks{};  // BE blocks to launch alongside the RT kernel
  std::int64_t rounds{};     // BE blocks one after another in the busiest slot
  double predicted_us{};     // the padded RT kernel's predicted time
  double be_work_us{};       // be_blocks * block_us: the BE work done for free
};

/// Idle block slots in the RT kernel's last wave (0 when it fills every slot). Validates like
/// select_padding.
[[nodiscard]] std::int64_t idle_slots(const rt_profile& rt, std::int64_t sm_count);

/// The candidate that does the most BE work (be_work_us) while the padded RT kernel stays
/// within rt.alone_us * (1 + tolerance); the lower index on a tie. nullopt when the RT kernel
/// leaves no idle slot or no candidate fits a single block. invalid_argument, naming the
/// kernel, for a non-positive count or time, a negative available_blocks or tolerance, or a
/// non-finite number.
[[nodiscard]] std::optional<padding_choice> select_padding(
    const rt_profile& rt, std::int64_t sm_count, const std::vector<be_profile>& candidates,
    double tolerance = 0.05);

/// One measured try of a padded launch.
struct padding_trial {
  std::int64_t be_blocks{};
  double padded_us{};
};

/// What fit_padding_budget settled on: the largest budget measured within the limit (0 when not
/// even one block was), its time (the last try's when none fit), and every try in order.
struct padding_fit {
  std::int64_t be_blocks{};
  double padded_us{};
  std::vector<padding_trial> tried;
};

/// Fits a padding budget by measurement, for what the model leaves out (co-running BE blocks
/// slow the RT blocks through the shared L2 and memory): times `proposed` BE blocks, halves the
/// budget while the measured launch exceeds limit_us, then bisects between the last budget that
/// fit and the one above it that did not, `refine_steps` times, keeping the largest that fit.
/// Halving alone can give away up to half of what fits. `measure(b)` times the padded launch
/// with b >= 1 BE blocks. invalid_argument for proposed < 1, a limit that is not a positive
/// finite time, refine_steps < 0, or a measured time that is not finite.
[[nodiscard]] padding_fit fit_padding_budget(
    std::int64_t proposed, double limit_us,
    const std::function<double(std::int64_t be_blocks)>& measure, int refine_steps = 3);

}  // namespace resident::sched
