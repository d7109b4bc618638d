// resident bench reef (see reef_bench.hpp and docs/sched.md).

#include "bench/reef_bench.hpp"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "bench/reef_kernels.hpp"
#include "resident/cuda/error.hpp"
#include "resident/measure/threads.hpp"
#include "resident/partition/green_context.hpp"
#include "resident/resident.hpp"
#include "resident/sched/be_models.hpp"
#include "resident/sched/padded.hpp"
#include "resident/sched/padding.hpp"
#include "resident/sched/preemption.hpp"

namespace resident::bench {

using namespace std::chrono_literals;

namespace {

const std::vector<std::string> k_policies = {
    "exclusive", "sequential",  "multi-stream", "priority",     "green-split",  "exclusive-split",
    "preempt",   "preempt-pad", "preempt-sm",   "preempt-lead", "exclusive-end"};

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
  bool lead{false};         // the handler raises the word --rt-raise-lead-us before a sample
};

policy_config config_of(const std::string& p) {
  policy_config c;
  if (p == "exclusive" || p == "exclusive-end") {
    // exclusive-end: the RT loop alone again, after the other policies. The same loop runs
    // slower after BE work than before it (docs/sched.md, "The baseline drifts"), so this run
    // shows how far the baseline moved over the run.
    c.be = false;
  } else if (p == "sequential") {
    c.sequential = true;
  } else if (p == "multi-stream") {
  } else if (p == "priority") {
    c.rt_high = c.be_low = true;
  } else if (p == "green-split") {
    c.split = true;
  } else if (p == "exclusive-split") {
    // The RT loop alone in green-split's RT partition: what the confinement costs by itself.
    c.be = false;
    c.split = true;
  } else if (p == "preempt") {
    c.preemptible = c.rt_high = c.be_low = true;
  } else if (p == "preempt-pad") {
    c.preemptible = c.rt_high = c.be_low = c.pad = true;
  } else if (p == "preempt-sm") {
    c.preemptible = c.rt_high = c.be_low = c.spatial = true;
  } else if (p == "preempt-lead") {
    // preempt, with the word raised ahead of each periodic sample (preempt_hook::lead_ns): the
    // BE blocks drain before the sample comes, not on its path.
    c.preemptible = c.rt_high = c.be_low = c.lead = true;
  } else {
    std::string list;
    for (const auto& k : k_policies) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown policy '" + p + "'; policies: " + list);
  }
  return c;
}

// ---- the real-time model --------------------------------------------------------------------

constexpr std::uint64_t rt_seed = 4242;

/// An MLP on a fixed input, resident in device memory: gemm -> bias relu per layer (no relu
/// after the last), then the scores of the first two samples go to the actuator.
class rt_model {
 public:
  /// `arena`: every buffer in one allocation (what an L2 window needs); otherwise one
  /// cudaMalloc per buffer, as before the arena (an A/B of the layout alone).
  rt_model(std::int32_t batch, std::vector<std::int32_t> widths, bool arena = true)
      : _batch(batch),
        _widths(std::move(widths)),
        _arena(arena ? device_buffer(arena_bytes(batch, _widths)) : device_buffer{}) {
    std::mt19937_64 rng(rt_seed);
    std::uniform_real_distribution<float> in_dist(-1.0F, 1.0F);
    std::vector<float> x(static_cast<std::size_t>(batch) * _widths[0]);
    for (auto& v : x) v = in_dist(rng);
    _input = upload(x);
    std::vector<double> act = sched::to_double(x);
    for (std::size_t l = 0; l + 1 < _widths.size(); ++l) {
      const std::int32_t k = _widths[l];
      const std::int32_t n = _widths[l + 1];
      const float bound = 1.0F / std::sqrt(static_cast<float>(k));
      std::uniform_real_distribution<float> w_dist(-bound, bound);
      std::vector<float> w(static_cast<std::size_t>(k) * n);
      std::vector<float> b(static_cast<std::size_t>(n));
      for (auto& v : w) v = w_dist(rng);
      for (auto& v : b) v = w_dist(rng);
      _weights.push_back(upload(w));
      _biases.push_back(upload(b));
      _acts.push_back(allocate(static_cast<std::size_t>(batch) * n));
      act = sched::gemm_reference(act, sched::to_double(w), batch, n, k);
      sched::bias_act_reference(
          act, sched::to_double(b), 1,
          l + 2 < _widths.size() ? sched::activation::relu : sched::activation::none);
    }
    const auto scores = sched::row_sum_reference(act, batch, _widths.back());
    _probe = {static_cast<float>(scores[0]), static_cast<float>(scores[1])};
    _scores = allocate(static_cast<std::size_t>(batch));
    std::int32_t most = 0;
    for (std::size_t l = 0; l < layers(); ++l) {
      most = std::max({most, sched::gemm_blocks(gemm(l)), sched::bias_act_blocks(bias(l))});
    }
    most = std::max({most, sched::fill_blocks(fill()), sched::row_sum_blocks(sum())});
    _scratch = device_buffer(static_cast<std::size_t>(most) * sizeof(std::uint32_t));
  }

  [[nodiscard]] std::size_t layers() const noexcept { return _widths.size() - 1; }
  [[nodiscard]] sched::gemm_args gemm(std::size_t l) const {
    const float* in = l == 0 ? _input : _acts[l - 1];
    return {in, _weights[l], _acts[l], _batch, _widths[l + 1], _widths[l]};
  }
  [[nodiscard]] sched::bias_act_args bias(std::size_t l) const {
    sched::bias_act_args a;
    a.x = _acts[l];
    a.bias = _biases[l];
    a.elements = static_cast<std::int64_t>(_batch) * _widths[l + 1];
    a.inner = 1;
    a.channels = _widths[l + 1];
    a.act = l + 1 < layers() ? sched::activation::relu : sched::activation::none;
    return a;
  }
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
  [[nodiscard]] double gflop() const {
    double f = 0;
    for (std::size_t l = 0; l < layers(); ++l) {
      f += 2.0 * _batch * static_cast<double>(_widths[l]) * _widths[l + 1];
    }
    return f * 1e-9;
  }

