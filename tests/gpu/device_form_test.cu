// Device forms written outside the library (resident/app/persistent_kernel.cuh): an operator
// whose form's phase ends with last-block work, run in persistent mode on one block and on a
// grid with the same bits as its kernel in the graph modes; the choice of kernel among those the
// forms name; a DAG whose forms no kernel holds together is refused by name, and runs once a
// kernel holding them is registered.

#include <gmock/gmock.h>

#include <cstring>

#include "gpu/support.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/io/mailbox_forms.cuh"

namespace resident::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int tile = 256;

// carry_total: out = in + T, where T is the sum of the previous sample's input (0 before the
// first). Per tile, thread 0 sums its values in order; the last block to finish adds the tiles'
// sums in order into T. Every sum runs in a fixed order, so any grid gives the same bits.
struct carry_args {
  const float* in;
  float* out;
  float* tile_sums;
  float* total;
  std::int64_t elements;
};

__device__ void carry_tiles(const carry_args& a) {
  const std::int64_t tiles = (a.elements + tile - 1) / tile;
  const float previous = *static_cast<const volatile float*>(a.total);
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t end = (t + 1) * tile < a.elements ? (t + 1) * tile : a.elements;
    for (std::int64_t i = t * tile + threadIdx.x; i < end; i += blockDim.x) {
      a.out[i] = a.in[i] + previous;
    }
    if (threadIdx.x == 0) {
      float s = 0.0F;
      for (std::int64_t i = t * tile; i < end; ++i) s += a.in[i];
      a.tile_sums[t] = s;
    }
  }
}

__device__ void carry_finish(const carry_args& a) {
  if (threadIdx.x != 0) return;
  const std::int64_t tiles = (a.elements + tile - 1) / tile;
  float s = 0.0F;
  for (std::int64_t t = 0; t < tiles; ++t) s += static_cast<const volatile float*>(a.tile_sums)[t];
  *a.total = s;
}

// The graph modes' kernel: the same device functions, with its own last-block count.
__global__ void carry_kernel(carry_args a, unsigned* arrivals) {
  carry_tiles(a);
  __shared__ bool last;
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(*arrivals);
    last = count.fetch_add(1U, cuda::memory_order_acq_rel) + 1U == gridDim.x;
  }
  resident::device::sync_block();
  if (!last) return;
  carry_finish(a);
  if (threadIdx.x == 0) *arrivals = 0U;
}

// Phase 0 writes the output and the tile sums and ends with a grid barrier (the next form reads
// the output); phase 1 only counts the blocks, and the last one carries the total, which only
// the next sample reads.
struct carry_form {
  static constexpr const char* name = "test.carry_total";
  using args = carry_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    if (ctx.phase == 0) carry_tiles(a);
  }
  __device__ static void finish(const args& a, const form_context&) { carry_finish(a); }
};

class carry_total final : public Operator {
 public:
  void setup(OperatorSpec& spec) override {
    _elements = spec.param<std::int64_t>("elements", 1000);
    _one_phase = spec.param<bool>("one_phase", false,
                                  "write the output in the last-block phase (refused when a later "
                                  "operator reads it)");
    spec.device_input("in", static_cast<std::size_t>(_elements) * sizeof(float));
    spec.device_output("out", static_cast<std::size_t>(_elements) * sizeof(float));
  }
  void initialize() override {
    const auto tiles = static_cast<std::size_t>((_elements + tile - 1) / tile);
    _tile_sums = device_buffer(tiles * sizeof(float));
    _state = device_buffer(2 * sizeof(float));  // total, arrivals
    RESIDENT_CUDA_TRY(cudaMemset(_state.data(), 0, _state.size()));
  }
  void compute(CaptureContext& ctx) override {
    carry_kernel<<<3, tile, 0, ctx.stream()>>>(args(), _state.data_as<unsigned>() + 1);
    RESIDENT_CUDA_CHECK_LAUNCH("carry_kernel");
  }
  [[nodiscard]] std::optional<device_form> persistent_form() const override {
    const std::uint32_t phases = _one_phase ? 1 : 2;
    return device_form::of<carry_form>(args(), &persistent_kernels<carry_form>())
        .with_phases(phases)
        .with_phase_end(phases - 1, phase_end::last_block);
  }

 private:
  carry_args args() const {
    return {bound<const float>("in"), bound<float>("out"), _tile_sums.data_as<float>(),
            _state.data_as<float>(), _elements};
  }
  std::int64_t _elements{};
  bool _one_phase{false};
  device_buffer _tile_sums;
  device_buffer _state;
};

// negate: out = -in, a second user form with a kernel of its own.
struct negate_form {
  static constexpr const char* name = "test.negate";
  struct args {
    const float* in;
    float* out;
    std::int64_t elements;
  };
  __device__ static void run(const args& a, const form_context&) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < a.elements;
         i += std::int64_t{gridDim.x} * blockDim.x) {
      a.out[i] = -a.in[i];
    }
  }
};

__global__ void negate_kernel(negate_form::args a) { negate_form::run(a, {}); }

