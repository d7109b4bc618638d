// ops::captured_graph: a cuBLAS SGEMM captured outside resident runs as an operator between an
// upstream operator that writes its input and a downstream one that reads its output, in every
// mode; graphs a mode cannot hold are refused, naming the operator and the node type.

#include <cublas_v2.h>
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

using ::testing::HasSubstr;

constexpr int n = 64;
constexpr std::size_t matrix_elements = std::size_t{n} * n;
constexpr std::size_t matrix_bytes = matrix_elements * sizeof(float);

void cublas_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusName(status));
  }
}

// C = A x B for row-major n x n fp32 matrices by cuBLAS, in full fp32 (pedantic math: no TF32),
// captured into a graph outside resident, as a user of the library would. A and C are the
// graph's input and output; B, the workspace and the handle live as long as this object.
class sgemm_graph {
 public:
  sgemm_graph() : _b_host(random_floats(matrix_elements)) {
    cublas_check(cublasCreate(&_handle), "cublasCreate");
    cublas_check(cublasSetMathMode(_handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    cublas_check(cublasSetPointerMode(_handle, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    RESIDENT_CUDA_TRY(cudaMemcpy(_b.data(), _b_host.data(), matrix_bytes, cudaMemcpyHostToDevice));
    // Once before capturing, so cuBLAS sets itself up (kernels, attributes) outside the graph;
    // on zeros, not on whatever the allocator left in A.
    const stream warm;
    _a.fill_bytes(0, warm);
    enqueue(warm.get());
    warm.synchronize();
    _graph = ops::captured_graph::capture([this](cudaStream_t s) { enqueue(s); });
  }
  sgemm_graph(const sgemm_graph&) = delete;
  sgemm_graph& operator=(const sgemm_graph&) = delete;
  ~sgemm_graph() { (void)cublasDestroy(_handle); }

  [[nodiscard]] graph take_graph() { return std::move(_graph); }
  [[nodiscard]] float* a() const { return _a.data_as<float>(); }
  [[nodiscard]] float* c() const { return _c.data_as<float>(); }
  [[nodiscard]] const std::vector<float>& b() const { return _b_host; }

 private:
  void enqueue(cudaStream_t s) {
    cublas_check(cublasSetStream(_handle, s), "cublasSetStream");
    // cublasSetStream drops the workspace for cuBLAS's own pool, which would allocate while
    // capturing: bind ours again.
    cublas_check(cublasSetWorkspace(_handle, _workspace.data(), _workspace.size()),
                 "cublasSetWorkspace");
    const float alpha = 1.0F;
    const float beta = 0.0F;
    // Row-major C = A x B is column-major C^T = B^T x A^T: B goes first.
    cublas_check(
        cublasSgemm(_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, _b.data_as<const float>(),
                    n, _a.data_as<const float>(), n, &beta, _c.data_as<float>(), n),
        "cublasSgemm");
  }

  std::vector<float> _b_host;
  device_buffer _a{matrix_bytes};
  device_buffer _b{matrix_bytes};
  device_buffer _c{matrix_bytes};
  device_buffer _workspace{std::size_t{4} << 20};
  cublasHandle_t _handle{};
  graph _graph = graph::adopt(nullptr);
};

// rx -> affine (2x + 1, written into the GEMM's A) -> gemm -> copy (reads C) -> tx
class gemm_app final : public Application {
 public:
  explicit gemm_app(sgemm_graph& gemm)
      : Application("captured_gemm"),
        _gemm(gemm),
        mailbox(std::make_shared<io::mailbox>(io::mailbox::config{matrix_bytes, matrix_bytes, 4})) {
  }

  void compose() override {
    const auto elements = static_cast<std::int64_t>(matrix_elements);
    auto rx = make_operator<io::mailbox_rx>("rx", mailbox);
    auto affine = make_operator<ops::affine>("affine", arg("elements", elements));
    auto gemm = make_operator<ops::captured_graph>(
        "gemm", _gemm.take_graph(),
        ops::graph_ports{.inputs = {{"a", _gemm.a(), matrix_bytes}},
                         .outputs = {{"c", _gemm.c(), matrix_bytes}}});
    auto copy = make_operator<ops::copy>("copy", arg("elements", elements));
    auto tx = make_operator<io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, affine, {{"sample", "in"}});
    add_flow(affine, gemm, {{"out", "a"}});
    add_flow(gemm, copy, {{"c", "in"}});
    add_flow(copy, tx);
  }

  sgemm_graph& _gemm;
  std::shared_ptr<io::mailbox> mailbox;
};

// Checks C = (2x + 1) x B against an fp64 reference, within twice the worst-case bound of an fp32
// dot product of n terms: |error| <= 2 n 2^-24 sum_k |a_ik b_kj|.
void expect_product(const std::vector<float>& x, const std::vector<float>& b,
                    const std::vector<std::byte>& output) {
  ASSERT_EQ(output.size(), matrix_bytes);
  std::vector<float> got(matrix_elements);
  std::memcpy(got.data(), output.data(), matrix_bytes);
  std::vector<float> a(matrix_elements);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::fma(2.0F, x[i], 1.0F);  // as affine
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0.0;
      double scale = 0.0;
      for (int k = 0; k < n; ++k) {
        const double term = double{a[i * n + k]} * b[k * n + j];
        want += term;
        scale += std::abs(term);
      }
      const double tolerance = 2.0 * n * std::ldexp(1.0, -24) * scale;
      if (std::abs(got[i * n + j] - want) > tolerance && ++wrong <= 5) {
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got[i * n + j] << ", want " << want
                      << " +- " << tolerance;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(captured_graph, cublas_sgemm_between_two_operators_matches_reference_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  sgemm_graph gemm;
  gemm_app app(gemm);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 3; ++i) samples.push_back(random_floats(matrix_elements));
  std::map<execution_mode, std::vector<std::vector<std::byte>>> results;
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(*app.mailbox, samples);
    const tear_down_report report = run->tear_down();
    EXPECT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      SCOPED_TRACE("sample " + std::to_string(i));
      expect_product(samples[i], gemm.b(), outputs[i]);
    }
    EXPECT_EQ(report.counters.processed, samples.size());
    results[mode] = outputs;
  }
  // One graph, the same kernels in every mode: the very same bits.
  for (const execution_mode mode : all_execution_modes) {
    EXPECT_EQ(results[mode], results[execution_mode::eager]) << to_string(mode);
  }
}

void CUDART_CB host_noop(void*) {}

// rx -> graph (a memcpy of its input to its output, then `extra`) -> tx, for graphs that the
// node rules are about.
class one_graph_app final : public Application {
 public:
  static constexpr std::size_t bytes = 64;

  explicit one_graph_app(std::function<void(cudaStream_t)> extra)
      : Application("one_graph"),
        mailbox(std::make_shared<io::mailbox>(io::mailbox::config{bytes, bytes, 4})) {
    // The graph's own memory (the application's port memory it replaces starts as zeros too):
    // an iteration without a sample copies what is there.
    RESIDENT_CUDA_TRY(cudaMemset(_in.data(), 0, bytes));
    _graph = ops::captured_graph::capture([&](cudaStream_t s) {
      RESIDENT_CUDA_TRY(
          cudaMemcpyAsync(_out.data(), _in.data(), bytes, cudaMemcpyDeviceToDevice, s));
      extra(s);
    });
  }

  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", mailbox);
    // The borrowed form: the operator clones the graph in setup().
    auto g = make_operator<ops::captured_graph>(
        "user_graph", _graph.get(),
        ops::graph_ports{.inputs = {{"in", _in.data(), bytes}},
                         .outputs = {{"out", _out.data(), bytes}}});
    auto tx = make_operator<io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, g, {{"sample", "in"}});
    add_flow(g, tx);
  }

