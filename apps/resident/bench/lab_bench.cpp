#include "bench/lab_bench.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "bench/common.hpp"
#include "bench/overhead_bench.hpp"
#include "resident/measure/break_even.hpp"

namespace resident::bench {

namespace {

const std::vector<std::string> lab_modes{"eager", "stream", "graph"};

double median(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : measure::summarize(v).p50;
}

double us_since(std::int64_t start_ns) { return static_cast<double>(now_ns() - start_ns) / 1e3; }

double relative_error(double value, double reference) {
  return reference == 0 ? std::fabs(value) : std::fabs(value - reference) / std::fabs(reference);
}

void sync(stream_view s) { RESIDENT_CUDA_TRY(cudaStreamSynchronize(s.get())); }

nlohmann::json null_if_nan(double v) {
  return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
}

}  // namespace

// ---- settings ---------------------------------------------------------------------------------

void lab_settings::make_quick() {
  settle_ms = 50;
  iterations = 200;
  repeats = 3;
  bucket_replays = 200;
  update_trials = 50;
}

void lab_settings::validate() const {
  if (mode != "all" && std::find(lab_modes.begin(), lab_modes.end(), mode) == lab_modes.end()) {
    throw std::invalid_argument("--mode must be eager, stream, graph or all, got '" + mode + "'");
  }
  if (order.empty()) throw std::invalid_argument("--order names no mode");
  std::set<std::string> seen;
  for (const auto& m : order) {
    if (std::find(lab_modes.begin(), lab_modes.end(), m) == lab_modes.end()) {
      throw std::invalid_argument("--order: unknown mode '" + m + "' (eager, stream, graph)");
    }
    if (!seen.insert(m).second) throw std::invalid_argument("--order names '" + m + "' twice");
  }
  if (mode != "all" && seen.count(mode) == 0) {
    throw std::invalid_argument("--mode " + mode + " is not in --order");
  }
  if (copy != "memcpy" && copy != "kernel") {
    throw std::invalid_argument("--copy must be memcpy or kernel, got '" + copy + "'");
  }
  if (graph_edges != "programmatic" && graph_edges != "full") {
    throw std::invalid_argument("--graph-edges must be programmatic or full, got '" + graph_edges +
                                "'");
  }
  if (!(settle_ms >= 0)) throw std::invalid_argument("--settle-ms must not be negative");
  if (elements <= 0) throw std::invalid_argument("--elements must be positive");
  if (elements > (std::int64_t{1} << 28)) {
    throw std::invalid_argument("--elements must be at most 2^28 (1 GiB of fp32 per buffer)");
  }
  if (warmup < 0) throw std::invalid_argument("--warmup must not be negative");
  if (iterations <= 0) throw std::invalid_argument("--iterations must be positive");
  if (repeats <= 0) throw std::invalid_argument("--repeats must be positive");
  (void)parse_buckets(buckets);  // throws with the reason
  if (bucket_counts <= 0) throw std::invalid_argument("--bucket-counts must be positive");
  if (bucket_replays <= 0) throw std::invalid_argument("--bucket-replays must be positive");
  if (update_trials <= 0) throw std::invalid_argument("--update-trials must be positive");
}

std::vector<std::string> lab_settings::modes_in_order() const {
  std::vector<std::string> out;
  for (const auto& m : order) {
    if (mode == "all" || mode == m) out.push_back(m);
  }
  return out;
}

// ---- the pipeline -----------------------------------------------------------------------------

lab_app::lab_app(std::int64_t elements, float* input, float* result, std::string copy)
    : Application("lab"),
      _elements(elements),
      _copy(std::move(copy)),
      _input(input),
      _result(result) {}

void lab_app::compose() {
  const auto bytes = static_cast<std::size_t>(_elements) * sizeof(float);
  auto source = make_operator<ops::external_source>("input", _input, bytes);
  auto copy = make_operator<ops::copy>("copy", arg("elements", _elements), arg("method", _copy));
  auto affine = make_operator<ops::affine>("affine", arg("elements", _elements));
  auto square = make_operator<ops::square>("square", arg("elements", _elements));
  auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", _elements));
  auto sink = make_operator<ops::external_sink>("result", _result, sizeof(float));
  add_flow(source, copy);
  add_flow(copy, affine);
  add_flow(affine, square);
  add_flow(square, sum);
  add_flow(sum, sink);
}

std::vector<float> linspace01(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    v[static_cast<std::size_t>(i)] =
        n == 1 ? 0.0F : static_cast<float>(static_cast<double>(i) / static_cast<double>(n - 1));
  }
  return v;
}

