#pragma once
// bench reef's work (internal to the bench): the real-time MLP and the loop application that
// runs it, the best-effort gemm that pads its kernels, the best-effort models, and the padding
// profiles. See reef_bench.hpp.

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/reef/reef_kernels.hpp"
#include "resident/app/application.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/be_models.hpp"
#include "resident/sched/padded.hpp"
#include "resident/sched/padding.hpp"

namespace resident::bench::reef_detail {

inline constexpr std::uint64_t rt_seed = 4242;

/// An MLP on a fixed input, resident in device memory: gemm -> bias relu per layer (no relu
/// after the last), then the scores of the first two samples go to the actuator.
class rt_model {
 public:
  /// `arena`: every buffer in one allocation (what an L2 window needs); otherwise one
  /// cudaMalloc per buffer, as before the arena (an A/B of the layout alone).
  rt_model(std::int32_t batch, std::vector<std::int32_t> widths, bool arena = true);

  [[nodiscard]] std::size_t layers() const noexcept { return _widths.size() - 1; }
  [[nodiscard]] sched::gemm_args gemm(std::size_t l) const {
    const float* in = l == 0 ? _input : _acts[l - 1];
    return {in, _weights[l], _acts[l], _batch, _widths[l + 1], _widths[l]};
  }
  [[nodiscard]] sched::bias_act_args bias(std::size_t l) const;
  [[nodiscard]] sched::fill_args fill() const { return {_scores, _batch, 0.0F}; }
  [[nodiscard]] sched::row_sum_args sum() const {
    return {_acts.back(), _scores, _batch, _widths.back()};
  }
  /// A never-preempted view: the RT kernels' done words go to scratch.
  [[nodiscard]] sched::be_launch_view view(std::int32_t blocks) const {
    sched::be_launch_view v;
    v.done = _scratch.data_as<std::uint32_t>();
    v.blocks = blocks;
    return v;
  }
  [[nodiscard]] const float* scores() const noexcept { return _scores; }
  /// With an arena, every buffer of the model (input, weights, biases, activations, scores)
  /// lies in this range, so one access-policy window covers the RT loop's working set.
  [[nodiscard]] const void* arena() const noexcept { return _arena.data(); }
  [[nodiscard]] std::size_t arena_used() const noexcept { return _used; }
  [[nodiscard]] const std::array<float, 2>& probe() const noexcept { return _probe; }
  [[nodiscard]] double gflop() const;

 private:
  // Buffers start on 256-byte boundaries within the arena.
  static std::size_t padded(std::size_t elements) { return (elements + 63) / 64 * 64; }
  static std::size_t arena_bytes(std::int32_t batch, const std::vector<std::int32_t>& w);
  float* allocate(std::size_t elements);
  float* upload(const std::vector<float>& host);

  std::int32_t _batch;
  std::vector<std::int32_t> _widths;
  device_buffer _arena;                  // empty without the arena
  std::vector<device_buffer> _separate;  // without the arena
  std::size_t _used{0};
  const float* _input{};
  std::vector<const float*> _weights, _biases;
  std::vector<float*> _acts;
  float* _scores{};
  std::array<float, 2> _probe{};
  device_buffer _scratch;
};

/// Padding of one RT gemm layer: pad_slots extra blocks that may take `budget` BE blocks.
using layer_padding = sched::pad_limits;

/// The BE work that pads RT gemms: an idempotent gemm whose blocks are handed out round after
/// round (sched::pad_job).
struct pad_source {
  pad_source(std::int32_t rt_capacity, bool record_placement);
  [[nodiscard]] sched::gemm_args args() const {
    return {a.data_as<float>(), b.data_as<float>(), c.data_as<float>(), m, n, k};
  }
  [[nodiscard]] double gflop_per_block() const {
    return 2.0 * sched::be_tile * sched::be_tile * static_cast<double>(k) * 1e-9;
  }
  // K = 128: a block (8 K-steps) short enough to fit beside an RT gemm within the tolerance.
  static constexpr std::int32_t m = 1024, n = 1024, k = 128;
  device_buffer a, b, c;
  sched::pad_job job;
};

/// What the RT loop's application is built from besides the model and the padding.
struct rt_app_options {
  std::vector<layer_padding> pads;  // each RT gemm layer's launch limits
  bool copy_kernel{false};          // the scores into the output port by a kernel, not a memcpy
  bool pdl{true};                   // the kernels after the first follow programmatically
  std::optional<cudaAccessPolicyWindow> l2_window;
  rt_done_stamp* done_ring{nullptr};  // rt_split_body, be_trace: a stamp per sample
  std::uint32_t done_capacity{0};
  const sched::be_trace* be_trace{nullptr};
  bool clock_probe{false};
};

/// The RT client: emulated sensor -> rx -> the RT MLP -> tx -> emulated actuator.
class reef_rt_app final : public Application {
 public:
  reef_rt_app(std::shared_ptr<const rt_model> model, std::shared_ptr<pad_source> pad,
              rt_app_options options);
  void compose() override;
  [[nodiscard]] io::mailbox& mailbox() const noexcept { return *_mailbox; }
  /// Kernel nodes of the RT op that carry the L2 window (every capture adds its own).
  [[nodiscard]] int l2_marked() const noexcept { return _l2_marked->load(); }
  [[nodiscard]] bool output_matches(std::span<const std::byte> out) const;

 private:
  std::shared_ptr<const rt_model> _model;
  std::shared_ptr<pad_source> _pad;
  rt_app_options _options;
  std::shared_ptr<std::atomic<int>> _l2_marked{std::make_shared<std::atomic<int>>(0)};
  std::shared_ptr<io::mailbox> _mailbox;
};

/// A best-effort model by name: mlp, mlp-fused (bias and activation in each gemm's epilogue)
/// or cnn.
[[nodiscard]] std::unique_ptr<sched::be_model> make_be_model(const std::string& name,
                                                             std::uint64_t seed);

/// Floating-point work of one inference of a BE model (multiply-adds count 2).
[[nodiscard]] double be_gflop(const std::string& name);

/// Chooses each RT gemm layer's padding from measured profiles (sched::select_padding) and
/// checks the padded launch against the kernel alone; what it measured goes into `report`.
[[nodiscard]] std::vector<layer_padding> plan_padding(const rt_model& m, pad_source& pad,
                                                      double tolerance, nlohmann::json& report);

}  // namespace resident::bench::reef_detail