 private:
  // Buffers start on 256-byte boundaries within the arena.
  static std::size_t padded(std::size_t elements) { return (elements + 63) / 64 * 64; }
  static std::size_t arena_bytes(std::int32_t batch, const std::vector<std::int32_t>& w) {
    const auto rows = static_cast<std::size_t>(batch);
    std::size_t floats = padded(rows * w[0]) + padded(rows);  // input, scores
    for (std::size_t l = 0; l + 1 < w.size(); ++l) {
      const auto k = static_cast<std::size_t>(w[l]);
      const auto n = static_cast<std::size_t>(w[l + 1]);
      floats += padded(k * n) + padded(n) + padded(rows * n);
    }
    return floats * sizeof(float);
  }
  float* allocate(std::size_t elements) {
    const std::size_t bytes = padded(elements) * sizeof(float);
    if (_arena.size() == 0) {  // no arena: one allocation per buffer
      _separate.emplace_back(bytes);
      _used += bytes;
      return _separate.back().data_as<float>();
    }
    if (_used + bytes > _arena.size()) throw std::logic_error("rt_model: arena too small");
    float* p = reinterpret_cast<float*>(_arena.data_as<std::byte>() + _used);
    _used += bytes;
    return p;
  }
  float* upload(const std::vector<float>& host) {
    float* d = allocate(host.size());
    RESIDENT_CUDA_TRY(
        cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
  }

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
  pad_source(std::int32_t rt_capacity, bool record_placement)
      : a(static_cast<std::size_t>(m) * k * sizeof(float)),
        b(static_cast<std::size_t>(k) * n * sizeof(float)),
        c(static_cast<std::size_t>(m) * n * sizeof(float)),
        job(sched::gemm_blocks(args()), rt_capacity, record_placement) {
    // Random operands: a gemm on zeros can run faster than on real data.
    std::mt19937_64 rng(rt_seed + 1);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    for (device_buffer* buf : {&a, &b}) {
      std::vector<float> host(buf->size() / sizeof(float));
      for (auto& v : host) v = dist(rng);
      RESIDENT_CUDA_TRY(cudaMemcpy(buf->data(), host.data(), buf->size(), cudaMemcpyHostToDevice));
    }
  }
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

/// rx's token releases one RT inference; out: the first two scores.
class rt_mlp_op final : public Operator {
 public:
  rt_mlp_op(std::shared_ptr<const rt_model> model, std::shared_ptr<pad_source> pad,
            std::vector<layer_padding> pads, bool copy_kernel, bool pdl,
            std::optional<cudaAccessPolicyWindow> l2_window,
            std::shared_ptr<std::atomic<int>> l2_marked, rt_done_stamp* done_ring,
            std::uint32_t done_capacity, const sched::be_trace* be_trace, bool clock_probe)
      : _model(std::move(model)),
        _pad(std::move(pad)),
        _pads(std::move(pads)),
        _copy_kernel(copy_kernel),
        _pdl(pdl),
        _l2_window(l2_window),
        _l2_marked(std::move(l2_marked)),
        _done_ring(done_ring),
        _done_capacity(done_capacity),
        _be_trace(be_trace),
        _clock_probe(clock_probe) {}
  void setup(OperatorSpec& spec) override {
    spec.device_input("in", 8);
    spec.device_output("out", 8);
  }
  void compute(CaptureContext& ctx) override {
    const rt_model& m = *_model;
    // The first RT gemm block to start stamps body_start: detect -> body_start is the
    // preemption latency (BE blocks leaving the SMs included).
    auto* stamp = reinterpret_cast<unsigned long long*>(
        reinterpret_cast<std::byte*>(ctx.loop()) + offsetof(loop_state, stamp_ns) +
        sizeof(std::uint64_t) * static_cast<std::size_t>(stage::body_start));
    // With a window, each kernel node just captured keeps the model's lines in the L2
    // set-aside, so BE work between iterations cannot evict them.
    const auto persist = [&] {
      if (_l2_window) *_l2_marked += mark_captured_kernels(ctx.stream(), *_l2_window);
    };
    // --rt-pdl: every kernel after the first follows the one before it programmatically, so
    // its launch overlaps that kernel's run (each waits on the device before touching memory).
    const auto after =
        _pdl ? sched::launch_dependency::programmatic : sched::launch_dependency::full;
    for (std::size_t l = 0; l < m.layers(); ++l) {
      const layer_padding p = l < _pads.size() ? _pads[l] : layer_padding{};
      sched::launch_padded_gemm(ctx.stream(), m.gemm(l), _pad->args(), _pad->job, p,
                                l == 0 ? stamp : nullptr,
                                _done_ring != nullptr && l < rt_stamped_gemms
                                    ? _gemm_stamps.data_as<sched::pad_launch_stamps>() + l
                                    : nullptr,
                                l == 0 ? sched::launch_dependency::full : after);
      persist();
      const auto b = m.bias(l);
      sched::launch_bias_act(ctx.stream(), m.view(sched::bias_act_blocks(b)), b, after);
      persist();
    }
    sched::launch_fill(ctx.stream(), m.view(sched::fill_blocks(m.fill())), m.fill(), after);
    persist();
    sched::launch_row_sum(ctx.stream(), m.view(sched::row_sum_blocks(m.sum())), m.sum(), after);
    persist();
    // --rt-split-body: where the compute ends, so the body splits into compute and egress.
    if (_done_ring != nullptr && ctx.loop() != nullptr) {
      launch_rt_done_stamp(ctx.stream(), ctx.loop(), _done_ring, _done_capacity, _be_trace,
                           _pad->job.view(), _gemm_stamps.data_as<sched::pad_launch_stamps>(),
                           static_cast<int>(std::min<std::size_t>(m.layers(), rt_stamped_gemms)),
                           _clock_probe);
    }
    if (_copy_kernel) {
      // A kernel, not a memcpy node, so the copy cannot queue behind other streams' copies (an
      // experiment: bench reef showed no difference, bench/results/h200/README.md).
      ops::detail::launch_copy(m.scores(), ctx.device_memory<float>("out"), 2, ctx.stream(), _pdl);
      persist();
    } else {
      RESIDENT_CUDA_TRY(cudaMemcpyAsync(ctx.device_memory<std::byte>("out"), m.scores(), 8,
                                        cudaMemcpyDeviceToDevice, ctx.stream()));
    }
  }

 private:
  std::shared_ptr<const rt_model> _model;
  std::shared_ptr<pad_source> _pad;
  std::vector<layer_padding> _pads;
  bool _copy_kernel;
  bool _pdl;
  std::optional<cudaAccessPolicyWindow> _l2_window;
  std::shared_ptr<std::atomic<int>> _l2_marked;
  rt_done_stamp* _done_ring;
  std::uint32_t _done_capacity;
  const sched::be_trace* _be_trace;
  bool _clock_probe;
  // Each stamped RT gemm layer's launch times (written by the launch, read by the done stamp).
  device_buffer _gemm_stamps{rt_stamped_gemms * sizeof(sched::pad_launch_stamps)};
};

class reef_rt_app final : public Application {
 public:
  reef_rt_app(std::shared_ptr<const rt_model> model, std::shared_ptr<pad_source> pad,
              std::vector<layer_padding> pads, bool copy_kernel, bool pdl,
              std::optional<cudaAccessPolicyWindow> l2_window, rt_done_stamp* done_ring = nullptr,
              std::uint32_t done_capacity = 0, const sched::be_trace* be_trace = nullptr,
              bool clock_probe = false)
      : Application("reef-rt"),
        _model(std::move(model)),
        _pad(std::move(pad)),
        _pads(std::move(pads)),
        _copy_kernel(copy_kernel),
        _pdl(pdl),
        _l2_window(l2_window),
        _done_ring(done_ring),
        _done_capacity(done_capacity),
        _be_trace(be_trace),
        _clock_probe(clock_probe),
        _mailbox(std::make_shared<io::mailbox>(io::mailbox::config{8, 8, 4})) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto rt =
        make_operator<rt_mlp_op>("rt_mlp", _model, _pad, _pads, _copy_kernel, _pdl, _l2_window,
                                 _l2_marked, _done_ring, _done_capacity, _be_trace, _clock_probe);
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, rt, {{"sample", "in"}});
    add_flow(rt, tx);
  }
  [[nodiscard]] io::mailbox& mailbox() const noexcept { return *_mailbox; }
  /// Kernel nodes of the RT op that carry the L2 window (every capture adds its own).
  [[nodiscard]] int l2_marked() const noexcept { return _l2_marked->load(); }
  [[nodiscard]] bool output_matches(std::span<const std::byte> out) const {
    float got[2];
    std::memcpy(got, out.data(), 8);
    for (int i = 0; i < 2; ++i) {
      const double want = _model->probe()[static_cast<std::size_t>(i)];
      if (!(std::abs(got[i] - want) <= 1e-3 * std::max(std::abs(want), 1.0))) return false;
    }
    return true;
  }

