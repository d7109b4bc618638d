// GPU tests of reset-based preemption with exact resume, dynamic kernel padding, and resident
// loops raising the preempt word themselves (issue 6). Each checks outputs against a CPU
// reference or an exact count.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "resident/cuda/block_sync.cuh"
#include "resident/sched/be_kernels.cuh"
#include "resident/sched/be_models.hpp"
#include "resident/sched/preemptible.cuh"
#include "resident/sched/stamp_ring.hpp"
#include "support.hpp"

namespace resident::testing {
namespace {

// A non-idempotent test kernel with slow blocks: each block spins `spin_ns` (checking the
// preempt word every microsecond), then adds its (index + 1) to *sum and commits. A block that
// ran twice, or never, changes the sum.
__global__ void slow_sum_kernel(sched::be_launch_view v, unsigned long long* sum,
                                std::uint64_t spin_ns) {
  sched::be_block blk(v, sched::be_block::grid_index(v));
  if (!blk.begin()) return;
  std::uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    std::uint64_t now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= spin_ns) break;
    if (blk.preempted()) return;
    __nanosleep(500);
  }
  if (threadIdx.x == 0) atomicAdd(sum, static_cast<unsigned long long>(blk.index()) + 1ULL);
  blk.commit();
}

struct slow_sum {
  device_buffer sum{sizeof(unsigned long long)};
  std::int32_t blocks;
  std::uint64_t spin_ns;

