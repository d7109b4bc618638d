// interference_probe: what slows bench reef's RT model when BE work runs on OTHER SMs? It is a
// design probe, not part of the library.
//
// The RT body (the RT MLP's three gemms with bias_act between them: batch 32, widths
// 256-512-512-256, the library's plain kernels) runs in a green context of the driver's first
// four 8-SM groups (bench reef's default 32-SM partition), one event per body. Beside it, in a
// green context of the remaining groups, one background at a time:
//   none        nothing
//   spin        FMA chains, no memory: power and issue, no memory traffic
//   l2-read     16-B ld.cg over an 8 MB buffer (L2 hits), 4 blocks per SM
//   l2-read-1   the same, 1 block per SM
//   hbm-read    16-B ld.cg over 1 GB (DRAM)
//   l2-write    16-B stores over an 8 MB buffer, 4 blocks per SM (l2-write-1: 1 per SM)
//   be-mlp      the BE MLP's kernels (gemm 4096x512x512, bias_act), plain grids, back to back
//   be-gemm     its gemm alone, back to back; be-act its bias_act alone
//   be-fused    the gemm with bias and relu in its epilogue (gemm_bias_act), back to back
//   fat-gemm    a 128x128-tile gemm (8x8 outputs per thread) over the same shapes, persistent:
//               about half the L2 reads per FLOP of the library's 64x64 tile
// Each background starts, runs 2 ms, the RT bodies run, then it stops. The backgrounds
// alternate within a round. Prints each background's RT body p50/p90/p99/max, a chain of empty
// kernels (the launch path alone), the SM clock seen in the RT partition, and the background's
// own rate (GFLOP/s or GB/s).
//
//   interference_probe [rounds] [bodies per round]

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "probe_check.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/preemptible.hpp"

namespace {

using namespace resident::sched;

__device__ bool stopped(const unsigned* stop) {
  return *reinterpret_cast<const volatile unsigned*>(stop) != 0U;
}

__global__ void spin(const unsigned* stop, float* sink, unsigned long long* work) {
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = threadIdx.x * 1e-3F + i;
  unsigned long long n = 0;
  while (!stopped(stop)) {
    for (int r = 0; r < 256; ++r) {
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = fmaf(a[i], 0.999F, 1e-4F);
    }
    n += 256 * 8;
  }
  float s = 0;
  for (float v : a) s += v;
  if (s == 12345.0F) sink[0] = s;
  if (threadIdx.x == 0) atomicAdd(work, n * blockDim.x * 2);  // FLOP
}

// Reads (or writes) `words` float4 over and over; `work` counts bytes.
template <bool Write>
__global__ void stream(float4* buf, std::int64_t words, const unsigned* stop, float* sink,
                       unsigned long long* work) {
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  float acc = 0;
  unsigned long long bytes = 0;
  int pass = 0;
  std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  while (true) {
    if ((pass++ & 15) == 0 && stopped(stop)) break;
    if constexpr (Write) {
      buf[i] = make_float4(acc, acc, acc, acc);
    } else {
      const float4 v = __ldcg(buf + i);
      acc += v.x + v.y + v.z + v.w;
    }
    bytes += 16;
    i += stride;
    if (i >= words) i -= words;
  }
  if (acc == 12345.0F) sink[0] = acc;
  atomicAdd(work, bytes);
}

// C[m x n] = A[m x k] B[k x n], row-major, 128x128 tiles, K-step 8, 256 threads of 8x8 outputs;
// persistent: the grid walks the tiles over and over until stopped. m, n multiples of 128, k of 8.
__global__ void __launch_bounds__(256)
    fat_gemm(const float* a, const float* b, float* c, int m, int n, int k, const unsigned* stop,
             unsigned long long* work) {
  __shared__ float as[8][128];
  __shared__ float bs[8][128];
  __shared__ unsigned quit;
  const int tid = threadIdx.x;
  const int tx = tid % 16;
  const int ty = tid / 16;
  const int tiles_n = n / 128;
  const int tiles = (m / 128) * tiles_n;
  unsigned long long flop = 0;
  for (int t = blockIdx.x;; t += gridDim.x) {
    if (t >= tiles) t %= tiles;
    if (tid == 0) quit = stopped(stop) ? 1U : 0U;
    resident::device::sync_block();  // one decision for the block: it syncs inside the tile
    if (quit != 0U) break;
    const int row0 = (t / tiles_n) * 128;
    const int col0 = (t % tiles_n) * 128;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < k; k0 += 8) {
      {
        const int r = tid / 2;
        const int kk = (tid % 2) * 4;
        const float4 v = __ldg(reinterpret_cast<const float4*>(a + (row0 + r) * k + k0 + kk));
        as[kk + 0][r] = v.x;
        as[kk + 1][r] = v.y;
        as[kk + 2][r] = v.z;
        as[kk + 3][r] = v.w;
        const int kb = tid / 32;
        const int cb = (tid % 32) * 4;
        *reinterpret_cast<float4*>(&bs[kb][cb]) =
            __ldg(reinterpret_cast<const float4*>(b + (k0 + kb) * n + col0 + cb));
      }
      resident::device::sync_block();
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        float ra[8];
        float rb[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) ra[i] = as[kk][ty * 8 + i];
#pragma unroll
        for (int j = 0; j < 8; ++j) rb[j] = bs[kk][tx * 8 + j];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
      }
      resident::device::sync_block();
    }
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 8; j += 4) {
        *reinterpret_cast<float4*>(c + (row0 + ty * 8 + i) * n + col0 + tx * 8 + j) =
            make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
      }
    }
    flop += 2ULL * 128 * 128 * k / blockDim.x;
  }
  atomicAdd(work, flop);
}