class negate final : public Operator {
 public:
  void setup(OperatorSpec& spec) override {
    _elements = spec.param<std::int64_t>("elements", 1000);
    spec.device_input("in", static_cast<std::size_t>(_elements) * sizeof(float));
    spec.device_output("out", static_cast<std::size_t>(_elements) * sizeof(float));
  }
  void compute(CaptureContext& ctx) override {
    negate_kernel<<<4, 128, 0, ctx.stream()>>>(
        {ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"), _elements});
    RESIDENT_CUDA_CHECK_LAUNCH("negate_kernel");
  }
  [[nodiscard]] std::optional<device_form> persistent_form() const override {
    return device_form::of<negate_form>({bound<const float>("in"), bound<float>("out"), _elements},
                                        &persistent_kernels<negate_form>());
  }

 private:
  std::int64_t _elements{};
};

constexpr std::int64_t elements = 1000;  // four tiles, the last one short

/// rx -> carry_total [-> negate] -> tx.
class form_app final : public Application {
 public:
  explicit form_app(bool with_negate, bool one_phase = false)
      : _negate(with_negate), _one_phase(one_phase) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto carry = make_operator<carry_total>("carry", arg("elements", elements),
                                            arg("one_phase", _one_phase));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, carry, {{"sample", "in"}});
    if (_negate) {
      auto neg = make_operator<negate>("neg", arg("elements", elements));
      add_flow(carry, neg, {{"out", "in"}});
      add_flow(neg, tx, {{"out", "in"}});
    } else {
      add_flow(carry, tx, {{"out", "in"}});
    }
  }
  std::shared_ptr<io::mailbox> _mailbox = std::make_shared<io::mailbox>(
      io::mailbox::config{elements * sizeof(float), elements * sizeof(float), 4});

 private:
  bool _negate;
  bool _one_phase;
};

/// The CPU reference of carry_total (and negate) over `samples`, in the device's order of sums.
std::vector<std::vector<float>> carry_reference(const std::vector<std::vector<float>>& samples,
                                                bool negated) {
  std::vector<std::vector<float>> out;
  float total = 0.0F;
  for (const auto& in : samples) {
    std::vector<float> o(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) o[i] = negated ? -(in[i] + total) : in[i] + total;
    float next = 0.0F;
    for (std::size_t t = 0; t * tile < in.size(); ++t) {
      float s = 0.0F;
      for (std::size_t i = t * tile; i < std::min(in.size(), (t + 1) * tile); ++i) s += in[i];
      next += s;
    }
    total = next;
    out.push_back(std::move(o));
  }
  return out;
}

void expect_carry_outputs(execution_mode mode, int blocks, bool negated) {
  form_app app(negated);
  run_options options;
  options.persistent_blocks = blocks;
  auto run = run_async(app, mode, options);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 12; ++i) samples.push_back(random_floats(elements));
  const auto outputs = drive_lockstep(*app._mailbox, samples);
  const auto want = carry_reference(samples, negated);
  ASSERT_EQ(outputs.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(std::memcmp(outputs[k].data(), want[k].data(), want[k].size() * sizeof(float)), 0)
        << to_string(mode) << " with " << blocks << " block(s): sample " << k
        << " differs from the CPU reference (the total carried from the sample before)";
  }
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_EQ(report.counters.processed, samples.size());
}

TEST(device_form, a_last_block_phase_carries_a_total_to_the_next_sample_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  for (const auto mode : {execution_mode::eager, execution_mode::host_graph,
                          execution_mode::while_loop, execution_mode::tail}) {
    expect_carry_outputs(mode, 1, false);
  }
  expect_carry_outputs(execution_mode::persistent, 1, false);
  expect_carry_outputs(execution_mode::persistent, 7, false);  // a cooperative grid
}

// A last-block phase orders nothing before the next form: a form that writes, in it, what a
// later operator of the same pass reads is refused by name (it would race with the blocks still
// writing), in persistent mode only; the graph modes run the operators as kernels in order.
TEST(device_form, a_last_block_phase_that_a_later_operator_reads_is_refused) {
  RESIDENT_REQUIRE_GPU();
  form_app app(false, true);
  EXPECT_THAT([&] { (void)run_async(app, execution_mode::persistent); },
              ::testing::ThrowsMessage<composition_error>(
                  AllOf(HasSubstr("operator 'carry' (test.carry_total)"),
                        HasSubstr("phase_end::last_block"), HasSubstr("operator 'tx'"))));
  form_app graph_mode_app(false, true);
  auto run = run_async(graph_mode_app, execution_mode::while_loop);
  const tear_down_report report = run->tear_down();
  EXPECT_TRUE(report.stopped) << report.error;
}

TEST(device_form, forms_that_no_kernel_holds_together_are_refused_until_one_is_registered) {
  RESIDENT_REQUIRE_GPU();
  {
    form_app app(true);
    EXPECT_THAT(
        [&] { (void)run_async(app, execution_mode::persistent); },
        ::testing::ThrowsMessage<composition_error>(
            AllOf(HasSubstr("no persistent kernel runs all"), HasSubstr("carry (test.carry_total)"),
                  HasSubstr("neg (test.negate)"), HasSubstr("register_persistent_kernel"))));
  }
  register_persistent_kernel(persistent_kernels<carry_form, negate_form>());
  expect_carry_outputs(execution_mode::persistent, 4, true);
  expect_carry_outputs(execution_mode::while_loop, 1, true);
}

}  // namespace
}  // namespace resident::testing