  slow_sum(std::int32_t b, std::uint64_t ns) : blocks(b), spin_ns(ns) {
    RESIDENT_CUDA_TRY(cudaMemset(sum.data(), 0, sum.size()));
  }
  [[nodiscard]] sched::be_call call(std::string name) {
    sched::be_call c;
    c.name = std::move(name);
    c.blocks = blocks;
    c.idempotent = false;
    c.launch = [this](cudaStream_t s, const sched::be_launch_view& v) {
      const std::int32_t grid = sched::grid_blocks(v);
      if (grid == 0) return;
      slow_sum_kernel<<<grid, sched::be_block_threads, 0, s>>>(v, sum.data_as<unsigned long long>(),
                                                               spin_ns);
      RESIDENT_CUDA_CHECK_LAUNCH("slow_sum_kernel");
    };
    return c;
  }
  [[nodiscard]] unsigned long long read() const {
    unsigned long long v = 0;
    RESIDENT_CUDA_TRY(cudaMemcpy(&v, sum.data(), sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }
  [[nodiscard]] unsigned long long expected(std::uint64_t passes) const {
    const auto n = static_cast<unsigned long long>(blocks);
    return passes * n * (n + 1) / 2;
  }
};

// Raises the word a few polls after each submission burst and clears it a little later, so
// launches are cut mid-grid over and over.
std::function<void(std::uint64_t)> raise_and_clear(sched::preempt_signal& signal, int period,
                                                   int raise_at, int clear_at) {
  return [&signal, period, raise_at, clear_at](std::uint64_t poll) {
    const auto phase = static_cast<int>(poll % static_cast<std::uint64_t>(period));
    if (phase == raise_at && !signal.raised()) signal.raise();
    if (phase == clear_at && signal.raised()) signal.clear();
  };
}

TEST(SchedPreemption, NonIdempotentKernelResumesExactly) {
  RESIDENT_REQUIRE_GPU();
  sched::preempt_signal signal;
  stream s(0);
  slow_sum a(2000, 20'000);
  slow_sum b(1500, 20'000);
  slow_sum c(1000, 20'000);
  sched::be_runner runner({a.call("a"), b.call("b"), c.call("c")}, s.get(), &signal, {});
  const auto t0 = std::chrono::steady_clock::now();
  const auto stats = runner.run_sequences(3, raise_and_clear(signal, 400, 3, 150));
  std::printf(
      "slow sums: %llu submissions, %llu preemptions, %llu early exits in %.1f ms\n",
      static_cast<unsigned long long>(stats.submissions),
      static_cast<unsigned long long>(stats.preemptions),
      static_cast<unsigned long long>(stats.early_exits),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  s.synchronize();
  EXPECT_EQ(stats.sequences, 3U);
  EXPECT_EQ(a.read(), a.expected(3));
  EXPECT_EQ(b.read(), b.expected(3));
  EXPECT_EQ(c.read(), c.expected(3));
  // The word was raised while launches ran: some were cut short and resumed, and still every
  // block committed exactly once.
  EXPECT_GT(stats.preemptions, 0U);
  EXPECT_GT(stats.preempted_launches, 0U);
  EXPECT_EQ(stats.resumed_launches, stats.preempted_launches);
  EXPECT_GT(stats.early_exits, 0U);
  EXPECT_EQ(stats.repeated_commits, 0U);
  EXPECT_EQ(stats.blocks_rerun, 0U);
  EXPECT_EQ(stats.blocks_completed, 3U * (2000 + 1500 + 1000));
}

TEST(SchedPreemption, RaiseAndClearBetweenPollsStaysExact) {
  // The word goes up and down before the runner may even look: launches cut short must still
  // be found (from their records), set aside and resumed, with no block lost or repeated.
  RESIDENT_REQUIRE_GPU();
  sched::preempt_signal signal;
  stream s(0);
  slow_sum a(3000, 10'000);
  slow_sum c(500, 10'000);
  sched::be_runner runner({a.call("a"), c.call("c")}, s.get(), &signal, {});
  // Raise and clear back to back: the host may not even see the raise before it is cleared.
  const auto stats = runner.run_sequences(4, [&](std::uint64_t poll) {
    if (poll % 50 == 2) {
      signal.raise();
      signal.clear();
    }
  });
  s.synchronize();
  EXPECT_EQ(a.read(), a.expected(4));
  EXPECT_EQ(c.read(), c.expected(4));
  EXPECT_EQ(stats.repeated_commits, 0U);
  EXPECT_EQ(stats.resumed_launches, stats.preempted_launches);
}

void check_model(sched::be_model& model, bool preempt, const std::uint32_t* rt_sms = nullptr,
                 std::int32_t bounded_grid_per_sm = 0, bool bounded_grid_counter = false) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> x(model.input_elements());
  for (auto& v : x) v = dist(rng);
  model.set_input(x);
  const auto want = model.reference(x);
  sched::preempt_signal signal;
  stream s(0);
  sched::be_runner_options o;
  o.preemptible = preempt;
  o.rt_sms = rt_sms;
  o.bounded_grid_per_sm = bounded_grid_per_sm;
  o.bounded_grid_counter = bounded_grid_counter;
  sched::be_runner runner(model.calls(), s.get(), preempt ? &signal : nullptr, o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto stats = runner.run_sequences(
      3, preempt ? raise_and_clear(signal, 3000, 1, 20) : std::function<void(std::uint64_t)>{});
  s.synchronize();
  std::printf(
      "%s: %.1f ms, %llu submissions, %llu preemptions, %llu preempted launches, %llu "
      "early exits, %llu checkpoints, %llu blocks re-run\n",
      model.name().c_str(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
      static_cast<unsigned long long>(stats.submissions),
      static_cast<unsigned long long>(stats.preemptions),
      static_cast<unsigned long long>(stats.preempted_launches),
      static_cast<unsigned long long>(stats.early_exits),
      static_cast<unsigned long long>(stats.checkpoints),
      static_cast<unsigned long long>(stats.blocks_rerun));
  const auto got = model.read_output();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-3 * std::max(1.0, std::abs(want[i])))
        << model.name() << " score " << i;
  }
  EXPECT_EQ(stats.sequences, 3U);
  if (preempt && rt_sms == nullptr) {
    EXPECT_GT(stats.preemptions, 0U) << model.name();
  }
  if (preempt) {
    EXPECT_EQ(stats.repeated_commits, 0U) << model.name();
  }
}

TEST(SchedPreemption, MlpPreemptedAndResumedMatchesReference) {
  RESIDENT_REQUIRE_GPU();
  sched::mlp_model plain(128, {256, 1024, 512, 128}, 3);
  check_model(plain, false);
  sched::mlp_model preempted(128, {256, 1024, 512, 128}, 3);
  check_model(preempted, true);
  // Bias and relu in the gemm's epilogue: cut gemm blocks resume from their checkpoints and
  // still add the bias once.
  sched::mlp_model fused(128, {256, 1024, 512, 128}, 3, sched::mlp_bias::fused);
  check_model(fused, true);
}

// One block per SM: the bias, pooling and row-sum launches loop over many logical blocks each,
// and every launch of a slot reuses the counter pair its last launch left zero.
TEST(SchedPreemption, ModelsPreemptedAndResumedOnABoundedGridMatchTheirReferences) {
  RESIDENT_REQUIRE_GPU();
  for (const bool counter : {false, true}) {
    SCOPED_TRACE(counter ? "counter" : "stride");
    sched::mlp_model mlp(512, {256, 1024, 512, 128}, 3);
    check_model(mlp, true, nullptr, 1, counter);
    sched::mlp_model fused(512, {256, 1024, 512, 128}, 3, sched::mlp_bias::fused);
    check_model(fused, true, nullptr, 1, counter);
    sched::cnn_model cnn(32, 5);
    check_model(cnn, true, nullptr, 1, counter);
  }
}

TEST(SchedPreemption, ABoundedGridMustNotBeNegative) {
  RESIDENT_REQUIRE_GPU();
  sched::mlp_model mlp(16, {64, 64}, 3);
  sched::preempt_signal signal;
  stream s(0);
  sched::be_runner_options o;
  o.bounded_grid_per_sm = -1;
  EXPECT_THROW(sched::be_runner(mlp.calls(), s.get(), &signal, o), std::invalid_argument);
}

TEST(SchedPreemption, CnnPreemptedAndResumedMatchesReference) {
  RESIDENT_REQUIRE_GPU();
  sched::cnn_model preempted(32, 5);
  check_model(preempted, true);
}

// Two long GEMMs (256 K-steps per block) on the same inputs, and the bits an uninterrupted
// launch leaves: whatever cuts the two, both outputs must match them exactly.
struct gemm_pair {
  static constexpr std::int32_t m = 2048;
  static constexpr std::int32_t n = 1024;
  static constexpr std::int32_t k = 4096;
  static constexpr std::size_t out_bytes = static_cast<std::size_t>(m) * n * sizeof(float);
  device_buffer da{static_cast<std::size_t>(m) * k * sizeof(float)};
  device_buffer db{static_cast<std::size_t>(k) * n * sizeof(float)};
  device_buffer want{out_bytes};
  device_buffer c1{out_bytes};
  device_buffer c2{out_bytes};

  explicit gemm_pair(stream& s) {
    const auto a = random_floats(static_cast<std::size_t>(m) * k);
    const auto b = random_floats(static_cast<std::size_t>(k) * n);
    RESIDENT_CUDA_TRY(cudaMemcpy(da.data(), a.data(), da.size(), cudaMemcpyHostToDevice));
    RESIDENT_CUDA_TRY(cudaMemcpy(db.data(), b.data(), db.size(), cudaMemcpyHostToDevice));
    // The uninterrupted result, launched without a runner.
    device_buffer done(static_cast<std::size_t>(sched::gemm_blocks(args(want))) * 4);
    RESIDENT_CUDA_TRY(cudaMemset(done.data(), 0, done.size()));
    sched::be_launch_view v;
    v.done = done.data_as<std::uint32_t>();
    v.blocks = sched::gemm_blocks(args(want));
    sched::launch_gemm(s.get(), v, args(want));
    s.synchronize();
  }
  [[nodiscard]] sched::gemm_args args(device_buffer& c) {
    return sched::gemm_args{da.data_as<float>(), db.data_as<float>(), c.data_as<float>(), m, n, k};
  }
  [[nodiscard]] std::vector<sched::be_call> calls() {
    return {sched::make_call("g1", args(c1)), sched::make_call("g2", args(c2))};
  }
  void expect_uninterrupted_bits() const {
    std::vector<float> expected(static_cast<std::size_t>(m) * n);
    std::vector<float> got1(expected.size());
    std::vector<float> got2(expected.size());
    RESIDENT_CUDA_TRY(cudaMemcpy(expected.data(), want.data(), out_bytes, cudaMemcpyDeviceToHost));
    RESIDENT_CUDA_TRY(cudaMemcpy(got1.data(), c1.data(), out_bytes, cudaMemcpyDeviceToHost));
    RESIDENT_CUDA_TRY(cudaMemcpy(got2.data(), c2.data(), out_bytes, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(got1 == expected);
    EXPECT_TRUE(got2 == expected);
  }
};

// Twenty raises, then none: without checkpoints a block needs one uninterrupted stretch of the
// whole reduction, which a word that keeps rising might never give it.
std::function<void(std::uint64_t)> twenty_raises(sched::preempt_signal& signal) {
  return [&signal, cut = raise_and_clear(signal, 300, 5, 40)](std::uint64_t poll) {
    if (poll < 300 * 20 || signal.raised()) cut(poll);
  };
}

// The two gemms cut over and over by a word that rises and falls: with checkpoints, the blocks
// cut mid-reduction keep their partial sums and the resumed attempts go on from them; without,
// they start over.
void check_gemm_resume(bool checkpoint) {
  stream s(0);
  gemm_pair g(s);
  sched::preempt_signal signal;
  sched::be_runner_options o;
  o.checkpoint = checkpoint;
  sched::be_runner runner(g.calls(), s.get(), &signal, o);
  const auto stats = runner.run_sequences(2, twenty_raises(signal));
  s.synchronize();
  std::printf(
      "gemm resume (checkpoint %s): %llu preempted launches, %llu early exits, %llu "
      "checkpoints\n",
      checkpoint ? "on" : "off", static_cast<unsigned long long>(stats.preempted_launches),
      static_cast<unsigned long long>(stats.early_exits),
      static_cast<unsigned long long>(stats.checkpoints));
  g.expect_uninterrupted_bits();
  EXPECT_EQ(stats.sequences, 2U);
  EXPECT_GT(stats.preempted_launches, 0U);
  EXPECT_EQ(stats.repeated_commits, 0U);
  if (checkpoint) {
    EXPECT_GT(stats.checkpoints, 0U);
    EXPECT_LE(stats.checkpoints, stats.early_exits);
  } else {
    EXPECT_EQ(stats.checkpoints, 0U);
  }
}

// The two gemms under spatial preemption, two launches in flight. `rt_mask` marks the
// "real-time" SMs: blocks there stop while the word is raised and hand their logical block
// (with its checkpoint) back to the launch.
sched::be_runner_stats check_gemm_spatial(std::uint32_t rt_mask) {
  stream s(0);
  gemm_pair g(s);
  std::array<std::uint32_t, 8> mask{};
  mask.fill(rt_mask);
  device_buffer rt_sms(sizeof(mask));
  RESIDENT_CUDA_TRY(cudaMemcpy(rt_sms.data(), mask.data(), sizeof(mask), cudaMemcpyHostToDevice));
  sched::preempt_signal signal;
  sched::be_runner_options o;
  o.rt_sms = rt_sms.data_as<std::uint32_t>();
  o.window = 2;
  o.bounded_grid_per_sm = 1;  // fewer grid blocks than logical blocks: the counter loops
  sched::be_runner runner(g.calls(), s.get(), &signal, o);
  EXPECT_EQ(runner.queue().window(), 2U);
  const auto stats = runner.run_sequences(2, twenty_raises(signal));
  s.synchronize();
  std::printf(
      "spatial gemm (RT SMs 0x%08x): %llu hand-backs, %llu preempted launches, %llu early exits, "
      "%llu checkpoints\n",
      rt_mask, static_cast<unsigned long long>(stats.handbacks),
      static_cast<unsigned long long>(stats.preempted_launches),
      static_cast<unsigned long long>(stats.early_exits),
      static_cast<unsigned long long>(stats.checkpoints));
  g.expect_uninterrupted_bits();
  EXPECT_EQ(stats.sequences, 2U);
  EXPECT_EQ(stats.repeated_commits, 0U);
  EXPECT_EQ(stats.resumed_launches, stats.preempted_launches);
  return stats;
}

TEST(SchedSpatial, CutBlocksAreHandedBackWithinTheLaunch) {
  RESIDENT_REQUIRE_GPU();
  // Every other SM is real-time: the blocks on the others take what the cut blocks hand back,
  // so every launch finishes without the host resubmitting anything.
  const auto stats = check_gemm_spatial(0x55555555U);
  EXPECT_GT(stats.handbacks, 0U);
  EXPECT_GT(stats.checkpoints, 0U);
  EXPECT_EQ(stats.preempted_launches, 0U);
}

TEST(SchedSpatial, AHandBackNobodyCanTakeHaltsTheStreamAndIsResubmitted) {
  RESIDENT_REQUIRE_GPU();
  // Every SM is real-time: a raise stops every block, so what they hand back has no taker. The
  // launch's last block halts the stream (the second launch in flight must not run on the
  // first's unfinished output), and the runner resubmits the rest.
  const auto stats = check_gemm_spatial(0xFFFFFFFFU);
  EXPECT_GT(stats.handbacks, 0U);
  EXPECT_GT(stats.preempted_launches, 0U);
}

// Room for real-time work on the RT SMs (be_runner_options::rt_sm_load). Every SM is marked
// real-time and the grids have four blocks per SM. With one BE block allowed per RT SM, the
// launches never run more logical blocks at once than the device has SMs (be_trace's peak);
// without the limit they do. The outputs stay exact, and the counts are back to zero once the
// launches drain, with the word rising and falling or not.
struct rt_room_run {
  std::uint32_t peak_running{0};
  std::uint32_t load_left{0};  // sum of the per-SM counts after the run
  sched::be_runner_stats stats;
};

rt_room_run run_gemms_with_rt_room(bool limit, bool raises) {
  stream s(0);
  gemm_pair g(s);
  std::array<std::uint32_t, 8> mask{};
  mask.fill(0xFFFFFFFFU);
  device_buffer rt_sms(sizeof(mask));
  RESIDENT_CUDA_TRY(cudaMemcpy(rt_sms.data(), mask.data(), sizeof(mask), cudaMemcpyHostToDevice));
  device_buffer load(sched::rt_sm_load_words * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(load.data(), 0, load.size()));
  device_buffer trace(sizeof(sched::be_trace));
  RESIDENT_CUDA_TRY(cudaMemset(trace.data(), 0, trace.size()));
  sched::preempt_signal signal;
  sched::be_runner_options o;
  o.rt_sms = rt_sms.data_as<std::uint32_t>();
  o.window = 2;
  o.bounded_grid_per_sm = 4;
  o.trace = trace.data_as<sched::be_trace>();
  sched::stamp_ring activity(1U << 16U);
  o.activity = activity.view();
  if (limit) {
    o.rt_sm_load = load.data_as<std::uint32_t>();
    o.rt_sm_blocks = 1;
  }
  sched::be_runner runner(g.calls(), s.get(), &signal, o);
  rt_room_run r;
  r.stats = runner.run_sequences(
      2, raises ? twenty_raises(signal) : std::function<void(std::uint64_t)>{});
  s.synchronize();
  g.expect_uninterrupted_bits();
  EXPECT_EQ(r.stats.sequences, 2U);
  EXPECT_EQ(r.stats.repeated_commits, 0U);
  sched::be_trace t{};
  RESIDENT_CUDA_TRY(cudaMemcpy(&t, trace.data(), sizeof(t), cudaMemcpyDeviceToHost));
  r.peak_running = t.peak_running;
  EXPECT_EQ(t.running, 0U);
  std::vector<std::uint32_t> left(sched::rt_sm_load_words);
  RESIDENT_CUDA_TRY(cudaMemcpy(left.data(), load.data(), load.size(), cudaMemcpyDeviceToHost));
  for (const std::uint32_t w : left) r.load_left += w;
  // Every time BE blocks came onto the GPU (bit 0 set) they also all left again (clear): the
  // running count ended at 0.
  EXPECT_EQ(activity.lost(), 0U);
  std::size_t came = 0;
  std::size_t left_gpu = 0;
  for (const std::uint64_t stamp : activity.read()) ((stamp & 1U) != 0U ? came : left_gpu) += 1;
  EXPECT_GT(came, 0U);
  EXPECT_EQ(came, left_gpu);
  return r;
}

TEST(SchedSpatial, RtSmLimitKeepsRoomForRealTimeWorkAndStaysExact) {
  RESIDENT_REQUIRE_GPU();
  const auto sms = static_cast<std::uint32_t>(query_device(0).sm_count);
  const rt_room_run open = run_gemms_with_rt_room(false, false);
  const rt_room_run limited = run_gemms_with_rt_room(true, false);
  const rt_room_run cut = run_gemms_with_rt_room(true, true);
  std::printf("peak logical blocks running: %u without the limit, %u with it (%u SMs)\n",
              open.peak_running, limited.peak_running, sms);
  EXPECT_GT(open.peak_running, sms);  // 512 grid blocks fit four to an SM
  EXPECT_GT(limited.peak_running, 0U);
  EXPECT_LE(limited.peak_running, sms);
  EXPECT_LE(cut.peak_running, sms);
  EXPECT_EQ(limited.load_left, 0U);
  EXPECT_EQ(cut.load_left, 0U);
  EXPECT_GT(cut.stats.early_exits, 0U);  // the raises did cut blocks
}

TEST(SchedPreemption, GemmResumesFromCheckpointsToTheSameBits) {
  RESIDENT_REQUIRE_GPU();
  check_gemm_resume(true);
}

TEST(SchedPreemption, GemmWithoutCheckpointsStartsBlocksOverToTheSameBits) {
  RESIDENT_REQUIRE_GPU();
  check_gemm_resume(false);
}

TEST(SchedPreemption, RunnerRefusesBadConfigurations) {
  RESIDENT_REQUIRE_GPU();
  stream s(0);
  slow_sum a(4, 0);
  EXPECT_THROW(sched::be_runner({}, s.get(), nullptr, {}), std::invalid_argument);
  // Preemptible without a signal.
  EXPECT_THROW(sched::be_runner({a.call("a"), a.call("b")}, s.get(), nullptr, {}),
               std::invalid_argument);
  // Fewer calls than the window.
  sched::preempt_signal signal;
  EXPECT_THROW(sched::be_runner({a.call("a")}, s.get(), &signal, {}), std::invalid_argument);
  // Room on the RT SMs without RT SMs, or with no room for BE blocks at all.
  device_buffer words(sched::rt_sm_load_words * sizeof(std::uint32_t));
  sched::be_runner_options no_sms;
  no_sms.rt_sm_load = words.data_as<std::uint32_t>();
  try {
    sched::be_runner r({a.call("a"), a.call("b")}, s.get(), &signal, no_sms);
    ADD_FAILURE() << "rt_sm_load without rt_sms was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rt_sm_load needs rt_sms"), std::string::npos) << e.what();
  }
  sched::be_runner_options none = no_sms;
  none.rt_sms = words.data_as<std::uint32_t>();
  none.rt_sm_blocks = 0;
  try {
    sched::be_runner r({a.call("a"), a.call("b")}, s.get(), &signal, none);
    ADD_FAILURE() << "rt_sm_blocks 0 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rt_sm_blocks is 0"), std::string::npos) << e.what();
  }
  // Spatial preemption keeps submitting while the word is up: it cannot also be sequential.
  sched::be_runner_options spatial_sequential;
  spatial_sequential.rt_sms = words.data_as<std::uint32_t>();
  spatial_sequential.sequential = true;
  try {
    sched::be_runner r({a.call("a"), a.call("b")}, s.get(), &signal, spatial_sequential);
    ADD_FAILURE() << "rt_sms with sequential was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs preemptible and not sequential"), std::string::npos)
        << e.what();
  }
}

TEST(SchedPreemption, SpatialSharePointsEveryRunnerAtOneBitmapAndOneLoadArray) {
  RESIDENT_REQUIRE_GPU();
  const std::array<std::uint32_t, 8> mask{0xF0U, 0x1U};  // SMs 4-7 and 32
  const sched::spatial_share capped(mask, 3);
  EXPECT_EQ(capped.sm_count(), 5);
  sched::be_runner_options a;
  sched::be_runner_options b;
  capped.apply(a);
  capped.apply(b);
  ASSERT_NE(a.rt_sms, nullptr);
  EXPECT_EQ(a.rt_sms, b.rt_sms);
  ASSERT_NE(a.rt_sm_load, nullptr);
  EXPECT_EQ(a.rt_sm_load, b.rt_sm_load);
  EXPECT_EQ(a.rt_sm_blocks, 3U);
  std::array<std::uint32_t, 8> on_device{};
  RESIDENT_CUDA_TRY(
      cudaMemcpy(on_device.data(), a.rt_sms, sizeof(on_device), cudaMemcpyDeviceToHost));
  EXPECT_EQ(on_device, mask);
  std::vector<std::uint32_t> load(sched::rt_sm_load_words, 1U);
  RESIDENT_CUDA_TRY(cudaMemcpy(load.data(), a.rt_sm_load, load.size() * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::count(load.begin(), load.end(), 0U), static_cast<long>(load.size()));
  // No cap: the bitmap only.
  const sched::spatial_share uncapped(mask, 0);
  sched::be_runner_options c;
  uncapped.apply(c);
  EXPECT_NE(c.rt_sms, nullptr);
  EXPECT_EQ(c.rt_sm_load, nullptr);
}

// ---- dynamic kernel padding --------------------------------------------------------------------

std::vector<float> seeded(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct gemm_case {
  std::int32_t m, n, k;
  std::vector<float> a, b;
  device_buffer da, db, dc;
  gemm_case(std::int32_t m_, std::int32_t n_, std::int32_t k_, std::uint64_t seed)
      : m(m_),
        n(n_),
        k(k_),
        a(seeded(static_cast<std::size_t>(m_) * k_, seed)),
        b(seeded(static_cast<std::size_t>(k_) * n_, seed + 1)),
        da(a.size() * sizeof(float)),
        db(b.size() * sizeof(float)),
        dc(static_cast<std::size_t>(m_) * n_ * sizeof(float)) {
    RESIDENT_CUDA_TRY(cudaMemcpy(da.data(), a.data(), da.size(), cudaMemcpyHostToDevice));
    RESIDENT_CUDA_TRY(cudaMemcpy(db.data(), b.data(), db.size(), cudaMemcpyHostToDevice));
    RESIDENT_CUDA_TRY(cudaMemset(dc.data(), 0xFF, dc.size()));  // NaN until written
  }
  [[nodiscard]] sched::gemm_args args() const {
    return {da.data_as<float>(), db.data_as<float>(), dc.data_as<float>(), m, n, k};
  }
  [[nodiscard]] std::vector<float> result() const {
    std::vector<float> c(static_cast<std::size_t>(m) * n);
    RESIDENT_CUDA_TRY(cudaMemcpy(c.data(), dc.data(), dc.size(), cudaMemcpyDeviceToHost));
    return c;
  }
  /// Whether output tile `t` (gemm_blocks layout) matches the fp64 reference.
  [[nodiscard]] bool tile_ok(const std::vector<float>& c, const std::vector<double>& want,
                             std::int32_t t) const {
    const std::int32_t tiles_n = (n + sched::be_tile - 1) / sched::be_tile;
    const std::int32_t r0 = t / tiles_n * sched::be_tile;
    const std::int32_t c0 = t % tiles_n * sched::be_tile;
    for (std::int32_t r = r0; r < std::min(m, r0 + sched::be_tile); ++r) {
      for (std::int32_t j = c0; j < std::min(n, c0 + sched::be_tile); ++j) {
        const std::size_t i = static_cast<std::size_t>(r) * n + j;
        if (!(std::abs(c[i] - want[i]) <= 1e-4 * std::max(1.0, std::abs(want[i])))) {
          return false;
        }
      }
    }
    return true;
  }
  [[nodiscard]] std::vector<double> reference() const {
    return sched::gemm_reference(sched::to_double(a), sched::to_double(b), m, n, k);
  }
};

TEST(SchedPadding, PaddedLaunchLeavesBothOutputsCorrect) {
  RESIDENT_REQUIRE_GPU();
  gemm_case rt(64, 512, 256, 1);   // 8 blocks: leaves most SMs idle
  gemm_case be(256, 256, 128, 9);  // 16 blocks
  const auto rt_want = rt.reference();
  const auto be_want = be.reference();
  const std::int32_t be_blocks = sched::gemm_blocks(be.args());
  ASSERT_EQ(be_blocks, 16);
  sched::pad_job job(be_blocks, sched::gemm_blocks(rt.args()));
  stream s(0);

  // Budget 10 over 128 pad slots (those on an RT block's SM leave): BE blocks 0..9 run once,
  // 10..15 not at all.
  cudaEvent_t ev[2];
  for (auto& e : ev) RESIDENT_CUDA_TRY(cudaEventCreate(&e));
  RESIDENT_CUDA_TRY(cudaEventRecord(ev[0], s.get()));
  sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {128, 10, 0});
  RESIDENT_CUDA_TRY(cudaEventRecord(ev[1], s.get()));
  s.synchronize();
  float launch_ms = 0;
  RESIDENT_CUDA_TRY(cudaEventElapsedTime(&launch_ms, ev[0], ev[1]));
  for (auto& e : ev) RESIDENT_CUDA_TRY(cudaEventDestroy(e));
  // Placement: one launch counted; padded RT blocks each had an SM of their own; the RT blocks'
  // start spread lies inside the launch.
  const sched::pad_placement placed = job.placement();
  EXPECT_EQ(placed.launches, 1U);
  EXPECT_EQ(placed.crowded_launches, 0U);
  EXPECT_LE(static_cast<double>(placed.spread_ns), launch_ms * 1e6);
  auto rt_c = rt.result();
  for (std::int32_t t = 0; t < sched::gemm_blocks(rt.args()); ++t) {
    EXPECT_TRUE(rt.tile_ok(rt_c, rt_want, t)) << "RT tile " << t;
  }
  auto be_c = be.result();
  auto runs = job.runs();
  EXPECT_EQ(job.taken(), 10U);
  for (std::int32_t t = 0; t < be_blocks; ++t) {
    EXPECT_EQ(runs[static_cast<std::size_t>(t)], t < 10 ? 1U : 0U) << "BE block " << t;
    if (t < 10) EXPECT_TRUE(be.tile_ok(be_c, be_want, t)) << "BE tile " << t;
  }

  // A second launch continues round the job (10..15, then 0..3): the launch counters were
  // reset by the first launch's last block, so the RT kernel runs whole again.
  RESIDENT_CUDA_TRY(cudaMemset(rt.dc.data(), 0xFF, rt.dc.size()));
  sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {128, 10, 1});
  s.synchronize();
  rt_c = rt.result();
  for (std::int32_t t = 0; t < sched::gemm_blocks(rt.args()); ++t) {
    EXPECT_TRUE(rt.tile_ok(rt_c, rt_want, t)) << "RT tile " << t << " (second launch)";
  }
  be_c = be.result();
  runs = job.runs();
  EXPECT_EQ(job.taken(), 20U);
  for (std::int32_t t = 0; t < be_blocks; ++t) {
    EXPECT_EQ(runs[static_cast<std::size_t>(t)], t < 4 ? 2U : 1U) << "BE block " << t;
    EXPECT_TRUE(be.tile_ok(be_c, be_want, t)) << "BE tile " << t;
  }

  // On an idle GPU the RT blocks found SMs of their own at once: no pad block had to wait for
  // them and take their work.
  EXPECT_EQ(job.rt_late_takes(), 0U);

  // No padding: the RT kernel alone, through the same merged kernel; the job is untouched.
  // Every block takes RT work at once (none waits), several times over.
  for (int i = 0; i < 20; ++i) {
    RESIDENT_CUDA_TRY(cudaMemset(rt.dc.data(), 0xFF, rt.dc.size()));
    sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {0, 0, 0});
    s.synchronize();
    rt_c = rt.result();
    for (std::int32_t t = 0; t < sched::gemm_blocks(rt.args()); ++t) {
      EXPECT_TRUE(rt.tile_ok(rt_c, rt_want, t))
          << "RT tile " << t << " (alone, launch " << i << ")";
    }
  }
  EXPECT_EQ(job.taken(), 20U);
  EXPECT_EQ(job.rt_late_takes(), 0U);
  // Every merged launch, padded or not, was counted once by its last block.
  EXPECT_EQ(job.placement().launches, 22U);
  EXPECT_LE(job.placement().crowded_launches, 20U);
}

// The merged kernel's RT gemm loads its next K-step while it multiplies the last
// (gemm_loads::prefetched): ragged shapes (no dimension a multiple of the tile or the K-step),
// a K of one step and the bench's 32 x 512 x 512 layer still match the reference, alone and
// padded.
TEST(SchedPadding, RaggedRtGemmsMatchTheReference) {
  RESIDENT_REQUIRE_GPU();
  gemm_case be(256, 256, 128, 21);
  sched::pad_job job(sched::gemm_blocks(be.args()), 64);
  stream s(0);
  struct shape {
    std::int32_t m, n, k;
  };
  for (const shape sh : {shape{37, 200, 70}, shape{70, 65, 16}, shape{1, 130, 9}, shape{64, 64, 17},
                         shape{32, 512, 512}}) {
    for (const std::int32_t slots : {0, 64}) {
      SCOPED_TRACE(::testing::Message()
                   << sh.m << "x" << sh.n << "x" << sh.k << ", slots " << slots);
      gemm_case rt(sh.m, sh.n, sh.k, 31);
      const auto want = rt.reference();
      sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job,
                                {slots, slots > 0 ? 4U : 0U, 0});
      s.synchronize();
      const auto c = rt.result();
      for (std::int32_t t = 0; t < sched::gemm_blocks(rt.args()); ++t) {
        EXPECT_TRUE(rt.tile_ok(c, want, t)) << "RT tile " << t;
      }
    }
  }
}

// An RT model as bench reef --rt-pdl captures it: a padded gemm, then bias+relu, a second
// padded gemm, a fill and a row sum, each after the first launched as a programmatic dependent
// of the kernel before it. The captured graph has those programmatic edges, and twenty replays
// give the fp64 reference and the same bits as the chain with full edges; a programmatic
// launch of a view with a work counter is refused.
TEST(SchedPadding, ProgrammaticChainMatchesTheReference) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::int32_t m = 32, k1 = 128, n1 = 256, n2 = 192;
  gemm_case g1(m, n1, k1, 41);  // a: input, b: weights 1, dc: layer 1 (bias + relu in place)
  gemm_case g2(m, n2, n1, 43);  // b: weights 2, dc: layer 2 (its a is unused: it reads g1.dc)
  gemm_case be(128, 128, 64, 45);
  const std::vector<float> bias = seeded(n1, 47);
  device_buffer dbias(bias.size() * sizeof(float));
  RESIDENT_CUDA_TRY(cudaMemcpy(dbias.data(), bias.data(), dbias.size(), cudaMemcpyHostToDevice));
  device_buffer dsum(m * sizeof(float));
  device_buffer scratch(4096 * sizeof(std::uint32_t));
  const auto view = [&](std::int32_t blocks) {
    sched::be_launch_view v;
    v.done = scratch.data_as<std::uint32_t>();
    v.blocks = blocks;
    return v;
  };
  sched::gemm_args l2 = g2.args();
  l2.a = g1.dc.data_as<float>();
  const sched::bias_act_args ba{
      g1.dc.data_as<float>(), dbias.data_as<float>(), std::int64_t{m} * n1, 1, n1,
      sched::activation::relu};
  const sched::fill_args fill{dsum.data_as<float>(), m, 0.0F};
  const sched::row_sum_args sum{g2.dc.data_as<float>(), dsum.data_as<float>(), m, n2};
  sched::pad_job job(sched::gemm_blocks(be.args()), 16);
  const auto slots = [&](const sched::gemm_args& a) {
    return sched::placement_only(sched::gemm_blocks(a), 20'000);
  };
  stream s(0);
  const auto record = [&](sched::launch_dependency after) {
    return capture_graph(s, [&](stream_view cs) {
      sched::launch_padded_gemm(cs.get(), g1.args(), be.args(), job, slots(g1.args()));
      sched::launch_bias_act(cs.get(), view(sched::bias_act_blocks(ba)), ba, after);
      sched::launch_padded_gemm(cs.get(), l2, be.args(), job, slots(l2), nullptr, nullptr, after);
      sched::launch_fill(cs.get(), view(sched::fill_blocks(fill)), fill, after);
      sched::launch_row_sum(cs.get(), view(sched::row_sum_blocks(sum)), sum, after);
    });
  };
  const auto programmatic_edges = [](const graph& g) {
    std::size_t n = 0;
    RESIDENT_CUDA_TRY(cudaGraphGetEdges(g.get(), nullptr, nullptr, nullptr, &n));
    std::vector<cudaGraphNode_t> from(n), to(n);
    std::vector<cudaGraphEdgeData> data(n);
    RESIDENT_CUDA_TRY(cudaGraphGetEdges(g.get(), from.data(), to.data(), data.data(), &n));
    return std::count_if(data.begin(), data.end(), [](const cudaGraphEdgeData& e) {
      return e.type == cudaGraphDependencyTypeProgrammatic;
    });
  };
  const auto replay = [&](const graph& g) {
    graph_exec exec(g.get());
    for (int i = 0; i < 20; ++i) exec.launch(s);
    s.synchronize();
    std::vector<float> out(m);
    RESIDENT_CUDA_TRY(cudaMemcpy(out.data(), dsum.data(), dsum.size(), cudaMemcpyDeviceToHost));
    return out;
  };
  const graph chained = record(sched::launch_dependency::programmatic);
  EXPECT_EQ(programmatic_edges(chained), 4);
  const std::vector<float> got = replay(chained);
  const graph plain = record(sched::launch_dependency::full);
  EXPECT_EQ(programmatic_edges(plain), 0);
  const std::vector<float> want_bits = replay(plain);

  // fp64 reference: relu(input x w1 + bias) x w2, summed per row.
  std::vector<double> h(static_cast<std::size_t>(m) * n1);
  for (std::int32_t r = 0; r < m; ++r) {
    for (std::int32_t j = 0; j < n1; ++j) {
      double acc = bias[static_cast<std::size_t>(j)];
      for (std::int32_t q = 0; q < k1; ++q) {
        acc += double{g1.a[static_cast<std::size_t>(r) * k1 + q]} *
               g1.b[static_cast<std::size_t>(q) * n1 + j];
      }
      h[static_cast<std::size_t>(r) * n1 + j] = std::max(acc, 0.0);
    }
  }
  for (std::int32_t r = 0; r < m; ++r) {
    double row = 0;
    for (std::int32_t j = 0; j < n2; ++j) {
      for (std::int32_t q = 0; q < n1; ++q) {
        row += h[static_cast<std::size_t>(r) * n1 + q] * g2.b[static_cast<std::size_t>(q) * n2 + j];
      }
    }
    const auto i = static_cast<std::size_t>(r);
    EXPECT_NEAR(got[i], row, 1e-3 * std::max(1.0, std::abs(row))) << "row " << r;
    EXPECT_EQ(got[i], want_bits[i]) << "row " << r << ": programmatic and full edges differ";
  }

  sched::be_launch_view counted = view(sched::fill_blocks(fill));
  counted.next = scratch.data_as<std::uint32_t>() + 2048;
  try {
    sched::launch_fill(s.get(), counted, fill, sched::launch_dependency::programmatic);
    ADD_FAILURE() << "a programmatic launch of a view with a work counter was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a programmatic launch takes only a plain grid"),
              std::string::npos)
        << e.what();
  }
}