 private:
  std::shared_ptr<const rt_model> _model;
  std::shared_ptr<pad_source> _pad;
  std::vector<layer_padding> _pads;
  bool _copy_kernel;
  bool _pdl;
  std::optional<cudaAccessPolicyWindow> _l2_window;
  rt_done_stamp* _done_ring;
  std::uint32_t _done_capacity;
  const sched::be_trace* _be_trace;
  bool _clock_probe;
  std::shared_ptr<std::atomic<int>> _l2_marked{std::make_shared<std::atomic<int>>(0)};
  std::shared_ptr<io::mailbox> _mailbox;
};

// ---- best-effort clients ----------------------------------------------------------------------

// The BE MLP: 512 output tiles per gemm (a full wave at 4 blocks per SM), and K = 512 so a
// block (32 K-steps) is short next to the gaps real-time work leaves: a preempted block loses
// at most that much.
constexpr std::int32_t be_mlp_batch = 4096;
const std::vector<std::int32_t> be_mlp_widths{512, 512, 512, 512};

// mlp-fused: the same MLP with bias and activation in each gemm's epilogue (sched::mlp_bias).
std::unique_ptr<sched::be_model> make_be_model(const std::string& name, std::uint64_t seed) {
  if (name == "mlp") return std::make_unique<sched::mlp_model>(be_mlp_batch, be_mlp_widths, seed);
  if (name == "mlp-fused") {
    return std::make_unique<sched::mlp_model>(be_mlp_batch, be_mlp_widths, seed,
                                              sched::mlp_bias::fused);
  }
  if (name == "cnn") return std::make_unique<sched::cnn_model>(64, seed);
  throw std::invalid_argument("unknown BE model '" + name + "'; models: mlp, mlp-fused, cnn");
}

/// Floating-point work of one inference (multiply-adds count 2).
double be_gflop(const std::string& name) {
  if (name == "mlp" || name == "mlp-fused") {
    double f = 0;
    for (std::size_t i = 0; i + 1 < be_mlp_widths.size(); ++i) {
      f += 2.0 * be_mlp_batch * be_mlp_widths[i] * static_cast<double>(be_mlp_widths[i + 1]);
    }
    return f * 1e-9;
  }
  // cnn, batch 64: conv1 3->16 on 32x32 (3x3), conv2 16->32 on 16x16 (3x3), fc 2048 -> 10.
  const double conv1 = 2.0 * 64 * 16 * 32 * 32 * 3 * 9;
  const double conv2 = 2.0 * 64 * 32 * 16 * 16 * 16 * 9;
  const double fc = 2.0 * 64 * 2048 * 10;
  return (conv1 + conv2 + fc) * 1e-9;
}

// ---- padding profiles -------------------------------------------------------------------------

/// Mean µs of `launch` over `reps` back-to-back launches on `s` (events), after a warm-up.
template <class F>
double time_launches(cudaStream_t s, int reps, F&& launch) {
  for (int i = 0; i < 10; ++i) launch();
  event start(true);
  event stop(true);
  start.record(s);
  for (int i = 0; i < reps; ++i) launch();
  stop.record(s);
  RESIDENT_CUDA_TRY(cudaEventSynchronize(stop.get()));
  float ms = 0;
  RESIDENT_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return static_cast<double>(ms) * 1000.0 / reps;
}

/// Chooses each RT gemm layer's padding from measured profiles (sched::select_padding) and
/// checks the padded launch against the kernel alone.
std::vector<layer_padding> plan_padding(const rt_model& m, pad_source& pad, double tolerance,
                                        nlohmann::json& report) {
  stream s(0);
  int sm_count = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  const int per_sm = sched::padded_gemm_blocks_per_sm();
  // One full wave of pad blocks alone: what one BE block costs when the SMs are full of them.
  const sched::gemm_args be = pad.args();
  const std::int32_t be_blocks = sched::gemm_blocks(be);
  const std::int32_t wave = std::min<std::int32_t>(be_blocks, sm_count * per_sm);
  device_buffer done(static_cast<std::size_t>(be_blocks) * sizeof(std::uint32_t));
  sched::be_launch_view v;
  v.done = done.data_as<std::uint32_t>();
  v.blocks = be_blocks;
  v.first_block = be_blocks - wave;
  const double block_us = time_launches(s.get(), 50, [&] { sched::launch_gemm(s.get(), v, be); });
  report = {
      {"sm_count", sm_count},    {"blocks_per_sm", per_sm}, {"be_kernel", "gemm 1024x1024x128"},
      {"be_block_us", block_us}, {"tolerance", tolerance},  {"layers", nlohmann::json::array()}};
  std::vector<layer_padding> out;
  for (std::size_t l = 0; l < m.layers(); ++l) {
    const sched::gemm_args g = m.gemm(l);
    const double alone_us = time_launches(
        s.get(), 200, [&] { sched::launch_padded_gemm(s.get(), g, be, pad.job, {}); });
    const sched::rt_profile rt{"rt.fc" + std::to_string(l + 1), sched::gemm_blocks(g), per_sm,
                               alone_us};
    const auto choice = sched::select_padding(
        rt, sm_count, {sched::be_profile{"pad.gemm", block_us, per_sm, 1 << 30}}, tolerance);
    layer_padding p;
    nlohmann::json layer = {{"layer", rt.name}, {"rt_blocks", rt.blocks}, {"alone_us", alone_us}};
    if (choice) {
      // Pad blocks keep off the RT blocks' SMs: fill every other slot, each running at most the
      // model's rounds. The model leaves out how much co-running BE blocks slow the RT blocks
      // (shared L2 and memory), so the budget is then fitted to the tolerance by measuring the
      // padded launch (sched::fit_padding_budget).
      const std::int64_t free_slots =
          (sm_count - std::min<std::int64_t>(sm_count, rt.blocks)) * per_sm;
      p.slots = static_cast<std::int32_t>(sm_count * per_sm - rt.blocks);
      p.rounds = static_cast<std::uint32_t>(choice->rounds);
      p.budget = static_cast<std::uint32_t>(
          std::min<std::int64_t>(choice->be_blocks, free_slots * choice->rounds));
      const auto fit = sched::fit_padding_budget(
          p.budget, alone_us * (1.0 + tolerance), [&](std::int64_t blocks) {
            layer_padding trial = p;
            trial.budget = static_cast<std::uint32_t>(blocks);
            return time_launches(
                s.get(), 200, [&] { sched::launch_padded_gemm(s.get(), g, be, pad.job, trial); });
          });
      p.budget = static_cast<std::uint32_t>(fit.be_blocks);
      if (fit.be_blocks == 0) p = layer_padding{};  // not even one block fits: no padding
      nlohmann::json tried = nlohmann::json::array();
      for (const auto& t : fit.tried) {
        tried.push_back({{"be_blocks", t.be_blocks}, {"padded_us", t.padded_us}});
      }
      layer["tried"] = tried;
      layer["pad_slots"] = p.slots;
      layer["rounds"] = p.rounds;
      layer["be_blocks"] = p.budget;
      layer["predicted_us"] = choice->predicted_us;
      layer["padded_us"] = fit.padded_us;
      layer["padded_over_alone"] = fit.padded_us / alone_us;
    } else {
      layer["pad_slots"] = 0;
      layer["be_blocks"] = 0;
      layer["note"] = "no idle slot or no BE block fits the budget";
    }
    report["layers"].push_back(layer);
    out.push_back(p);
  }
  s.synchronize();
  return out;
}

// ---- one policy -------------------------------------------------------------------------------

struct cpu_roles {
  int sensor{-1};
  int actuator{-1};
};

nlohmann::json run_policy(const reef_settings& s, const std::string& policy,
                          const std::shared_ptr<const rt_model>& model,
                          const std::shared_ptr<pad_source>& pad,
                          const std::vector<layer_padding>& pads, const cpu_roles& cpus,
                          std::optional<cudaAccessPolicyWindow> l2_window, std::ostream& log) {
  const policy_config pc = config_of(policy);
  int least = 0;
  int greatest = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));

  std::shared_ptr<partition::partition_set> parts;
  device_buffer rt_sms;      // spatial: the RT partition's SMs, for the BE kernels
  device_buffer rt_sm_load;  // spatial: BE blocks on each RT SM (--be-rt-sm-blocks)
  if (pc.spatial) {
    parts = partition::partition_set::split({s.split_sms});
    if (s.be_rt_sm_blocks > 0) {  // one count per SM, shared by every BE client
      rt_sm_load = device_buffer(sched::rt_sm_load_words * sizeof(std::uint32_t));
      RESIDENT_CUDA_TRY(cudaMemset(rt_sm_load.data(), 0, rt_sm_load.size()));
    }
  } else if (pc.split && s.split_be_rest) {
    // BE gets every SM the RT partition leaves, the ones in no driver group included.
    const auto info = partition::query_sm_resource(0, false);
    partition::split_options so;
    so.rest_to_last = true;
    parts = partition::partition_set::split({s.split_sms, std::max(1, info.alignment)}, so);
  } else if (pc.split) {
    // BE gets what is left in whole groups: the driver's groups of `alignment` SMs need not
    // cover the whole device, so the largest remainder that splits is found by trying.
    const auto info = partition::query_sm_resource(0, false);
    const int align = std::max(1, info.alignment);
    for (int rest = (info.sm_count - s.split_sms) / align * align; rest >= align && !parts;
         rest -= align) {
      try {
        parts = partition::partition_set::split({s.split_sms, rest});
      } catch (const partition::partition_error&) {
        if (rest - align < align) throw;
      }
    }
    if (!parts) {  // check_split refuses this before any policy runs
      throw std::logic_error("bench reef " + policy + ": no SMs left for the BE partition");
    }
  }
  // Which SMs the driver gave the RT partition (a probe kernel finds them; they may differ from
  // one split to the next): for the spatial BE kernels and for the receipt.
  const std::array<std::uint32_t, 8> rt_mask =
      parts ? (*parts)[0].sm_mask() : std::array<std::uint32_t, 8>{};
  if (pc.spatial) {
    rt_sms = device_buffer(sizeof(rt_mask));
    RESIDENT_CUDA_TRY(
        cudaMemcpy(rt_sms.data(), rt_mask.data(), sizeof(rt_mask), cudaMemcpyHostToDevice));
  }

  sched::preempt_signal signal;
  // --be-trace: where the BE blocks were, read by the RT op at the end of its compute.
  device_buffer trace_mem;
  if (s.be_trace && pc.be) {
    trace_mem = device_buffer(sizeof(sched::be_trace));
    RESIDENT_CUDA_TRY(cudaMemset(trace_mem.data(), 0, trace_mem.size()));
  }
  auto* trace = trace_mem.size() > 0 ? trace_mem.data_as<sched::be_trace>() : nullptr;
  // BE clients: each its own model, stream and runner, made before the RT loop starts (the
  // runner loads its kernels then: see be_runner) and started once the loop is resident.
  std::vector<std::unique_ptr<sched::be_model>> models;
  std::vector<stream> streams;
  std::vector<std::unique_ptr<sched::be_runner>> runners;
  if (pc.be) {
    for (int i = 0; i < s.be_clients; ++i) {
      models.push_back(make_be_model(s.be_model, s.seed + static_cast<std::uint64_t>(i)));
      const int prio = pc.be_low ? least : 0;
      streams.push_back(pc.split ? (*parts)[1].make_stream(prio) : stream(prio));
      sched::be_runner_options ro;
      ro.name = s.be_model + std::to_string(i);
      ro.preemptible = pc.preemptible;
      ro.window = pc.spatial ? s.be_window_sm : pc.split ? s.be_window_split : s.be_window;
      ro.checkpoint = s.be_checkpoint;
      ro.checkpoint_min_steps = s.be_checkpoint_min_steps;
      ro.bounded_grid_per_sm = s.be_bounded_grid;
      ro.bounded_grid_counter = s.be_bounded_grid_counter;
      ro.sequential = pc.sequential;
      ro.trace = trace;
      if (pc.spatial) {
        ro.rt_sms = rt_sms.data_as<std::uint32_t>();
        if (rt_sm_load.size() > 0) {
          ro.rt_sm_load = rt_sm_load.data_as<std::uint32_t>();
          ro.rt_sm_blocks = static_cast<std::uint32_t>(s.be_rt_sm_blocks);
        }
      }
      if (pc.split) {
        // Events and launches from the context that owns the BE streams.
        ro.thread_scope = [parts]() -> std::shared_ptr<void> {
          return std::make_shared<partition::green_context::current_scope>(&(*parts)[1]);
        };
      }
      runners.push_back(std::make_unique<sched::be_runner>(models.back()->calls(),
                                                           streams.back().get(), &signal, ro));
    }
  }
  // --rt-split-body, --be-trace: one stamp per sample, indexed by sequence number (no wrap in a
  // run).
  const auto done_capacity = static_cast<std::uint32_t>(s.samples + s.warmup) + 64U;
  device_buffer done_ring;
  const bool stamp_done = s.rt_split_body || s.be_trace;
  if (stamp_done) {
    done_ring = device_buffer(done_capacity * sizeof(rt_done_stamp));
    RESIDENT_CUDA_TRY(cudaMemset(done_ring.data(), 0, done_ring.size()));
  }
  // Each RT gemm layer's launch limits: the planned padding under preempt-pad; with
  // --rt-spread, placement slots wherever a layer has no BE padding.
  std::vector<layer_padding> limits(model->layers());
  for (std::size_t l = 0; l < limits.size(); ++l) {
    if (pc.pad && l < pads.size()) limits[l] = pads[l];
    if (s.rt_spread && limits[l].budget == 0) {
      limits[l] = sched::placement_only(sched::gemm_blocks(model->gemm(l)), s.place_wait_ns());
    }
  }
  reef_rt_app app(model, pad, limits, s.rt_out_copy == "kernel", s.rt_pdl, l2_window,
                  stamp_done ? done_ring.data_as<rt_done_stamp>() : nullptr, done_capacity, trace,
                  s.be_trace);
  run_options o;
  o.poll_ns = s.poll_ns;
  o.telemetry_samples = static_cast<std::size_t>(s.samples + s.warmup) + 64;
  o.preempt = signal.hook();  // every policy: the mirror tells the BE runner about RT work
  o.preempt.after_input = s.raises_after_copy() ? 1U : 0U;
  o.preempt.lead_ns = s.raise_lead_ns(policy);
  if (o.preempt.lead_ns > 0) o.preempt.period_ns = s.period_ns();
  o.stream_priority = pc.rt_high ? greatest : 0;
  if (parts) o.partition = parts->share(0);
  auto handle = run_async(app, execution_mode::while_loop, o);

  const std::uint64_t pad_before = pc.pad ? pad->job.taken() : 0;
  const std::uint32_t late_before = pad->job.rt_late_takes();
  const sched::pad_placement placed_before = pad->job.placement();
  const std::int64_t be0 = now_ns();
  for (auto& r : runners) r->start();

  io::mailbox& mb = app.mailbox();
  const std::uint64_t base = mb.published();
  const auto total = static_cast<std::size_t>(s.samples + s.warmup);
  sample_log samples(total);
  // Release times, drawn before the threads start (nothing allocates while measuring).
  std::vector<std::int64_t> offsets(total + 1, 0);
  {
    std::mt19937_64 rng(s.seed);
    std::exponential_distribution<double> gap(s.rate_hz);
    double t = 0;
    for (std::size_t i = 1; i <= total; ++i) {
      offsets[i] = static_cast<std::int64_t>(t * 1e9);
      t += s.arrival == "poisson" ? gap(rng) : 1.0 / s.rate_hz;
    }
  }
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> stray{0};
  measure::thread_grant sensor_grant;
  measure::thread_grant actuator_grant;
  std::thread actuator([&] {
    actuator_grant = measure::configure_current_thread(cpus.actuator, s.realtime);
    std::uint64_t last = mb.output_seq();
    std::array<std::byte, 8> out{};
    // The clock before the last read that found the output unchanged: `t - polled` bounds how
    // late a sighting can be (a long one: this thread lost its core).
    std::int64_t polled = now_ns();
    while (!stop.load(std::memory_order_relaxed)) {
      const std::int64_t before = now_ns();
      const std::uint64_t seq = mb.output_seq();
      if (seq == last) {
        polled = before;
        cpu_relax();
        continue;
      }
      const std::int64_t t = now_ns();
      const std::uint64_t read = mb.read_output(out).seq;
      const std::uint64_t i = seq - base;
      if (seq > base && i <= total && samples.seen_ns[i] < 0) {
        samples.seen_ns[i] = t;
        samples.poll_gap_ns[i] = t - polled;
        if (read == seq && !app.output_matches(out)) samples.wrong[i] = 1;
      } else {
        ++stray;
      }
      last = seq;
    }
  });
  std::thread sensor([&] {
    sensor_grant = measure::configure_current_thread(cpus.sensor, s.realtime);
    const std::int64_t start = now_ns() + 20'000'000;  // BE clients reach steady state first
    for (std::size_t i = 1; i <= total; ++i) {
      wait_until(start + offsets[i]);
      const std::uint64_t token = base + i;
      const std::int64_t t = now_ns();
      samples.release_ns[i].store(t, std::memory_order_release);
      mb.publish(std::as_bytes(std::span(&token, 1)));
      samples.publish_ns[i] = now_ns() - t;
      samples.late_ns[i] = t - (start + offsets[i]);
    }
  });
  // --progress: where a run that does not finish got stuck (the loop, or a BE stream).
  std::atomic<bool> monitor_stop{false};
  std::thread monitor;
  if (s.progress) {
    monitor = std::thread([&] {
      const std::int64_t t0 = now_ns();
      while (!monitor_stop.load()) {
        std::this_thread::sleep_for(250ms);
        const loop_counters c = handle->counters();
        std::ostringstream line;
        line << "reef " << policy << " +" << (now_ns() - t0) / 1'000'000 << " ms: loop heartbeat "
             << c.iterations << ", last seq " << c.last_seq - std::min(c.last_seq, base) << "/"
             << total << ", processed " << c.processed << "; word raises " << signal.raises();
        for (std::size_t i = 0; i < runners.size(); ++i) {
          const sched::be_runner_progress p = runners[i]->progress();
          line << "; BE" << i << " submitted " << p.submissions << ", retired " << p.retired;
        }
        std::cerr << line.str() << std::endl;
      }
    });
  }
  sensor.join();
  const std::uint64_t final_seq = base + total;
  const bool all_seen = wait_for_sample(*handle, final_seq, 5'000'000'000);
  std::this_thread::sleep_for(2ms);
  stop = true;
  actuator.join();
  monitor_stop = true;
  if (monitor.joinable()) monitor.join();
  if (!all_seen) {
    const loop_counters c = handle->counters();
    log << "reef " << policy << ": the RT loop had not processed the last sample 5 s after its "
        << "release (last sequence " << c.last_seq - std::min(c.last_seq, base) << " of " << total
        << ", heartbeat " << c.iterations << ")\n";
  }

  std::vector<sched::be_runner_stats> be_stats;
  for (auto& r : runners) be_stats.push_back(r->stop());
  const double be_seconds = static_cast<double>(now_ns() - be0) * 1e-9;
  for (auto& st : streams) st.synchronize();
  const tear_down_report report = handle->tear_down();
  if (!report.stopped || !report.error.empty()) {
    throw std::runtime_error("reef " + policy +
                             ": the RT loop did not stop cleanly: " + report.error);
  }
  const std::uint64_t pad_blocks = pc.pad ? pad->job.taken() - pad_before : 0;
  const std::uint32_t rt_late = pad->job.rt_late_takes() - late_before;
  const sched::pad_placement placed_after = pad->job.placement();

  std::vector<double> latencies;
  std::int64_t unobserved = 0;
  std::int64_t wrong = 0;
  // Which latencies the measuring threads may have stretched (the sensor slow to publish, the
  // actuator off its core), and each one's device part against the rest.
  sample_accounting accounting(s.disturbance_ns);
  const std::vector<device_stamps> stamps = stamps_by_sample(handle->telemetry(), base, total);
  for (std::size_t i = static_cast<std::size_t>(s.warmup) + 1; i <= total; ++i) {
    if (samples.seen_ns[i] < 0) {
      ++unobserved;
      continue;
    }
    latencies.push_back(static_cast<double>(samples.seen_ns[i] -
                                            samples.release_ns[i].load(std::memory_order_acquire)) /
                        1000.0);
    accounting.add(0, samples, stamps, i, latencies.back());
    wrong += samples.wrong[i];
  }
  if (latencies.empty()) throw std::runtime_error("reef " + policy + ": no RT output seen");
  std::vector<double> preempt_us;
  std::vector<double> body_us;
  std::vector<double> to_controller_us;  // detect -> controller start
  std::vector<double> release_us;        // controller end (IF predicate set) -> body start
  std::vector<double> copy_in_us;        // detect -> handler end (the sample copied in)
  std::vector<double> handoff_us;        // handler end -> controller start
  std::vector<double> compute_us;        // body start -> RT compute done (--rt-split-body)
  std::vector<double> egress_us;         // RT compute done -> commit
  std::vector<rt_sample_trace> traced;   // --be-trace
  std::vector<double> word_up_us;        // the preempt word's raise -> the end marker (its clear)
  std::vector<double> raise_to_body_us;  // the raise -> body start (detect -> body start, plus
                                         // the lead where the word went up ahead of the sample)
  std::vector<double> raise_lead_us;     // the raise -> detect
  std::vector<rt_done_stamp> done;
  if (stamp_done) {
    done.resize(done_capacity);
    RESIDENT_CUDA_TRY(
        cudaMemcpy(done.data(), done_ring.data(), done_ring.size(), cudaMemcpyDeviceToHost));
  }
  const std::uint64_t first = base + static_cast<std::uint64_t>(s.warmup) + 1;
  for (const telemetry_entry& e : handle->telemetry()) {
    if (e.seq < first || e.seq > final_seq || e.repeat != 0) continue;
    const auto at = [&](stage st) { return e.stamp_ns[static_cast<std::size_t>(st)]; };
    // The loop stamps its own raise (at detect, after the copy, or a lead before the sample).
    const std::uint64_t up = at(stage::preempt_raised);
    if (up != 0 && at(stage::end_marker) > up) {
      word_up_us.push_back(static_cast<double>(at(stage::end_marker) - up) / 1e3);
    }
    if (up != 0 && at(stage::body_start) > up) {
      raise_to_body_us.push_back(static_cast<double>(at(stage::body_start) - up) / 1e3);
    }
    if (up != 0 && at(stage::detect) != 0) {
      // How long before the sample came the word went up (negative: after it).
      raise_lead_us.push_back((static_cast<double>(at(stage::detect)) - static_cast<double>(up)) /
                              1e3);
    }
    if (at(stage::detect) != 0 && at(stage::body_start) > at(stage::detect)) {
      preempt_us.push_back(static_cast<double>(at(stage::body_start) - at(stage::detect)) / 1e3);
    }
    if (at(stage::detect) != 0 && at(stage::controller_start) > at(stage::detect)) {
      to_controller_us.push_back(
          static_cast<double>(at(stage::controller_start) - at(stage::detect)) / 1e3);
    }
    if (at(stage::detect) != 0 && at(stage::handler_end) >= at(stage::detect) &&
        at(stage::controller_start) > at(stage::handler_end)) {
      copy_in_us.push_back(static_cast<double>(at(stage::handler_end) - at(stage::detect)) / 1e3);
      handoff_us.push_back(
          static_cast<double>(at(stage::controller_start) - at(stage::handler_end)) / 1e3);
    }
    if (at(stage::controller_end) != 0 && at(stage::body_start) > at(stage::controller_end)) {
      release_us.push_back(static_cast<double>(at(stage::body_start) - at(stage::controller_end)) /
                           1e3);
    }
    if (at(stage::body_start) != 0 && at(stage::commit) > at(stage::body_start)) {
      body_us.push_back(static_cast<double>(at(stage::commit) - at(stage::body_start)) / 1e3);
    }
    if (!done.empty()) {
      const rt_done_stamp& d = done[e.seq % done.size()];
      if (d.seq == e.seq && d.ns > at(stage::body_start) && at(stage::commit) >= d.ns &&
          at(stage::body_start) != 0) {
        compute_us.push_back(static_cast<double>(d.ns - at(stage::body_start)) / 1e3);
        egress_us.push_back(static_cast<double>(at(stage::commit) - d.ns) / 1e3);
        if (s.be_trace) {
          const std::size_t i = e.seq - base;
          rt_sample_trace t;
          if (samples.seen_ns[i] >= 0) {
            t.latency_us =
                static_cast<double>(samples.seen_ns[i] -
                                    samples.release_ns[i].load(std::memory_order_acquire)) /
                1000.0;
          }
          t.body_start = at(stage::body_start);
          t.compute_end = d.ns;
          t.commit = at(stage::commit);
          t.be_running = d.be_running;
          t.be_last_begin = d.be_last_begin_ns;
          t.be_last_end = d.be_last_end_ns;
          t.be_last_stop = d.be_last_stop_ns;
          t.sm_khz = d.sm_khz;
          t.be_checkpoints = d.be_checkpoints;
          t.rt_crowded = d.rt_crowded;
          t.rt_spread_ns = d.rt_spread_ns;
          for (int l = 0; l < rt_stamped_gemms; ++l) {
            t.gemm_start[static_cast<std::size_t>(l)] = d.gemm_start_ns[l];
            t.gemm_end[static_cast<std::size_t>(l)] = d.gemm_end_ns[l];
          }
          traced.push_back(t);
        }
      }
    }
  }

  const measure::summary sum = measure::summarize(latencies);
  nlohmann::json r =
      measure::latency_result(policy, "rt-mlp", "be-" + s.be_model, sum, report.counters.processed,
                              report.counters.dropped, report.counters.repeated);
  r["policy"] = policy;
  r["released"] = total;
  r["unobserved"] = unobserved;
  r["wrong_outputs"] = wrong;
  r["stray_outputs"] = stray.load();
  // Every latency stays in the statistics above (the targets use them all).
  accounting.write_undisturbed(r);
  r["measurement"] = accounting.measurement(
      "a sample is disturbed when the sensor took longer than the threshold to publish it or "
      "the actuator's last poll before it saw the output was longer than the threshold; "
      "in_loop: the device's detect -> commit (%globaltimer), outside: the rest of the same "
      "sample's latency (the trips between host and device); slowest: the slowest samples, "
      "each split against the sample before it",
      false);
  r["preemption_latency"] = measure::summary_fields(
      preempt_us.empty() ? measure::summary{} : measure::summarize(preempt_us));
  r["rt_body"] = brief(body_us);
  // How long each sample holds the word up, and the share of the run's time that makes at the
  // run's rate: what a policy that stops BE work on the word can never give to BE.
  r["rt_word_up"] = brief(word_up_us);
  if (!word_up_us.empty()) {
    r["rt_word_up"]["duty"] = r["rt_word_up"]["mean_us"].get<double>() * 1e-6 * s.rate_hz;
  }
  if (stamp_done) {
    r["rt_body_split"] = {{"compute", brief(compute_us)}, {"egress", brief(egress_us)}};
  }
  if (trace != nullptr) {
    sched::be_trace last{};
    RESIDENT_CUDA_TRY(cudaMemcpy(&last, trace, sizeof last, cudaMemcpyDeviceToHost));
    r["be_trace"] = be_overlap(traced);
    r["be_trace"]["checkpoints_total"] = last.checkpoints;
    r["be_trace"]["before_body"] = before_body(traced);
  }
  if (s.be_trace) r["rt_placement_by_body"] = rt_placement(traced);
  if (s.be_trace) r["rt_compute_split"] = rt_compute_split(traced);
  if (s.be_trace) r["rt_clock"] = rt_clock(traced);
  r["preemption_breakdown"] = {{"detect_to_controller", brief(to_controller_us)},
                               {"detect_to_handler_end", brief(copy_in_us)},
                               {"handler_end_to_controller", brief(handoff_us)},
                               {"controller_end_to_body_start", brief(release_us)}};
  nlohmann::json be = {{"clients", runners.size()}, {"seconds", be_seconds}};
  std::uint64_t sequences = 0;
  nlohmann::json per = nlohmann::json::array();
  for (const auto& st : be_stats) {
    sequences += st.sequences;
    per.push_back({{"sequences", st.sequences},
                   {"kernels", st.kernels},
                   {"submissions", st.submissions},
                   {"preemptions", st.preemptions},
                   {"preempted_launches", st.preempted_launches},
                   {"resumed_launches", st.resumed_launches},
                   {"blocks_completed", st.blocks_completed},
                   {"blocks_rerun", st.blocks_rerun},
                   {"early_exits", st.early_exits},
                   {"checkpoints", st.checkpoints},
                   {"handbacks", st.handbacks},
                   {"repeated_commits_non_idempotent", st.repeated_commits}});
  }
  const double seq_gflop = be_gflop(s.be_model);
  const double pad_gflop = static_cast<double>(pad_blocks) * pad->gflop_per_block();
  be["sequences"] = sequences;
  be["inferences_per_s"] = be_seconds > 0 ? static_cast<double>(sequences) / be_seconds : 0.0;
  be["gflops_inference"] =
      be_seconds > 0 ? static_cast<double>(sequences) * seq_gflop / be_seconds : 0.0;
  be["pad_blocks"] = pad_blocks;
  be["gflops_padding"] = be_seconds > 0 ? pad_gflop / be_seconds : 0.0;
  be["gflops"] =
      be_seconds > 0 ? (static_cast<double>(sequences) * seq_gflop + pad_gflop) / be_seconds : 0.0;
  be["runners"] = per;
  r["be"] = be;
  // RT gemm items that began only after a pad block waited for them (see pad_limits).
  r["rt_late_items"] = rt_late;
  if (pad->job.records_placement()) {
    // Where the RT gemm blocks landed, over the run's merged launches (warm-up included).
    const std::uint32_t launches = placed_after.launches - placed_before.launches;
    const std::uint64_t spread = placed_after.spread_ns - placed_before.spread_ns;
    r["rt_placement"] = {
        {"gemm_launches", launches},
        {"crowded_launches", placed_after.crowded_launches - placed_before.crowded_launches},
        {"mean_start_spread_us",
         launches == 0 ? 0.0 : static_cast<double>(spread) / 1000.0 / launches}};
  }
  const preempt_mirror mirror = signal.mirror();
  r["preempt_word"] = {{"raises", mirror.raises},
                       {"clears", mirror.clears},
                       {"lead_ns", o.preempt.lead_ns},
                       {"early_raises", mirror.early_raises},
                       {"withdrawn", mirror.withdrawn}};
  // Preemption latency above runs from the sample's detect; from the raise it is longer by the
  // lead where the word went up ahead of the sample (--rt-raise-lead-us).
  r["preemption_from_raise"] = brief(raise_to_body_us);
  r["raise_lead"] = brief(raise_lead_us);
  r["rt_stream_priority"] = o.stream_priority;
  r["rt_l2_marked_kernels"] = app.l2_marked();
  if (l2_window && app.l2_marked() == 0) {
    throw std::runtime_error("bench reef --rt-l2-persist: no RT kernel node took the L2 window");
  }
  r["threads"] = {{"sensor", measure::to_json(sensor_grant)},
                  {"actuator", measure::to_json(actuator_grant)}};
  if (pc.split) {
    r["split_sms"] = {{"rt", (*parts)[0].sm_count()}, {"be", (*parts)[1].sm_count()}};
  } else if (pc.spatial) {
    r["split_sms"] = {{"rt", (*parts)[0].sm_count()},
                      {"be", "all, leaving the RT SMs when raised"}};
  }
  if (parts) r["split_sms"]["rt_sm_ids"] = sm_ids(rt_mask);
  log << "reef " << policy << ": RT p50 " << sum.p50 << " us, p99 " << sum.p99 << " us, max "
      << sum.max << " us; BE " << be["inferences_per_s"].get<double>() << " inf/s, "
      << be["gflops"].get<double>() << " GFLOP/s; wrong " << wrong << ", unobserved " << unobserved
      << "\n";
  return r;
}

