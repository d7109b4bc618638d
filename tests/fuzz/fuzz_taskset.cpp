// The task-set YAML (resident plan TASKSET.yaml): parse_taskset, then the planner (plan) and
// both renderings of its result. A receipt the task set names is answered with the overhead
// receipt of the unit-test fixtures, whatever its path: the harness reads no other file.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "fuzz_support.hpp"
#include "resident/partition/planner.hpp"
#include "resident/partition/planner_json.hpp"

namespace {

const nlohmann::json& fixture_receipt() {
  static const nlohmann::json receipt = [] {
    std::ifstream in(RESIDENT_FUZZ_FIXTURES "/overhead_h200.json");
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str());
  }();
  return receipt;
}

std::map<resident::execution_mode, resident::partition::overhead_model> read_fixture(
    const std::filesystem::path& /*file*/, double margin, const std::string& name,
    const std::string& /*at*/) {
  return resident::partition::overheads_from_receipt(fixture_receipt(), margin, name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace partition = resident::partition;
  resident::fuzz::expect_named_errors([&] {
    const auto tasks = partition::parse_taskset(resident::fuzz::text_of(data, size), "fuzz.yaml",
                                                {}, read_fixture);
    const auto result = partition::plan(tasks);
    (void)partition::render_text(result);
    (void)partition::to_json(result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  });
  return 0;
}