__global__ void empty_kernel() {}

// One thread: SM clock over about 20 us of global time, in kHz.
__global__ void sm_clock(unsigned long long* out) {
  unsigned long long g0;
  unsigned long long g1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  } while (g1 - g0 < 20000);
  const long long c1 = clock64();
  *out = static_cast<unsigned long long>(c1 - c0) * 1000000ULL / (g1 - g0);
}

CUstream green_stream(CUdevice dev, const std::vector<CUdevResource>& pieces) {
  CUdevResourceDesc desc{};
  CU_CHECK(DRIVER(cuDevResourceGenerateDesc)(&desc, const_cast<CUdevResource*>(pieces.data()),
                                             static_cast<unsigned>(pieces.size())));
  CUgreenCtx ctx{};
  CU_CHECK(DRIVER(cuGreenCtxCreate)(&ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CUstream s{};
  CU_CHECK(DRIVER(cuGreenCtxStreamCreate)(&s, ctx, CU_STREAM_NON_BLOCKING, 0));
  return s;  // the contexts live until the process ends
}

template <class T>
T* device_zeros(std::size_t n) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  CHECK(cudaMemset(p, 0, n * sizeof(T)));
  return p;
}

// Values in [-0.5, 0.5) from a hash of the index: the gemms must not run on zeros, which can be
// faster than real data.
__global__ void fill_random(float* p, std::int64_t n, unsigned seed) {
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761U ^ seed;
    h ^= h >> 15;
    h *= 2246822519U;
    h ^= h >> 13;
    p[i] = static_cast<float>(h >> 8) * (1.0F / 16777216.0F) - 0.5F;
  }
}

float* device_random(std::size_t n, unsigned seed) {
  float* p = device_zeros<float>(n);
  fill_random<<<256, 256>>>(p, static_cast<std::int64_t>(n), seed);
  CHECK(cudaGetLastError());
  return p;
}

struct stats {
  double p50, p90, p99, max;
};

stats summarize(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * v.size()))]; };
  return {at(0.5), at(0.9), at(0.99), v.back()};
}

// The RT body: a 3-layer MLP of batch 32 (256-512-512-256) as gemm + bias/ReLU launches.
struct rt_mlp {
  std::vector<gemm_args> gemms;
  std::vector<bias_act_args> acts;
  std::uint32_t* done = nullptr;

