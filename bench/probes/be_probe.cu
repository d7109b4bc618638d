// be_probe: what each way of handing out a BE kernel's logical blocks costs, kernel by kernel,
// with nothing else on the GPU. bench reef's low-rate runs put the work counter about 8% behind
// the strided grid for the BE MLP; this probe times the MLP's two kernels (gemm 4096x512x512,
// bias+relu over 4096x512) and the two fused into one (gemm_bias_act) under each variant,
// alternating them so clock drift hits all alike.
// It is a design probe, not part of the library.
//
//   be_probe [reps]   (one line per kernel and variant: mean and median time per launch)

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "probe_check.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/preemptible.hpp"

namespace {

using namespace resident::sched;
using resident::device_buffer;

// One zeroed device allocation per word or array the runner reads, owned for the probe's life.
class zeroed_arrays {
 public:
  explicit zeroed_arrays(resident::stream_view s) : _stream(s) {}
  template <class T>
  T* make(std::size_t count) {
    auto& b = _buffers.emplace_back(count * sizeof(T));
    b.fill_bytes(0, _stream);
    return b.data_as<T>();
  }

 private:
  resident::stream_view _stream;
  std::deque<device_buffer> _buffers;
};

struct variant {
  std::string name;
  std::function<void(be_launch_view&)> shape;
};

struct kernel {
  std::string name;
  std::int32_t blocks;
  bool checkpoint;
  std::function<void(cudaStream_t, const be_launch_view&)> launch;
};

// The runner's words: preempt (never raised), halt, exits, done/runs, checkpoints, counters.
struct runner_words {
  std::uint32_t* preempt;
  std::uint32_t* halt;
  std::uint32_t* exits;
  std::uint32_t* done;
  std::uint32_t* runs;
  std::uint32_t* progress;
  float* saved;
  std::uint32_t* counters;
  std::uint32_t* rt_sms;
  std::uint32_t* handback;
  std::uint32_t* handbacks;
  std::int32_t max_grid;
};

std::vector<variant> block_variants(const runner_words& w) {
  const std::int32_t max_grid = w.max_grid;
  return {
      {"plain", [](be_launch_view&) {}},
      {"strided", [=](be_launch_view& v) { v.max_grid = max_grid; }},
      {"counter",
       [=](be_launch_view& v) {
         v.max_grid = max_grid;
         v.next = w.counters;
         v.next_left = w.counters + 1;
       }},
      {"spatial",
       [=](be_launch_view& v) {
         v.max_grid = max_grid;
         v.next = w.counters;
         v.next_left = w.counters + 1;
         v.rt_sms = w.rt_sms;
         v.handback = w.handback;
         v.handback_capacity = max_grid;
         v.handbacks = w.handbacks;
       }},
      // Twice the bound: the short kernels' blocks fit 5 to 8 per SM, the gemm's 4.
      {"strided8", [=](be_launch_view& v) { v.max_grid = 2 * max_grid; }},
      {"counter8",
       [=](be_launch_view& v) {
         v.max_grid = 2 * max_grid;
         v.next = w.counters;
         v.next_left = w.counters + 1;
       }},
  };
}

be_launch_view base_view(const runner_words& w, const kernel& k) {
  be_launch_view v;
  v.preempt = w.preempt;
  v.halt = w.halt;
  v.exits = w.exits;
  v.done = w.done;
  v.runs = w.runs;
  v.blocks = k.blocks;
  if (k.checkpoint) {
    v.saved = w.saved;
    v.progress = w.progress;
    v.saved_floats = be_tile_state_floats;
  }
  return v;
}

// Milliseconds per launch of one kernel under each variant, the variants alternated each round
// so clock drift hits all alike (5 warm-up rounds first).
std::vector<std::vector<float>> time_variants(const kernel& k, const std::vector<variant>& variants,
                                              const runner_words& w, int reps,
                                              const resident::stream& s) {
  const resident::event start(true), stop(true);
  std::vector<std::vector<float>> ms(variants.size());
  for (int r = -5; r < reps; ++r) {
    for (std::size_t i = 0; i < variants.size(); ++i) {
      be_launch_view v = base_view(w, k);
      variants[i].shape(v);
      start.record(s);
      k.launch(s.get(), v);
      stop.record(s);
      stop.synchronize();
      if (r >= 0) ms[i].push_back(resident::event::elapsed_ms(start, stop));
    }
  }
  return ms;
}

void print_row(const std::string& kernel_name, const std::string& variant_name,
               std::vector<float> m, double flop) {
  std::sort(m.begin(), m.end());
  double sum = 0;
  for (float t : m) sum += t;
  const double mean_us = sum / static_cast<double>(m.size()) * 1000.0;
  const double p50_us = m[m.size() / 2] * 1000.0;
  std::printf("%-9s %-8s mean %8.2f us  p50 %8.2f us  min %8.2f us", kernel_name.c_str(),
              variant_name.c_str(), mean_us, p50_us, m.front() * 1000.0);
  if (flop > 0) std::printf("  %6.2f TFLOP/s (p50)", flop / (p50_us * 1e-6) * 1e-12);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  probe_check::require_gpu("resident_be_probe");
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  load_be_kernels();
  const resident::stream s;
  zeroed_arrays arrays(s);
  constexpr std::int32_t batch = 4096, width = 512;
  float* x = arrays.make<float>(std::size_t{batch} * width);
  float* wt = arrays.make<float>(std::size_t{width} * width);
  float* y = arrays.make<float>(std::size_t{batch} * width);
  float* bias = arrays.make<float>(width);
  const gemm_args gemm{x, wt, y, batch, width, width};
  const bias_act_args act{y, bias, std::int64_t{batch} * width, 1, width, activation::relu};
  const gemm_bias_act_args fused{gemm, bias, activation::relu};
  const std::int32_t most = std::max(gemm_blocks(gemm), bias_act_blocks(act));
  const std::int32_t max_grid = 4 * sms;
  const runner_words w{
      arrays.make<std::uint32_t>(1),
      arrays.make<std::uint32_t>(32),
      arrays.make<std::uint32_t>(32),
      arrays.make<std::uint32_t>(most),
      arrays.make<std::uint32_t>(most),
      arrays.make<std::uint32_t>(most),
      arrays.make<float>(static_cast<std::size_t>(most) * be_tile_state_floats),
      arrays.make<std::uint32_t>(32),
      arrays.make<std::uint32_t>(8),  // no SM is real-time
      arrays.make<std::uint32_t>(static_cast<std::size_t>(handback_words(max_grid)) + 32),
      arrays.make<std::uint32_t>(32),
      max_grid,
  };
  s.synchronize();
  const std::vector<variant> variants = block_variants(w);
  const std::vector<kernel> kernels{
      {"gemm", gemm_blocks(gemm), true,
       [&](cudaStream_t st, const be_launch_view& v) { launch_gemm(st, v, gemm); }},
      {"bias_act", bias_act_blocks(act), false,
       [&](cudaStream_t st, const be_launch_view& v) { launch_bias_act(st, v, act); }},
      // The two in one kernel (bench reef --be-model mlp-fused).
      {"gemm_bias_act", gemm_bias_act_blocks(fused), true,
       [&](cudaStream_t st, const be_launch_view& v) { launch_gemm_bias_act(st, v, fused); }},
  };
  std::printf("be_probe: %d SMs, bounded grid %d, %d reps\n", sms, max_grid, reps);
  for (const auto& k : kernels) {
    const auto ms = time_variants(k, variants, w, reps, s);
    const double flop = k.checkpoint ? 2.0 * batch * width * width : 0.0;
    for (std::size_t i = 0; i < variants.size(); ++i)
      print_row(k.name, variants[i].name, ms[i], flop);
  }
  return 0;
}
