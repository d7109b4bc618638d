#pragma once
// resident report RECEIPT...: receipts -> a plain-text table and one HTML page (no GPU).

#include <string>
#include <vector>

#include "commands/command.hpp"

namespace resident::cli {

struct report_settings {
  std::vector<std::string> receipts;
  std::string html;    // write a self-contained HTML report here when not empty
  std::string merged;  // merge the receipts into this file first when not empty
};

/// A receipt worth rendering: at least one result, each an object with fields (a receipt of an
/// interrupted run or a hand-edited one may hold none, or numbers and strings). Otherwise
/// std::invalid_argument naming `path`, the benchmark and the result.
void check_receipt_results(const measure::receipt& receipt, const std::string& path);

CLI::App* add_report_options(CLI::App& root, report_settings& settings);
[[nodiscard]] command add_report_command(CLI::App& root);
[[nodiscard]] int run_report(const report_settings& settings);

}  // namespace resident::cli
