// resident info: the GPU and build this binary sees.

#include "commands/info.hpp"

#include <cstdio>
#include <string>

#include "resident/cuda/device.hpp"
#include "resident/version.hpp"

namespace resident::cli {

command add_info_command(CLI::App& root) {
  auto* app = root.add_subcommand("info", "show the GPU and build this binary sees");
  return {app, [] { return run_info({}); }};
}

int run_info(const info_settings& /*settings*/) {
  std::printf("resident build %s\n", std::string(git_commit()).c_str());
  if (!have_gpu()) return no_gpu("info");
  const auto d = query_device(0);
  std::printf("device 0: %s, %d SMs, compute capability %d.%d, SM clock %d MHz\n", d.name.c_str(),
              d.sm_count, d.compute_major, d.compute_minor, d.clock_rate_khz / 1000);
  std::printf("driver %d, runtime %d, host-mapped memory %s, host-native atomics %s\n",
              d.driver_version, d.runtime_version, d.can_map_host_memory ? "yes" : "no",
              d.host_native_atomics ? "yes" : "no");
  std::printf("module loading %s\n", d.module_loading.c_str());
  return 0;
}

}  // namespace resident::cli
