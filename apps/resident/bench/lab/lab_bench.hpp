#pragma once
// resident bench lab: the four-operation pipeline (copy -> 2x+1 -> square -> sum) in three
// submission modes, where host submission, device work and end-to-end time go, and when a
// CUDA graph pays off; plus a bucketed graph pool and graph updates.
//
//   eager   each operation on the legacy default stream (on purpose: the baseline most code has)
//   stream  the same chain on an explicit non-blocking stream
//   graph   the chain captured once into a CUDA graph, replayed on that stream
//   persistent  worker blocks launched once claim work descriptors from a bounded host-mapped
//               queue and run the chain as device functions (lab_persistent.cu)

#include <cuda_runtime_api.h>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/resident.hpp"

namespace resident::bench {

inline constexpr double lab_tolerance = 1e-6;  // relative error allowed against FP64

struct lab_settings {
  std::string mode{"all"};  // eager, stream, graph, persistent or all
  std::vector<std::string> order{"eager", "stream", "graph", "persistent"};
  int persistent_workers{1};  // worker blocks of the persistent mode (clamped to what is resident)
  std::int64_t elements{4096};
  std::int64_t warmup{20};
  std::int64_t iterations{1000};
  std::int64_t repeats{5};     // timed runs per mode; the receipt gives their median
  double settle_ms{200};       // the pipeline runs untimed this long before the first mode
  std::string copy{"memcpy"};  // how the copy step copies: memcpy (node) or kernel
  /// Edges between the kernels of the graph mode: programmatic (programmatic dependent launch,
  /// sm_90) or full. The receipt also times the other kind, captured from the same pipeline.
  std::string graph_edges{"programmatic"};
  std::string buckets{"1,2,4,8,16"};
  std::int64_t bucket_counts{17};     // correctness for every request count 1..bucket_counts
  std::int64_t bucket_replays{1000};  // timed replays per bucket
  std::int64_t update_trials{200};    // timed updates per path
  std::string peer;                   // a torch_lab.py receipt to set beside ours
  std::string command;

  void make_quick();
  void validate() const;
  /// The modes to run, in run order (`mode` filtered through `order`).
  [[nodiscard]] std::vector<std::string> modes_in_order() const;
};

/// The lab pipeline as an application of the core operators: the retained input buffer (owned
/// by the caller) -> copy -> affine (2x+1) -> square -> sum -> the caller's result float.
class lab_app final : public Application {
 public:
  lab_app(std::int64_t elements, float* input, float* result, std::string copy = "memcpy");
  void compose() override;

 private:
  std::int64_t _elements;
  std::string _copy;
  float* _input;
  float* _result;
};

/// The retained input, its result and the values the input holds (linspace(0, 1, N) in fp32).
struct lab_buffers {
  explicit lab_buffers(std::int64_t elements);
  std::int64_t elements;
  device_buffer input;
  device_buffer result;
  pinned_buffer result_host;
  std::vector<float> values;  // what `input` holds after restore()

  void fill(float value, stream_view s);  // every input value = value
  void restore(stream_view s);            // input = values
  [[nodiscard]] float read_result(stream_view s);
  [[nodiscard]] double reference() const;  // sum((2x+1)^2) over `values`, in fp64
};

/// linspace(0, 1, n) in fp32, as the lab defines its input.
[[nodiscard]] std::vector<float> linspace01(std::int64_t n);
/// sum((2x+1)^2) in fp64 (the lab's FP64 CPU reference).
[[nodiscard]] double lab_reference(const std::vector<float>& x);

/// One submission mode measured: the receipt's mode object (fields as torch_lab.py writes).
[[nodiscard]] nlohmann::json run_lab_mode(const std::string& mode, const lab_settings& s,
                                          int order_index, std::ostream& log);
/// The persistent mode measured (same fields; kernels_per_iteration 0, plus workers and the queue).
[[nodiscard]] nlohmann::json run_lab_persistent(const lab_settings& s, int order_index,
                                                std::ostream& log);
/// `requested` worker blocks, clamped to 1 .. what the occupancy API says is resident.
[[nodiscard]] int lab_persistent_workers(int requested);
/// Bucketed graph pool: cost per bucket and correctness for every count.
[[nodiscard]] nlohmann::json run_lab_buckets(const lab_settings& s, std::ostream& log);
/// Graph updates: node-parameter, whole-graph, re-instantiation and refused-update paths.
[[nodiscard]] nlohmann::json run_lab_updates(const lab_settings& s, std::ostream& log);

/// Break-even objects for one implementation's mode results (graph against eager and stream).
[[nodiscard]] nlohmann::json lab_break_even(const nlohmann::json& modes,
                                            const std::string& implementation);
/// Ratios between a peer's and resident's mode results (same mode, same GPU call).
[[nodiscard]] nlohmann::json lab_ratios(const nlohmann::json& ours, const nlohmann::json& peer);
/// The targets, each {name, value, target, met}.
[[nodiscard]] nlohmann::json lab_targets(const nlohmann::json& results);

[[nodiscard]] measure::receipt run_lab_bench(const lab_settings& settings, std::ostream& log);
[[nodiscard]] std::string lab_table(const measure::receipt& receipt);
/// What went wrong in a lab receipt (failed preflights, relative errors above the tolerance,
/// wrong bucket sums, wrong update paths), or empty when every check passed.
[[nodiscard]] std::string lab_failures(const measure::receipt& receipt);

}  // namespace resident::bench