const nlohmann::json* find_policy(const nlohmann::json& results, const std::string& p) {
  for (const auto& r : results) {
    if (r.value("policy", "") == p) return &r;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& reef_policies() { return k_policies; }

namespace {
/// How many samples "the slowest 1%" of `size` holds: at least one.
std::size_t slowest_count(std::size_t size) { return std::max<std::size_t>(1, size / 100); }

/// Sorts `items` slowest first (by their `us`), then sets out[slow_key] = group(0, n) for the
/// slowest 1% and, when there are more, out[rest_key] = group(n, size). `group` reads `items`.
template <class T, class Group>
void add_slowest_vs_rest(std::vector<T>& items, nlohmann::json& out, const char* slow_key,
                         const char* rest_key, const Group& group) {
  std::sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.us > b.us; });
  const std::size_t n = slowest_count(items.size());
  out[slow_key] = group(std::size_t{0}, n);
  if (items.size() > n) out[rest_key] = group(n, items.size());
}
}  // namespace

nlohmann::json rt_clock(const std::vector<rt_sample_trace>& samples) {
  std::vector<double> mhz;
  struct compute {
    double us;
    double mhz;
  };
  std::vector<compute> by_compute;
  for (const rt_sample_trace& t : samples) {
    if (t.sm_khz == 0 || t.body_start == 0 || t.compute_end < t.body_start) continue;
    const double m = t.sm_khz / 1000.0;
    mhz.push_back(m);
    by_compute.push_back({static_cast<double>(t.compute_end - t.body_start) / 1000.0, m});
  }
  nlohmann::json out = {
      {"method",
       "SM cycles (clock64) over 4 us of %globaltimer, counted by one thread right after the "
       "RT compute's last kernel; compute: body start -> that kernel's stamp"},
      {"n", mhz.size()}};
  if (mhz.empty()) return out;
  const measure::summary m = measure::summarize(mhz);
  out["sm_mhz"] = {{"mean", m.mean}, {"min", m.min}, {"p50", m.p50}, {"max", m.max}};
  // Slowest 1% of computes against the rest: a lower clock there means the GPU ran slower
  // (power or thermal limits), an equal one that the compute took more cycles (memory).
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    double us = 0, mh = 0, kcycles = 0;
    for (std::size_t i = from; i < to; ++i) {
      us += by_compute[i].us;
      mh += by_compute[i].mhz;
      kcycles += by_compute[i].us * by_compute[i].mhz / 1000.0;
    }
    const auto k = static_cast<double>(to - from);
    return {{"n", to - from},
            {"mean_compute_us", us / k},
            {"mean_sm_mhz", mh / k},
            {"mean_kcycles_at_that_clock", kcycles / k}};
  };
  add_slowest_vs_rest(by_compute, out, "slowest_1pct_compute", "other_computes", group);
  return out;
}

