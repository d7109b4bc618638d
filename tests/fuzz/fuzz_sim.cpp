// The simulator's input (resident sim OPS.yaml): parse_operations, then the schedule, the
// hazards, both renderings, and the --drop demonstration (without_dependency) of the first
// operation's first wait.

#include <cstdint>

#include "fuzz_support.hpp"
#include "resident/sim/issue_order.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sim = resident::sim;
  resident::fuzz::expect_named_errors([&] {
    const auto ops = sim::parse_operations(resident::fuzz::text_of(data, size), "fuzz.yaml");
    const auto result = sim::schedule(ops);
    const auto hazards = sim::find_hazards(ops);
    (void)sim::render_text(result, hazards);
    (void)sim::to_json(result, hazards)
        .dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const auto& op : ops) {
      if (op.waits_for.empty()) continue;
      const auto dropped = sim::without_dependency(ops, op.waits_for.front(), op.name);
      (void)sim::schedule(dropped);
      (void)sim::find_hazards(dropped);
      break;
    }
  });
  return 0;
}