  rt_mlp() {
    constexpr std::int32_t batch = 32;
    const std::vector<std::int32_t> widths{256, 512, 512, 256};
    const float* in = device_random(std::size_t{batch} * widths[0], 1);
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      float* w = device_random(std::size_t(widths[l]) * widths[l + 1], 2 + l);
      float* out = device_zeros<float>(std::size_t{batch} * widths[l + 1]);
      float* bias = device_random(widths[l + 1], 10 + l);
      gemms.push_back({in, w, out, batch, widths[l + 1], widths[l]});
      acts.push_back(
          {out, bias, std::int64_t{batch} * widths[l + 1], 1, widths[l + 1], activation::relu});
      in = out;
    }
    done = device_zeros<std::uint32_t>(4096);
  }

  void run(cudaStream_t s) const {
    for (std::size_t l = 0; l < gemms.size(); ++l) {
      be_launch_view v;
      v.done = done;
      v.blocks = gemm_blocks(gemms[l]);
      launch_gemm(s, v, gemms[l]);
      if (l + 1 < gemms.size()) {
        be_launch_view va;
        va.done = done;
        va.blocks = bias_act_blocks(acts[l]);
        launch_bias_act(s, va, acts[l]);
      }
    }
  }
};

struct background {
  std::string name;
  const char* unit;
};

const std::vector<background> backgrounds{{"none", ""},
                                          {"spin", "GFLOP/s"},
                                          {"l2-read", "GB/s"},
                                          {"l2-read-1", "GB/s"},
                                          {"hbm-read", "GB/s"},
                                          {"l2-write", "GB/s"},
                                          {"l2-write-1", "GB/s"},
                                          {"be-mlp", "GFLOP/s"},
                                          {"be-gemm", "GFLOP/s"},
                                          {"be-act", "launches/s"},
                                          {"be-fused", "GFLOP/s"},
                                          {"fat-gemm", "GFLOP/s"}};

// The background work on its own partition: started before the RT bodies, stopped after them,
// its rate while it ran.
class background_load {
 public:
  background_load(cudaStream_t bg, int bg_sms, int bodies)
      : _bg(bg), _bg_sms(bg_sms), _bodies(bodies) {
    CHECK(cudaStreamCreateWithFlags(&_ctl, cudaStreamNonBlocking));
    _bx = device_random(std::size_t{be_m} * be_w, 20);
    _bw = device_random(std::size_t{be_w} * be_w, 21);
    _by = device_zeros<float>(std::size_t{be_m} * be_w);
    _bb = device_random(be_w, 22);
    _gemm = {_bx, _bw, _by, be_m, be_w, be_w};
    _act = {_by, _bb, std::int64_t{be_m} * be_w, 1, be_w, activation::relu};
    _done = device_zeros<std::uint32_t>(std::max(gemm_blocks(_gemm), bias_act_blocks(_act)));
    _big = device_zeros<float4>(hbm_bytes / 16);
    _stop = device_zeros<unsigned>(32);
    _work = device_zeros<unsigned long long>(4);
    _sink = device_zeros<float>(4);
  }

  void start(const std::string& name) {
    const unsigned zero = 0;
    CHECK(cudaMemcpyAsync(_stop, &zero, sizeof zero, cudaMemcpyHostToDevice, _ctl));
    CHECK(cudaMemsetAsync(_work, 0, sizeof(unsigned long long), _ctl));
    CHECK(cudaStreamSynchronize(_ctl));
    const int per_sm4 = 4 * _bg_sms;
    if (name == "spin") {
      spin<<<per_sm4, 256, 0, _bg>>>(_stop, _sink, _work);
    } else if (name == "l2-read" || name == "l2-read-1") {
      stream<false><<<name == "l2-read" ? per_sm4 : _bg_sms, 256, 0, _bg>>>(_big, l2_bytes / 16,
                                                                            _stop, _sink, _work);
    } else if (name == "hbm-read") {
      stream<false><<<per_sm4, 256, 0, _bg>>>(_big, hbm_bytes / 16, _stop, _sink, _work);
    } else if (name == "l2-write" || name == "l2-write-1") {
      stream<true><<<name == "l2-write" ? per_sm4 : _bg_sms, 256, 0, _bg>>>(_big, l2_bytes / 16,
                                                                            _stop, _sink, _work);
    } else if (name == "fat-gemm") {
      fat_gemm<<<2 * _bg_sms, 256, 0, _bg>>>(_bx, _bw, _by, be_m, be_w, be_w, _stop, _work);
    } else if (name == "be-fused") {
      launch_fused();
    } else if (name == "be-mlp" || name == "be-gemm" || name == "be-act") {
      launch_layers(name);
    }
    CHECK(cudaGetLastError());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  /// Stops the background and returns its rate over `seconds` (plus the drain for launches).
  double finish(const std::string& name, double seconds) {
    const unsigned one = 1;
    CHECK(cudaMemcpyAsync(_stop, &one, sizeof one, cudaMemcpyHostToDevice, _ctl));
    CHECK(cudaStreamSynchronize(_ctl));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaStreamSynchronize(_bg));
    const double drain =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    unsigned long long w = 0;
    CHECK(cudaMemcpy(&w, _work, sizeof w, cudaMemcpyDeviceToHost));
    if (name == "be-act") return _launches / (seconds + drain);
    if (name == "be-mlp" || name == "be-gemm" || name == "be-fused") {
      return 2.0 * be_m * be_w * be_w * _launches / (seconds + drain) * 1e-9;
    }
    return static_cast<double>(w) / seconds * 1e-9;  // stopped right after: rate while on
  }

