#pragma once
// bench reef's configuration file: every knob of reef_settings by its field name, e.g.
//
//   rate_hz: 8000
//   be_window: 2
//   rt_pdl: true
//   policies: [exclusive, green-split, preempt-sm]
//
// bench/configs/reef.yaml holds every knob at its default (`resident bench reef --config
// bench/configs/reef.yaml` runs as `resident bench reef` does). A file may set any subset.

#include <string>
#include <string_view>
#include <vector>

#include "bench/reef/reef_bench.hpp"

namespace resident::bench {

/// The keys a reef configuration file may hold, in the default file's order.
[[nodiscard]] const std::vector<std::string>& reef_config_keys();

/// `base` with the knobs the YAML text sets. Throws std::invalid_argument whose message starts
/// with ORIGIN:LINE:COL for text that is not YAML, an unknown or repeated key (named), a value of
/// the wrong type, and a value out of range or knobs that do not go together (reef_settings::
/// problem(), naming the key; at the key's value when the file set it, else ORIGIN alone).
[[nodiscard]] reef_settings parse_reef_config(std::string_view yaml, const std::string& origin,
                                              reef_settings base = {});

/// parse_reef_config on a file (its path as the origin).
[[nodiscard]] reef_settings load_reef_config(const std::string& path, reef_settings base = {});

}  // namespace resident::bench