nlohmann::json before_body(const std::vector<rt_sample_trace>& samples) {
  struct body {
    double us;
    double checkpoints;  // stored since the previous sample's compute end
    double gap_us;       // last BE block left -> body start
  };
  std::vector<body> bodies;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const rt_sample_trace& t = samples[i];
    const rt_sample_trace& p = samples[i - 1];
    if (t.body_start == 0 || t.commit < t.body_start || t.be_checkpoints < p.be_checkpoints) {
      continue;
    }
    const std::uint64_t left = std::max(t.be_last_end, t.be_last_stop);
    // Only bodies no BE block touched: the question is what the BE work left behind.
    if (left == 0 || left > t.body_start || t.be_last_begin > t.body_start || t.be_running > 0) {
      continue;
    }
    bodies.push_back({static_cast<double>(t.commit - t.body_start) / 1000.0,
                      static_cast<double>(t.be_checkpoints - p.be_checkpoints),
                      static_cast<double>(t.body_start - left) / 1000.0});
  }
  nlohmann::json out = {
      {"method",
       "bodies no BE block began, ended or ran in; checkpoints: BE checkpoints stored since the "
       "previous sample's compute end; gap: the latest BE block end or turn-away before the "
       "body -> body start"},
      {"n", bodies.size()}};
  if (bodies.empty()) return out;
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    std::vector<double> us, ck, gap;
    for (std::size_t i = from; i < to; ++i) {
      us.push_back(bodies[i].us);
      ck.push_back(bodies[i].checkpoints);
      gap.push_back(bodies[i].gap_us);
    }
    const measure::summary c = measure::summarize(ck);
    const measure::summary g = measure::summarize(gap);
    return {{"n", to - from},
            {"mean_body_us", measure::summarize(us).mean},
            {"checkpoints", {{"mean", c.mean}, {"p50", c.p50}, {"max", c.max}}},
            {"gap_us", {{"mean", g.mean}, {"p50", g.p50}, {"min", g.min}}}};
  };
  add_slowest_vs_rest(bodies, out, "slowest_1pct_body", "other_bodies", group);
  return out;
}