double lab_reference(const std::vector<float>& x) {
  double sum = 0;
  for (const float v : x) {
    const double y = 2.0 * static_cast<double>(v) + 1.0;
    sum += y * y;
  }
  return sum;
}

lab_buffers::lab_buffers(std::int64_t n)
    : elements(n),
      input(static_cast<std::size_t>(n) * sizeof(float)),
      result(sizeof(float)),
      result_host(sizeof(float)),
      values(linspace01(n)) {}

void lab_buffers::fill(float value, stream_view s) {
  sync(s);  // the previous use of the input is done before the host overwrites it
  const std::vector<float> v(static_cast<std::size_t>(elements), value);
  RESIDENT_CUDA_TRY(cudaMemcpy(input.data(), v.data(), input.size(), cudaMemcpyHostToDevice));
}

void lab_buffers::restore(stream_view s) {
  sync(s);
  RESIDENT_CUDA_TRY(cudaMemcpy(input.data(), values.data(), input.size(), cudaMemcpyHostToDevice));
}

float lab_buffers::read_result(stream_view s) {
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(result_host.data(), result.data(), sizeof(float),
                                    cudaMemcpyDeviceToHost, s.get()));
  sync(s);
  return *result_host.data_as<float>();
}

double lab_buffers::reference() const { return lab_reference(values); }

// ---- submission modes -------------------------------------------------------------------------

/// The receipt's fields of a mode before anything runs.
nlohmann::json lab_mode_header(const std::string& mode, const lab_settings& s, int order_index) {
  return {{"implementation", "resident"},
          {"mode", mode},
          {"order_index", order_index},
          {"elements", s.elements},
          {"iterations", s.iterations},
          {"repeats", s.repeats},
          {"warmup", s.warmup},
          {"stream", mode == "eager" ? "legacy default" : "explicit non-blocking"},
          {"copy", s.copy},
          {"kernels_per_iteration", s.copy == "kernel" ? 4 : 3},
          {"operations_per_iteration", 4},
          {"capture_us", nullptr},
          {"instantiate_us", nullptr},
          {"setup_us", nullptr},
          {"first_launch_us", nullptr},
          {"notes", nlohmann::json::array({s.copy == "kernel" ? "the copy step is a copy kernel"
                                                              : "the copy step is a "
                                                                "device-to-device "
                                                                "cudaMemcpyAsync (a memcpy node "
                                                                "in graph mode)"})}};
}

launch_edges edges_of(const std::string& name) {
  return name == "full" ? launch_edges::full : launch_edges::programmatic;
}

/// One submission mode's run: the pipeline, how it is submitted, and its timing.
struct lab_mode_run {
  lab_mode_run(const std::string& m, const lab_settings& settings)
      : mode(m),
        s(settings),
        buf(settings.elements),
        app(settings.elements, buf.input.data_as<float>(), buf.result.data_as<float>(),
            settings.copy),
        sub(app),
        // eager uses the legacy default stream on purpose: it is what unadorned CUDA code gets.
        st(m == "eager" ? cudaStreamLegacy : explicit_stream.get()) {}

  struct timings {
    std::vector<double> host_us, device_us, e2e_us;
  };

  const std::string& mode;
  const lab_settings& s;
  lab_buffers buf;
  lab_app app;
  direct_submission sub;
  resident::stream explicit_stream;
  cudaStream_t st;
  std::unique_ptr<graph_exec> exec;
  event start{true};
  event stop{true};