  std::shared_ptr<io::mailbox> mailbox;

 private:
  device_buffer _in{bytes};
  device_buffer _out{bytes};
  graph _graph = graph::adopt(nullptr);
};

std::string run_error(Application& app, execution_mode mode, run_options options = {}) {
  try {
    auto run = run_async(app, mode, std::move(options));
    (void)run->tear_down();
  } catch (const composition_error& e) {
    return e.what();
  }
  return "(no composition_error)";
}

bool round_trip(io::mailbox& mb) {
  std::vector<std::byte> sample(one_graph_app::bytes);
  for (std::size_t i = 0; i < sample.size(); ++i)
    sample[i] = static_cast<std::byte>((i * 7 + 3) & 0xFFU);
  const io::output_stamp before = mb.latest_output();
  const std::uint64_t seq = mb.publish(sample);
  std::vector<std::byte> out(sample.size());
  return mb.wait_output(before, out, 5s).seq == seq && out == sample;
}

TEST(captured_graph, host_node_is_refused_in_conditional_bodies_naming_operator_and_node) {
  RESIDENT_REQUIRE_GPU();
  one_graph_app app(
      [](cudaStream_t s) { RESIDENT_CUDA_TRY(cudaLaunchHostFunc(s, host_noop, nullptr)); });
  // host-graph keeps its DAG in an IF body when not fused; fused, the mailbox's host gate
  // decides and the DAG follows the handler in the launched graph itself (below).
  run_options separate;
  separate.fuse = false;
  for (const auto mode : {execution_mode::host_graph, execution_mode::while_loop}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    const std::string error = run_error(app, mode, separate);
    EXPECT_THAT(error, HasSubstr("operator 'user_graph' (captured_graph): its graph holds a host "
                                 "node, and a conditional node's body may hold only"));
    EXPECT_THAT(error, HasSubstr("eager mode"));
  }
  EXPECT_THAT(run_error(app, execution_mode::while_loop),
              HasSubstr("a conditional node's body may hold only"));
  {
    auto gated = run_async(app, execution_mode::host_graph);
    EXPECT_TRUE(round_trip(*app.mailbox)) << "host-graph, fused: no IF body, the host node runs";
    EXPECT_TRUE(gated->tear_down().stopped);
  }
  const std::string tail = run_error(app, execution_mode::tail);
  EXPECT_THAT(tail,
              HasSubstr("operator 'user_graph' (captured_graph): its graph holds a host node, "
                        "and a device-launchable graph may hold only"));
  // Eager mode launches the graph itself, host node and all.
  auto run = run_async(app, execution_mode::eager);
  EXPECT_TRUE(round_trip(*app.mailbox));
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST(captured_graph, memcpy_graph_runs_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  one_graph_app app([](cudaStream_t) {});
  for (const execution_mode mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    EXPECT_TRUE(round_trip(*app.mailbox));
    EXPECT_TRUE(run->tear_down().stopped);
  }
}

TEST(captured_graph, allocation_node_is_refused_when_the_operator_is_made) {
  RESIDENT_REQUIRE_GPU();
  one_graph_app app([](cudaStream_t s) {
    void* scratch = nullptr;
    RESIDENT_CUDA_TRY(cudaMallocAsync(&scratch, 256, s));
    RESIDENT_CUDA_TRY(cudaMemsetAsync(scratch, 0, 256, s));
    RESIDENT_CUDA_TRY(cudaFreeAsync(scratch, s));
  });
  try {
    (void)app.plan();
    FAIL() << "expected a composition_error";
  } catch (const composition_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("operator 'user_graph' (captured_graph): the graph holds a "
                                    "memory allocation node, which no mode can run"));
  }
}