 private:
  static constexpr std::int32_t be_m = 4096;
  static constexpr std::int32_t be_w = 512;
  static constexpr std::int64_t l2_bytes = 8LL << 20;
  static constexpr std::int64_t hbm_bytes = 1LL << 30;

  void launch_fused() {
    _launches = 0;
    const gemm_bias_act_args fused{_gemm, _bb, activation::relu};
    for (int i = 0; i < 40 + _bodies; ++i) {
      be_launch_view v;
      v.done = _done;
      v.blocks = gemm_bias_act_blocks(fused);
      launch_gemm_bias_act(_bg, v, fused);
      ++_launches;
    }
  }

  // Enough to outlast the RT bodies (about 0.15 ms per pair on 100 SMs, 0.02 ms per bias_act).
  void launch_layers(const std::string& name) {
    _launches = 0;
    const int n = name == "be-act" ? 8 * (40 + _bodies) : 40 + _bodies;
    for (int i = 0; i < n; ++i) {
      if (name != "be-act") {
        be_launch_view v;
        v.done = _done;
        v.blocks = gemm_blocks(_gemm);
        launch_gemm(_bg, v, _gemm);
      }
      if (name != "be-gemm") {
        be_launch_view va;
        va.done = _done;
        va.blocks = bias_act_blocks(_act);
        launch_bias_act(_bg, va, _act);
      }
      ++_launches;
    }
  }

  cudaStream_t _bg;
  int _bg_sms;
  int _bodies;
  cudaStream_t _ctl{};
  float* _bx = nullptr;
  float* _bw = nullptr;
  float* _by = nullptr;
  float* _bb = nullptr;
  gemm_args _gemm{};
  bias_act_args _act{};
  std::uint32_t* _done = nullptr;
  float4* _big = nullptr;
  unsigned* _stop = nullptr;
  unsigned long long* _work = nullptr;
  float* _sink = nullptr;
  int _launches = 0;
};

// Per background: RT body times, empty-kernel times, background rates and SM clocks.
struct measurements {
  std::vector<std::vector<float>> body_us = std::vector<std::vector<float>>(backgrounds.size());
  std::vector<std::vector<float>> chain_us = std::vector<std::vector<float>>(backgrounds.size());
  std::vector<std::vector<double>> rate = std::vector<std::vector<double>>(backgrounds.size());
  std::vector<std::vector<double>> clock_mhz = std::vector<std::vector<double>>(backgrounds.size());
};

// The events and the clock word a round records into (never freed: the probe ends with them).
struct round_events {
  std::vector<cudaEvent_t> bodies;
  cudaEvent_t c0{};
  cudaEvent_t c1{};
  unsigned long long* clock_khz = device_zeros<unsigned long long>(1);

  explicit round_events(int n) : bodies(n + 1) {
    for (auto& e : bodies) CHECK(cudaEventCreate(&e));
    CHECK(cudaEventCreate(&c0));
    CHECK(cudaEventCreate(&c1));
  }
};

