// resident bench lab: the pipeline in each submission mode (see lab_bench.hpp).

#include <algorithm>
#include <functional>
#include <memory>
#include <ostream>

#include "bench/common.hpp"
#include "bench/lab/lab_bench.hpp"
#include "bench/lab/lab_common.hpp"
#include "bench/overhead/overhead_bench.hpp"
#include "resident/cuda/error.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::bench {

using namespace lab_detail;

namespace {

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

}  // namespace

nlohmann::json run_lab_mode(const std::string& mode, const lab_settings& s, int order_index,
                            std::ostream& log) {
  if (mode == "persistent") return run_lab_persistent(s, order_index, log);
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

}  // namespace resident::bench