// An input whose producer writes memory of its own would leave the graph reading stale memory.
class foreign_producer_app final : public Application {
 public:
  void compose() override {
    auto src = make_operator<ops::external_source>("src", _source.data(), 64);
    auto g =
        make_operator<ops::captured_graph>("user_graph", _graph.get(),
                                           ops::graph_ports{.inputs = {{"in", _in.data(), 64}},
                                                            .outputs = {{"out", _out.data(), 64}}});
    add_flow(src, g);
  }

 private:
  device_buffer _source{64};
  device_buffer _in{64};
  device_buffer _out{64};
  graph _graph = ops::captured_graph::capture([this](cudaStream_t s) {
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(_out.data(), _in.data(), 64, cudaMemcpyDeviceToDevice, s));
  });
};

TEST(captured_graph, input_fed_by_a_producer_with_its_own_memory_is_refused) {
  RESIDENT_REQUIRE_GPU();
  foreign_producer_app app;
  try {
    app.materialize();
    FAIL() << "expected a composition_error";
  } catch (const composition_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("operator 'user_graph' (captured_graph): input 'in' is the "
                                    "graph's memory at"));
    EXPECT_THAT(e.what(), HasSubstr("but its producer writes its own memory"));
  }
}

}  // namespace
}  // namespace resident::testing