// Without the placement record the merged launch does the same work: both outputs are right,
// the job's placement stays zero, and the per-launch stamps are still written when asked for.
TEST(SchedPadding, WithoutThePlacementRecordOutputsAndStampsStay) {
  RESIDENT_REQUIRE_GPU();
  gemm_case rt(64, 512, 256, 3);
  gemm_case be(256, 256, 128, 5);
  const auto rt_want = rt.reference();
  const auto be_want = be.reference();
  const std::int32_t be_blocks = sched::gemm_blocks(be.args());
  sched::pad_job job(be_blocks, sched::gemm_blocks(rt.args()), false);
  EXPECT_FALSE(job.records_placement());
  EXPECT_EQ(job.view().rt_crowded, nullptr);
  EXPECT_EQ(job.view().rt_spread_ns, nullptr);
  device_buffer stamps_mem(sizeof(sched::pad_launch_stamps));
  RESIDENT_CUDA_TRY(cudaMemset(stamps_mem.data(), 0, stamps_mem.size()));
  auto* stamps = stamps_mem.data_as<sched::pad_launch_stamps>();
  stream s(0);
  sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {128, 10, 0});
  s.synchronize();
  const sched::pad_placement none = job.placement();
  EXPECT_EQ(none.launches, 0U);
  EXPECT_EQ(none.crowded_launches, 0U);
  EXPECT_EQ(none.spread_ns, 0U);
  // Stamped launch: the RT blocks' starts and their end, in order.
  RESIDENT_CUDA_TRY(cudaMemset(rt.dc.data(), 0xFF, rt.dc.size()));
  sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {128, 6, 0}, nullptr, stamps);
  s.synchronize();
  sched::pad_launch_stamps st;
  RESIDENT_CUDA_TRY(cudaMemcpy(&st, stamps, sizeof st, cudaMemcpyDeviceToHost));
  EXPECT_GT(st.first_rt_start_ns, 0U);
  EXPECT_LE(st.first_rt_start_ns, st.last_rt_start_ns);
  EXPECT_LT(st.last_rt_start_ns, st.last_rt_end_ns);
  EXPECT_EQ(job.placement().launches, 0U);
  const auto rt_c = rt.result();
  for (std::int32_t t = 0; t < sched::gemm_blocks(rt.args()); ++t) {
    EXPECT_TRUE(rt.tile_ok(rt_c, rt_want, t)) << "RT tile " << t;
  }
  const auto be_c = be.result();
  const auto runs = job.runs();
  EXPECT_EQ(job.taken(), 16U);
  for (std::int32_t t = 0; t < be_blocks; ++t) {
    EXPECT_EQ(runs[static_cast<std::size_t>(t)], 1U) << "BE block " << t;
    EXPECT_TRUE(be.tile_ok(be_c, be_want, t)) << "BE tile " << t;
  }
}

