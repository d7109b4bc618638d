#include "resident/version.hpp"

#include "resident_build_info.hpp"

namespace resident {

std::string_view git_commit() noexcept { return RESIDENT_GIT_COMMIT; }

}  // namespace resident
