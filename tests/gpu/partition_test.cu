// SM partitions: what the device offers, how it splits, and that a partitioned loop's kernels
// (handler, controller, operators, end marker) run only on its partition's SMs. Green contexts
// first; then MPS partitions, which skip unless this process can reach an MPS daemon (normal GPU
// runs have none; scripts/gpu-check starts a private one for them).

#include <gmock/gmock.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "gpu/support.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::testing {
namespace {

using partition::green_context;
using partition::partition_set;

constexpr int probe_threads = 1024;  // at most two blocks per SM: blocks spread over every SM

__device__ unsigned smid() {
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

// Every block spins `ns` and marks its SM; thread 0 of block 0 copies `in` to `out` (so the probe
// can sit in a pipeline whose result is checked).
__global__ void __launch_bounds__(probe_threads)
    probe_kernel(unsigned* mask, std::uint64_t ns, const float* in, float* out, std::int64_t n) {
  const std::uint64_t start = clock64();
  if (threadIdx.x == 0) atomicOr(&mask[(smid() >> 5) & 7U], 1U << (smid() & 31U));
  if (blockIdx.x == 0) {
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
  }
  // ~2 GHz: cycles approximate ns closely enough to keep blocks resident for a while.
  while (static_cast<std::uint64_t>(clock64() - start) < ns * 2) {
  }
}

std::set<int> read_mask(const device_buffer& mask) {
  std::uint32_t words[8] = {};
  RESIDENT_CUDA_TRY(cudaMemcpy(words, mask.data(), sizeof words, cudaMemcpyDeviceToHost));
  std::set<int> sms;
  for (int w = 0; w < 8; ++w) {
    for (int b = 0; b < 32; ++b) {
      if ((words[w] >> b) & 1U) sms.insert(w * 32 + b);
    }
  }
  return sms;
}

// The SMs a partition's streams reach: many long blocks, so every SM gets some. The mask lives
// in the partition's own context (an MPS partition is a context of its own).
std::set<int> discover(const green_context& part) {
  green_context::current_scope in_partition(&part);
  device_buffer mask(8 * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(mask.data(), 0, mask.size()));
  stream s = part.make_stream();
  const cudaError_t stale = cudaGetLastError();  // an earlier failure must not be blamed here
  EXPECT_EQ(stale, cudaSuccess) << cudaGetErrorString(stale);
  probe_kernel<<<8 * query_device(0).sm_count, probe_threads, 0, s.get()>>>(
      mask.data_as<unsigned>(), 20'000, nullptr, nullptr, 0);
  RESIDENT_CUDA_CHECK_LAUNCH("probe_kernel");
  s.synchronize();
  return read_mask(mask);
}

// rx -> probe (records the SMs it runs on, passes the sample through) -> affine -> square -> sum
class probed_app final : public Application {
 public:
  probed_app(std::int64_t elements, unsigned* mask, int blocks)
      : Application("probed"),
        _elements(elements),
        _mask(mask),
        _blocks(blocks),
        _mailbox(std::make_shared<io::mailbox>(io::mailbox::config{
            static_cast<std::size_t>(elements) * sizeof(float), sizeof(float), 4})) {}

  class probe final : public Operator {
   public:
    probe(unsigned* mask, int blocks, std::int64_t elements)
        : _mask(mask), _blocks(blocks), _elements(elements) {}
    void setup(OperatorSpec& spec) override {
      const auto bytes = static_cast<std::size_t>(_elements) * sizeof(float);
      spec.device_input("in", bytes);
      spec.device_output("out", bytes);
    }
    void compute(CaptureContext& ctx) override {
      probe_kernel<<<_blocks, probe_threads, 0, ctx.stream()>>>(
          _mask, 5'000, ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"),
          _elements);
      RESIDENT_CUDA_CHECK_LAUNCH("probe_kernel");
    }

   private:
    unsigned* _mask;
    int _blocks;
    std::int64_t _elements;
  };

  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto p = make_operator<probe>("probe", _mask, _blocks, _elements);
    auto aff = make_operator<ops::affine>("affine", arg("elements", _elements));
    auto sq = make_operator<ops::square>("square", arg("elements", _elements));
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", _elements));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, p, {{"sample", "in"}});
    add_flow(p, aff);
    add_flow(aff, sq);
    add_flow(sq, sum);
    add_flow(sum, tx);
  }
  [[nodiscard]] io::mailbox& mailbox() const { return *_mailbox; }

 private:
  std::int64_t _elements;
  unsigned* _mask;
  int _blocks;
  std::shared_ptr<io::mailbox> _mailbox;
};

TEST(partition, the_device_reports_its_sm_granularity) {
  RESIDENT_REQUIRE_GPU();
  const auto co = partition::query_sm_resource(0);
  EXPECT_EQ(co.sm_count, query_device(0).sm_count);
  EXPECT_GT(co.min_partition, 0);
  EXPECT_GT(co.alignment, 0);
  const auto fine = partition::query_sm_resource(0, /*ignore_coscheduling=*/true);
  EXPECT_LE(fine.min_partition, co.min_partition);
  // The whole groups a split hands out: all of them fit in partitions, one more group does not.
  ASSERT_GT(co.whole_groups, 1);
  EXPECT_LE(co.whole_groups * co.alignment, co.sm_count);
  const int all = co.whole_groups * co.alignment;
  EXPECT_NO_THROW((void)partition_set::split({all - co.alignment, co.alignment}));
  EXPECT_THROW((void)partition_set::split({all, co.alignment}), partition::partition_error);
  std::printf(
      "SM partitions: %d SMs, co-scheduled min %d align %d (%d whole groups); ignoring "
      "co-scheduling min %d align %d (%d)\n",
      co.sm_count, co.min_partition, co.alignment, co.whole_groups, fine.min_partition,
      fine.alignment, fine.whole_groups);
}

// Runs the probe in both partitions of a two-partition set: each reaches exactly its own
// sm_count() SMs and no SM is in both. Returns the union of what they reached.
std::set<int> expect_two_disjoint_partitions(const partition_set& parts) {
  const auto a = discover(parts[0]);
  const auto b = discover(parts[1]);
  EXPECT_EQ(static_cast<int>(a.size()), parts[0].sm_count());
  EXPECT_EQ(static_cast<int>(b.size()), parts[1].sm_count());
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  EXPECT_TRUE(both.empty()) << "partitions share " << both.size() << " SMs";
  std::set<int> all = a;
  all.insert(b.begin(), b.end());
  return all;
}

TEST(partition, split_gives_disjoint_partitions_of_the_sizes_asked) {
  RESIDENT_REQUIRE_GPU();
  const auto parts = partition_set::split({16, 24});
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_GE((*parts)[0].sm_count(), 16);
  EXPECT_GE((*parts)[1].sm_count(), 24);
  EXPECT_EQ(parts->remaining_sm_count() + (*parts)[0].sm_count() + (*parts)[1].sm_count(),
            query_device(0).sm_count);
  (void)expect_two_disjoint_partitions(*parts);
}

TEST(partition, the_last_partition_can_take_every_sm_the_others_leave) {
  RESIDENT_REQUIRE_GPU();
  const int device_sms = query_device(0).sm_count;
  partition::split_options o;
  o.rest_to_last = true;
  const auto parts = partition_set::split({16, 8}, o);
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_GE((*parts)[0].sm_count(), 16);
  EXPECT_EQ((*parts)[0].sm_count() + (*parts)[1].sm_count(), device_sms);
  EXPECT_EQ(parts->remaining_sm_count(), 0);
  // The SMs in no whole group are there too: the two sets cover the device.
  EXPECT_EQ(static_cast<int>(expect_two_disjoint_partitions(*parts).size()), device_sms);
  // Without it the same ask leaves the remainder out.
  const auto plain = partition_set::split({16, 8});
  EXPECT_EQ((*plain)[1].sm_count(), 8);
  EXPECT_GT(plain->remaining_sm_count(), 0);
}

TEST(partition, a_split_that_does_not_fit_says_why) {
  RESIDENT_REQUIRE_GPU();
  try {
    (void)partition_set::split({64, 64, 64});
    FAIL() << "three 64-SM partitions fit on " << query_device(0).sm_count << " SMs";
  } catch (const partition::partition_error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("(64 SMs) does not fit"));
  }
}

class partitioned_loop : public ::testing::TestWithParam<execution_mode> {};

// Runs the probed lab app in `mode` on partition 0 of `parts` for 20 samples, checks every
// output against the fp64 reference, and returns the SMs its operator kernels (from the probe
// mask) and its loop kernels (run_handle::sms_seen) ran on.
struct partition_run {
  std::set<int> body;
  std::vector<int> framework;
};
partition_run run_probed_loop(const std::shared_ptr<partition_set>& parts, execution_mode mode) {
  const green_context& part = (*parts)[0];
  device_buffer mask(8 * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(mask.data(), 0, mask.size()));
  const std::int64_t n = 1024;
  probed_app app(n, mask.data_as<unsigned>(), 4 * part.sm_count());
  run_options options;
  options.partition = parts->share(0);
  options.record_sms = true;
  auto run = run_async(app, mode, options);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 20; ++i) samples.push_back(random_floats(n));
  const auto outputs = drive_lockstep(app.mailbox(), samples);
  const tear_down_report report = run->tear_down();
  EXPECT_TRUE(report.stopped) << report.error;
  EXPECT_TRUE(report.error.empty()) << report.error;
  EXPECT_EQ(outputs.size(), samples.size());
  for (std::size_t i = 0; i < std::min(samples.size(), outputs.size()); ++i) {
    const double want = lab_reference(samples[i]);
    EXPECT_NEAR(as_float(outputs[i]), want, 1e-5 * std::abs(want)) << "sample " << i;
  }
  return {read_mask(mask), run->sms_seen()};
}

