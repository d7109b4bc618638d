// resident bench lab: graph updates: each way to point a captured pipeline at other buffers (see
// lab_bench.hpp).

#include <algorithm>
#include <functional>
#include <memory>
#include <ostream>

#include "bench/common.hpp"
#include "bench/lab/lab_bench.hpp"
#include "bench/lab/lab_common.hpp"
#include "resident/cuda/error.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::bench {

using namespace lab_detail;

namespace {

// The nodes of the lab graph, found by kind and kernel function rather than by position.
struct lab_nodes {
  cudaGraphNode_t copy{};
  cudaGraphNode_t affine{};
  cudaGraphNode_t square{};
  cudaGraphNode_t sum{};
};

lab_nodes find_lab_nodes(const graph& g) {
  const void* affine_fn = ops::detail::make_affine_node(nullptr, nullptr, 1, 1, 0).get().func;
  const void* square_fn = ops::detail::make_square_node(nullptr, nullptr, 1).get().func;
  const void* sum_fn = ops::detail::make_sum_reduce_node(nullptr, nullptr, 1).get().func;
  lab_nodes found;
  for (cudaGraphNode_t node : g.nodes()) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemcpy) {
      found.copy = node;
    } else if (type == cudaGraphNodeTypeKernel) {
      cudaKernelNodeParams p{};
      RESIDENT_CUDA_TRY(cudaGraphKernelNodeGetParams(node, &p));
      if (p.func == affine_fn) found.affine = node;
      if (p.func == square_fn) found.square = node;
      if (p.func == sum_fn) found.sum = node;
    }
  }
  if (!found.copy || !found.affine || !found.square || !found.sum) {
    throw std::runtime_error(
        "lab graph: expected a memcpy node and affine, square and sum "
        "kernel nodes");
  }
  return found;
}

// A second set of pipeline buffers, of another size, for retargeting by node updates.
struct retarget_buffers {
  explicit retarget_buffers(std::int64_t n)
      : data(n), work(bytes(n)), affine(bytes(n)), squared(bytes(n)) {}
  static std::size_t bytes(std::int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); }
  lab_buffers data;
  device_buffer work;
  device_buffer affine;
  device_buffer squared;
};

nlohmann::json cost_summary(const std::vector<double>& us) {
  if (us.empty()) return {{"n", 0}};
  const measure::summary m = measure::summarize(us);
  return {{"n", m.n}, {"mean_us", m.mean}, {"p50_us", m.p50}, {"p99_us", m.p99}, {"max_us", m.max}};
}

/// The pipeline without its square step: another topology, for the refused update.
class no_square_app final : public Application {
 public:
  no_square_app(std::int64_t n, float* in, float* out)
      : Application("lab-no-square"), _n(n), _in(in), _out(out) {}
  void compose() override {
    const auto bytes = static_cast<std::size_t>(_n) * sizeof(float);
    auto source = make_operator<ops::external_source>("input", _in, bytes);
    auto copy = make_operator<ops::copy>("copy", arg("elements", _n));
    auto affine = make_operator<ops::affine>("affine", arg("elements", _n));
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", _n));
    auto sink = make_operator<ops::external_sink>("result", _out, sizeof(float));
    add_flow(source, copy);
    add_flow(copy, affine);
    add_flow(affine, sum);
    add_flow(sum, sink);
  }

 private:
  std::int64_t _n;
  float* _in;
  float* _out;
};

/// Graph updates: the pipeline captured on buffers A, and each way to point it at buffers B (of
/// another size) and back.
struct lab_updates {
  explicit lab_updates(const lab_settings& settings)
      : s(settings),
        n_a(settings.elements),
        n_b(std::max<std::int64_t>(1, settings.elements / 2 + 7)),  // another size
        a(n_a),
        app_a(n_a, a.input.data_as<float>(), a.result.data_as<float>()),
        sub_a(app_a),
        g_a(sub_a.capture(st)),
        exec(g_a.get()),
        nodes(find_lab_nodes(g_a)),
        b(n_b) {
    for (auto& v : b.data.values) v = 0.25F + 0.5F * v;  // different values as well as size
    a.restore(st);
    b.data.restore(st);
  }