// Holds one SM per block until *release: each block asks for all the shared memory a block
// may have, so no other block (an RT gemm block needs shared memory too) fits beside it.
__global__ void hold_sm_kernel(const volatile std::uint32_t* release, std::uint32_t* arrived) {
  extern __shared__ unsigned char held[];
  if (threadIdx.x == 0) {
    held[0] = 1;
    atomicAdd(arrived, 1U);
    while (*release == 0U) __nanosleep(1000);
  }
  resident::device::sync_block();
}

// An RT gemm launched while other work holds all SMs but two: alone, its 8 blocks double up on
// those two SMs (a crowded launch); with placement slots, the RT blocks wait for SMs of their
// own, so the launch cannot finish before the SMs are given back, and then is not crowded.
TEST(SchedPadding, PlacementSlotsGiveEachRtBlockAnSmOfItsOwn) {
  RESIDENT_REQUIRE_GPU();
  int sms = 0, smem = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  if (sms < 12) GTEST_SKIP() << "needs at least 12 SMs";
  RESIDENT_CUDA_TRY(
      cudaFuncSetAttribute(hold_sm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  gemm_case rt(64, 512, 256, 3);  // 8 blocks
  gemm_case be(64, 64, 64, 4);
  const auto rt_want = rt.reference();
  const std::int32_t rt_blocks = sched::gemm_blocks(rt.args());
  ASSERT_EQ(rt_blocks, 8);
  sched::pad_job job(sched::gemm_blocks(be.args()), rt_blocks);
  const sched::pad_limits spread = sched::placement_only(rt_blocks, 1'000'000'000U);
  // Placement only: no BE work, enough slots to fill every SM an RT block could land on (at
  // the merged kernel's occupancy, which the H200 allows between 1 and 32 blocks per SM).
  const int per_sm = sched::padded_gemm_blocks_per_sm();
  EXPECT_GE(per_sm, 1);
  EXPECT_LE(per_sm, 32);
  EXPECT_EQ(spread.budget, 0U);
  EXPECT_EQ(spread.rounds, 0U);
  EXPECT_EQ(spread.place_wait_ns, 1'000'000'000U);
  EXPECT_EQ(spread.slots, per_sm * rt_blocks);
  EXPECT_THROW((void)sched::placement_only(0), std::invalid_argument);

  host_mapped_buffer words(2 * sizeof(std::uint32_t));  // release, arrived
  auto* release = words.host_as<volatile std::uint32_t>();
  auto* arrived = words.host_as<volatile std::uint32_t>() + 1;
  stream holder(0);
  stream s(0);
  const auto hold_all_but_two = [&] {
    release[0] = 0U;
    arrived[0] = 0U;
    hold_sm_kernel<<<sms - 2, 32, static_cast<std::size_t>(smem), holder.get()>>>(
        words.device_as<std::uint32_t>(), words.device_as<std::uint32_t>() + 1);
    RESIDENT_CUDA_CHECK_LAUNCH("hold_sm_kernel");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived[0] < static_cast<std::uint32_t>(sms - 2)) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the SM holders never all started";
      std::this_thread::yield();
    }
  };
  const auto check_rt = [&](const char* what) {
    const auto c = rt.result();
    for (std::int32_t t = 0; t < rt_blocks; ++t) {
      EXPECT_TRUE(rt.tile_ok(c, rt_want, t)) << "RT tile " << t << " (" << what << ")";
    }
  };

  // Alone: all 8 RT blocks run on the two free SMs while the holders stay. A tool that runs
  // kernels one at a time (compute-sanitizer) cannot run it beside them: then it completes only
  // once they are released, and the test skips rather than hang.
  hold_all_but_two();
  sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {});
  const auto wait_until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  cudaError_t q = cudaErrorNotReady;
  while ((q = cudaStreamQuery(s.get())) == cudaErrorNotReady &&
         std::chrono::steady_clock::now() < wait_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  release[0] = 1U;
  holder.synchronize();
  s.synchronize();
  if (q != cudaSuccess) {
    ASSERT_EQ(q, cudaErrorNotReady) << cudaGetErrorString(q);
    GTEST_SKIP() << "the RT gemm did not run beside the SM holders within 10 s: kernels run one "
                    "at a time here (e.g. under compute-sanitizer)";
  }
  check_rt("alone");
  sched::pad_placement placed = job.placement();
  EXPECT_EQ(placed.launches, 1U);
  EXPECT_EQ(placed.crowded_launches, 1U);

  // With placement slots: two RT blocks start on the free SMs, the other six wait for SMs of
  // their own, which come only when the holders leave.
  RESIDENT_CUDA_TRY(cudaMemset(rt.dc.data(), 0xFF, rt.dc.size()));
  hold_all_but_two();
  const std::uint64_t spread_before = job.placement().spread_ns;
  device_buffer stamps_mem(sizeof(sched::pad_launch_stamps));
  RESIDENT_CUDA_TRY(cudaMemset(stamps_mem.data(), 0, stamps_mem.size()));
  sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, spread, nullptr,
                            stamps_mem.data_as<sched::pad_launch_stamps>());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(cudaStreamQuery(s.get()), cudaErrorNotReady)
      << "RT blocks ran on SMs another RT block held";
  release[0] = 1U;
  holder.synchronize();
  s.synchronize();
  check_rt("placement slots");
  placed = job.placement();
  EXPECT_EQ(placed.launches, 2U);
  EXPECT_EQ(placed.crowded_launches, 1U);  // the first launch only
  EXPECT_EQ(job.rt_late_takes(), 0U);
  EXPECT_EQ(job.taken(), 0U);  // placement slots run no BE block
  // The last RT blocks started after the 5 ms wait; the first before it.
  EXPECT_GE(placed.spread_ns - spread_before, 4'000'000U);
  // The launch's own stamps say the same, and its RT blocks ended after the last one started.
  sched::pad_launch_stamps st;
  RESIDENT_CUDA_TRY(cudaMemcpy(&st, stamps_mem.data(), sizeof st, cudaMemcpyDeviceToHost));
  EXPECT_GT(st.first_rt_start_ns, 0U);
  EXPECT_EQ(st.last_rt_start_ns - st.first_rt_start_ns, placed.spread_ns - spread_before);
  EXPECT_GT(st.last_rt_end_ns, st.last_rt_start_ns);
}

TEST(SchedPadding, RefusesAnRtKernelLargerThanTheJobHolds) {
  RESIDENT_REQUIRE_GPU();
  gemm_case rt(256, 256, 64, 1);  // 16 blocks
  gemm_case be(64, 64, 64, 2);
  sched::pad_job job(1, 4);
  stream s(0);
  EXPECT_THROW(sched::launch_padded_gemm(s.get(), rt.args(), be.args(), job, {1, 1, 0}),
               std::invalid_argument);
  sched::pad_job roomy(1, 64);
  EXPECT_THROW(sched::launch_padded_gemm(s.get(), rt.args(), be.args(), roomy, {-1, 1, 0}),
               std::invalid_argument);
  EXPECT_THROW(sched::pad_job(0, 4), std::invalid_argument);
}

// ---- resident loops as real-time tasks ---------------------------------------------------------

// Raised at detect (the default) or once the handler has copied the sample in
// (preempt_hook::after_input): either way once per processed sample, cleared after it.
TEST(SchedLoop, EveryModeRaisesAndClearsThePreemptWordOncePerSample) {
  RESIDENT_REQUIRE_GPU();
  for (const std::uint32_t after_input : {0U, 1U})
    for (const execution_mode mode : {execution_mode::eager, execution_mode::host_graph,
                                      execution_mode::while_loop, execution_mode::tail}) {
      SCOPED_TRACE(std::string(to_string(mode)) + (after_input != 0U ? ", after the copy" : ""));
      lab_app app(256);
      sched::preempt_signal signal;
      run_options o;
      o.preempt = signal.hook();
      o.preempt.after_input = after_input;
      auto handle = run_async(app, mode, o);
      std::vector<std::vector<float>> samples;
      for (int i = 0; i < 5; ++i) samples.push_back(random_floats(256));
      const auto outputs = drive_lockstep(*app.mailbox(), samples);
      ASSERT_EQ(outputs.size(), samples.size());
      for (std::size_t i = 0; i < samples.size(); ++i) {
        EXPECT_NEAR(as_float(outputs[i]), lab_reference(samples[i]),
                    1e-4 * std::max(1.0, lab_reference(samples[i])));
      }
      const auto report = handle->tear_down();
      ASSERT_TRUE(report.stopped) << report.error;
      const preempt_mirror m = signal.mirror();
      EXPECT_EQ(m.raises, report.counters.processed);
      EXPECT_EQ(m.clears, m.raises);
      EXPECT_FALSE(signal.raised());
      if (m.raises > 0) EXPECT_GE(m.last_clear_ns, m.last_raise_ns);
    }
}

// preempt_hook::lead_ns: a periodic sensor's samples find the word already up, raised a lead
// before each was due; once the sensor stops, the raise for the sample that never comes is
// withdrawn, so an idle loop does not hold best-effort work off.
TEST(SchedLoop, PeriodicLoopRaisesAheadOfEachSampleAndWithdrawsWhenTheSensorStops) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::uint64_t period_ns = 2'000'000;  // 500 Hz: host sleeps are far shorter
  constexpr std::uint64_t lead_ns = 400'000;
  constexpr int n = 24;
  lab_app app(256);
  sched::preempt_signal signal;
  run_options o;
  o.preempt = signal.hook();
  o.preempt.period_ns = period_ns;
  o.preempt.lead_ns = lead_ns;
  o.poll_ns = 20'000'000;  // the handler polls through each gap
  o.telemetry_samples = n + 8;
  auto handle = run_async(app, execution_mode::while_loop, o);
  io::mailbox& mb = *app.mailbox();
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < n; ++i) samples.push_back(random_floats(256));
  std::vector<std::vector<std::byte>> outputs;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::nanoseconds(period_ns) * i);
    const io::output_stamp before = mb.latest_output();
    const std::uint64_t seq = mb.publish(as_bytes(samples[static_cast<std::size_t>(i)]));
    std::vector<std::byte> out(mb.settings().output_bytes);
    ASSERT_EQ(mb.wait_output(before, out, 5000ms).seq, seq) << "sample " << i;
    outputs.push_back(std::move(out));
  }
  // The sample after the last is due a period later; its early raise goes a lead after that.
  std::this_thread::sleep_for(std::chrono::nanoseconds(4 * period_ns));
  const preempt_mirror m = signal.mirror();
  EXPECT_FALSE(signal.raised()) << "the raise for a sample that never came was not withdrawn";
  EXPECT_GE(m.withdrawn, 1U);
  const auto report = handle->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    EXPECT_NEAR(as_float(outputs[k]), lab_reference(samples[k]),
                1e-4 * std::max(1.0, lab_reference(samples[k])));
  }
  // One raise per processed sample (early or on arrival), plus the withdrawn ones; all cleared.
  EXPECT_EQ(report.counters.processed, static_cast<std::uint64_t>(n));
  EXPECT_EQ(m.raises, report.counters.processed + m.withdrawn);
  EXPECT_EQ(m.clears, m.raises);
  EXPECT_LE(m.early_raises, m.raises);
  // The first sample anchors the schedule; a host that oversleeps a lead past a due time loses
  // that sample's early raise (withdrawn, raised again on arrival), so not every one has it.
  EXPECT_GE(m.early_raises, static_cast<std::uint64_t>(n / 2));
  int ahead = 0;
  for (const telemetry_entry& e : handle->telemetry()) {
    const std::uint64_t up = e.stamp_ns[static_cast<std::size_t>(stage::preempt_raised)];
    const std::uint64_t detect = e.stamp_ns[static_cast<std::size_t>(stage::detect)];
    ASSERT_NE(up, 0U) << "sample " << e.seq << " ran without the word up";
    ASSERT_NE(detect, 0U);
    if (up < detect) {
      ++ahead;
      // Raised a lead before the due time, and the sample came no later than a lead after it.
      EXPECT_LE(detect - up, 2 * lead_ns + 100'000) << "sample " << e.seq;
    }
  }
  EXPECT_GE(ahead, n / 2);
}