nlohmann::json rt_placement(const std::vector<rt_sample_trace>& samples) {
  struct body {
    double us;
    double spread_us;  // summed over the body's gemms
    bool crowded;
  };
  std::vector<body> bodies;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const rt_sample_trace& t = samples[i];
    const rt_sample_trace& p = samples[i - 1];
    if (t.body_start == 0 || t.commit < t.body_start || t.rt_crowded < p.rt_crowded ||
        t.rt_spread_ns < p.rt_spread_ns) {
      continue;
    }
    bodies.push_back({static_cast<double>(t.commit - t.body_start) / 1000.0,
                      static_cast<double>(t.rt_spread_ns - p.rt_spread_ns) / 1000.0,
                      t.rt_crowded > p.rt_crowded});
  }
  nlohmann::json out = {
      {"method",
       "per body, against the sample before: spread = sum over its RT gemm launches of (last "
       "RT block's start - first RT block's start); crowded = some gemm had two RT blocks on "
       "one SM"},
      {"n", bodies.size()}};
  if (bodies.empty()) return out;
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    std::vector<double> us, spread;
    std::int64_t crowded = 0;
    for (std::size_t i = from; i < to; ++i) {
      us.push_back(bodies[i].us);
      spread.push_back(bodies[i].spread_us);
      crowded += bodies[i].crowded ? 1 : 0;
    }
    const measure::summary sp = measure::summarize(spread);
    return {{"n", to - from},
            {"mean_body_us", measure::summarize(us).mean},
            {"spread_us", {{"mean", sp.mean}, {"p50", sp.p50}, {"p99", sp.p99}, {"max", sp.max}}},
            {"crowded", crowded}};
  };
  add_slowest_vs_rest(bodies, out, "slowest_1pct_body", "other_bodies", group);
  return out;
}

nlohmann::json rt_compute_split(const std::vector<rt_sample_trace>& samples) {
  constexpr auto gemms = static_cast<std::size_t>(rt_stamped_gemms);
  static_assert(std::tuple_size_v<decltype(rt_sample_trace::gemm_start)> == gemms);
  // Segment names in time order: head, gemm1, between1, gemm2, between2, gemm3, tail.
  std::vector<std::string> names = {"body_start_to_gemm1"};
  for (std::size_t l = 0; l < gemms; ++l) {
    names.push_back("gemm" + std::to_string(l + 1));
    names.push_back(l + 1 < gemms
                        ? "gemm" + std::to_string(l + 1) + "_to_gemm" + std::to_string(l + 2)
                        : "gemm" + std::to_string(l + 1) + "_to_compute_end");
  }
  struct compute {
    double us;
    std::vector<double> segments;
  };
  std::vector<compute> computes;
  for (const rt_sample_trace& t : samples) {
    if (t.body_start == 0 || t.compute_end <= t.body_start) continue;
    // Every stamp present and in order: body start <= start1 <= end1 <= start2 ... <= end.
    std::vector<std::uint64_t> at = {t.body_start};
    for (std::size_t l = 0; l < gemms; ++l) {
      at.push_back(t.gemm_start[l]);
      at.push_back(t.gemm_end[l]);
    }
    at.push_back(t.compute_end);
    if (!std::is_sorted(at.begin(), at.end()) || t.gemm_start[0] == 0) continue;
    compute c{static_cast<double>(t.compute_end - t.body_start) / 1000.0, {}};
    for (std::size_t i = 0; i + 1 < at.size(); ++i) {
      c.segments.push_back(static_cast<double>(at[i + 1] - at[i]) / 1000.0);
    }
    computes.push_back(std::move(c));
  }
  nlohmann::json out = {
      {"method",
       "device stamps: each RT gemm launch's first RT block start and last RT block end (its "
       "last block writes them), the body start and the compute's end; segments in time order "
       "add up to the compute"},
      {"n", computes.size()}};
  if (computes.empty()) return out;
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    std::vector<double> sum(names.size(), 0.0);
    double us = 0;
    for (std::size_t i = from; i < to; ++i) {
      us += computes[i].us;
      for (std::size_t k = 0; k < names.size(); ++k) sum[k] += computes[i].segments[k];
    }
    const auto count = static_cast<double>(to - from);
    nlohmann::json seg = nlohmann::json::object();
    for (std::size_t k = 0; k < names.size(); ++k) seg[names[k]] = sum[k] / count;
    return {{"n", to - from}, {"mean_compute_us", us / count}, {"mean_segment_us", seg}};
  };
  add_slowest_vs_rest(computes, out, "slowest_1pct_compute", "other_computes", group);
  return out;
}

