#include "commands/command.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "resident/cuda/device.hpp"

namespace resident::cli {

namespace {

/// The subcommands of `app` by name, in the order they were added.
std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

std::string names_of(const std::vector<CLI::App*>& apps) {
  std::string names;
  for (const auto* a : apps) names += (names.empty() ? "" : ", ") + a->get_name();
  return names;
}

bool is_help_or_version(const std::string& arg) {
  return arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "--version";
}

/// The deepest command the leading command words of argv name, and its name; `unknown` is the
/// word that named no command after it (empty: none).
struct command_path {
  CLI::App* app;
  std::string name;
  std::string unknown;
};

command_path walk(CLI::App& root, int argc, char** argv) {
  command_path at{&root, "", ""};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto subs = subcommands_of(*at.app);
    if (subs.empty() || (!arg.empty() && arg[0] == '-')) return at;
    CLI::App* next = nullptr;
    for (auto* s : subs) {
      if (s->check_name(arg)) next = s;
    }
    if (next == nullptr) {
      at.unknown = arg;
      return at;
    }
    at.app = next;
    at.name = at.name.empty() ? arg : at.name + " " + arg;
  }
  return at;
}

void print_parse_error(const std::string& name, const std::string& what) {
  print_error(name, what);
  std::fprintf(stderr, "run 'resident%s%s --help' for the options\n", name.empty() ? "" : " ",
               name.c_str());
}

}  // namespace

std::string command_name(const CLI::App& app) {
  std::string name;
  for (const CLI::App* a = &app; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    name = name.empty() ? a->get_name() : a->get_name() + " " + name;
  }
  return name;
}

void print_error(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "resident%s%s: %s\n", command.empty() ? "" : " ", command.c_str(),
               message.c_str());
}

int parse_and_run(CLI::App& root, const std::vector<command>& commands, int argc, char** argv) {
  const command_path at = walk(root, argc, argv);
  const auto subs = subcommands_of(*at.app);
  if (!at.unknown.empty()) {
    print_parse_error(at.name, "unknown command '" + at.unknown + "'; commands: " + names_of(subs));
    return 1;
  }
  // A command group (`resident`, `resident bench`) with no command after it.
  bool asks_help = false;
  for (int i = 1; i < argc; ++i) asks_help = asks_help || is_help_or_version(argv[i]);
  if (!subs.empty() && !asks_help) {
    print_parse_error(at.name, "name a command: " + names_of(subs));
    return 1;
  }
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return root.exit(e);  // --help, --version
    // CLI11's own codes (105 for a bad value, 106 for an unknown option, ...) are not resident's:
    // every usage error exits 1 (README, "The resident command").
    print_parse_error(at.name, e.what());
    return 1;
  }
  for (const auto& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const std::exception& e) {
      print_error(command_name(*c.app), e.what());
      return 1;
    }
  }
  print_parse_error("", "name a command: " + names_of(subcommands_of(root)));
  return 1;
}

// ---- the GPU ----------------------------------------------------------------------------------

bool have_gpu() { return device_count() > 0; }

std::string no_gpu_message(const std::string& command, const std::string& reason) {
  std::string m =
      "resident " + command + ": " + explain_no_device(reason) + ", and this command needs one.\n";
  m += "  Without a GPU, resident can still plan SM partitions (resident plan TASKSET.yaml), "
       "simulate stream schedules (resident sim), render receipts (resident report RECEIPT...) "
       "and check a pipeline configuration (resident run CONFIG.yaml --check).\n";
  return m;
}

int no_gpu(const std::string& command) {
  std::fputs(no_gpu_message(command, no_device_reason()).c_str(), stderr);
  return 2;
}

// ---- flags ------------------------------------------------------------------------------------

CLI::Validator whole_in(std::int64_t lo, std::int64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) -> std::string {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec == std::errc{} && end == value.data() + value.size() && v >= lo && v <= hi) {
          return {};
        }
        return "must be a whole number in " + range + ", got '" + value + "'";
      },
      range);
}

namespace {

CLI::Validator number_check(double lo, bool lo_open, double hi, const std::string& range) {
  return CLI::Validator(
      [lo, lo_open, hi, range](std::string& value) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        const bool number = !value.empty() && end == value.c_str() + value.size();
        if (number && (lo_open ? v > lo : v >= lo) && v <= hi) return {};
        return "must be a number in " + range + ", got '" + value + "'";
      },
      range);
}

std::string text_of(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

}  // namespace

CLI::Validator positive(double hi) {
  return number_check(0.0, true, hi, "(0, " + text_of(hi) + "]");
}

CLI::Validator number_in(double lo, double hi) {
  return number_check(lo, false, hi, "[" + text_of(lo) + ", " + text_of(hi) + "]");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (const char c : text + ",") {
    if (c == ',') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  return items;
}

std::vector<int> positive_numbers(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    int value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc{} || end != item.data() + item.size() || value <= 0) {
      throw std::invalid_argument(flag + ": '" + item + "' is not a positive whole number");
    }
    out.push_back(value);
  }
  return out;
}

CLI::App* add_bench_group(CLI::App& root) {
  auto* bench = root.add_subcommand(
      "bench", "benchmarks: a human table last, JSON receipts (method: docs/benchmarks.md)");
  bench->require_subcommand(1);
  return bench;
}

void finish_bench(const measure::receipt& receipt, const std::string& json,
                  const std::string& table) {
  if (!json.empty()) {
    receipt.write(json);
    std::printf("receipt: %s\n", json.c_str());
  }
  std::printf("\n%s", table.c_str());
}

}  // namespace resident::cli
