// SM partitions (green contexts): what the device offers, how it splits, and that a partitioned
// loop's kernels (handler, controller, operators, end marker) run only on its partition's SMs.

#include <gmock/gmock.h>

#include <algorithm>
#include <cstring>
#include <set>

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

// The SMs a partition's streams reach: many long blocks, so every SM gets some.
std::set<int> discover(const green_context& part) {
  device_buffer mask(8 * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(mask.data(), 0, mask.size()));
  stream s = part.make_stream();
  green_context::current_scope in_partition(&part);
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
  std::printf(
      "SM partitions: %d SMs, co-scheduled min %d align %d; ignoring co-scheduling min %d "
      "align %d\n",
      co.sm_count, co.min_partition, co.alignment, fine.min_partition, fine.alignment);
}

TEST(partition, split_gives_disjoint_partitions_of_the_sizes_asked) {
  RESIDENT_REQUIRE_GPU();
  const auto parts = partition_set::split({16, 24});
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_GE((*parts)[0].sm_count(), 16);
  EXPECT_GE((*parts)[1].sm_count(), 24);
  EXPECT_EQ(parts->remaining_sm_count() + (*parts)[0].sm_count() + (*parts)[1].sm_count(),
            query_device(0).sm_count);
  const auto a = discover((*parts)[0]);
  const auto b = discover((*parts)[1]);
  EXPECT_EQ(static_cast<int>(a.size()), (*parts)[0].sm_count());
  EXPECT_EQ(static_cast<int>(b.size()), (*parts)[1].sm_count());
  std::vector<int> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  EXPECT_TRUE(both.empty()) << "partitions share " << both.size() << " SMs";
}

TEST(partition, a_split_that_does_not_fit_says_why) {
  RESIDENT_REQUIRE_GPU();
  try {
    (void)partition_set::split({64, 64, 64});
    FAIL() << "three 64-SM partitions fit on " << query_device(0).sm_count << " SMs";
  } catch (const partition::partition_error& e) {
    EXPECT_THAT(std::string(e.what()),
                ::testing::HasSubstr("(64 SMs) does not fit"));
  }
}

class partitioned_loop : public ::testing::TestWithParam<execution_mode> {};

TEST_P(partitioned_loop, every_kernel_stays_on_the_partition_and_results_match) {
  RESIDENT_REQUIRE_GPU();
  const execution_mode mode = GetParam();
  const auto parts = partition_set::split({16});
  const green_context& part = (*parts)[0];
  const std::set<int> allowed = discover(part);
  ASSERT_EQ(static_cast<int>(allowed.size()), part.sm_count());

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
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_TRUE(report.error.empty()) << report.error;
  ASSERT_EQ(outputs.size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double want = lab_reference(samples[i]);
    EXPECT_NEAR(as_float(outputs[i]), want, 1e-5 * std::abs(want)) << "sample " << i;
  }

  const std::set<int> body = read_mask(mask);
  const std::vector<int> framework = run->sms_seen();
  EXPECT_FALSE(body.empty());
  EXPECT_FALSE(framework.empty());
  for (const int sm : body) EXPECT_TRUE(allowed.count(sm)) << "operator kernel on SM " << sm;
  for (const int sm : framework) EXPECT_TRUE(allowed.count(sm)) << "loop kernel on SM " << sm;
  EXPECT_EQ(body.size(), allowed.size()) << "the probe should reach every SM of the partition";
}

INSTANTIATE_TEST_SUITE_P(modes, partitioned_loop, ::testing::ValuesIn(all_execution_modes),
                         [](const auto& info) {
                           std::string name(to_string(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace resident::testing
