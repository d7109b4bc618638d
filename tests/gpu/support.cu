#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "gpu/support.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/io/mailbox_forms.cuh"

namespace resident::testing {

namespace {
// As the CLI does, before any CUDA call (static initialization; nothing here calls CUDA): tests
// start loops and launch other kernels beside them. lazy_loading.* tests run in a process of
// their own with CUDA_MODULE_LOADING=LAZY set (scripts/gpu-check), which this keeps.
[[maybe_unused]] const bool eager_loading = resident::request_eager_module_loading();

// A crash in the suite (a tool such as compute-sanitizer only says the process died) leaves the
// faulting thread's stack on stderr (addresses: `addr2line -e resident_gpu_tests` names them),
// then goes on to whatever handler was there before (a tool's own, or the default).
struct sigaction previous_segv {};
struct sigaction previous_bus {};

void print_stack_then_chain(int sig) {
  constexpr char head[] = "resident_gpu_tests: fatal signal; the faulting thread's stack:\n";
  (void)!write(STDERR_FILENO, head, sizeof head - 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  (void)sigaction(sig, sig == SIGBUS ? &previous_bus : &previous_segv, nullptr);
  (void)raise(sig);
}

[[maybe_unused]] const bool crash_stacks = [] {
  struct sigaction a {};
  a.sa_handler = print_stack_then_chain;
  sigemptyset(&a.sa_mask);
  a.sa_flags = SA_RESETHAND;
  void* warm[1];
  (void)backtrace(warm, 1);  // loads what backtrace needs now, not inside the handler
  return sigaction(SIGSEGV, &a, &previous_segv) == 0 && sigaction(SIGBUS, &a, &previous_bus) == 0;
}();

/// Where a GPU is expected, a test that ends skipped (for want of cores, SMs or anything else)
/// fails. The failure is added while the test is still current, so every printer and the exit
/// status see a failed test.
class skip_is_failure final : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Skipped() || may_skip_on_gpu_machine(info.test_suite_name())) return;
    ADD_FAILURE() << info.test_suite_name() << "." << info.name()
                  << " skipped, but RESIDENT_REQUIRE_GPU=1 says a GPU is expected here: only the "
                     "MPS tests may skip (when no MPS daemon runs), and multi_gpu ones with fewer "
                     "than two GPUs";
  }
};

// Listeners' OnTestEnd run last-appended first, so this one runs before the printers.
[[maybe_unused]] const bool skip_listener = [] {
  if (gpu_expected()) {
    ::testing::UnitTest::GetInstance()->listeners().Append(new skip_is_failure);
  }
  return true;
}();
}  // namespace