TEST_P(partitioned_loop, every_kernel_stays_on_the_partition_and_results_match) {
  RESIDENT_REQUIRE_GPU();
  const auto parts = partition_set::split({16});
  const green_context& part = (*parts)[0];
  const std::set<int> allowed = discover(part);
  ASSERT_EQ(static_cast<int>(allowed.size()), part.sm_count());
  const partition_run r = run_probed_loop(parts, GetParam());
  EXPECT_FALSE(r.body.empty());
  EXPECT_FALSE(r.framework.empty());
  for (const int sm : r.body) EXPECT_TRUE(allowed.count(sm)) << "operator kernel on SM " << sm;
  for (const int sm : r.framework) EXPECT_TRUE(allowed.count(sm)) << "loop kernel on SM " << sm;
  EXPECT_EQ(r.body.size(), allowed.size()) << "the probe should reach every SM of the partition";
}

INSTANTIATE_TEST_SUITE_P(modes, partitioned_loop, ::testing::ValuesIn(all_execution_modes),
                         [](const auto& info) {
                           std::string name(to_string(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// ---- MPS partitions ------------------------------------------------------------------------

#define RESIDENT_REQUIRE_MPS()                                                   \
  do {                                                                           \
    RESIDENT_REQUIRE_GPU();                                                      \
    if (const auto mps = partition::mps_available(0); !mps) {                    \
      GTEST_SKIP() << "no MPS execution affinity (needs the MPS daemon; normal " \
                      "GPU runs have none): "                                    \
                   << mps.reason;                                                \
    }                                                                            \
  } while (false)

const partition::split_options on_mps{0, false, partition::partition_backend::mps};

std::vector<int> shared_sms(const std::set<int>& a, const std::set<int>& b) {
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both;
}

// "0-15,32" for the report.
std::string ranges(const std::set<int>& sms) {
  std::ostringstream out;
  for (auto it = sms.begin(); it != sms.end();) {
    const int first = *it;
    int last = first;
    while (++it != sms.end() && *it == last + 1) ++last;
    if (first != *sms.begin()) out << ',';
    out << first;
    if (last > first) out << '-' << last;
  }
  return out.str();
}

TEST(mps, without_the_daemon_a_split_says_how_to_start_it) {
  RESIDENT_REQUIRE_GPU();
  const auto mps = partition::mps_available(0);
  if (mps) GTEST_SKIP() << "MPS is running here: the refusal cannot be seen";
  EXPECT_THAT(mps.reason, ::testing::HasSubstr("nvidia-cuda-mps-control -d"));
  try {
    (void)partition_set::split({16}, on_mps);
    FAIL() << "an MPS split succeeded without MPS execution affinity";
  } catch (const partition::partition_error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("mps backend is not available"));
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("nvidia-cuda-mps-control -d"));
  }
}

TEST(mps, a_partition_runs_on_at_most_its_sm_budget) {
  RESIDENT_REQUIRE_MPS();
  const std::vector<int> asked{16, 33};
  const auto parts = partition_set::split(asked, on_mps);
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_EQ(parts->backend(), partition::partition_backend::mps);
  for (std::size_t i = 0; i < asked.size(); ++i) {
    const green_context& part = (*parts)[i];
    EXPECT_EQ(part.backend(), partition::partition_backend::mps);
    EXPECT_GE(part.sm_count(), asked[i]);
    const std::set<int> seen = discover(part);
    int in_mask = 0;
    for (const std::uint32_t w : part.sm_mask()) in_mask += __builtin_popcount(w);
    std::printf(
        "MPS partition: asked %d SMs, granted %d, one probe of many blocks ran on %zu, "
        "sm_mask() saw %d\n",
        asked[i], part.sm_count(), seen.size(), in_mask);
    EXPECT_FALSE(seen.empty());
    EXPECT_LE(static_cast<int>(seen.size()), part.sm_count());
    EXPECT_LE(in_mask, part.sm_count());
  }
  EXPECT_EQ(
      parts->remaining_sm_count(),
      std::max(0, query_device(0).sm_count - (*parts)[0].sm_count() - (*parts)[1].sm_count()));
}

// dev_out = dev_in + host_in, host_out = dev_in * host_in, inner = dev_in - host_in
__global__ void combine_kernel(const float* dev_in, const float* host_in, float* dev_out,
                               float* host_out, float* inner, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  dev_out[i] = dev_in[i] + host_in[i];
  host_out[i] = dev_in[i] * host_in[i];
  inner[i] = dev_in[i] - host_in[i];
}

TEST(mps, buffers_of_the_primary_context_work_in_a_partition) {
  RESIDENT_REQUIRE_MPS();
  const int n = 1 << 16;
  const std::size_t bytes = n * sizeof(float);
  const std::vector<float> a = random_floats(n);
  const std::vector<float> b = random_floats(n);
  // Made in the primary context (nothing pushed), as an application's buffers are.
  device_buffer dev_in(bytes);
  device_buffer dev_out(bytes);
  host_mapped_buffer host_in(bytes);
  host_mapped_buffer host_out(bytes);
  RESIDENT_CUDA_TRY(cudaMemcpy(dev_in.data(), a.data(), bytes, cudaMemcpyHostToDevice));
  std::memcpy(host_in.host(), b.data(), bytes);

  const auto parts = partition_set::split({16}, on_mps);
  const green_context& part = (*parts)[0];
  std::optional<device_buffer> inner;  // made in the partition, read back from the primary context
  {
    green_context::current_scope in_partition(&part);
    inner.emplace(bytes);
    stream s = part.make_stream();
    combine_kernel<<<(n + 255) / 256, 256, 0, s.get()>>>(
        dev_in.data_as<const float>(), static_cast<const float*>(host_in.device()),
        dev_out.data_as<float>(), static_cast<float*>(host_out.device()), inner->data_as<float>(),
        n);
    RESIDENT_CUDA_CHECK_LAUNCH("combine_kernel");
    s.synchronize();
  }
  std::vector<float> sum(n);
  std::vector<float> difference(n);
  RESIDENT_CUDA_TRY(cudaMemcpy(sum.data(), dev_out.data(), bytes, cudaMemcpyDeviceToHost));
  RESIDENT_CUDA_TRY(cudaMemcpy(difference.data(), inner->data(), bytes, cudaMemcpyDeviceToHost));
  const auto* product = static_cast<const float*>(host_out.host());
  int wrong_sum = 0;
  int wrong_product = 0;
  int wrong_difference = 0;
  for (int i = 0; i < n; ++i) {
    wrong_sum += sum[i] != a[i] + b[i];
    wrong_product += product[i] != a[i] * b[i];
    wrong_difference += difference[i] != a[i] - b[i];
  }
  EXPECT_EQ(wrong_sum, 0) << "device buffer of the primary context";
  EXPECT_EQ(wrong_product, 0) << "host-mapped buffer of the primary context";
  EXPECT_EQ(wrong_difference, 0) << "device buffer of the partition, copied out by the primary";
  inner.reset();  // freed from the primary context
}

TEST(mps, two_partitions_report_how_many_sms_they_share) {
  RESIDENT_REQUIRE_MPS();
  const int sms = query_device(0).sm_count;
  for (const auto& [first, second] :
       {std::pair{16, 16}, std::pair{sms / 2, sms / 2}, std::pair{16, 34}}) {
    const auto parts = partition_set::split({first, second}, on_mps);
    const green_context& a = (*parts)[0];
    const green_context& b = (*parts)[1];
    // One after the other: where each runs when it has the GPU alone.
    const std::set<int> alone_a = discover(a);
    const std::set<int> alone_b = discover(b);
    // At once: long probes in both, started back to back (each mask in its partition's context).
    const auto launch = [&](const green_context& part, stream& s) {
      green_context::current_scope in_partition(&part);
      device_buffer mask(8 * sizeof(std::uint32_t));
      RESIDENT_CUDA_TRY(cudaMemsetAsync(mask.data(), 0, mask.size(), s.get()));
      probe_kernel<<<8 * sms, probe_threads, 0, s.get()>>>(mask.data_as<unsigned>(), 100'000,
                                                           nullptr, nullptr, 0);
      RESIDENT_CUDA_CHECK_LAUNCH("probe_kernel");
      return mask;
    };
    const auto collect = [](const green_context& part, stream& s, device_buffer& mask) {
      green_context::current_scope in_partition(&part);
      s.synchronize();
      const device_buffer freed_here = std::move(mask);
      return read_mask(freed_here);
    };
    stream sa = a.make_stream();
    stream sb = b.make_stream();
    device_buffer mask_a = launch(a, sa);
    device_buffer mask_b = launch(b, sb);
    const std::set<int> together_a = collect(a, sa, mask_a);
    const std::set<int> together_b = collect(b, sb, mask_b);
    std::printf(
        "two MPS partitions asked %d and %d SMs, granted %d and %d: alone they ran on %zu and %zu "
        "SMs, sharing %zu; at once on %zu and %zu, sharing %zu (device: %d SMs); at once: "
        "SMs %s and %s\n",
        first, second, a.sm_count(), b.sm_count(), alone_a.size(), alone_b.size(),
        shared_sms(alone_a, alone_b).size(), together_a.size(), together_b.size(),
        shared_sms(together_a, together_b).size(), sms, ranges(together_a).c_str(),
        ranges(together_b).c_str());
    EXPECT_LE(static_cast<int>(together_a.size()), a.sm_count());
    EXPECT_LE(static_cast<int>(together_b.size()), b.sm_count());
  }
}

// In a process that is an MPS client green contexts lose their disjoint SM sets (measured: a 16-
// and a 24-SM partition both ran on SMs 0-15), so a green split is refused there.
TEST(mps, a_green_split_in_an_mps_client_is_refused) {
  RESIDENT_REQUIRE_MPS();
  try {
    (void)partition_set::split({16, 24});
    FAIL() << "a green split succeeded in an MPS client";
  } catch (const partition::partition_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("MPS client"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("backend = mps"));
  }
}

class mps_loop : public ::testing::TestWithParam<execution_mode> {};

TEST_P(mps_loop, runs_on_an_mps_partition_and_results_match) {
  RESIDENT_REQUIRE_MPS();
  const execution_mode mode = GetParam();
  const auto parts = partition_set::split({16}, on_mps);
  const partition_run r = run_probed_loop(parts, mode);
  // A budget, not a set: the SMs may change from launch to launch, so the union over the run is
  // reported, not held to the budget.
  EXPECT_FALSE(r.body.empty());
  EXPECT_FALSE(r.framework.empty());
  std::printf(
      "%s loop on an MPS partition of %d SMs: operator kernels ran on %zu SMs, loop "
      "kernels on %zu, over 20 samples\n",
      std::string(to_string(mode)).c_str(), (*parts)[0].sm_count(), r.body.size(),
      r.framework.size());
}

INSTANTIATE_TEST_SUITE_P(modes, mps_loop, ::testing::ValuesIn(all_execution_modes),
                         [](const auto& info) {
                           std::string name(to_string(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace resident::testing
