#include "bench/overhead/overhead_bench.hpp"

#include <chrono>
#include <functional>
#include <iomanip>
#include <ostream>
#include <span>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "bench/workloads.hpp"

namespace resident::bench {

void overhead_settings::make_quick() {
  iterations = 2000;
  idle_seconds = 0.2;
  launches = 1000;
}

void overhead_settings::validate() const {
  if (iterations < 2) throw std::invalid_argument("--iterations must be at least 2");
  if (!(idle_seconds > 0)) throw std::invalid_argument("--idle-seconds must be positive");
  if (launches < 1) throw std::invalid_argument("--launches must be positive");
}

namespace {

using namespace std::chrono_literals;

nlohmann::json cost(const std::string& name, const std::string& mode, const std::string& method,
                    const std::vector<double>& us) {
  nlohmann::json j = {{"name", name}, {"mode", mode}, {"method", method}};
  if (us.empty()) {
    j["n"] = 0;
    return j;
  }
  j.update(measure::summary_fields(measure::summarize(us)));
  return j;
}

std::uint64_t at(const telemetry_entry& e, stage s) {
  return e.stamp_ns[static_cast<std::size_t>(s)];
}

// Runs `app` in `mode` for `iterations` loop iterations (20 s at most), tears it down and returns
// the handle, whose telemetry stays readable. Room is kept for four times as many entries, so
// the iterations run between reaching the count and stopping lose none: any loss is an error.
// `started` runs once the loop is up (a sample published before it would be before the loop's
// start point, which the loop never processes).
std::unique_ptr<run_handle> run_stamped(Application& app, execution_mode mode, run_options options,
                                        std::int64_t iterations, const std::string& what,
                                        const std::function<void()>& started = {}) {
  options.telemetry_samples = static_cast<std::size_t>(iterations) * 4;
  auto handle = run_async(app, mode, options);
  if (started) started();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (handle->counters().iterations < static_cast<std::uint64_t>(iterations) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  const tear_down_report report = handle->tear_down();
  const std::string where = what + " (" + std::string(to_string(mode)) + "): ";
  if (!report.stopped || !report.error.empty()) throw std::runtime_error(where + report.error);
  if (handle->telemetry_lost() != 0) {
    throw std::runtime_error(where + std::to_string(handle->telemetry_lost()) +
                             " telemetry entries lost; the stages need consecutive iterations");
  }
  return handle;
}

// Stage-by-stage costs of a free-running loop whose handler and body only stamp.
void staged_costs(execution_mode mode, const overhead_settings& s, measure::receipt& receipt,
                  std::ostream& log) {
  overhead_app app;
  const auto handle = run_stamped(app, mode, {}, s.iterations + 16, "overhead");
  const auto& entries = handle->telemetry();
  std::vector<double> handler, to_controller, controller, transition, body_to_end, loop_back,
      iteration;
  const auto us = [](std::uint64_t a, std::uint64_t b) { return static_cast<double>(b - a) / 1e3; };
  // Skip the first few: the first iterations warm instruction caches and clocks.
  for (std::size_t k = 8; k + 1 < entries.size(); ++k) {
    const auto& e = entries[k];
    const auto& next = entries[k + 1];
    if (next.seq != e.seq + 1) continue;
    handler.push_back(us(at(e, stage::handler_start), at(e, stage::detect)));
    to_controller.push_back(us(at(e, stage::detect), at(e, stage::controller_start)));
    controller.push_back(us(at(e, stage::controller_start), at(e, stage::controller_end)));
    transition.push_back(us(at(e, stage::controller_end), at(e, stage::body_start)));
    body_to_end.push_back(us(at(e, stage::body_start), at(e, stage::end_marker)));
    loop_back.push_back(us(at(e, stage::end_marker), at(next, stage::handler_start)));
    iteration.push_back(us(at(e, stage::handler_start), at(next, stage::handler_start)));
  }
  const std::string m(to_string(mode));
  const std::string dev = "device %globaltimer stamps (32 ns steps): ";
  const bool tail = mode == execution_mode::tail;
  receipt.results.push_back(
      cost("handler", m, dev + "handler kernel start -> its publish", handler));
  receipt.results.push_back(
      cost("handler_to_controller", m, dev + "handler publish -> controller start", to_controller));
  receipt.results.push_back(cost(tail ? "dispatcher" : "controller", m,
                                 dev + "controller start -> predicate set / launch issued",
                                 controller));
  receipt.results.push_back(cost(tail ? "tail_launch_w" : "if_transition", m,
                                 dev + (tail ? "dispatcher launch -> first kernel of graph W"
                                             : "predicate set -> first kernel of the IF body"),
                                 transition));
  receipt.results.push_back(cost("body_to_end_marker", m,
                                 dev + "one-kernel body start -> end marker start", body_to_end));
  receipt.results.push_back(cost(tail ? "end_marker_and_tail_launch_m" : "end_marker_and_loop_back",
                                 m, dev + "end marker start -> next handler start", loop_back));
  receipt.results.push_back(cost("busy_iteration", m,
                                 dev + "handler start -> next handler start, one-kernel body",
                                 iteration));
  log << "overhead: " << m << " busy iteration mean "
      << (iteration.empty() ? 0.0 : measure::summarize(iteration).mean) << " us\n";
}

// Where a busy iteration of the mailbox loop goes, in the mode as it runs by default (fused
// where it fuses): rx -> tx with the `empty` workload, one sample re-run every iteration (policy
// newest: a sample already processed is processed again and counted as a repeat), so the
// iterations follow each other with no sensor wait. The stamps are the mailbox's and the loop
// steps' own, the same device functions in every mode, so persistent mode is measured too.
void mailbox_stages(execution_mode mode, const overhead_settings& s, measure::receipt& receipt,
                    std::ostream& log) {
  io_app app("empty");
  run_options options;
  options.policy = sample_policy::newest;
  const std::uint64_t token = io_app::token(1);
  const auto handle =
      run_stamped(app, mode, options, s.iterations + 16, "overhead mailbox stages",
                  [&] { (void)app.mailbox().publish(std::as_bytes(std::span(&token, 1))); });
  const std::string m(to_string(mode));
  const auto& entries = handle->telemetry();
  std::vector<double> handler, decide, release_to_commit, commit_to_end, loop_back, iteration;
  const auto us = [](std::uint64_t a, std::uint64_t b) { return static_cast<double>(b - a) / 1e3; };
  for (std::size_t k = 8; k + 1 < entries.size(); ++k) {
    const auto& e = entries[k];
    const auto& next = entries[k + 1];
    if (e.repeat == 0 || next.repeat == 0) continue;  // only back-to-back re-runs
    handler.push_back(us(at(e, stage::handler_start), at(e, stage::handler_end)));
    decide.push_back(us(at(e, stage::handler_end), at(e, stage::controller_end)));
    release_to_commit.push_back(us(at(e, stage::controller_end), at(e, stage::commit)));
    commit_to_end.push_back(us(at(e, stage::commit), at(e, stage::end_marker)));
    loop_back.push_back(us(at(e, stage::end_marker), at(next, stage::handler_start)));
    iteration.push_back(us(at(e, stage::handler_start), at(next, stage::handler_start)));
  }
  const std::string dev = "device %globaltimer stamps, mailbox rx -> tx re-running one sample: ";
  receipt.results.push_back(
      cost("mailbox_handler", m, dev + "handler start -> sample copied in", handler));
  receipt.results.push_back(
      cost("mailbox_decide", m, dev + "sample copied in -> controller released the DAG", decide));
  receipt.results.push_back(cost("mailbox_release_to_commit", m,
                                 dev + "DAG released -> output committed (the IF transition, "
                                       "tail launch or barrier, and the egress)",
                                 release_to_commit));
  receipt.results.push_back(cost("mailbox_commit_to_end_marker", m,
                                 dev + "output committed -> end marker", commit_to_end));
  receipt.results.push_back(cost("mailbox_loop_back", m,
                                 dev + "end marker -> next handler start (host-graph: the host's "
                                       "synchronize and next launch)",
                                 loop_back));
  receipt.results.push_back(
      cost("mailbox_iteration", m, dev + "handler start -> next handler start", iteration));
  log << "overhead: " << m << " mailbox iteration mean "
      << (iteration.empty() ? 0.0 : measure::summarize(iteration).mean) << " us\n";
}

// Idle iterations: nothing ever arrives, δ = 0, no in-kernel polling. `fuse`: the mailbox's
// handler kernel carries the controller step (run_options::fuse), or a controller kernel runs.
void idle_iteration(execution_mode mode, bool fuse, const overhead_settings& s,
                    measure::receipt& receipt, std::ostream& log) {
  io_app app("empty");
  run_options options;
  options.fuse = fuse;
  auto handle = run_async(app, mode, options);
  const std::uint64_t before = handle->counters().iterations;
  const std::int64_t t0 = now_ns();
  std::this_thread::sleep_for(std::chrono::duration<double>(s.idle_seconds));
  const std::uint64_t after = handle->counters().iterations;
  const std::int64_t t1 = now_ns();
  const tear_down_report report = handle->tear_down();
  if (!report.stopped || !report.error.empty()) {
    throw std::runtime_error("idle (" + std::string(to_string(mode)) + "): " + report.error);
  }
  const double host_us = static_cast<double>(t1 - t0) / 1e3 / static_cast<double>(after - before);
  nlohmann::json j = {
      {"name", fuse ? "idle_iteration" : "idle_iteration_separate_controller"},
      {"mode", std::string(to_string(mode))},
      {"method",
       "device: (last - first controller pass %globaltimer) / (passes - 1); host: wall time over "
       "heartbeat advance"},
      {"n", report.counters.iterations},
      {"mean_us", report.mean_iteration_ns / 1e3},
      {"host_mean_us", host_us}};
  receipt.results.push_back(j);
  log << "overhead: idle " << to_string(mode) << (fuse ? "" : " (separate controller)")
      << " iteration " << report.mean_iteration_ns / 1e3 << " us\n";
}

void host_costs(const overhead_settings& s, measure::receipt& receipt, std::ostream& log) {
  stream st;
  RESIDENT_CUDA_TRY(cudaStreamBeginCapture(st.get(), cudaStreamCaptureModeThreadLocal));
  launch_empty_kernel(st.get());
  cudaGraph_t raw = nullptr;
  RESIDENT_CUDA_TRY(cudaStreamEndCapture(st.get(), &raw));
  graph g = graph::adopt(raw);
  graph_exec exec(g.get());
  exec.upload(st);
  for (int i = 0; i < 100; ++i) {  // warm up
    exec.launch(st);
    st.synchronize();
  }
  std::vector<double> launch;
  std::vector<double> sync;
  std::vector<double> round_trip;
  for (std::int64_t i = 0; i < s.launches; ++i) {
    const std::int64_t t0 = now_ns();
    exec.launch(st);
    const std::int64_t t1 = now_ns();
    st.synchronize();
    const std::int64_t t2 = now_ns();
    launch.push_back(static_cast<double>(t1 - t0) / 1e3);
    sync.push_back(static_cast<double>(t2 - t1) / 1e3);
    round_trip.push_back(static_cast<double>(t2 - t0) / 1e3);
  }
  const std::string host = "host CLOCK_MONOTONIC around the call, one-kernel graph: ";
  receipt.results.push_back(
      cost("host_graph_launch", "host-graph", host + "cudaGraphLaunch returns", launch));
  receipt.results.push_back(cost("host_synchronize", "host-graph",
                                 host + "cudaStreamSynchronize after the launch returns", sync));
  receipt.results.push_back(
      cost("host_launch_and_sync", "host-graph", host + "launch + synchronize", round_trip));
  log << "overhead: host graph launch " << measure::summarize(launch).mean << " us, sync "
      << measure::summarize(sync).mean << " us\n";
}

}  // namespace

measure::receipt run_overhead_bench(const overhead_settings& s, std::ostream& log) {
  s.validate();
  if (device_count() == 0) {
    throw std::runtime_error("bench overhead needs a CUDA GPU; none is usable here (" +
                             no_device_reason() + ")");
  }
  measure::receipt receipt("overhead", s.command);
  describe_machine(receipt);
  receipt.settings = {
      {"iterations", s.iterations}, {"idle_seconds", s.idle_seconds}, {"launches", s.launches}};
  host_costs(s, receipt, log);
  for (const auto mode :
       {execution_mode::while_loop, execution_mode::tail, execution_mode::host_graph}) {
    staged_costs(mode, s, receipt, log);
  }
  for (const auto mode : {execution_mode::while_loop, execution_mode::tail,
                          execution_mode::host_graph, execution_mode::persistent}) {
    mailbox_stages(mode, s, receipt, log);
  }
  for (const bool fuse : {true, false}) {
    idle_iteration(execution_mode::while_loop, fuse, s, receipt, log);
    idle_iteration(execution_mode::tail, fuse, s, receipt, log);
  }
  idle_iteration(execution_mode::persistent, true, s, receipt, log);  // one kernel, no graph
  const smi_reading after = read_nvidia_smi();
  if (after.sm_clock_mhz > 0) receipt.device.sm_clock_mhz_seen.push_back(after.sm_clock_mhz);
  return receipt;
}

std::string overhead_table(const measure::receipt& receipt) {
  std::ostringstream os;
  os << std::left << std::setw(30) << "cost" << std::setw(12) << "mode" << std::right
     << std::setw(8) << "n" << std::setw(9) << "mean" << std::setw(9) << "p50" << std::setw(9)
     << "p99" << std::setw(9) << "max"
     << "   (us)\n";
  const auto num = [](const nlohmann::json& r, const char* key) {
    std::ostringstream v;
    if (r.contains(key)) v << std::fixed << std::setprecision(2) << r[key].get<double>();
    return v.str();
  };
  for (const auto& r : receipt.results) {
    os << std::left << std::setw(30) << r["name"].get<std::string>() << std::setw(12)
       << r["mode"].get<std::string>() << std::right << std::setw(8) << r["n"].get<std::int64_t>()
       << std::setw(9) << num(r, "mean_us") << std::setw(9) << num(r, "p50_us") << std::setw(9)
       << num(r, "p99_us") << std::setw(9) << num(r, "max_us") << "\n";
  }
  return os.str();
}

}  // namespace resident::bench
