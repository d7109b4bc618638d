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
#include <functional>
#include <string>
#include <vector>

#include "probe_check.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/preemptible.hpp"

namespace {

using namespace resident::sched;

template <class T>
T* device_zeros(std::size_t count) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, count * sizeof(T)));
  CHECK(cudaMemset(p, 0, count * sizeof(T)));
  return p;
}

struct variant {
  std::string name;
  std::function<void(be_launch_view&)> shape;
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  probe_check::require_gpu("resident_be_probe");
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  load_be_kernels();
  constexpr std::int32_t batch = 4096, width = 512;
  float* x = device_zeros<float>(std::size_t{batch} * width);
  float* w = device_zeros<float>(std::size_t{width} * width);
  float* y = device_zeros<float>(std::size_t{batch} * width);
  float* bias = device_zeros<float>(width);
  const gemm_args gemm{x, w, y, batch, width, width};
  const bias_act_args act{y, bias, std::int64_t{batch} * width, 1, width, activation::relu};
  const gemm_bias_act_args fused{gemm, bias, activation::relu};
  const std::int32_t most = std::max(gemm_blocks(gemm), bias_act_blocks(act));

  // The runner's words: preempt (never raised), halt, exits, done/runs, checkpoints, counters.
  auto* preempt = device_zeros<std::uint32_t>(1);
  auto* halt = device_zeros<std::uint32_t>(32);
  auto* exits = device_zeros<std::uint32_t>(32);
  auto* done = device_zeros<std::uint32_t>(most);
  auto* runs = device_zeros<std::uint32_t>(most);
  auto* progress = device_zeros<std::uint32_t>(most);
  auto* saved = device_zeros<float>(static_cast<std::size_t>(most) * be_tile_state_floats);
  auto* counters = device_zeros<std::uint32_t>(32);
  auto* rt_sms = device_zeros<std::uint32_t>(8);  // no SM is real-time
  const std::int32_t max_grid = 4 * sms;
  auto* handback =
      device_zeros<std::uint32_t>(static_cast<std::size_t>(handback_words(max_grid)) + 32);
  auto* handbacks = device_zeros<std::uint32_t>(32);

  const std::vector<variant> variants{
      {"plain", [](be_launch_view&) {}},
      {"strided", [&](be_launch_view& v) { v.max_grid = max_grid; }},
      {"counter",
       [&](be_launch_view& v) {
         v.max_grid = max_grid;
         v.next = counters;
         v.next_left = counters + 1;
       }},
      {"spatial",
       [&](be_launch_view& v) {
         v.max_grid = max_grid;
         v.next = counters;
         v.next_left = counters + 1;
         v.rt_sms = rt_sms;
         v.handback = handback;
         v.handback_capacity = max_grid;
         v.handbacks = handbacks;
       }},
      // Twice the bound: the short kernels' blocks fit 5 to 8 per SM, the gemm's 4.
      {"strided8", [&](be_launch_view& v) { v.max_grid = 2 * max_grid; }},
      {"counter8",
       [&](be_launch_view& v) {
         v.max_grid = 2 * max_grid;
         v.next = counters;
         v.next_left = counters + 1;
       }},
  };
  struct kernel {
    std::string name;
    std::int32_t blocks;
    bool checkpoint;
    std::function<void(cudaStream_t, const be_launch_view&)> launch;
  };
  const std::vector<kernel> kernels{
      {"gemm", gemm_blocks(gemm), true,
       [&](cudaStream_t s, const be_launch_view& v) { launch_gemm(s, v, gemm); }},
      {"bias_act", bias_act_blocks(act), false,
       [&](cudaStream_t s, const be_launch_view& v) { launch_bias_act(s, v, act); }},
      // The two in one kernel (bench reef --be-model mlp-fused).
      {"gemm_bias_act", gemm_bias_act_blocks(fused), true,
       [&](cudaStream_t s, const be_launch_view& v) { launch_gemm_bias_act(s, v, fused); }},
  };

  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev[2];
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  std::printf("be_probe: %d SMs, bounded grid %d, %d reps\n", sms, max_grid, reps);
  for (const auto& k : kernels) {
    std::vector<std::vector<float>> ms(variants.size());
    for (int r = -5; r < reps; ++r) {  // 5 warm-up rounds
      for (std::size_t i = 0; i < variants.size(); ++i) {
        be_launch_view v;
        v.preempt = preempt;
        v.halt = halt;
        v.exits = exits;
        v.done = done;
        v.runs = runs;
        v.blocks = k.blocks;
        if (k.checkpoint) {
          v.saved = saved;
          v.progress = progress;
          v.saved_floats = be_tile_state_floats;
        }
        variants[i].shape(v);
        CHECK(cudaEventRecord(ev[0], s));
        k.launch(s, v);
        CHECK(cudaEventRecord(ev[1], s));
        CHECK(cudaEventSynchronize(ev[1]));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, ev[0], ev[1]));
        if (r >= 0) ms[i].push_back(t);
      }
    }
    const double flop = k.checkpoint ? 2.0 * batch * width * width : 0.0;
    for (std::size_t i = 0; i < variants.size(); ++i) {
      auto& m = ms[i];
      std::sort(m.begin(), m.end());
      double sum = 0;
      for (float t : m) sum += t;
      const double mean_us = sum / static_cast<double>(m.size()) * 1000.0;
      const double p50_us = m[m.size() / 2] * 1000.0;
      std::printf("%-9s %-8s mean %8.2f us  p50 %8.2f us  min %8.2f us", k.name.c_str(),
                  variants[i].name.c_str(), mean_us, p50_us, m.front() * 1000.0);
      if (flop > 0) std::printf("  %6.2f TFLOP/s (p50)", flop / (p50_us * 1e-6) * 1e-12);
      std::printf("\n");
    }
  }
  CHECK(cudaStreamDestroy(s));
  return 0;
}