TEST(SchedLoop, LeadWithoutAHandlerOrAPeriodIsRefused) {
  RESIDENT_REQUIRE_GPU();
  sched::preempt_signal signal;
  run_options o;
  o.preempt = signal.hook();
  o.preempt.lead_ns = 5'000;
  lab_app app(256);
  EXPECT_THROW((void)run_async(app, execution_mode::while_loop, o), std::invalid_argument);
  o.preempt.period_ns = 125'000;
  o.poll_ns = 1'000'000;  // the early raise happens while the handler polls
  class no_handler final : public Application {
    void compose() override { make_operator<busy_wait>("body", arg("ns", 1000)); }
  } free_running;
  try {
    auto run = run_async(free_running, execution_mode::eager, o);
    FAIL() << "a lead without a handler was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no data-ready handler"), std::string::npos) << e.what();
  }
  // Host-driven modes run idle passes between samples, whose controller clears the word.
  for (const execution_mode mode : {execution_mode::eager, execution_mode::host_graph}) {
    try {
      auto host_run = run_async(app, mode, o);
      ADD_FAILURE() << "a lead in " << to_string(mode) << " mode was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("needs a resident mode"), std::string::npos) << e.what();
    }
  }
  auto run = run_async(app, execution_mode::while_loop, o);  // both given: it runs
  const auto outputs = drive_lockstep(*app.mailbox(), {random_floats(256)});
  EXPECT_EQ(outputs.size(), 1U);
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST(SchedLoop, ResidentLoopPreemptsBestEffortWorkWithoutTheHost) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(1024);
  sched::preempt_signal signal;
  run_options o;
  o.preempt = signal.hook();
  o.poll_ns = 5'000'000;  // the handler keeps its slot while it waits
  int least = 0;
  int greatest = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  o.stream_priority = greatest;
  auto handle = run_async(app, execution_mode::while_loop, o);

  stream s(least);
  slow_sum a(20000, 20'000);
  slow_sum b(10000, 20'000);
  slow_sum c(10000, 20'000);
  sched::be_runner runner({a.call("a"), b.call("b"), c.call("c")}, s.get(), &signal, {});
  runner.start();
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 40; ++i) samples.push_back(random_floats(1024));
  std::vector<std::vector<std::byte>> outputs;
  for (const auto& x : samples) {
    std::this_thread::sleep_for(2ms);  // BE work fills the GPU between samples
    const auto one = drive_lockstep(*app.mailbox(), {x});
    ASSERT_EQ(one.size(), 1U);
    outputs.push_back(one[0]);
  }
  const auto stats = runner.stop();
  s.synchronize();
  const auto report = handle->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_NEAR(as_float(outputs[i]), lab_reference(samples[i]),
                1e-4 * std::max(1.0, lab_reference(samples[i])));
  }
  // The loop's handler raised the word for every sample, the runner saw it and resumed, and
  // the BE sums are exact for every completed pass (and never over-counted).
  EXPECT_EQ(signal.mirror().raises, report.counters.processed);
  EXPECT_GT(stats.preemptions, 0U);
  EXPECT_EQ(stats.repeated_commits, 0U);
  EXPECT_GT(stats.sequences, 0U);
  for (const slow_sum* k : {&a, &b, &c}) {
    // Every finished pass added its whole sum; the pass cut off by stop() part of one.
    EXPECT_GE(k->read(), k->expected(stats.sequences));
    EXPECT_LE(k->read(), k->expected(stats.sequences + 1));
  }
}

}  // namespace
}  // namespace resident::testing