  const lab_settings& s;
  std::int64_t n_a;
  std::int64_t n_b;
  resident::stream st;
  lab_buffers a;
  lab_app app_a;
  direct_submission sub_a;
  graph g_a;
  graph_exec exec;
  lab_nodes nodes;
  retarget_buffers b;

  bool result_ok(lab_buffers& target) {
    return relative_error(target.read_result(st), target.reference()) <= lab_tolerance;
  }

  /// 1. Node-parameter updates: the memcpy node and the three kernel nodes get B's pointers and
  ///    size in place. The captured parameters of A (held by g_a) switch it back.
  nlohmann::json node_parameters() {
    auto affine = ops::detail::make_affine_node(b.work.data_as<const float>(),
                                                b.affine.data_as<float>(), n_b, 2.0F, 1.0F);
    auto square = ops::detail::make_square_node(b.affine.data_as<const float>(),
                                                b.squared.data_as<float>(), n_b);
    auto sum = ops::detail::make_sum_reduce_node(b.squared.data_as<const float>(),
                                                 b.data.result.data_as<float>(), n_b);
    cudaMemcpy3DParms copy_a{};
    RESIDENT_CUDA_TRY(cudaGraphMemcpyNodeGetParams(nodes.copy, &copy_a));
    cudaKernelNodeParams affine_a{}, square_a{}, sum_a{};
    RESIDENT_CUDA_TRY(cudaGraphKernelNodeGetParams(nodes.affine, &affine_a));
    RESIDENT_CUDA_TRY(cudaGraphKernelNodeGetParams(nodes.square, &square_a));
    RESIDENT_CUDA_TRY(cudaGraphKernelNodeGetParams(nodes.sum, &sum_a));
    std::vector<double> to_b, to_a;
    bool ok = true;
    for (std::int64_t t = 0; t < s.update_trials; ++t) {
      std::int64_t t0 = now_ns();
      exec.set_memcpy_node_params_1d(nodes.copy, b.work.data(), b.data.input.data(),
                                     retarget_buffers::bytes(n_b), cudaMemcpyDeviceToDevice);
      exec.set_kernel_node_params(nodes.affine, affine.get());
      exec.set_kernel_node_params(nodes.square, square.get());
      exec.set_kernel_node_params(nodes.sum, sum.get());
      to_b.push_back(us_since(t0));
      exec.launch(st);
      ok = ok && result_ok(b.data);
      t0 = now_ns();
      RESIDENT_CUDA_TRY(cudaGraphExecMemcpyNodeSetParams(exec.get(), nodes.copy, &copy_a));
      exec.set_kernel_node_params(nodes.affine, affine_a);
      exec.set_kernel_node_params(nodes.square, square_a);
      exec.set_kernel_node_params(nodes.sum, sum_a);
      to_a.push_back(us_since(t0));
      exec.launch(st);
      ok = ok && result_ok(a);
    }
    std::vector<double> all = to_b;
    all.insert(all.end(), to_a.begin(), to_a.end());
    return {{"path", "node parameters"},
            {"what",
             "cudaGraphExecMemcpyNodeSetParams1D + 3x "
             "cudaGraphExecKernelNodeSetParams, A <-> B"},
            {"nodes_updated", 4},
            {"cost", cost_summary(all)},
            {"correct", ok}};
  }