  /// Graph mode: captures and instantiates the pipeline, and times that and the first launch.
  void capture(nlohmann::json& r) {
    r["graph_edges"] = s.graph_edges;
    r["notes"].push_back(s.graph_edges == "programmatic"
                             ? "kernel nodes depend on each other through programmatic edges "
                               "(programmatic dependent launch): each is scheduled while its "
                               "predecessor runs and waits on the device for its data"
                             : "kernel nodes depend on each other through full edges");
    sync(st);
    std::int64_t t = now_ns();
    graph g = sub.capture(st, edges_of(s.graph_edges));
    const double capture_us = us_since(t);
    t = now_ns();
    exec = std::make_unique<graph_exec>(g.get());
    const double instantiate_us = us_since(t);
    t = now_ns();
    exec->launch(st);  // the first launch also uploads the graph's work descriptions
    sync(st);
    r["capture_us"] = capture_us;
    r["instantiate_us"] = instantiate_us;
    r["setup_us"] = capture_us + instantiate_us;
    r["first_launch_us"] = us_since(t);
  }

  /// What the timed runs call once per iteration.
  std::function<void()> submitter() {
    return exec ? std::function<void()>([this] { exec->launch(st); })
                : std::function<void()>([this] { sub.submit(st); });
  }

  /// Known inputs through the very path that is timed (for graph mode, replay reads the retained
  /// input buffer the host just overwrote: the static-buffer-plus-copy-in pattern).
  nlohmann::json preflight(const std::function<void()>& submit) {
    const double n = static_cast<double>(s.elements);
    auto check = [&](float value, double expected) {
      buf.fill(value, st);
      submit();
      const double got = buf.read_result(st);
      const bool ok = relative_error(got, expected) <= lab_tolerance;
      return nlohmann::json{{"sum", got}, {"expected", expected}, {"ok", ok}};
    };
    nlohmann::json p = {
        {"tolerance", lab_tolerance}, {"zeros", check(0.0F, n)}, {"ones", check(1.0F, 9 * n)}};
    buf.restore(st);
    return p;
  }

  timings time_runs(const std::function<void()>& one) {
    timings t;
    for (std::int64_t rep = 0; rep < s.repeats; ++rep) {
      start.record(st);
      const std::int64_t t0 = now_ns();
      for (std::int64_t i = 0; i < s.iterations; ++i) one();
      const std::int64_t t1 = now_ns();
      stop.record(st);
      sync(st);  // the final, scoped synchronize: this mode's stream only
      const std::int64_t t2 = now_ns();
      const double iters = static_cast<double>(s.iterations);
      t.host_us.push_back(static_cast<double>(t1 - t0) / 1e3 / iters);
      t.e2e_us.push_back(static_cast<double>(t2 - t0) / 1e3 / iters);
      t.device_us.push_back(static_cast<double>(event::elapsed_ms(start, stop)) * 1e3 / iters);
    }
    return t;
  }

  /// The same pipeline captured with the other kind of edges, timed the same way right after:
  /// what programmatic dependent launch buys (or costs) on this device.
  nlohmann::json other_edges() {
    const std::string other = s.graph_edges == "full" ? "programmatic" : "full";
    graph g = sub.capture(st, edges_of(other));
    graph_exec other_exec(g.get());
    for (std::int64_t i = 0; i < s.warmup; ++i) other_exec.launch(st);
    buf.restore(st);
    other_exec.launch(st);
    const double other_result = buf.read_result(st);
    const timings t = time_runs([&] { other_exec.launch(st); });
    return {{"graph_edges", other},
            {"host_submit_us", median(t.host_us)},
            {"device_us", median(t.device_us)},
            {"end_to_end_us", median(t.e2e_us)},
            {"relative_error", relative_error(other_result, buf.reference())}};
  }

  /// Host µs per call of `k` calls of `one`.
  double host_us_per_call(std::int64_t k, const std::function<void()>& one) {
    sync(st);
    const std::int64_t t0 = now_ns();
    for (std::int64_t j = 0; j < k; ++j) one();
    const double host = static_cast<double>(now_ns() - t0) / 1e3 / static_cast<double>(k);
    sync(st);
    return host;
  }

