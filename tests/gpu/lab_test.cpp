// Submission modes, bucketed graph pools and graph updates on the GPU, every result against an
// FP64 CPU reference.

#include <gmock/gmock.h>

#include <cmath>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpu/support.hpp"
#include "resident/ops/lab_batch.hpp"

#if RESIDENT_HAVE_BENCH
#include "bench/lab/lab_bench.hpp"
#endif

namespace resident::testing {
namespace {

constexpr double tolerance = 1e-6;

double rel_error(double got, double ref) { return std::fabs(got - ref) / std::fabs(ref); }

// input (caller's memory) -> copy -> affine -> square -> sum -> result (caller's memory)
class pipeline final : public Application {
 public:
  pipeline(std::int64_t n, void* in, void* out, std::string copy_method = "memcpy")
      : Application("pipeline"), _n(n), _in(in), _out(out), _copy(std::move(copy_method)) {}
  void compose() override {
    auto src = make_operator<ops::external_source>("input", _in, bytes());
    auto copy = make_operator<ops::copy>("copy", arg("elements", _n), arg("method", _copy));
    auto affine = make_operator<ops::affine>("affine", arg("elements", _n));
    auto square = make_operator<ops::square>("square", arg("elements", _n));
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", _n));
    auto sink = make_operator<ops::external_sink>("result", _out, sizeof(float));
    add_flow(src, copy);
    add_flow(copy, affine);
    add_flow(affine, square);
    add_flow(square, sum);
    add_flow(sum, sink);
  }
  [[nodiscard]] std::size_t bytes() const { return static_cast<std::size_t>(_n) * sizeof(float); }

