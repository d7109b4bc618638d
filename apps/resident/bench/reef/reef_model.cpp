// bench reef's work: the RT model and its loop, the padding gemm, the BE models, the padding
// profiles (see reef_model.hpp).

#include "bench/reef/reef_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <stdexcept>

#include "resident/cuda/error.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/l2_persistence.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/ops/vector_ops.hpp"
#include "resident/sched/be_kernels.hpp"

namespace resident::bench::reef_detail {

// ---- the real-time model --------------------------------------------------------------------

rt_model::rt_model(std::int32_t batch, std::vector<std::int32_t> widths, bool arena)
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

sched::bias_act_args rt_model::bias(std::size_t l) const {
  sched::bias_act_args a;
  a.x = _acts[l];
  a.bias = _biases[l];
  a.elements = static_cast<std::int64_t>(_batch) * _widths[l + 1];
  a.inner = 1;
  a.channels = _widths[l + 1];
  a.act = l + 1 < layers() ? sched::activation::relu : sched::activation::none;
  return a;
}

double rt_model::gflop() const {
  double f = 0;
  for (std::size_t l = 0; l < layers(); ++l) {
    f += 2.0 * _batch * static_cast<double>(_widths[l]) * _widths[l + 1];
  }
  return f * 1e-9;
}

std::size_t rt_model::arena_bytes(std::int32_t batch, const std::vector<std::int32_t>& w) {
  const auto rows = static_cast<std::size_t>(batch);
  std::size_t floats = padded(rows * w[0]) + padded(rows);  // input, scores
  for (std::size_t l = 0; l + 1 < w.size(); ++l) {
    const auto k = static_cast<std::size_t>(w[l]);
    const auto n = static_cast<std::size_t>(w[l + 1]);
    floats += padded(k * n) + padded(n) + padded(rows * n);
  }
  return floats * sizeof(float);
}

float* rt_model::allocate(std::size_t elements) {
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

float* rt_model::upload(const std::vector<float>& host) {
  float* d = allocate(host.size());
  RESIDENT_CUDA_TRY(
      cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

pad_source::pad_source(std::int32_t rt_capacity, bool record_placement)
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

namespace {

/// rx's token releases one RT inference; out: the first two scores.
class rt_mlp_op final : public Operator {
 public:
  rt_mlp_op(std::shared_ptr<const rt_model> model, std::shared_ptr<pad_source> pad,
            const rt_app_options& o, std::shared_ptr<std::atomic<int>> l2_marked)
      : _model(std::move(model)),
        _pad(std::move(pad)),
        _pads(o.pads),
        _copy_kernel(o.copy_kernel),
        _pdl(o.pdl),
        _l2_window(o.l2_window),
        _l2_marked(std::move(l2_marked)),
        _done_ring(o.done_ring),
        _done_capacity(o.done_capacity),
        _be_trace(o.be_trace),
        _clock_probe(o.clock_probe) {}
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
    // rt_pdl: every kernel after the first follows the one before it programmatically, so
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
    // rt_split_body: where the compute ends, so the body splits into compute and egress.
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

}  // namespace

reef_rt_app::reef_rt_app(std::shared_ptr<const rt_model> model, std::shared_ptr<pad_source> pad,
                         rt_app_options options)
    : Application("reef-rt"),
      _model(std::move(model)),
      _pad(std::move(pad)),
      _options(std::move(options)),
      _mailbox(std::make_shared<io::mailbox>(io::mailbox::config{8, 8, 4})) {}

void reef_rt_app::compose() {
  auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
  auto rt = make_operator<rt_mlp_op>("rt_mlp", _model, _pad, _options, _l2_marked);
  auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
  register_data_ready_handler(_mailbox->make_handler(rx));
  add_flow(rx, rt, {{"sample", "in"}});
  add_flow(rt, tx);
}

bool reef_rt_app::output_matches(std::span<const std::byte> out) const {
  float got[2];
  std::memcpy(got, out.data(), 8);
  for (int i = 0; i < 2; ++i) {
    const double want = _model->probe()[static_cast<std::size_t>(i)];
    if (!(std::abs(got[i] - want) <= 1e-3 * std::max(std::abs(want), 1.0))) return false;
  }
  return true;
}

// ---- best-effort clients ----------------------------------------------------------------------

// The BE MLP: 512 output tiles per gemm (a full wave at 4 blocks per SM), and K = 512 so a
// block (32 K-steps) is short next to the gaps real-time work leaves: a preempted block loses
// at most that much.
namespace {
constexpr std::int32_t be_mlp_batch = 4096;
const std::vector<std::int32_t> be_mlp_widths{512, 512, 512, 512};
}  // namespace

std::unique_ptr<sched::be_model> make_be_model(const std::string& name, std::uint64_t seed) {
  if (name == "mlp") return std::make_unique<sched::mlp_model>(be_mlp_batch, be_mlp_widths, seed);
  if (name == "mlp-fused") {
    return std::make_unique<sched::mlp_model>(be_mlp_batch, be_mlp_widths, seed,
                                              sched::mlp_bias::fused);
  }
  if (name == "cnn") return std::make_unique<sched::cnn_model>(64, seed);
  throw std::invalid_argument("unknown BE model '" + name + "'; models: mlp, mlp-fused, cnn");
}

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

namespace {

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

}  // namespace

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

}  // namespace resident::bench::reef_detail
