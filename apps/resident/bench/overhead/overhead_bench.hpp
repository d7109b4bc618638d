#pragma once
// resident bench overhead: the fixed costs of the framework, from device timestamps
// (%globaltimer stamps of every stage) and host clocks.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <iosfwd>
#include <string>

#include "resident/measure/receipt.hpp"

namespace resident::bench {

struct overhead_settings {
  std::int64_t iterations{20000};  // stamped iterations per mode
  double idle_seconds{1.0};        // how long each idle loop runs
  std::int64_t launches{10000};    // host graph launches timed
  std::string command;

  void make_quick();
  void validate() const;
};

[[nodiscard]] measure::receipt run_overhead_bench(const overhead_settings& settings,
                                                  std::ostream& log);
[[nodiscard]] std::string overhead_table(const measure::receipt& receipt);

/// One empty kernel on `s` (for host launch and synchronize costs).
void launch_empty_kernel(cudaStream_t s);

}  // namespace resident::bench
