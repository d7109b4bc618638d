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

CLI::App* add_report_options(CLI::App& root, report_settings& settings);
[[nodiscard]] command add_report_command(CLI::App& root);
[[nodiscard]] int run_report(const report_settings& settings);

}  // namespace resident::cli