  /// The four calls of the pipeline made directly, without operators, ports or CaptureContext.
  void four_raw_calls(device_buffer& work, device_buffer& affine, device_buffer& squared) {
    const std::size_t bytes = static_cast<std::size_t>(s.elements) * sizeof(float);
    if (s.copy == "kernel") {
      ops::detail::launch_copy(buf.input.data_as<const float>(), work.data_as<float>(), s.elements,
                               st);
    } else {
      RESIDENT_CUDA_TRY(
          cudaMemcpyAsync(work.data(), buf.input.data(), bytes, cudaMemcpyDeviceToDevice, st));
    }
    ops::detail::launch_affine(work.data_as<const float>(), affine.data_as<float>(), s.elements,
                               2.0F, 1.0F, st);
    ops::detail::launch_square(affine.data_as<const float>(), squared.data_as<float>(), s.elements,
                               st);
    ops::detail::launch_sum_reduce(squared.data_as<const float>(), buf.result.data_as<float>(),
                                   s.elements, st);
  }

  /// Where host submission goes: each operator submitted alone, and an empty kernel, the floor
  /// of any launch on this machine; and the same four calls without the framework.
  nlohmann::json host_submit_by_operator() {
    nlohmann::json per_op = nlohmann::json::array();
    const std::int64_t k = std::min<std::int64_t>(s.iterations, 200);
    for (std::size_t i = 0; i < sub.order().size(); ++i) {
      const double host = host_us_per_call(k, [&] { sub.submit_operator(i, st); });
      per_op.push_back({{"operator", sub.order()[i]->name()}, {"host_submit_us", host}});
    }
    const double empty = host_us_per_call(k, [&] { launch_empty_kernel(st); });
    per_op.push_back({{"operator", "(empty kernel, for reference)"}, {"host_submit_us", empty}});
    // What the framework adds to eager submission.
    const std::size_t bytes = static_cast<std::size_t>(s.elements) * sizeof(float);
    device_buffer work(bytes), affine(bytes), squared(bytes);
    const double raw = host_us_per_call(k, [&] { four_raw_calls(work, affine, squared); });
    per_op.push_back({{"operator", "(the four calls without operators)"}, {"host_submit_us", raw}});
    return per_op;
  }

  /// Where device time goes in graph mode: each operator captured alone and replayed back to
  /// back, next to a graph holding one empty kernel (the floor of a replay).
  nlohmann::json device_by_operator() {
    nlohmann::json per_op = nlohmann::json::array();
    const std::int64_t k = std::min<std::int64_t>(s.iterations, 500);
    auto device_per_replay = [&](const std::function<void(stream_view)>& record) {
      graph g = capture_graph(st, record);
      graph_exec e(g.get());
      e.launch(st);
      start.record(st);
      for (std::int64_t j = 0; j < k; ++j) e.launch(st);
      stop.record(st);
      sync(st);
      return static_cast<double>(event::elapsed_ms(start, stop)) * 1e3 / static_cast<double>(k);
    };
    for (std::size_t i = 0; i < sub.order().size(); ++i) {
      if (sub.order()[i]->name() == "input" || sub.order()[i]->name() == "result") continue;
      per_op.push_back({{"operator", sub.order()[i]->name()},
                        {"device_us_per_replay",
                         device_per_replay([&](stream_view cs) { sub.submit_operator(i, cs); })}});
    }
    per_op.push_back({{"operator", "(one empty kernel, for reference)"},
                      {"device_us_per_replay",
                       device_per_replay([&](stream_view cs) { launch_empty_kernel(cs.get()); })}});
    return per_op;
  }
};

