#pragma once

#include <string_view>

namespace resident {

/// The git commit the library was built from ("abc123def456", "-dirty" when the tree had
/// uncommitted changes, "unknown" outside a checkout).
[[nodiscard]] std::string_view git_commit() noexcept;

}  // namespace resident