bool gpu_expected() {
  const char* value = std::getenv("RESIDENT_REQUIRE_GPU");
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

bool may_skip_on_gpu_machine(std::string_view suite) {
  if (suite == "multi_gpu") return device_count() < 2;
  return suite == "mps" || suite.ends_with("/mps_loop") || suite == "mps_loop";
}

std::string mode_test_name(const ::testing::TestParamInfo<execution_mode>& info) {
  std::string n(to_string(info.param));
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

std::vector<float> random_floats(std::size_t n) {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::span<const std::byte> as_bytes(const std::vector<float>& v) {
  return std::as_bytes(std::span<const float>(v));
}

double lab_reference(std::span<const float> x, double scale, double offset) {
  double total = 0.0;
  for (const float v : x) {
    // The device computes fmaf(scale, x, offset) then squares in fp32; the reference is fp64.
    const double y = scale * static_cast<double>(v) + offset;
    total += y * y;
  }
  return total;
}

std::vector<double> matmul_reference(std::span<const double> in, std::span<const float> w,
                                     std::size_t n) {
  std::vector<double> out(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      const double a = in[i * n + k];
      for (std::size_t j = 0; j < n; ++j) out[i * n + j] += a * w[k * n + j];
    }
  }
  return out;
}

namespace {

__global__ void add2_kernel(const float* a, const float* b, float* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

__global__ void busy_wait_kernel(std::int64_t ns) {
  const std::uint64_t start = device::globaltimer_ns();
  while (device::globaltimer_ns() - start < static_cast<std::uint64_t>(ns)) {
  }
}

__global__ void slow_copy_kernel(const float* in, float* out, std::int64_t n, std::int64_t ns) {
  if (threadIdx.x == 0) {
    const std::uint64_t start = device::globaltimer_ns();
    while (device::globaltimer_ns() - start < static_cast<std::uint64_t>(ns)) {
    }
  }
  resident::device::sync_block();  // no thread copies before the spin is over
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

__global__ void slow_every_kernel(const loop_state* loop, const float* in, float* out,
                                  std::int64_t n, std::int64_t ns, std::int64_t every) {
  if (threadIdx.x == 0 && device::current_sample(loop) % static_cast<std::uint64_t>(every) == 0) {
    const std::uint64_t start = device::globaltimer_ns();
    while (device::globaltimer_ns() - start < static_cast<std::uint64_t>(ns)) {
    }
  }
  resident::device::sync_block();
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

__global__ void hold_kernel(const std::uint32_t* word) {
  while (device::load_acquire_system(*word) != 0U) __nanosleep(1000);
}

__global__ void noop_kernel() {}

void CUDART_CB host_noop(void*) {}

}  // namespace

void add2::setup(OperatorSpec& spec) {
  _elements = spec.param<std::int64_t>("elements", 1024);
  const auto bytes = static_cast<std::size_t>(_elements) * sizeof(float);
  spec.device_input("a", bytes);
  spec.device_input("b", bytes);
  spec.device_output("out", bytes);
}

void add2::compute(CaptureContext& ctx) {
  add2_kernel<<<8, 256, 0, ctx.stream()>>>(ctx.device_memory<const float>("a"),
                                           ctx.device_memory<const float>("b"),
                                           ctx.device_memory<float>("out"), _elements);
  RESIDENT_CUDA_CHECK_LAUNCH("add2_kernel");
}

void busy_wait::setup(OperatorSpec& spec) {
  _ns = spec.param<std::int64_t>("ns", 50000, "how long the body spins");
}

void busy_wait::compute(CaptureContext& ctx) {
  busy_wait_kernel<<<1, 1, 0, ctx.stream()>>>(_ns);
  RESIDENT_CUDA_CHECK_LAUNCH("busy_wait_kernel");
}

void slow_copy::setup(OperatorSpec& spec) {
  _elements = spec.param<std::int64_t>("elements", 1024);
  _ns = spec.param<std::int64_t>("ns", 1'000'000, "how long the copy waits first");
  const auto bytes = static_cast<std::size_t>(_elements) * sizeof(float);
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void slow_copy::compute(CaptureContext& ctx) {
  slow_copy_kernel<<<1, 256, 0, ctx.stream()>>>(ctx.device_memory<const float>("in"),
                                                ctx.device_memory<float>("out"), _elements, _ns);
  RESIDENT_CUDA_CHECK_LAUNCH("slow_copy_kernel");
}

void slow_every::setup(OperatorSpec& spec) {
  _elements = spec.param<std::int64_t>("elements", 1024);
  _ns = spec.param<std::int64_t>("ns", 1'000'000, "how long a slowed sample waits first");
  _every = spec.param<std::int64_t>("every", 4, "which samples are slowed (seq % every == 0)");
  if (_every < 1) throw std::invalid_argument("slow_every: every must be at least 1");
  const auto bytes = static_cast<std::size_t>(_elements) * sizeof(float);
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void slow_every::compute(CaptureContext& ctx) {
  if (ctx.loop() == nullptr) throw std::logic_error("slow_every needs a loop");
  slow_every_kernel<<<1, 256, 0, ctx.stream()>>>(ctx.loop(), ctx.device_memory<const float>("in"),
                                                 ctx.device_memory<float>("out"), _elements, _ns,
                                                 _every);
  RESIDENT_CUDA_CHECK_LAUNCH("slow_every_kernel");
}

namespace {

// slow_every's device form: block 0's first thread spins on a slowed sample while every block
// copies its share; the phase's barrier holds the pass until both are done.
struct slow_every_form {
  static constexpr const char* name = "test.slow_every";
  struct args {
    const float* in;
    float* out;
    std::int64_t elements;
    std::int64_t ns;
    std::int64_t every;
  };
  __device__ static void run(const args& a, const form_context& ctx) {
    if (blockIdx.x == 0 && threadIdx.x == 0 &&
        device::current_sample(ctx.loop) % static_cast<std::uint64_t>(a.every) == 0) {
      const std::uint64_t start = device::globaltimer_ns();
      while (device::globaltimer_ns() - start < static_cast<std::uint64_t>(a.ns)) {
      }
    }
    const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < a.elements;
         i += stride) {
      a.out[i] = a.in[i];
    }
  }
};

}  // namespace

std::optional<device_form> slow_every::persistent_form() const {
  return device_form::of<slow_every_form>(
      {bound<const float>("in"), bound<float>("out"), _elements, _ns, _every},
      &persistent_kernels<slow_every_form>());
}

void hold_while_set::compute(CaptureContext& ctx) {
  hold_kernel<<<1, 1, 0, ctx.stream()>>>(_word);
  RESIDENT_CUDA_CHECK_LAUNCH("hold_kernel");
}

void host_callback::compute(CaptureContext& ctx) {
  RESIDENT_CUDA_TRY(cudaLaunchHostFunc(ctx.stream(), host_noop, nullptr));
}

void empty_node::compute(CaptureContext& ctx) {
  noop_kernel<<<1, 1, 0, ctx.stream()>>>();
  RESIDENT_CUDA_CHECK_LAUNCH("noop_kernel");
  if (!ctx.capturing()) return;
  cudaStreamCaptureStatus status{};
  cudaGraph_t g = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t count = 0;
  RESIDENT_CUDA_TRY(
      cudaStreamGetCaptureInfo(ctx.stream(), &status, nullptr, &g, &deps, nullptr, &count));
  cudaGraphNode_t node = nullptr;
  RESIDENT_CUDA_TRY(cudaGraphAddEmptyNode(&node, g, deps, count));
  RESIDENT_CUDA_TRY(cudaStreamUpdateCaptureDependencies(ctx.stream(), &node, nullptr, 1,
                                                        cudaStreamSetCaptureDependencies));
}

void bad_launch::compute(CaptureContext& ctx) {
  noop_kernel<<<1, 4096, 0, ctx.stream()>>>();
  RESIDENT_CUDA_CHECK_LAUNCH("noop_kernel<<<1, 4096>>>");
}

lab_app::lab_app(std::int64_t elements, std::size_t depth, int device)
    : Application("lab"),
      _elements(elements),
      _mailbox(std::make_shared<io::mailbox>(
          io::mailbox::config{.input_bytes = static_cast<std::size_t>(elements) * sizeof(float),
                              .output_bytes = sizeof(float),
                              .depth = depth,
                              .device = device})) {}

void lab_app::compose() {
  auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
  auto copy = make_operator<ops::copy>("copy", arg("elements", _elements));
  auto aff = make_operator<ops::affine>("affine", arg("elements", _elements));
  auto sq = make_operator<ops::square>("square", arg("elements", _elements));
  auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", _elements));
  auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
  register_data_ready_handler(_mailbox->make_handler(rx));
  add_flow(rx, copy, {{"sample", "in"}});
  add_flow(copy, aff);
  add_flow(aff, sq);
  add_flow(sq, sum);
  add_flow(sum, tx);
}

void expect_every_mode_gives_eagers_outputs(
    Application& app, io::mailbox& mb, const std::vector<std::vector<float>>& samples,
    const std::function<void(std::size_t, const std::vector<std::byte>&)>& check) {
  std::vector<execution_mode> modes(all_execution_modes.begin(), all_execution_modes.end());
  modes.push_back(execution_mode::persistent);
  outputs_by_mode results;
  for (const execution_mode mode : modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(mb, samples);
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) check(i, outputs[i]);
    EXPECT_EQ(report.counters.processed, samples.size());
    EXPECT_EQ(report.counters.processed + report.counters.dropped,
              report.counters.last_seq - report.counters.start_seq);
    results[mode] = outputs;
  }
  for (const execution_mode mode : modes) {
    EXPECT_EQ(results[mode], results[execution_mode::eager]) << to_string(mode);
  }
}

std::vector<std::vector<std::byte>> drive_lockstep(io::mailbox& mb,
                                                   const std::vector<std::vector<float>>& samples,
                                                   std::chrono::milliseconds timeout) {
  std::vector<std::vector<std::byte>> outputs;
  for (const auto& sample : samples) {
    const io::output_stamp before = mb.latest_output();
    const std::uint64_t seq = mb.publish(as_bytes(sample));
    std::vector<std::byte> out(mb.settings().output_bytes);
    const std::uint64_t got = mb.wait_output(before, out, timeout).seq;
    EXPECT_EQ(got, seq) << "no output for sample " << seq << " within " << timeout.count() << " ms";
    if (got != seq) break;
    outputs.push_back(std::move(out));
  }
  return outputs;
}

bool wait_for_passes_beyond(const run_handle& run, std::uint64_t passes,
                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (run.counters().iterations <= passes) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

float as_float(const std::vector<std::byte>& bytes) {
  float v = 0.0F;
  std::memcpy(&v, bytes.data(), sizeof(float));
  return v;
}

}  // namespace resident::testing