nlohmann::json run_lab_mode(const std::string& mode, const lab_settings& s, int order_index,
                            std::ostream& log) {
  lab_mode_run run(mode, s);
  nlohmann::json r = lab_mode_header(mode, s, order_index);
  if (mode == "graph") run.capture(r);
  const std::function<void()> submit = run.submitter();
  r["preflight"] = run.preflight(submit);
  for (std::int64_t i = 0; i < s.warmup; ++i) submit();
  run.start.record(run.st);  // prime both events outside the timed region
  run.stop.record(run.st);
  sync(run.st);
  const lab_mode_run::timings main_runs = run.time_runs(submit);
  r["host_submit_us"] = median(main_runs.host_us);
  r["device_us"] = median(main_runs.device_us);
  r["end_to_end_us"] = median(main_runs.e2e_us);
  r["host_submit_us_runs"] = main_runs.host_us;
  r["device_us_runs"] = main_runs.device_us;
  r["end_to_end_us_runs"] = main_runs.e2e_us;
  if (run.exec) r["other_edges"] = run.other_edges();
  // Measured after the timed runs, so they cannot disturb them.
  if (!run.exec) r["host_submit_by_operator"] = run.host_submit_by_operator();
  if (run.exec) r["device_by_operator"] = run.device_by_operator();
  run.buf.restore(run.st);
  submit();
  const double got = run.buf.read_result(run.st);
  const double ref = run.buf.reference();
  r["result"] = got;
  r["reference"] = ref;
  r["relative_error"] = relative_error(got, ref);
  log << "lab " << mode << ": end-to-end " << r["end_to_end_us"].get<double>()
      << " us/iteration, relative error " << r["relative_error"].get<double>() << "\n";
  return r;
}

// ---- bucketed graph pool ----------------------------------------------------------------------

nlohmann::json run_lab_buckets(const lab_settings& s, std::ostream& log) {
  const std::vector<std::size_t> buckets = parse_buckets(s.buckets);
  const std::size_t capacity =
      std::max<std::size_t>(buckets.back(), static_cast<std::size_t>(s.bucket_counts));
  ops::lab_batch batch(capacity, 1);
  resident::stream st;
  graph_pool pool(
      buckets, [&](std::size_t bucket, stream_view cs) { batch.record(bucket, cs); }, st);

  auto request_values = [](std::size_t count) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<float>(i + 1);
    return v;
  };
  auto expected_sum = [](std::size_t count) {
    double sum = 0;
    for (std::size_t i = 1; i <= count; ++i) sum += (2.0 * i + 1) * (2.0 * i + 1);
    return sum;
  };

  nlohmann::json per_bucket = nlohmann::json::array();
  event start(true);
  event stop(true);
  for (const bucket_cost& c : pool.costs()) {
    const auto values = request_values(c.bucket);
    batch.stage(values, c.bucket, st);
    for (int i = 0; i < 10; ++i) pool.launch_bucket(c.bucket, st);
    start.record(st);
    stop.record(st);
    sync(st);
    start.record(st);
    const std::int64_t t0 = now_ns();
    for (std::int64_t i = 0; i < s.bucket_replays; ++i) pool.launch_bucket(c.bucket, st);
    const std::int64_t t1 = now_ns();
    stop.record(st);
    sync(st);
    const std::int64_t t2 = now_ns();
    const double reps = static_cast<double>(s.bucket_replays);
    const double got = batch.read_result(st);
    per_bucket.push_back(
        {{"bucket", c.bucket},
         {"capture_us", c.capture_us},
         {"instantiate_us", c.instantiate_us},
         {"upload_us", c.upload_us},
         {"nodes", c.nodes},
         {"graph_device_bytes", c.device_bytes},
         {"static_buffer_bytes", batch.device_bytes()},
         {"replays", s.bucket_replays},
         {"replay_host_submit_us", static_cast<double>(t1 - t0) / 1e3 / reps},
         {"replay_device_us", static_cast<double>(event::elapsed_ms(start, stop)) * 1e3 / reps},
         {"replay_end_to_end_us", static_cast<double>(t2 - t0) / 1e3 / reps},
         {"replay_result_ok", relative_error(got, expected_sum(c.bucket)) <= lab_tolerance}});
  }

  nlohmann::json counts = nlohmann::json::array();
  bool all_ok = true;
  for (std::size_t count = 1; count <= static_cast<std::size_t>(s.bucket_counts); ++count) {
    const auto out = batch.run(request_values(count), pool, st);
    const double expected = expected_sum(count);
    const bool ok = relative_error(out.sum, expected) <= lab_tolerance;
    all_ok = all_ok && ok;
    counts.push_back({{"count", count},
                      {"bucket", out.bucket ? nlohmann::json(*out.bucket) : nlohmann::json()},
                      {"path", out.bucket ? "graph" : "eager fallback"},
                      {"sum", out.sum},
                      {"expected", expected},
                      {"ok", ok}});
  }

  // Why masking: the lab's six requests in a bucket of eight, summed with and without the mask.
  nlohmann::json demo = nullptr;
  if (capacity >= 8) {
    const auto six = request_values(6);
    batch.stage(six, 8, st);
    batch.record(8, st, /*mask=*/false);
    const float unmasked = batch.read_result(st);
    batch.stage(six, 8, st);
    batch.record(8, st, /*mask=*/true);
    const float masked = batch.read_result(st);
    demo = {{"requests", six},
            {"bucket", 8},
            {"reference", expected_sum(6)},
            {"unmasked", unmasked},
            {"masked", masked}};
  }
  log << "lab buckets: " << (all_ok ? "every count correct" : "WRONG sums") << "\n";
  return {{"kind", "bucket_pool"}, {"buckets", per_bucket}, {"counts", counts},
          {"all_correct", all_ok}, {"padding_demo", demo},  {"capacity", capacity},
          {"request_width", 1}};
}