 private:
  std::int64_t _n;
  void* _in;
  void* _out;
  std::string _copy;
};

struct io_buffers {
  explicit io_buffers(std::int64_t n)
      : input(static_cast<std::size_t>(n) * sizeof(float)), result(sizeof(float)) {}
  void upload(const std::vector<float>& v) {
    RESIDENT_CUDA_TRY(
        cudaMemcpy(input.data(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  float read(stream_view s) {
    s.synchronize();
    float out = 0;
    RESIDENT_CUDA_TRY(cudaMemcpy(&out, result.data(), sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }
  device_buffer input;
  device_buffer result;
};

TEST(direct_submission, eager_stream_and_graph_match_the_fp64_reference) {
  RESIDENT_REQUIRE_GPU();
  const std::int64_t n = 4096 + 37;
  const auto x = random_floats(static_cast<std::size_t>(n));
  const double ref = lab_reference(x);
  io_buffers io(n);
  io.upload(x);
  pipeline app(n, io.input.data(), io.result.data());
  direct_submission sub(app);
  ASSERT_EQ(sub.order().size(), 6U);

  sub.submit(cudaStreamLegacy);  // eager: the legacy default stream
  const float eager = io.read(cudaStreamLegacy);
  stream s;
  RESIDENT_CUDA_TRY(cudaMemset(io.result.data(), 0, sizeof(float)));
  sub.submit(s);
  const float on_stream = io.read(s);
  RESIDENT_CUDA_TRY(cudaMemset(io.result.data(), 0, sizeof(float)));
  graph g = sub.capture(s);
  graph_exec exec(g.get());
  exec.launch(s);
  const float replayed = io.read(s);

  EXPECT_LE(rel_error(eager, ref), tolerance);
  EXPECT_EQ(on_stream, eager);  // same kernels, same order: the same bits
  EXPECT_EQ(replayed, eager);
}

// Edges of a captured graph by type: {full, programmatic}.
std::pair<std::size_t, std::size_t> count_edges(const graph& g) {
  std::size_t n = 0;
  RESIDENT_CUDA_TRY(cudaGraphGetEdges(g.get(), nullptr, nullptr, nullptr, &n));
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  RESIDENT_CUDA_TRY(cudaGraphGetEdges(g.get(), from.data(), to.data(), data.data(), &n));
  std::size_t programmatic = 0;
  for (const auto& e : data) {
    if (e.type == cudaGraphDependencyTypeProgrammatic) ++programmatic;
  }
  return {n - programmatic, programmatic};
}

TEST(direct_submission, programmatic_edges_give_the_bits_of_full_edges_on_every_input) {
  // With programmatic dependent launch a kernel is scheduled while its producer still runs and
  // must wait on the device before reading: a missing wait shows as a wrong or changed sum.
  RESIDENT_REQUIRE_GPU();
  const std::int64_t n = 4096 + 37;
  for (const std::string copy : {"kernel", "memcpy"}) {
    SCOPED_TRACE("copy " + copy);
    io_buffers io(n);
    pipeline app(n, io.input.data(), io.result.data(), copy);
    direct_submission sub(app);
    stream s;
    graph full = sub.capture(s);
    graph fast = sub.capture(s, launch_edges::programmatic);
    const auto [full_plain, full_programmatic] = count_edges(full);
    const auto [fast_plain, fast_programmatic] = count_edges(fast);
    EXPECT_EQ(full_programmatic, 0U);
    // affine -> square -> sum always; copy -> affine too when the copy is a kernel.
    EXPECT_EQ(fast_programmatic, copy == "kernel" ? 3U : 2U);
    EXPECT_EQ(fast_plain + fast_programmatic, full_plain);
    graph_exec full_exec(full.get());
    graph_exec fast_exec(fast.get());
    for (int trial = 0; trial < 20; ++trial) {
      const auto x = random_floats(static_cast<std::size_t>(n));
      io.upload(x);  // the static-buffer-plus-copy-in pattern: replays read the captured input
      full_exec.launch(s);
      const float want = io.read(s);
      RESIDENT_CUDA_TRY(cudaMemset(io.result.data(), 0, sizeof(float)));
      for (int replay = 0; replay < 50; ++replay) fast_exec.launch(s);
      const float got = io.read(s);
      EXPECT_EQ(got, want) << "trial " << trial;
      EXPECT_LE(rel_error(got, lab_reference(x)), tolerance) << "trial " << trial;
    }
  }
}

TEST(direct_submission, refuses_an_application_with_a_data_ready_handler) {
  RESIDENT_REQUIRE_GPU();
  class with_handler final : public Application {
   public:
    void compose() override {
      mailbox = std::make_shared<io::mailbox>(io::mailbox::config{4, 4, 4});
      auto rx = make_operator<io::mailbox_rx>("rx", mailbox);
      auto tx = make_operator<io::mailbox_tx>("tx", mailbox);
      register_data_ready_handler(mailbox->make_handler(rx));
      add_flow(rx, tx, {{"sample", "in"}});
    }
    std::shared_ptr<io::mailbox> mailbox;
  } app;
  try {
    direct_submission sub(app);
    FAIL() << "a handler application was accepted";
  } catch (const composition_error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("data-ready handler"));
  }
}

TEST(direct_submission, capture_on_the_legacy_stream_is_refused) {
  RESIDENT_REQUIRE_GPU();
  io_buffers io(64);
  pipeline app(64, io.input.data(), io.result.data());
  direct_submission sub(app);
  EXPECT_THROW((void)sub.capture(cudaStreamLegacy), std::invalid_argument);
  // The stream is usable afterwards: nothing was left in capture mode.
  stream s;
  graph g = sub.capture(s);
  EXPECT_EQ(g.nodes().size(), 4U);  // memcpy + three kernels
}

TEST(graph_replay, reads_the_addresses_captured_not_a_new_buffer) {
  RESIDENT_REQUIRE_GPU();
  const std::int64_t n = 1000;
  const auto first = random_floats(n);
  const auto second = random_floats(n);
  io_buffers io(n);
  io.upload(first);
  pipeline app(n, io.input.data(), io.result.data());
  direct_submission sub(app);
  stream s;
  graph g = sub.capture(s);
  graph_exec exec(g.get());

  // "Reassigning" the input: new data in a new buffer is invisible to the graph.
  device_buffer other(static_cast<std::size_t>(n) * sizeof(float));
  RESIDENT_CUDA_TRY(cudaMemcpy(other.data(), second.data(), other.size(), cudaMemcpyHostToDevice));
  exec.launch(s);
  EXPECT_LE(rel_error(io.read(s), lab_reference(first)), tolerance);
  EXPECT_GT(rel_error(io.read(s), lab_reference(second)), tolerance);

  // The static-buffer pattern: copy the new data into the retained input, in stream order,
  // then replay.
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(io.input.data(), other.data(), other.size(),
                                    cudaMemcpyDeviceToDevice, s.get()));
  exec.launch(s);
  EXPECT_LE(rel_error(io.read(s), lab_reference(second)), tolerance);
}

TEST(graph_pool, every_count_from_1_to_17_matches_the_masked_reference) {
  RESIDENT_REQUIRE_GPU();
  const std::size_t width = 3;
  ops::lab_batch batch(17, width);
  stream s;
  graph_pool pool(
      {1, 2, 4, 8, 16}, [&](std::size_t b, stream_view cs) { batch.record(b, cs); }, s);
  ASSERT_EQ(pool.costs().size(), 5U);
  for (std::size_t count = 1; count <= 17; ++count) {
    SCOPED_TRACE(count);
    const auto values = random_floats(count * width);
    const auto out = batch.run(values, pool, s);
    EXPECT_EQ(out.bucket, select_bucket(pool.buckets(), count));
    if (count == 17) {
      EXPECT_FALSE(out.bucket.has_value());  // beyond 16: eager fallback
    }
    const double ref = ops::padded_batch_reference(values, values.size(), true);
    EXPECT_LE(rel_error(out.sum, ref), tolerance);
  }
}

TEST(graph_pool, six_requests_in_a_bucket_of_eight_sum_to_454_only_when_masked) {
  RESIDENT_REQUIRE_GPU();
  ops::lab_batch batch(16, 1);
  stream s;
  graph_pool pool(
      {8}, [&](std::size_t b, stream_view cs) { batch.record(b, cs); }, s);
  const std::vector<float> six{1, 2, 3, 4, 5, 6};
  const auto out = batch.run(six, pool, s);
  EXPECT_EQ(out.bucket, 8U);
  EXPECT_EQ(out.sum, 454.0F);
  batch.stage(six, 8, s);
  batch.record(8, s, /*mask=*/false);
  EXPECT_EQ(batch.read_result(s), 456.0F);  // the two dummies, (2*0+1)^2 each, leak in
}

TEST(graph_pool, a_batch_larger_than_the_capacity_is_refused) {
  RESIDENT_REQUIRE_GPU();
  ops::lab_batch batch(4, 1);
  stream s;
  graph_pool pool(
      {2, 4}, [&](std::size_t b, stream_view cs) { batch.record(b, cs); }, s);
  const std::vector<float> five(5, 1.0F);
  EXPECT_THROW((void)batch.run(five, pool, s), std::invalid_argument);
}

TEST(graph_update, node_parameters_retarget_buffers_and_size_in_place) {
  RESIDENT_REQUIRE_GPU();
  const std::int64_t na = 2048;
  const std::int64_t nb = 777;
  const auto xa = random_floats(na);
  const auto xb = random_floats(nb);
  io_buffers a(na);
  a.upload(xa);
  pipeline app(na, a.input.data(), a.result.data());
  direct_submission sub(app);
  stream s;
  graph g = sub.capture(s);
  graph_exec exec(g.get());

  // B: its own input, intermediates and result.
  io_buffers b(nb);
  b.upload(xb);
  const auto bytes = static_cast<std::size_t>(nb) * sizeof(float);
  device_buffer work(bytes), affine(bytes), squared(bytes);
  auto affine_node = ops::detail::make_affine_node(work.data_as<const float>(),
                                                   affine.data_as<float>(), nb, 2.0F, 1.0F);
  auto square_node =
      ops::detail::make_square_node(affine.data_as<const float>(), squared.data_as<float>(), nb);
  auto sum_node = ops::detail::make_sum_reduce_node(squared.data_as<const float>(),
                                                    b.result.data_as<float>(), nb);
  int kernels = 0;
  for (cudaGraphNode_t node : g.nodes()) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemcpy) {
      exec.set_memcpy_node_params_1d(node, work.data(), b.input.data(), bytes,
                                     cudaMemcpyDeviceToDevice);
      continue;
    }
    cudaKernelNodeParams p{};
    RESIDENT_CUDA_TRY(cudaGraphKernelNodeGetParams(node, &p));
    for (const auto* candidate : {&affine_node.get(), &square_node.get(), &sum_node.get()}) {
      if (candidate->func == p.func) {
        exec.set_kernel_node_params(node, *candidate);
        ++kernels;
      }
    }
  }
  ASSERT_EQ(kernels, 3);
  RESIDENT_CUDA_TRY(cudaMemset(a.result.data(), 0, sizeof(float)));
  exec.launch(s);
  EXPECT_LE(rel_error(b.read(s), lab_reference(xb)), tolerance);
  EXPECT_EQ(a.read(s), 0.0F);  // A's result untouched: the graph now runs on B
}

TEST(graph_update, whole_graph_update_from_a_recapture_and_a_refused_one) {
  RESIDENT_REQUIRE_GPU();
  const std::int64_t na = 4096;
  const std::int64_t nb = 1500;
  const auto xa = random_floats(na);
  const auto xb = random_floats(nb);
  io_buffers a(na), b(nb);
  a.upload(xa);
  b.upload(xb);
  pipeline app_a(na, a.input.data(), a.result.data());
  pipeline app_b(nb, b.input.data(), b.result.data());
  direct_submission sub_a(app_a), sub_b(app_b);
  stream s;
  graph ga = sub_a.capture(s);
  graph gb = sub_b.capture(s);
  graph_exec exec(ga.get());

  const graph_update_result r = exec.try_update(gb.get());
  ASSERT_TRUE(r.updated) << r.reason();
  exec.launch(s);
  EXPECT_LE(rel_error(b.read(s), lab_reference(xb)), tolerance);

  // A graph of another shape (a single kernel) cannot update this one: refused, unchanged...
  device_buffer scratch(sizeof(float));
  graph other = capture_graph(s, [&](stream_view cs) {
    ops::detail::launch_square(scratch.data_as<const float>(), scratch.data_as<float>(), 1,
                               cs.get());
  });
  const graph_update_result refused = exec.try_update(other.get());
  EXPECT_FALSE(refused.updated);
  EXPECT_STREQ(refused.reason(), "topology changed");
  RESIDENT_CUDA_TRY(cudaMemset(b.result.data(), 0, sizeof(float)));
  exec.launch(s);
  EXPECT_LE(rel_error(b.read(s), lab_reference(xb)), tolerance);  // still B
  // ...and update_or_reinstantiate replaces it.
  const graph_update_result again = exec.update_or_reinstantiate(ga.get());
  EXPECT_TRUE(again.updated);  // same topology as B: updated in place
  exec.launch(s);
  EXPECT_LE(rel_error(a.read(s), lab_reference(xa)), tolerance);
}

#if RESIDENT_HAVE_BENCH
TEST(bench_lab, quick_run_checks_every_mode_bucket_and_update_path) {
  RESIDENT_REQUIRE_GPU();
  bench::lab_settings settings;
  settings.make_quick();
  settings.order = {"graph", "stream", "eager", "persistent"};
  settings.command = "resident bench lab --quick (gpu test)";
  std::ostringstream log;
  const measure::receipt receipt = bench::run_lab_bench(settings, log);
  EXPECT_EQ(bench::lab_failures(receipt), "");
  std::vector<std::string> modes;
  for (const auto& r : receipt.results) {
    if (r.contains("kind")) continue;
    SCOPED_TRACE(r.dump());
    modes.push_back(r["mode"].get<std::string>());
    for (const char* field : {"host_submit_us", "device_us", "end_to_end_us", "relative_error"}) {
      EXPECT_TRUE(r[field].is_number()) << field;
    }
    EXPECT_GT(r["end_to_end_us"].get<double>(), 0.0);
    EXPECT_EQ(r["host_submit_us_runs"].size(), static_cast<std::size_t>(settings.repeats));
  }
  EXPECT_EQ(modes, (std::vector<std::string>{"graph", "stream", "eager", "persistent"}));
  bool saw_refused = false;
  for (const auto& r : receipt.results) {
    if (r.value("kind", "") != "graph_updates") continue;
    for (const auto& p : r["paths"]) {
      if (p.contains("update_result")) {
        saw_refused = p["update_result"] == "topology changed";
      }
    }
  }
  EXPECT_TRUE(saw_refused);
  EXPECT_NE(bench::lab_table(receipt).find("break-even resident graph vs eager"),
            std::string::npos);
}

TEST(bench_lab, persistent_workers_claim_complete_and_recycle_every_slot) {
  RESIDENT_REQUIRE_GPU();
  // Four workers and 300 items per repeat: far more than the 64-slot queue, so every slot is
  // recycled several times while other workers still run theirs; every item's result checked
  // through the preflight and the final sum, and the workers leave on their quit descriptors.
  bench::lab_settings settings;
  settings.make_quick();
  settings.iterations = 300;
  settings.persistent_workers = 4;
  std::ostringstream log;
  const nlohmann::json r = bench::run_lab_persistent(settings, 0, log);
  SCOPED_TRACE(r.dump());
  EXPECT_TRUE(r["preflight"]["zeros"]["ok"].get<bool>());
  EXPECT_TRUE(r["preflight"]["ones"]["ok"].get<bool>());
  EXPECT_LE(r["relative_error"].get<double>(), bench::lab_tolerance);
  EXPECT_EQ(r["workers"].get<int>(), std::min(4, bench::lab_persistent_workers(4)));
  EXPECT_GT(r["device_us"].get<double>(), 0.0);
}
#endif

}  // namespace
}  // namespace resident::testing
