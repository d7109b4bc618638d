#pragma once
// bench reef's policies (internal to the bench): what each one changes, and one policy's run.

#include <cuda_runtime_api.h>

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/reef/reef_bench.hpp"
#include "bench/reef/reef_model.hpp"

namespace resident::bench::reef_detail {

/// What each policy changes.
struct policy_config {
  bool be{true};            // BE clients run at all
  bool preemptible{false};  // BE kernels poll the preempt word; the runner preempts/resumes
  bool sequential{false};   // BE waits while an RT iteration is active
  bool rt_high{false};      // the RT loop's stream has the highest priority
  bool be_low{false};       // the BE streams have the lowest priority
  bool split{false};        // RT and BE on disjoint green contexts
  bool pad{false};          // RT gemms padded with BE blocks
  bool spatial{false};      // RT on its own partition; the word clears only those SMs
  bool lead{false};         // the handler raises the word rt_raise_lead_us before a sample
};

/// A policy's configuration by name; std::invalid_argument listing the policies for others.
[[nodiscard]] policy_config config_of(const std::string& policy);

/// The cores of the RT client's emulated sensor and actuator.
struct cpu_roles {
  int sensor{-1};
  int actuator{-1};
};

/// What every policy's run shares: the RT model, the padding gemm and its planned padding.
struct shared_work {
  std::shared_ptr<const rt_model> model;
  std::shared_ptr<pad_source> pad;
  std::vector<layer_padding> pads;  // planned when preempt-pad runs
  std::optional<cudaAccessPolicyWindow> l2_window;
  cpu_roles cpus;
};

/// Runs one policy: the RT loop beside its BE clients for s.warmup + s.samples RT requests.
/// Returns the policy's result (latencies, their breakdown, the BE throughput, ...).
[[nodiscard]] nlohmann::json run_policy(const reef_settings& s, const std::string& policy,
                                        const shared_work& work, std::ostream& log);

}  // namespace resident::bench::reef_detail