  /// 2. Whole-graph update from a re-capture of the same pipeline on B's buffers and size.
  nlohmann::json whole_graph(direct_submission& sub_b) {
    std::vector<double> capture_us, update_us;
    bool ok = true;
    std::string refused;
    for (std::int64_t t = 0; t < s.update_trials; ++t) {
      std::int64_t t0 = now_ns();
      graph g_b = sub_b.capture(st);
      capture_us.push_back(us_since(t0));
      t0 = now_ns();
      const graph_update_result to_b = exec.try_update(g_b.get());
      update_us.push_back(us_since(t0));
      if (!to_b.updated) {
        refused = to_b.reason();
        ok = false;
        break;
      }
      exec.launch(st);
      ok = ok && result_ok(b.data);
      t0 = now_ns();
      const graph_update_result to_a = exec.try_update(g_a.get());
      update_us.push_back(us_since(t0));
      if (!to_a.updated) {
        refused = to_a.reason();
        ok = false;
        break;
      }
      exec.launch(st);
      ok = ok && result_ok(a);
    }
    return {{"path", "whole-graph update"},
            {"what", "re-capture on B, then cudaGraphExecUpdate (and back to A)"},
            {"capture", cost_summary(capture_us)},
            {"cost", cost_summary(update_us)},
            {"refused", refused.empty() ? nlohmann::json() : nlohmann::json(refused)},
            {"correct", ok}};
  }

  /// 3. Re-instantiation, the cost the two update paths avoid.
  nlohmann::json reinstantiate(direct_submission& sub_b) {
    graph g_b = sub_b.capture(st);
    std::vector<double> instantiate_us;
    bool ok = true;
    for (std::int64_t t = 0; t < s.update_trials; ++t) {
      const std::int64_t t0 = now_ns();
      graph_exec fresh(g_b.get());
      instantiate_us.push_back(us_since(t0));
      if (t == 0) {
        fresh.launch(st);
        ok = result_ok(b.data);
      }
    }
    return {{"path", "re-instantiate"},
            {"what", "cudaGraphInstantiate of the re-captured graph"},
            {"cost", cost_summary(instantiate_us)},
            {"correct", ok}};
  }

  /// 4. A refused update: the pipeline without its square step has another topology, so
  ///    cudaGraphExecUpdate says no and the executable is instantiated afresh.
  nlohmann::json refused_update() {
    lab_buffers c(n_a);
    no_square_app app_c(n_a, c.input.data_as<float>(), c.result.data_as<float>());
    direct_submission sub_c(app_c);
    c.restore(st);
    graph g_c = sub_c.capture(st);
    graph_exec target(g_a.get());
    const std::int64_t t0 = now_ns();
    const graph_update_result r = target.update_or_reinstantiate(g_c.get());
    const double cost = us_since(t0);
    target.launch(st);
    double expected = 0;
    for (const float v : c.values) expected += 2.0 * v + 1.0;
    const bool ok = relative_error(c.read_result(st), expected) <= lab_tolerance;
    return {{"path", "refused update, re-instantiated"},
            {"what", "cudaGraphExecUpdate to a graph without the square node"},
            {"update_result", r.reason()},
            {"updated_in_place", r.updated},
            {"cost", cost_summary({cost})},
            {"correct", ok && !r.updated}};
  }
};

}  // namespace

nlohmann::json run_lab_updates(const lab_settings& s, std::ostream& log) {
  lab_updates u(s);
  nlohmann::json paths = nlohmann::json::array();
  paths.push_back(u.node_parameters());
  lab_app app_b(u.n_b, u.b.data.input.data_as<float>(), u.b.data.result.data_as<float>());
  direct_submission sub_b(app_b);
  paths.push_back(u.whole_graph(sub_b));
  paths.push_back(u.reinstantiate(sub_b));
  paths.push_back(u.refused_update());
  bool all_ok = true;
  for (const auto& p : paths) all_ok = all_ok && p["correct"].get<bool>();
  log << "lab updates: " << (all_ok ? "every path correct" : "a path went WRONG") << "\n";
  return {{"kind", "graph_updates"},   {"elements_a", u.n_a}, {"elements_b", u.n_b},
          {"trials", s.update_trials}, {"paths", paths},      {"all_correct", all_ok}};
}

}  // namespace resident::bench
