#pragma once
// resident sim [FILE.yaml] [--drop FROM->TO] [--json PATH]: the logical issue-order simulator
// (resident/sim/issue_order.hpp) on the command line. No GPU is involved.
//
// Exit status of run_sim: 0 when the given schedule (the file, or the built-in lab example) has
// no hazards, 3 when it has some, so a script can check a schedule. The demonstration variant
// (--drop, or the built-in example without copy->affine) is printed but never changes the
// status: it is broken on purpose. Invalid input throws (sim_error and friends); the CLI turns
// that into status 1 like every other command.

#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>

namespace resident::bench {

struct sim_settings {
  std::string file;  // the operations (YAML); empty: the lab example
  std::string drop;  // "FROM->TO": also simulate without that dependency
  std::string json;  // write {"benchmark": "sim", "schedules": [...]} here when not empty
};

/// Exit status when the given schedule has hazards.
inline constexpr int sim_hazards_found = 3;

/// {"copy", "affine"} from "copy->affine" (spaces around either name are ignored);
/// std::invalid_argument for anything else.
[[nodiscard]] std::pair<std::string, std::string> parse_drop(std::string_view text);

/// Simulates, prints each schedule to `out` (and writes settings.json); returns 0 or
/// sim_hazards_found as the file comment says.
[[nodiscard]] int run_sim(const sim_settings& settings, std::ostream& out);

}  // namespace resident::bench