nlohmann::json be_overlap(const std::vector<rt_sample_trace>& samples) {
  const auto us = [](std::uint64_t a, std::uint64_t b) {
    return static_cast<double>(static_cast<std::int64_t>(a - b)) / 1000.0;
  };
  std::vector<double> with, turned, quiet, into_body;
  std::int64_t began = 0, ended = 0, running = 0;
  struct kind {
    double value;
    bool overlapped;
    bool turned_away;
  };
  std::vector<kind> by_body, by_latency;
  for (const rt_sample_trace& t : samples) {
    if (t.body_start == 0 || t.commit < t.body_start) continue;
    const bool b = t.be_last_begin > t.body_start;
    const bool e = t.be_last_end > t.body_start;
    const bool r = t.be_running > 0;
    const bool stop = t.be_last_stop > t.body_start;
    began += b ? 1 : 0;
    ended += e ? 1 : 0;
    running += r ? 1 : 0;
    const bool overlapped = b || e || r;
    const double body = us(t.commit, t.body_start);
    if (overlapped) with.push_back(body);
    if (stop) turned.push_back(body);
    if (!overlapped && !stop) quiet.push_back(body);
    if (e) into_body.push_back(us(t.be_last_end, t.body_start));
    by_body.push_back({body, overlapped, stop});
    if (t.latency_us >= 0) by_latency.push_back({t.latency_us, overlapped, stop});
  }
  // Of the slowest 1% (at least one), how many had BE blocks run or turned away in the body.
  const auto slowest = [](std::vector<kind> v) -> nlohmann::json {
    if (v.empty()) return {{"n", 0}, {"overlapped", 0}, {"turned_away", 0}};
    const std::size_t n = slowest_count(v.size());
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n - 1), v.end(),
                     [](const kind& a, const kind& b) { return a.value > b.value; });
    std::int64_t hit = 0, away = 0;
    for (std::size_t i = 0; i < n; ++i) {
      hit += v[i].overlapped ? 1 : 0;
      away += v[i].turned_away ? 1 : 0;
    }
    return {{"n", n}, {"overlapped", hit}, {"turned_away", away}, {"from_us", v[n - 1].value}};
  };
  return {{"method",
           "BE blocks record on the device when they begin, end, or are turned away by the "
           "raised word at begin(), and how many run; the RT op reads that at the end of its "
           "compute. A body overlapped when a BE block began or ended after the body started, "
           "or was still running at the compute's end; turned_away when a BE block reached an "
           "SM after the body started and left on the word"},
          {"samples", by_body.size()},
          {"overlapped", with.size()},
          {"turned_away_in_body", turned.size()},
          {"began_in_body", began},
          {"ended_in_body", ended},
          {"running_at_compute_end", running},
          {"rt_body_overlapped", brief(with)},
          {"rt_body_turned_away", brief(turned)},
          {"rt_body_quiet", brief(quiet)},
          {"last_be_end_into_body_us", brief(into_body)},
          {"slowest_1pct_body", slowest(by_body)},
          {"slowest_1pct_latency", slowest(by_latency)}};
}

void reef_settings::make_quick() {
  samples = 1000;
  warmup = 100;
}

void reef_settings::validate() const {
  if (policies.empty()) throw std::invalid_argument("bench reef: --policies is empty");
  for (const auto& p : policies) (void)config_of(p);
  if (arrival != "periodic" && arrival != "poisson") {
    throw std::invalid_argument("bench reef: --arrival must be periodic or poisson, got '" +
                                arrival + "'");
  }
  if (!(rate_hz > 0.0) || rate_hz > 20000.0) {
    throw std::invalid_argument("bench reef: --rate must be in (0, 20000] Hz");
  }
  if (samples <= 0) throw std::invalid_argument("bench reef: --samples must be positive");
  if (disturbance_ns <= 0) {
    throw std::invalid_argument("bench reef: --disturbance-ns must be positive");
  }
  if (warmup < 0) throw std::invalid_argument("bench reef: --warmup must be >= 0");
  if (be_model != "mlp" && be_model != "mlp-fused" && be_model != "cnn") {
    throw std::invalid_argument("bench reef: --be-model must be mlp, mlp-fused or cnn, got '" +
                                be_model + "'");
  }
  if (be_window < 1 || be_window > 8) {
    throw std::invalid_argument("bench reef: --be-window must be in 1..8");
  }
  if (rt_raise != "detect" && rt_raise != "after-copy") {
    throw std::invalid_argument("bench reef: --rt-raise must be detect or after-copy, got '" +
                                rt_raise + "'");
  }
  if (be_window_sm < 1 || be_window_sm > 8) {
    throw std::invalid_argument("bench reef: --be-window-sm must be in 1..8");
  }
  if (be_window_split < 1 || be_window_split > 8) {
    throw std::invalid_argument("bench reef: --be-window-split must be in 1..8");
  }
  if (be_rt_sm_blocks < 0 || be_rt_sm_blocks > 64) {
    throw std::invalid_argument("bench reef: --be-rt-sm-blocks must be in 0..64 (0: no limit)");
  }
  if (be_bounded_grid < 0 || be_bounded_grid > 64) {
    throw std::invalid_argument("bench reef: --be-bounded-grid must be in 0..64");
  }
  if (!(pad_place_wait_us >= 0.0) || pad_place_wait_us > 1000.0) {
    throw std::invalid_argument("bench reef: --pad-place-wait-us must be in [0, 1000]");
  }
  if (be_checkpoint_min_steps < 1) {
    throw std::invalid_argument("bench reef: --be-checkpoint-min-steps must be at least 1");
  }
  if (be_clients < 1 || be_clients > 8) {
    throw std::invalid_argument("bench reef: --be-clients must be in 1..8");
  }
  if (rt_batch < 1 || rt_batch > 4096) {
    throw std::invalid_argument("bench reef: --rt-batch must be in 1..4096");
  }
  if (split_sms < 1) throw std::invalid_argument("bench reef: --split-sms must be positive");
  if (!(pad_tolerance >= 0.0) || pad_tolerance > 1.0) {
    throw std::invalid_argument("bench reef: --pad-tolerance must be in [0, 1]");
  }
  if (rt_l2_persist && !rt_arena) {
    throw std::invalid_argument(
        "bench reef: --rt-l2-persist needs --rt-arena on (one window covers one address range)");
  }
  if (rt_out_copy != "memcpy" && rt_out_copy != "kernel") {
    throw std::invalid_argument("bench reef: --rt-out-copy must be memcpy or kernel, got '" +
                                rt_out_copy + "'");
  }
  if (!(rt_raise_lead_us > 0.0)) {
    throw std::invalid_argument("bench reef: --rt-raise-lead-us must be positive");
  }
  if (arrival == "periodic") {  // (under Poisson arrivals preempt-lead does not run)
    if (rt_raise_lead_us * 1000.0 >= static_cast<double>(period_ns()) / 2.0) {
      throw std::invalid_argument("bench reef: --rt-raise-lead-us " +
                                  std::to_string(rt_raise_lead_us) +
                                  " must be under half the RT period (" +
                                  std::to_string(static_cast<double>(period_ns()) / 1000.0) +
                                  " us at --rate " + std::to_string(rate_hz) + ")");
    }
  }
}

std::uint64_t reef_settings::raise_lead_ns(const std::string& policy) const {
  return config_of(policy).lead ? static_cast<std::uint64_t>(rt_raise_lead_us * 1000.0) : 0;
}

std::vector<std::string> reef_settings::runnable_policies() const {
  if (arrival == "periodic") return policies;
  std::vector<std::string> out;
  for (const auto& p : policies) {
    if (!config_of(p).lead) out.push_back(p);
  }
  return out;
}

bool reef_settings::needs_partition() const {
  return std::any_of(policies.begin(), policies.end(), [](const std::string& p) {
    const policy_config c = config_of(p);
    return c.split || c.spatial;
  });
}

void reef_settings::check_split(int sm_count, int alignment, int groups) const {
  if (!needs_partition()) return;
  const bool split = std::any_of(policies.begin(), policies.end(),
                                 [](const std::string& p) { return config_of(p).split; });
  // The driver hands out whole groups of `alignment` SMs; the SMs in no whole group go to no
  // partition (partition_set::split). On the H200 those are 12, not 132 % 8.
  const int unit = std::max(1, alignment);
  const int usable = (groups > 0 ? groups : sm_count / unit) * unit;
  const int rt = (split_sms + unit - 1) / unit * unit;
  const std::string asked = "bench reef --split-sms " + std::to_string(split_sms) + ": ";
  const std::string device = "partitions are whole groups of " + std::to_string(unit) + " SMs, " +
                             std::to_string(usable) + " of the device's " +
                             std::to_string(sm_count) + " SMs";
  if (rt > usable) {
    throw std::invalid_argument(asked + "the RT partition needs " + std::to_string(rt) +
                                " SMs, and " + device);
  }
  if (split && usable - rt < unit) {
    throw std::invalid_argument(asked + "green-split and exclusive-split need at least " +
                                std::to_string(unit) + " SMs for the BE partition, and " + device +
                                ", so at most " + std::to_string(usable - unit) +
                                " can go to the RT partition");
  }
}

void reef_ratios(nlohmann::json& results) {
  const auto* ex = find_policy(results, "exclusive");
  const auto* ex_end = find_policy(results, "exclusive-end");
  const auto* seq = find_policy(results, "sequential");
  for (auto& r : results) {
    if (ex != nullptr) {
      r["rt_mean_over_exclusive"] = r["mean_us"].get<double>() / ex->at("mean_us").get<double>();
      r["rt_p99_over_exclusive"] = r["p99_us"].get<double>() / ex->at("p99_us").get<double>();
      r["rt_max_over_exclusive"] = r["max_us"].get<double>() / ex->at("max_us").get<double>();
    }
    if (ex != nullptr && r.contains("undisturbed_p99_us") && ex->contains("undisturbed_p99_us")) {
      // Both without the samples the measuring threads may have stretched (no target: the
      // targets take every sample).
      r["rt_undisturbed_p99_over_exclusive"] =
          r["undisturbed_p99_us"].get<double>() / ex->at("undisturbed_p99_us").get<double>();
    }
    if (ex_end != nullptr) {  // the same ratio against the baseline measured last (no target)
      r["rt_p99_over_exclusive_end"] =
          r["p99_us"].get<double>() / ex_end->at("p99_us").get<double>();
    }
    if (seq != nullptr && seq->at("be").at("gflops").get<double>() > 0) {
      r["be_gflops_over_sequential"] =
          r["be"]["gflops"].get<double>() / seq->at("be").at("gflops").get<double>();
    }
  }
}