// ---- graph updates ----------------------------------------------------------------------------

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

}  // namespace

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

// ---- derived numbers --------------------------------------------------------------------------

namespace {

const nlohmann::json* find_mode(const nlohmann::json& results, const std::string& impl,
                                const std::string& mode) {
  for (const auto& r : results) {
    if (r.value("implementation", "") == impl && r.value("mode", "") == mode &&
        !r.contains("kind")) {
      return &r;
    }
  }
  return nullptr;
}

double number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::nan("");
}

}  // namespace

nlohmann::json lab_break_even(const nlohmann::json& modes, const std::string& implementation) {
  nlohmann::json out = nlohmann::json::array();
  const nlohmann::json* g = find_mode(modes, implementation, "graph");
  if (g == nullptr) return out;
  const double setup = number(*g, "setup_us");
  const double replay = number(*g, "end_to_end_us");
  if (std::isnan(setup) || std::isnan(replay)) return out;
  for (const char* baseline : {"eager", "stream"}) {
    const nlohmann::json* b = find_mode(modes, implementation, baseline);
    if (b == nullptr) continue;
    const double base = number(*b, "end_to_end_us");
    const auto reuse = measure::first_cheaper_reuse(setup, base, replay);
    out.push_back({{"kind", "break_even"},
                   {"implementation", implementation},
                   {"baseline", baseline},
                   {"setup_us", setup},
                   {"baseline_end_to_end_us", base},
                   {"graph_end_to_end_us", replay},
                   {"saving_us", base - replay},
                   {"first_cheaper_reuse", reuse ? nlohmann::json(*reuse) : nlohmann::json()}});
  }
  return out;
}

nlohmann::json lab_ratios(const nlohmann::json& ours, const nlohmann::json& peer) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& mode : lab_modes) {
    const nlohmann::json* r = find_mode(ours, "resident", mode);
    const nlohmann::json* t = find_mode(peer, "torch", mode);
    if (r == nullptr || t == nullptr) continue;
    nlohmann::json ratio = {{"kind", "ratio"}, {"mode", mode}, {"peer", "torch"}};
    for (const char* field : {"host_submit_us", "device_us", "end_to_end_us"}) {
      ratio[std::string("torch_over_resident_") + field] =
          null_if_nan(number(*t, field) / number(*r, field));
    }
    out.push_back(ratio);
  }
  return out;
}

nlohmann::json lab_targets(const nlohmann::json& results) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&](const std::string& name, double value, double target, bool at_most) {
    const bool known = !std::isnan(value);
    out.push_back({{"name", name},
                   {"value", null_if_nan(value)},
                   {"target", target},
                   {"met", known && (at_most ? value <= target : value >= target)}});
  };
  if (const auto* g = find_mode(results, "resident", "graph")) {
    add("graph end-to-end us/iteration <= 6", number(*g, "end_to_end_us"), 6.0, true);
    add("graph host submission us/iteration <= 2.5", number(*g, "host_submit_us"), 2.5, true);
    add("graph setup (capture + instantiate) us <= 500", number(*g, "setup_us"), 500.0, true);
  }
  const auto* e = find_mode(results, "resident", "eager");
  const auto* te = find_mode(results, "torch", "eager");
  if (e != nullptr && te != nullptr) {
    add("eager end-to-end speed-up over PyTorch eager >= 2.5",
        number(*te, "end_to_end_us") / number(*e, "end_to_end_us"), 2.5, false);
  }
  double worst = 0;
  bool any = false;
  for (const auto& r : results) {
    if (r.contains("relative_error") && r["relative_error"].is_number()) {
      worst = std::max(worst, r["relative_error"].get<double>());
      any = true;
    }
  }
  if (any) add("worst relative error vs FP64 <= 1e-6", worst, lab_tolerance, true);
  return out;
}

