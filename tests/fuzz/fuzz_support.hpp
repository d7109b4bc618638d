#pragma once
// What the harnesses share. A harness feeds one input through a parser's entry point and lets
// the parser's named errors pass; anything else escaping (a bare library exception that names
// no key or value), a crash, a sanitizer report, a hang or an absurd allocation is a finding.

#include <yaml-cpp/exceptions.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>

namespace resident::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Reports an exception that is not one of the parser's named errors, and aborts (libFuzzer
/// records the input).
[[noreturn]] inline void unexpected(const char* kind, const char* what) {
  std::fprintf(stderr, "fuzz: unexpected %s escaped the parser: %s\n", kind, what);
  std::abort();
}

/// Runs `body`; the parser's named errors (std::invalid_argument and its config_error,
/// std::runtime_error for unreadable input) pass, a bare YAML exception does not: the user
/// would see yaml-cpp's message without the key it is about.
template <class F>
void expect_named_errors(F&& body) {
  try {
    body();
  } catch (const YAML::Exception& e) {
    unexpected("YAML::Exception", e.what());
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
}

/// A private folder under the system's temporary folder, made at first use and entered
/// (chdir), so that whatever a harness writes lands there; removed when the process exits.
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed, so that the exit handler may still read it.
  static const std::filesystem::path* const dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "resident-fuzz-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    std::filesystem::current_path(pattern);
    return new std::filesystem::path(pattern);
  }();
  static const bool cleanup = [] {
    std::atexit([] {  // libFuzzer ends with exit(): the folder goes with the process
      std::error_code ignored;
      std::filesystem::current_path(std::filesystem::temp_directory_path(), ignored);
      std::filesystem::remove_all(*dir, ignored);
    });
    return true;
  }();
  (void)cleanup;
  return *dir;
}

}  // namespace resident::fuzz