nlohmann::json reef_targets(const nlohmann::json& results) {
  nlohmann::json t = nlohmann::json::array();
  const auto* ex = find_policy(results, "exclusive");
  const auto* seq = find_policy(results, "sequential");
  // green-split is judged on RT and BE only: it never preempts (its RT kernels find their SMs
  // free), so a preemption latency would be its start latency under another name.
  for (const std::string p :
       {"green-split", "preempt", "preempt-pad", "preempt-sm", "preempt-lead"}) {
    const auto* r = find_policy(results, p);
    if (r == nullptr) continue;
    if (config_of(p).preemptible) {
      // From the sample's detect, or from the raise where that came first (preempt-lead): the
      // later start of the two, so a lead never shortens the number judged.
      const double after_sample = r->at("preemption_latency").value("p99_us", 0.0);
      const double from_raise = r->contains("preemption_from_raise")
                                    ? r->at("preemption_from_raise").value("p99_us", 0.0)
                                    : 0.0;
      const double pl = std::max(after_sample, from_raise);
      nlohmann::json pt{{"name", p + ": preemption latency p99 (us)"},
                        {"value", pl},
                        {"target", 20.0},
                        {"met", pl > 0 && pl <= 20.0}};
      if (from_raise > after_sample) pt["after_sample"] = after_sample;
      t.push_back(std::move(pt));
    }
    if (ex != nullptr) {
      const double ratio = r->at("p99_us").get<double>() / ex->at("p99_us").get<double>();
      nlohmann::json rt{{"name", p + ": RT p99 / exclusive p99"},
                        {"value", ratio},
                        {"target", 1.05},
                        {"met", ratio <= 1.05}};
      // The same ratio without the host's share, beside it (the target takes every sample): a
      // run whose exclusive had a host tail can meet it while the device misses it.
      if (r->contains("undisturbed_p99_us") && ex->contains("undisturbed_p99_us")) {
        rt["undisturbed"] =
            r->at("undisturbed_p99_us").get<double>() / ex->at("undisturbed_p99_us").get<double>();
      }
      const auto in_loop = [](const nlohmann::json& x) {
        const auto m = x.find("measurement");
        if (m == x.end() || !m->contains("in_loop_us")) return 0.0;
        return m->at("in_loop_us").value("p99_us", 0.0);
      };
      if (in_loop(*r) > 0 && in_loop(*ex) > 0) rt["in_loop"] = in_loop(*r) / in_loop(*ex);
      t.push_back(std::move(rt));
    }
    if (seq != nullptr) {
      const double base = seq->at("be").at("gflops").get<double>();
      const double ratio = base > 0 ? r->at("be").at("gflops").get<double>() / base : 0.0;
      t.push_back({{"name", p + ": BE throughput / sequential"},
                   {"value", ratio},
                   {"target", 1.5},
                   {"met", ratio >= 1.5}});
    }
  }
  return t;
}

measure::receipt run_reef_bench(const reef_settings& s, std::ostream& log) {
  s.validate();
  if (device_count() == 0) {
    throw std::runtime_error("bench reef needs a CUDA GPU; none is usable here (" +
                             no_device_reason() + ")");
  }
  const auto roles = measure::assign_cpus({{"sensor", -1}, {"actuator", -1}});
  cpu_roles cpus{roles.at("sensor"), roles.at("actuator")};
  const auto others = measure::remaining_cpus({cpus.sensor, cpus.actuator});
  const measure::affinity_restorer restore_affinity;  // the caller's cores back on return
  // The BE runner threads and CUDA's helpers stay off the sensor's and actuator's cores.
  if (!others.empty() && !measure::confine_process(others)) {
    log << "reef: could not keep other threads off the sensor and actuator cores\n";
  }
  RESIDENT_CUDA_TRY(cudaSetDevice(0));
  if (s.needs_partition()) {
    const auto info = partition::query_sm_resource(0, false);
    s.check_split(info.sm_count, info.alignment, info.whole_groups);
  }
  const std::vector<std::int32_t> rt_widths{256, 512, 512, 256};
  auto model = std::make_shared<const rt_model>(s.rt_batch, rt_widths, s.rt_arena);
  std::int32_t rt_capacity = 0;
  for (std::size_t l = 0; l < model->layers(); ++l) {
    rt_capacity = std::max(rt_capacity, sched::gemm_blocks(model->gemm(l)));
  }
  auto pad = std::make_shared<pad_source>(rt_capacity, s.records_placement());
  nlohmann::json padding_report;
  const bool any_pad =
      std::find(s.policies.begin(), s.policies.end(), "preempt-pad") != s.policies.end();
  std::vector<layer_padding> pads;
  if (any_pad) pads = plan_padding(*model, *pad, s.pad_tolerance, padding_report);
  for (auto& p : pads) p.place_wait_ns = s.place_wait_ns();
  // After the padding profiles (measured without it), for every policy alike.
  std::optional<l2_set_aside> l2;
  std::optional<cudaAccessPolicyWindow> l2_window;
  if (s.rt_l2_persist) {
    l2.emplace(model->arena_used());
    if (l2->granted() == 0) {
      throw std::runtime_error("bench reef --rt-l2-persist: the device sets no L2 aside");
    }
    // A window larger than the set-aside would make its lines evict each other.
    l2_window = persisting_window(model->arena(), std::min(model->arena_used(), l2->granted()));
  }

  measure::receipt receipt("reef", s.command);
  describe_machine(receipt);
  receipt.settings = {{"policies", s.policies},
                      {"arrival", s.arrival},
                      {"rate_hz", s.rate_hz},
                      {"samples", s.samples},
                      {"warmup", s.warmup},
                      {"rt",
                       {{"model", "mlp"},
                        {"batch", s.rt_batch},
                        {"widths", rt_widths},
                        {"gflop", model->gflop()},
                        {"mode", "while"},
                        {"poll_ns", s.poll_ns}}},
                      {"disturbance_ns", s.disturbance_ns},
                      {"be",
                       {{"model", s.be_model},
                        {"clients", s.be_clients},
                        {"gflop_per_inference", be_gflop(s.be_model)},
                        {"window", s.be_window},
                        {"window_sm", s.be_window_sm},
                        {"window_split", s.be_window_split},
                        {"rt_sm_blocks", s.be_rt_sm_blocks},
                        {"checkpoint", s.be_checkpoint},
                        {"checkpoint_min_steps", s.be_checkpoint_min_steps},
                        {"bounded_grid_per_sm", s.be_bounded_grid},
                        {"bounded_grid_counter", s.be_bounded_grid_counter}}},
                      {"pad_place_wait_us", s.pad_place_wait_us},
                      {"rt_spread", s.rt_spread},
                      {"rt_placement", s.records_placement()},
                      {"split_sms", s.split_sms},
                      {"split_be_rest", s.split_be_rest},
                      {"rt_out_copy", s.rt_out_copy},
                      {"rt_pdl", s.rt_pdl},
                      {"rt_raise", s.rt_raise},
                      {"rt_raise_lead_us", s.rt_raise_lead_us},
                      {"rt_l2_persist",
                       {{"on", s.rt_l2_persist},
                        {"arena", s.rt_arena},
                        {"split_body", s.rt_split_body},
                        {"model_bytes", model->arena_used()},
                        {"set_aside_bytes", l2 ? l2->granted() : 0},
                        {"window_bytes", l2_window ? l2_window->num_bytes : 0}}},
                      {"be_trace", s.be_trace},
                      {"cpus", {{"sensor", cpus.sensor}, {"actuator", cpus.actuator}}},
                      {"realtime_requested", s.realtime}};
  if (any_pad) receipt.settings["padding"] = padding_report;
  const std::vector<std::string> runnable = s.runnable_policies();
  if (runnable.size() != s.policies.size()) {
    // A Poisson sensor's next sample is not due at any time: nothing to raise ahead of.
    log << "reef: preempt-lead left out: it needs --arrival periodic\n";
    receipt.settings["left_out"] = {{"preempt-lead", "needs --arrival periodic"}};
  }
  if (runnable.empty()) throw std::invalid_argument("bench reef: no policy can run");
  for (const auto& p : runnable) {
    receipt.results.push_back(run_policy(s, p, model, pad, pads, cpus, l2_window, log));
  }
  // Each policy against the baselines: the RT latency increase over exclusive, the BE
  // throughput against sequential.
  reef_ratios(receipt.results);
  receipt.settings["targets"] = reef_targets(receipt.results);
  return receipt;
}

std::string reef_table(const measure::receipt& receipt) {
  std::ostringstream out;
  out << "policy        RT mean   p50    p99     max   | preempt p99 | BE inf/s  GFLOP/s\n";
  char line[256];
  for (const auto& r : receipt.results) {
    std::snprintf(line, sizeof line, "%-12s %7.1f %6.1f %7.1f %7.1f | %11.1f | %8.1f %8.1f\n",
                  r.value("policy", "?").c_str(), r.value("mean_us", 0.0), r.value("p50_us", 0.0),
                  r.value("p99_us", 0.0), r.value("max_us", 0.0),
                  r.at("preemption_latency").value("p99_us", 0.0),
                  r.at("be").value("inferences_per_s", 0.0), r.at("be").value("gflops", 0.0));
    out << line;
  }
  if (receipt.settings.contains("targets")) {
    for (const auto& t : receipt.settings["targets"]) {
      out << (t.value("met", false) ? "met    " : "missed ") << t.value("name", "") << ": "
          << t.value("value", 0.0) << " (target " << t.value("target", 0.0) << ")";
      if (t.contains("undisturbed")) out << "; undisturbed " << t.value("undisturbed", 0.0);
      if (t.contains("in_loop")) out << "; in-loop " << t.value("in_loop", 0.0);
      if (t.contains("after_sample")) {
        out << "; from the sample " << t.value("after_sample", 0.0);
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace resident::bench