namespace {

// The first mode of a run otherwise meets an idle GPU (its SM clock idles far below its maximum)
// and cold host caches; settling first makes the mode order a question of drift only.
void settle(const lab_settings& s) {
  if (s.settle_ms <= 0) return;
  lab_buffers buf(s.elements);
  lab_app app(s.elements, buf.input.data_as<float>(), buf.result.data_as<float>(), s.copy);
  direct_submission sub(app);
  resident::stream st;
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(s.settle_ms * 1e6);
  while (now_ns() < end) {
    for (int i = 0; i < 64; ++i) sub.submit(st);
    sync(st);
  }
}

}  // namespace

measure::receipt run_lab_bench(const lab_settings& s, std::ostream& log) {
  measure::receipt receipt("lab", s.command);
  describe_machine(receipt);
  receipt.settings = {{"mode", s.mode},
                      {"order", s.order},
                      {"elements", s.elements},
                      {"warmup", s.warmup},
                      {"iterations", s.iterations},
                      {"repeats", s.repeats},
                      {"buckets", s.buckets},
                      {"bucket_counts", s.bucket_counts},
                      {"bucket_replays", s.bucket_replays},
                      {"update_trials", s.update_trials},
                      {"copy", s.copy},
                      {"graph_edges", s.graph_edges},
                      {"statistic", "median over repeats of per-iteration means"}};
  receipt.settings["settle_ms"] = s.settle_ms;
  settle(s);
  int index = 0;
  for (const auto& mode : s.modes_in_order()) {
    receipt.results.push_back(run_lab_mode(mode, s, index++, log));
  }
  for (auto& b : lab_break_even(receipt.results, "resident")) receipt.results.push_back(b);
  if (!s.peer.empty()) {
    std::ifstream in(s.peer);
    if (!in) throw std::runtime_error("--peer: cannot read " + s.peer);
    nlohmann::json peer;
    try {
      peer = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error("--peer: " + s.peer + " is not JSON: " + e.what());
    }
    if (!peer.contains("results") || !peer["results"].is_array()) {
      throw std::runtime_error("--peer: " + s.peer + " has no results array");
    }
    nlohmann::json info = peer;
    info.erase("results");
    receipt.settings["peer"] = info;
    for (const auto& r : peer["results"]) receipt.results.push_back(r);
    for (auto& b : lab_break_even(peer["results"], "torch")) receipt.results.push_back(b);
    for (auto& r : lab_ratios(receipt.results, peer["results"])) receipt.results.push_back(r);
  }
  receipt.results.push_back(run_lab_buckets(s, log));
  receipt.results.push_back(run_lab_updates(s, log));
  receipt.results.push_back({{"kind", "targets"}, {"targets", lab_targets(receipt.results)}});
  return receipt;
}

std::string lab_failures(const measure::receipt& receipt) {
  std::string out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : "; ") + what; };
  for (const auto& r : receipt.results) {
    const std::string kind = r.value("kind", "");
    const std::string name = r.value("implementation", "") + " " + r.value("mode", "");
    if (kind.empty() && r.contains("preflight")) {
      for (const char* p : {"zeros", "ones"}) {
        if (!r["preflight"][p].value("ok", false)) add(name + " preflight " + p);
      }
      if (!(r.value("relative_error", 1.0) <= lab_tolerance)) add(name + " relative error");
    } else if (kind == "bucket_pool" && !r.value("all_correct", false)) {
      add("bucket pool sums");
    } else if (kind == "graph_updates" && !r.value("all_correct", false)) {
      add("graph update paths");
    }
  }
  return out;
}

// ---- the human table --------------------------------------------------------------------------