// One round: every background in turn, `bodies` RT bodies timed beside it, then a chain of
// empty kernels and the SM clock.
void measure_round(const rt_mlp& mlp, cudaStream_t rt, background_load& load, int bodies,
                   const round_events& e, measurements& m) {
  constexpr int chain = 20;
  const std::vector<cudaEvent_t>& ev = e.bodies;
  const cudaEvent_t c0 = e.c0;
  const cudaEvent_t c1 = e.c1;
  unsigned long long* clock_khz = e.clock_khz;
  for (std::size_t b = 0; b < backgrounds.size(); ++b) {
    const auto& name = backgrounds[b].name;
    load.start(name);
    const auto t0 = std::chrono::steady_clock::now();
    mlp.run(rt);  // warm
    for (int i = 0; i < bodies; ++i) {
      CHECK(cudaEventRecord(ev[i], rt));
      mlp.run(rt);
    }
    CHECK(cudaEventRecord(ev[bodies], rt));
    CHECK(cudaEventRecord(c0, rt));
    for (int i = 0; i < chain; ++i) empty_kernel<<<1, 32, 0, rt>>>();
    CHECK(cudaEventRecord(c1, rt));
    sm_clock<<<1, 1, 0, rt>>>(clock_khz);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(rt));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() + 2e-3;
    m.rate[b].push_back(load.finish(name, seconds));
    for (int i = 0; i < bodies; ++i) {
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
      m.body_us[b].push_back(ms * 1000.0F);
    }
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, c0, c1));
    m.chain_us[b].push_back(ms * 1000.0F / chain);
    unsigned long long khz = 0;
    CHECK(cudaMemcpy(&khz, clock_khz, sizeof khz, cudaMemcpyDeviceToHost));
    m.clock_mhz[b].push_back(static_cast<double>(khz) / 1000.0);
  }
}

void print_table(const measurements& m, int bg_sms, int rounds, int bodies) {
  std::printf(
      "interference_probe: RT body in 32 SMs (groups 0-3), background on %d SMs; %d rounds of "
      "%d bodies\n",
      bg_sms, rounds, bodies);
  std::printf("%-10s %8s %8s %8s %8s | %8s | %8s | %s\n", "background", "p50 us", "p90 us",
              "p99 us", "max us", "empty us", "SM MHz", "background rate (median)");
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (std::size_t b = 0; b < backgrounds.size(); ++b) {
    const stats s = summarize(m.body_us[b]);
    const stats c = summarize(m.chain_us[b]);
    std::printf("%-10s %8.2f %8.2f %8.2f %8.2f | %8.2f | %8.0f | %.0f %s\n",
                backgrounds[b].name.c_str(), s.p50, s.p90, s.p99, s.max, c.p50, med(m.clock_mhz[b]),
                med(m.rate[b]), backgrounds[b].unit);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const int bodies = argc > 2 ? std::max(10, std::atoi(argv[2])) : 400;
  probe_check::require_gpu("resident_interference_probe");
  CHECK(cudaFree(nullptr));
  CU_CHECK(DRIVER(cuInit)(0));
  CUdevice dev{};
  CU_CHECK(DRIVER(cuDeviceGet)(&dev, 0));
  CUdevResource all{};
  CU_CHECK(DRIVER(cuDeviceGetDevResource)(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  unsigned n_groups = all.sm.smCount;
  std::vector<CUdevResource> groups(n_groups);
  CUdevResource rest{};
  CU_CHECK(DRIVER(cuDevSmResourceSplitByCount)(groups.data(), &n_groups, &all, &rest, 0,
                                               all.sm.smCoscheduledAlignment));
  groups.resize(n_groups);
  if (groups.size() < 6) {
    std::fprintf(stderr, "interference_probe: needs at least 6 SM groups, got %zu\n",
                 groups.size());
    return 1;
  }
  const auto rt =
      reinterpret_cast<cudaStream_t>(green_stream(dev, {groups.begin(), groups.begin() + 4}));
  std::vector<CUdevResource> bg_pieces(groups.begin() + 4, groups.end());
  if (rest.sm.smCount > 0) bg_pieces.push_back(rest);
  const auto bg = reinterpret_cast<cudaStream_t>(green_stream(dev, bg_pieces));
  int bg_sms = 0;
  for (const auto& p : bg_pieces) bg_sms += static_cast<int>(p.sm.smCount);

  load_be_kernels();
  const rt_mlp mlp;
  background_load load(bg, bg_sms, bodies);
  CHECK(cudaDeviceSynchronize());
  const round_events events(bodies);
  measurements m;
  for (int r = 0; r < rounds; ++r) measure_round(mlp, rt, load, bodies, events, m);
  print_table(m, bg_sms, rounds, bodies);
  return 0;
}
