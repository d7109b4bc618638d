#pragma once
// resident bench camera's reports, both drawn from the receipt alone (its results carry the time
// series and histograms the plots need), so a receipt merged from several runs can be drawn
// again: the table printed at the end, and one HTML page with the targets, per configuration
// group a table, a box plot, latency over time and a histogram per mode, the operators' device
// times and the demosaic comparison.

#include <string>

#include "resident/measure/receipt.hpp"

namespace resident::bench {

/// Plain text: software and photon latency rows, operators, demosaic quality, the targets (met,
/// missed, not judged) and the ratios.
[[nodiscard]] std::string camera_table(const measure::receipt& receipt);

/// One self-contained HTML page (inline CSS and SVG, no scripts).
[[nodiscard]] std::string render_camera_report(const measure::receipt& receipt);

/// A camera result's configuration for measure::merge: its string fields (kind, format,
/// resolution, contention, mode, display, operator, photo) but the description `checked`, so
/// a re-run part replaces the runs it repeats. A software result without `pipeline` (recorded
/// before the fused pass existed) counts as `unfused`.
[[nodiscard]] std::string camera_result_key(const nlohmann::json& result);

}  // namespace resident::bench