std::string lab_table(const measure::receipt& receipt) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2);
  out << "impl      mode    host_submit  device  end_to_end  setup     first_launch  rel_error\n";
  auto cell = [](const nlohmann::json& j, const char* key, int width) {
    std::ostringstream c;
    c << std::fixed << std::setprecision(2) << std::setw(width);
    if (j.contains(key) && j[key].is_number()) {
      c << j[key].get<double>();
    } else {
      c << "-";
    }
    return c.str();
  };
  for (const auto& r : receipt.results) {
    if (r.contains("kind") || !r.contains("mode")) continue;
    out << std::left << std::setw(10) << r.value("implementation", "?") << std::setw(8)
        << r.value("mode", "?") << std::right << cell(r, "host_submit_us", 11)
        << cell(r, "device_us", 8) << cell(r, "end_to_end_us", 12) << cell(r, "setup_us", 9)
        << cell(r, "first_launch_us", 14) << "  " << std::scientific << std::setprecision(1)
        << r.value("relative_error", std::nan("")) << std::fixed << std::setprecision(2) << "\n";
  }
  out << "(us per iteration, median of repeats; setup = capture + instantiate, us)\n";
  auto breakdown = [&](const nlohmann::json& r, const char* list, const char* value,
                       const char* title) {
    if (!r.contains(list)) return;
    out << "  " << r["implementation"].get<std::string>() << " " << r["mode"].get<std::string>()
        << " " << title << ":";
    for (const auto& o : r[list]) {
      const std::string name = o["operator"].get<std::string>();
      if (name == "input" || name == "result") continue;
      out << " " << name << " " << o[value].get<double>() << ";";
    }
    out << "\n";
  };
  for (const auto& r : receipt.results) {
    if (r.contains("kind") || !r.contains("mode")) continue;
    breakdown(r, "host_submit_by_operator", "host_submit_us", "host us per submission");
    breakdown(r, "device_by_operator", "device_us_per_replay", "device us per one-node replay");
  }
  for (const auto& r : receipt.results) {
    const std::string kind = r.value("kind", "");
    if (kind == "break_even") {
      out << "break-even " << r["implementation"].get<std::string>() << " graph vs "
          << r["baseline"].get<std::string>() << ": ";
      if (r["first_cheaper_reuse"].is_null()) {
        out << "none (graph saves nothing per iteration)\n";
      } else {
        out << "cheaper from replay " << r["first_cheaper_reuse"].get<std::int64_t>() << "\n";
      }
    } else if (kind == "ratio") {
      out << "torch/resident " << r["mode"].get<std::string>() << ": end-to-end "
          << cell(r, "torch_over_resident_end_to_end_us", 0) << "x, host submission "
          << cell(r, "torch_over_resident_host_submit_us", 0) << "x\n";
    } else if (kind == "bucket_pool") {
      out << "buckets: ";
      for (const auto& b : r["buckets"]) {
        out << b["bucket"].get<std::size_t>() << " (replay " << cell(b, "replay_end_to_end_us", 0)
            << " us, setup " << b["capture_us"].get<double>() + b["instantiate_us"].get<double>()
            << " us) ";
      }
      out << "\ncounts 1.." << r["counts"].size() << ": "
          << (r["all_correct"].get<bool>() ? "all correct" : "WRONG") << "\n";
      if (!r["padding_demo"].is_null()) {
        const auto& d = r["padding_demo"];
        out << "padding 6 requests into 8: unmasked " << d["unmasked"].get<double>() << ", masked "
            << d["masked"].get<double>() << ", reference " << d["reference"].get<double>() << "\n";
      }
    } else if (kind == "graph_updates") {
      for (const auto& p : r["paths"]) {
        out << "update " << p["path"].get<std::string>() << ": " << cell(p["cost"], "mean_us", 0)
            << " us mean" << (p["correct"].get<bool>() ? "" : "  WRONG") << "\n";
      }
    } else if (kind == "targets") {
      for (const auto& t : r["targets"]) {
        out << (t["met"].get<bool>() ? "[met]    " : "[missed] ") << t["name"].get<std::string>()
            << ": " << cell(t, "value", 0) << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace resident::bench