namespace resident::testing {
namespace {

TEST(SchedSpatial, PartitionSmMaskCoversItsSms) {
  RESIDENT_REQUIRE_GPU();
  auto parts = partition::partition_set::split({16});
  const auto mask = (*parts)[0].sm_mask();
  int bits = 0;
  for (const std::uint32_t w : mask) bits += __builtin_popcount(w);
  EXPECT_EQ(bits, (*parts)[0].sm_count());
}

TEST(SchedSpatial, RaisedWordClearsOnlyTheMarkedSmsAndResumeStaysExact) {
  RESIDENT_REQUIRE_GPU();
  // Every other SM is "real-time": blocks there stop while the word is raised, the others run
  // on; the runner resubmits the stopped blocks until every block committed exactly once.
  std::array<std::uint32_t, 8> mask{};
  mask.fill(0x55555555U);
  device_buffer rt_sms(sizeof(mask));
  RESIDENT_CUDA_TRY(cudaMemcpy(rt_sms.data(), mask.data(), sizeof(mask), cudaMemcpyHostToDevice));
  sched::preempt_signal signal;
  stream s(0);
  slow_sum a(3000, 20'000);
  slow_sum b(2000, 20'000);
  sched::be_runner_options o;
  o.rt_sms = rt_sms.data_as<std::uint32_t>();
  sched::be_runner runner({a.call("a"), b.call("b")}, s.get(), &signal, o);
  const auto stats = runner.run_sequences(3, raise_and_clear(signal, 600, 2, 400));
  s.synchronize();
  EXPECT_EQ(a.read(), a.expected(3));
  EXPECT_EQ(b.read(), b.expected(3));
  EXPECT_GT(stats.early_exits, 0U);
  EXPECT_GT(stats.preempted_launches, 0U);
  EXPECT_EQ(stats.repeated_commits, 0U);
  // Two launches in flight: this kernel ignores the hand-back area, so each cut halts the
  // stream and the runner resubmits, and the second launch never runs on a short first one.
  EXPECT_EQ(runner.queue().window(), 2U);
}

}  // namespace
}  // namespace resident::testing

namespace resident::testing {
namespace {

TEST(SchedSpatial, ModelsMatchTheirReferenceUnderSpatialPreemption) {
  // The library kernels take their blocks from a counter here: blocks on the marked SMs stop
  // while the word is raised, the others finish the launch.
  RESIDENT_REQUIRE_GPU();
  std::array<std::uint32_t, 8> mask{};
  mask.fill(0x0F0F0F0FU);
  device_buffer rt_sms(sizeof(mask));
  RESIDENT_CUDA_TRY(cudaMemcpy(rt_sms.data(), mask.data(), sizeof(mask), cudaMemcpyHostToDevice));
  sched::mlp_model mlp(128, {256, 1024, 512, 128}, 3);
  check_model(mlp, true, rt_sms.data_as<std::uint32_t>());
  sched::mlp_model fused(128, {256, 1024, 512, 128}, 3, sched::mlp_bias::fused);
  check_model(fused, true, rt_sms.data_as<std::uint32_t>());
  sched::cnn_model cnn(32, 5);
  check_model(cnn, true, rt_sms.data_as<std::uint32_t>());
}

}  // namespace
}  // namespace resident::testing
