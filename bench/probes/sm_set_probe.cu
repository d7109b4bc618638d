// sm_set_probe: does it matter WHICH SMs an RT partition gets? Two measurements, with nothing
// else on the GPU. It is a design probe, not part of the library.
//
// 1. The L2's halves. One thread per SM times an L2 hit (ld.cg) on each 128-B line of a 4 MB
//    buffer. On Hopper a line is homed in one of two L2 halves, and a hit from the far half costs
//    more; SMs whose near lines are the same ones are on the same side. Prints each SM's
//    p10/p50/p90 in cycles and its side (the lines it finds fast agree with SM 0's or not).
// 2. The RT model's gemms (bench reef: batch 32, widths 256-512-512-256, 8/8/4 blocks) launched
//    back to back in green contexts made of chosen pieces of the driver's split, timed with
//    events; the median of `rounds` rounds of 200 bodies, the sets alternated within a round.
//    Sets: the whole device; the driver's first four 8-SM groups (bench reef's default 32-SM
//    partition); each 8-SM group alone; the first 8 and 16 of the 2-SM pieces that
//    CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING gives (one pair of SMs per GPC, then the
//    next).
//
//   sm_set_probe [rounds]

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "probe_check.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/preemptible.hpp"

namespace {

using namespace resident::sched;

constexpr int l2_lines = 32768;  // 4 MB of 128-B lines: fits the L2, not an SM's L1

__device__ unsigned smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// One thread: a warm pass over every line, then each line's hit timed on its own. The load's
// value feeds `acc`, and the second clock read waits for it.
__global__ void time_lines(const unsigned* buf, unsigned short* cycles, unsigned* sm_of_block) {
  sm_of_block[blockIdx.x] = smid();
  unsigned acc = 0;
  for (int l = 0; l < l2_lines; ++l) acc += __ldcg(buf + l * 32);
  for (int l = 0; l < l2_lines; ++l) {
    const long long t0 = clock64();
    acc += __ldcg(buf + l * 32 + (acc & 1U));
    const long long t1 = clock64();
    cycles[blockIdx.x * l2_lines + l] = static_cast<unsigned short>(min(t1 - t0, 65535LL));
  }
  if (acc == 0xdeadbeefU) sm_of_block[0] = ~0U;  // keeps the loads
}

__global__ void record_sms(unsigned* mask) {
  if (threadIdx.x == 0) atomicOr(mask + smid() / 32, 1U << (smid() % 32));
}

// Side 0: the lines SM 0 finds fast; side 1: the others. -1: no block ran on the SM.
std::vector<int> l2_sides(int sm_count) {
  unsigned* buf = nullptr;
  unsigned short* cycles = nullptr;
  unsigned* sm_of = nullptr;
  const int blocks = sm_count;  // one single-thread block per SM on an idle GPU
  CHECK(cudaMalloc(&buf, std::size_t{l2_lines} * 128));
  CHECK(cudaMemset(buf, 0, std::size_t{l2_lines} * 128));
  CHECK(cudaMalloc(&cycles, sizeof(unsigned short) * blocks * l2_lines));
  CHECK(cudaMalloc(&sm_of, sizeof(unsigned) * blocks));
  for (int pass = 0; pass < 2; ++pass) {  // the second pass is the one kept
    time_lines<<<blocks, 1>>>(buf, cycles, sm_of);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  std::vector<unsigned short> h(static_cast<std::size_t>(blocks) * l2_lines);
  std::vector<unsigned> sm(blocks);
  CHECK(cudaMemcpy(h.data(), cycles, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sm.data(), sm_of, sm.size() * sizeof(sm[0]), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(buf));
  CHECK(cudaFree(cycles));
  CHECK(cudaFree(sm_of));

  std::vector<unsigned short> all(h);
  std::nth_element(all.begin(), all.begin() + all.size() / 2, all.end());
  const unsigned short median = all[all.size() / 2];
  std::vector<int> row(sm_count, -1);
  for (int b = 0; b < blocks; ++b) {
    if (sm[b] < static_cast<unsigned>(sm_count) && row[sm[b]] < 0) row[sm[b]] = b;
  }
  auto fast = [&](int b, int l) { return h[static_cast<std::size_t>(b) * l2_lines + l] < median; };
  std::vector<int> side(sm_count, -1);
  std::printf("L2 hits (cycles; device median %u): SM p10 p50 p90, side\n", median);
  for (int s = 0; s < sm_count; ++s) {
    const int b = row[s];
    if (b < 0 || row[0] < 0) continue;
    int agree = 0;
    for (int l = 0; l < l2_lines; ++l) agree += fast(b, l) == fast(row[0], l);
    side[s] = agree * 2 > l2_lines ? 0 : 1;
    std::vector<unsigned short> v(h.begin() + static_cast<long>(b) * l2_lines,
                                  h.begin() + static_cast<long>(b + 1) * l2_lines);
    std::sort(v.begin(), v.end());
    std::printf("  SM %3d %4u %4u %4u  side %d (agrees with SM 0 on %.2f of the lines)\n", s,
                v[l2_lines / 10], v[l2_lines / 2], v[l2_lines * 9 / 10], side[s],
                double(agree) / l2_lines);
  }
  return side;
}

struct sm_set {
  std::string name;
  CUstream stream{};
  std::set<int> sms;
};

std::set<int> sms_of(CUstream s) {
  unsigned* mask = nullptr;
  CHECK(cudaMalloc(&mask, 8 * sizeof(unsigned)));
  CHECK(cudaMemset(mask, 0, 8 * sizeof(unsigned)));
  record_sms<<<1024, 32, 0, reinterpret_cast<cudaStream_t>(s)>>>(mask);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(s)));
  unsigned m[8];
  CHECK(cudaMemcpy(m, mask, sizeof m, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(mask));
  std::set<int> out;
  for (int i = 0; i < 256; ++i) {
    if ((m[i / 32] >> (i % 32) & 1U) != 0U) out.insert(i);
  }
  return out;
}

std::vector<CUdevResource> split(const CUdevResource& all, unsigned flags, unsigned count) {
  unsigned n = all.sm.smCount;
  std::vector<CUdevResource> pieces(n);
  CUdevResource rest{};
  CU_CHECK(DRIVER(cuDevSmResourceSplitByCount)(pieces.data(), &n, &all, &rest, flags, count));
  pieces.resize(n);
  return pieces;
}

sm_set green_set(std::string name, CUdevice dev, const std::vector<CUdevResource>& pieces) {
  CUdevResourceDesc desc{};
  CU_CHECK(DRIVER(cuDevResourceGenerateDesc)(&desc, const_cast<CUdevResource*>(pieces.data()),
                                             static_cast<unsigned>(pieces.size())));
  CUgreenCtx ctx{};
  CU_CHECK(DRIVER(cuGreenCtxCreate)(&ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  sm_set set{std::move(name)};
  CU_CHECK(DRIVER(cuGreenCtxStreamCreate)(&set.stream, ctx, CU_STREAM_NON_BLOCKING, 0));
  set.sms = sms_of(set.stream);
  return set;  // the contexts live until the process ends
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  probe_check::require_gpu("resident_sm_set_probe");
  CHECK(cudaFree(nullptr));
  CU_CHECK(DRIVER(cuInit)(0));
  CUdevice dev{};
  CU_CHECK(DRIVER(cuDeviceGet)(&dev, 0));
  int sm_count = 0;
  CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
  const std::vector<int> side = l2_sides(sm_count);

  CUdevResource all{};
  CU_CHECK(DRIVER(cuDeviceGetDevResource)(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  const auto groups = split(all, 0, all.sm.smCoscheduledAlignment);
  const auto pairs = split(all, CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING, 2);
  std::vector<sm_set> sets;
  {
    sm_set whole{"device"};
    cudaStream_t s{};
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    whole.stream = reinterpret_cast<CUstream>(s);
    whole.sms = sms_of(whole.stream);
    sets.push_back(whole);
  }
  if (groups.size() >= 4) {
    sets.push_back(green_set("groups 0-3", dev, {groups.begin(), groups.begin() + 4}));
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    sets.push_back(green_set("group " + std::to_string(g), dev, {groups[g]}));
  }
  for (std::size_t n : {std::size_t{4}, std::size_t{8}, std::size_t{16}}) {
    if (pairs.size() >= n) {
      sets.push_back(green_set("pairs 0-" + std::to_string(n - 1), dev,
                               {pairs.begin(), pairs.begin() + static_cast<long>(n)}));
    }
  }

  // The RT model's gemms (zeros: the timing does not depend on the values).
  load_be_kernels();
  constexpr std::int32_t batch = 32;
  const std::vector<std::int32_t> widths{256, 512, 512, 256};
  std::vector<gemm_args> gemms;
  const float* in = nullptr;
  {
    float* x = nullptr;
    CHECK(cudaMalloc(&x, sizeof(float) * batch * widths[0]));
    CHECK(cudaMemset(x, 0, sizeof(float) * batch * widths[0]));
    in = x;
  }
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    float* w = nullptr;
    float* out = nullptr;
    CHECK(cudaMalloc(&w, sizeof(float) * widths[l] * widths[l + 1]));
    CHECK(cudaMemset(w, 0, sizeof(float) * widths[l] * widths[l + 1]));
    CHECK(cudaMalloc(&out, sizeof(float) * batch * widths[l + 1]));
    gemms.push_back({in, w, out, batch, widths[l + 1], widths[l]});
    in = out;
  }
  std::uint32_t* done = nullptr;
  CHECK(cudaMalloc(&done, 64 * sizeof(std::uint32_t)));
  auto body = [&](cudaStream_t s) {
    for (const auto& g : gemms) {
      be_launch_view v;
      v.done = done;
      v.blocks = gemm_blocks(g);
      launch_gemm(s, v, g);
    }
  };
  constexpr int reps = 200;
  cudaEvent_t e0{};
  cudaEvent_t e1{};
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<std::vector<float>> us(sets.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < sets.size(); ++i) {
      const auto s = reinterpret_cast<cudaStream_t>(sets[i].stream);
      body(s);  // warm
      CHECK(cudaEventRecord(e0, s));
      for (int k = 0; k < reps; ++k) body(s);
      CHECK(cudaEventRecord(e1, s));
      CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      us[i].push_back(ms * 1000.0F / reps);
    }
  }
  std::printf(
      "\nRT gemms x3, us per body (median, min, max of %d rounds of %d): SMs (side 0 / 1)\n",
      rounds, reps);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    auto& v = us[i];
    std::sort(v.begin(), v.end());
    int s0 = 0;
    for (int sm : sets[i].sms) s0 += sm < static_cast<int>(side.size()) && side[sm] == 0;
    std::printf("  %-12s %7.2f %7.2f %7.2f  %3zu SMs (%d / %zu):", sets[i].name.c_str(),
                v[v.size() / 2], v.front(), v.back(), sets[i].sms.size(), s0,
                sets[i].sms.size() - s0);
    if (sets[i].sms.size() <= 32) {
      for (int sm : sets[i].sms) std::printf(" %d", sm);
    }
    std::printf("\n");
  }
  return 0;
}
