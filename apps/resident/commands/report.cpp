// resident report (see report.hpp).

#include "commands/report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "bench/camera/camera_report.hpp"
#include "bench/io/io_bench.hpp"
#include "bench/soak/soak_bench.hpp"
#include "bench/soak/soak_health.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/report.hpp"

namespace resident::cli {

void check_receipt_results(const measure::receipt& r, const std::string& path) {
  const std::string who = path + ": receipt of '" + r.benchmark + "'";
  if (!r.results.is_array() || r.results.empty()) {
    throw std::invalid_argument(who +
                                " has no results (a run that ended before its first "
                                "result?); there is nothing to report");
  }
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const auto& result = r.results[i];
    const std::string which = who + ": result #" + std::to_string(i + 1);
    if (!result.is_object()) {
      std::string text = result.dump();
      if (text.size() > 60) text = text.substr(0, 57) + "...";
      throw std::invalid_argument(which + " is " + std::string(result.type_name()) + " " + text +
                                  ", not an object of fields");
    }
    if (result.empty()) throw std::invalid_argument(which + " is an empty object");
  }
}

CLI::App* add_report_options(CLI::App& root, report_settings& s) {
  auto* app = root.add_subcommand("report", "receipts -> text table and an HTML page (no GPU)");
  app->add_option("receipts", s.receipts, "JSON receipts, or one file of a soak's health lines")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--html", s.html, "write a self-contained HTML report here");
  app->add_option("--merge", s.merged,
                  "merge the receipts (one benchmark split across runs) into this file");
  return app;
}

command add_report_command(CLI::App& root) {
  auto s = std::make_shared<report_settings>();
  return {add_report_options(root, *s), [s] { return run_report(*s); }};
}

/// A soak's health lines, reported alone (a run still going, or one that died before its
/// receipt): the summary, and the page where --html asks for it.
int report_health_lines(const report_settings& s) {
  if (s.receipts.size() != 1 || !s.merged.empty()) {
    throw std::invalid_argument(
        "resident report: health lines (bench soak --health) are reported alone: give one such "
        "file, without --merge");
  }
  const bench::health_log log = bench::read_health_log(s.receipts.front());
  if (!s.html.empty()) {
    std::ofstream file(s.html);
    file << bench::health_report_html(log);
    if (!file) throw std::runtime_error("cannot write " + s.html);
    std::printf("report: %s\n", s.html.c_str());
  }
  std::printf("%s", bench::health_report_text(log).c_str());
  return 0;
}

int run_report(const report_settings& s) {
  if (std::ranges::any_of(s.receipts, bench::is_health_log)) return report_health_lines(s);
  std::vector<measure::receipt> parts;
  for (const auto& path : s.receipts) {
    parts.push_back(measure::receipt::read(path));
    check_receipt_results(parts.back(), path);
  }
  if (!s.merged.empty()) {
    // The Python benchmarks relate and judge their parts themselves: a plain concatenation here
    // would keep each part's ratios and judge nothing.
    for (const auto& part : parts) {
      if (part.benchmark == "disb" || part.benchmark == "inference") {
        throw std::invalid_argument(
            "resident report --merge: " + part.benchmark + " receipts are merged by `resident " +
            "bench " + part.benchmark + " --merge PART... --json OUT`, which relates each " +
            "part's results and judges the targets again over all of them");
      }
    }
    // A re-run camera part replaces the runs it repeats; the other benchmarks' parts concatenate
    // (io's repeats and loops' loop counts are not told apart by named fields).
    const measure::result_key key =
        parts.front().benchmark == "camera" ? bench::camera_result_key : measure::result_key{};
    measure::receipt merged = measure::merge(parts, key);
    // The io targets judge ratios across configurations that may come from different parts:
    // judged again over the merged results (the other benchmarks keep their parts' verdicts or,
    // like bench camera --from, judge a merged receipt themselves).
    if (merged.benchmark == "io") merged.settings["targets"] = bench::io_targets(merged.results);
    merged.write(s.merged);
    std::printf("merged %zu receipts into %s", parts.size(), s.merged.c_str());
    if (merged.settings.contains("replaced_results")) {
      std::printf(" (%zu results replaced by a later part's runs of the same configuration)",
                  merged.settings["replaced_results"].get<std::size_t>());
    }
    std::printf("\n");
    parts = {measure::receipt::read(s.merged)};
  }
  if (!s.html.empty()) {
    // One soak receipt gets the soak's own page; any other set, the generic one.
    const bool soak = parts.size() == 1 && parts.front().benchmark == "soak";
    std::ofstream file(s.html);
    file << (soak ? bench::soak_report_html(parts.front()) : measure::render_html(parts));
    if (!file) throw std::runtime_error("cannot write " + s.html);
    std::printf("report: %s\n", s.html.c_str());
  }
  // A soak receipt reads best as the soak's own table and its minutes; the others share the
  // generic table.
  std::vector<measure::receipt> others;
  for (auto& part : parts) {
    if (part.benchmark == "soak") {
      std::printf("%s", bench::soak_report_text(part).c_str());
    } else {
      others.push_back(std::move(part));
    }
  }
  if (!others.empty()) std::printf("%s", measure::render_text(others).c_str());
  return 0;
}

}  // namespace resident::cli
