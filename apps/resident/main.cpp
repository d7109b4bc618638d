// resident: the command-line front end.
//
//   resident info                      the GPU and build this binary sees
//   resident run [CONFIG.yaml] ...     the lab pipeline between an emulated sensor and actuator,
//                                      in one or all execution modes, every output checked
//   resident bench io|overhead ...     benchmarks: a human table last, JSON receipts, CSV samples
//   resident bench lab ...             submission modes, graph pools and graph updates
//   resident sim [OPS.yaml]            the logical issue-order model of streams (no GPU)
//   resident plan TASKSET.yaml         SM partition sizes for a set of resident loops (no GPU)
//   resident report RECEIPT...         receipts -> plain-text table and one HTML page

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include "bench/io_bench.hpp"
#include "bench/lab_bench.hpp"
#include "bench/loops_bench.hpp"
#include "bench/overhead_bench.hpp"
#include "bench/plan_command.hpp"
#include "bench/reef_bench.hpp"
#include "bench/sim_command.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/report.hpp"
#include "resident/resident.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

int no_gpu(const char* what) {
  std::fprintf(stderr, "resident %s: no CUDA GPU on this machine (%s)\n", what,
               resident::no_device_reason().c_str());
  return 2;
}

int info() {
  std::printf("resident build %s\n", std::string(resident::git_commit()).c_str());
  if (resident::device_count() == 0) return no_gpu("info");
  const auto d = resident::query_device(0);
  std::printf("device 0: %s, %d SMs, compute capability %d.%d, SM clock %d MHz\n", d.name.c_str(),
              d.sm_count, d.compute_major, d.compute_minor, d.clock_rate_khz / 1000);
  std::printf("driver %d, runtime %d, host-mapped memory %s, host-native atomics %s\n",
              d.driver_version, d.runtime_version, d.can_map_host_memory ? "yes" : "no",
              d.host_native_atomics ? "yes" : "no");
  std::printf("module loading %s\n", d.module_loading.c_str());
  return 0;
}

// sensor -> rx -> affine -> square -> sum -> tx -> actuator
class lab_pipeline final : public resident::Application {
 public:
  explicit lab_pipeline(std::int64_t elements)
      : Application("lab"),
        elements(elements),
        mailbox(std::make_shared<resident::io::mailbox>(resident::io::mailbox::config{
            static_cast<std::size_t>(elements) * sizeof(float), sizeof(float), 4})) {}

  void compose() override {
    using resident::arg;
    auto rx = make_operator<resident::io::mailbox_rx>("rx", mailbox);
    affine = make_operator<resident::ops::affine>("affine", arg("elements", elements));
    auto square = make_operator<resident::ops::square>("square", arg("elements", elements));
    auto sum = make_operator<resident::ops::sum_reduce>("sum", arg("elements", elements));
    auto tx = make_operator<resident::io::mailbox_tx>("tx", mailbox);
    register_data_ready_handler(mailbox->make_handler(rx));
    add_flow(rx, affine, {{"sample", "in"}});
    add_flow(affine, square);
    add_flow(square, sum);
    add_flow(sum, tx);
  }

  std::int64_t elements;
  std::shared_ptr<resident::io::mailbox> mailbox;
  std::shared_ptr<resident::ops::affine> affine;
};

struct run_settings {
  std::string config;
  std::string mode{"all"};
  std::string policy{"skip-duplicate"};
  std::int64_t samples{200};
  double rate_hz{1000.0};
  std::int64_t elements{4096};
  std::uint64_t sleep_ns{0};
  std::uint64_t poll_ns{0};
  std::string dot;
};

// CLI11's PositiveNumber prints the whole double range on failure; say it plainly.
CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          if (std::stod(value) > 0) return {};
        } catch (const std::exception&) {
        }
        return "must be a number greater than 0, got '" + value + "'";
      },
      "> 0");
}

int run(const run_settings& s) {
  std::vector<resident::execution_mode> modes;
  if (s.mode == "all") {
    modes.assign(resident::all_execution_modes.begin(), resident::all_execution_modes.end());
  } else {
    modes.push_back(resident::parse_execution_mode(s.mode));
  }
  resident::run_options options;
  options.policy = resident::parse_sample_policy(s.policy);
  options.idle_sleep_ns = s.sleep_ns;
  options.poll_ns = s.poll_ns;
  options.validate();
  if (resident::device_count() == 0) return no_gpu("run");

  lab_pipeline app(s.elements);
  if (!s.config.empty()) app.load_config(s.config);
  app.plan();
  // The reference follows whatever scale and offset the configuration gave the affine step.
  const double scale = app.affine->scale();
  const double offset = app.affine->offset();

  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  int failures = 0;
  std::printf("%-10s %9s %9s %9s %9s %9s %8s\n", "mode", "released", "processed", "dropped",
              "repeated", "checked", "wrong");
  for (const auto mode : modes) {
    std::vector<std::vector<float>> samples(static_cast<std::size_t>(s.samples));
    std::vector<double> expected(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i].resize(static_cast<std::size_t>(s.elements));
      double total = 0.0;
      for (auto& v : samples[i]) {
        v = dist(rng);
        const double y = scale * v + offset;
        total += y * y;
      }
      expected[i] = total;
    }
    if (!s.dot.empty()) options.dot_path = s.dot;
    auto handle = resident::run_async(app, mode, options);
    const std::uint64_t base = app.mailbox->published();
    std::atomic<bool> done{false};
    std::atomic<std::int64_t> checked{0};
    std::atomic<std::int64_t> wrong{0};
    std::thread actuator([&] {
      resident::io::output_stamp last = app.mailbox->latest_output();
      float out = 0.0F;
      while (!done.load()) {
        const resident::io::output_stamp got =
            app.mailbox->wait_output(last, std::as_writable_bytes(std::span(&out, 1)), 10ms);
        if (got.empty()) continue;
        last = got;
        const std::uint64_t seq = got.seq;
        const double want = expected.at(seq - base - 1);
        ++checked;
        if (std::abs(out - want) > 1e-5 * std::max(1.0, std::abs(want))) ++wrong;
      }
    });
    const auto period = std::chrono::duration<double>(1.0 / s.rate_hz);
    const auto start = clock_type::now();
    for (std::size_t i = 0; i < samples.size(); ++i) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<clock_type::duration>(
                                                period * static_cast<double>(i)));
      app.mailbox->publish(std::as_bytes(std::span(samples[i])));
    }
    const std::uint64_t final_seq = app.mailbox->published();
    const auto deadline = clock_type::now() + 2s;
    while (handle->counters().last_seq < final_seq && clock_type::now() < deadline) {
      std::this_thread::sleep_for(100us);
    }
    std::this_thread::sleep_for(5ms);  // let the actuator see the final output
    const resident::tear_down_report report = handle->tear_down();
    done = true;
    actuator.join();
    const auto& c = report.counters;
    std::printf(
        "%-10s %9lld %9llu %9llu %9llu %9lld %8lld%s%s\n",
        std::string(resident::to_string(mode)).c_str(), static_cast<long long>(samples.size()),
        static_cast<unsigned long long>(c.processed), static_cast<unsigned long long>(c.dropped),
        static_cast<unsigned long long>(c.repeated), static_cast<long long>(checked.load()),
        static_cast<long long>(wrong.load()), report.error.empty() ? "" : "  ",
        report.error.c_str());
    const bool accounted = c.processed + c.dropped == c.last_seq - c.start_seq;
    if (!report.stopped || wrong.load() != 0 || !accounted || checked.load() == 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (const char c : text + ",") {
    if (c == ',') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else if (c != ' ') {
      item += c;
    }
  }
  return items;
}

struct bench_output {
  std::string json;
  std::string csv;
};

int finish_bench(const resident::measure::receipt& receipt, const bench_output& out,
                 const std::string& table) {
  if (!out.json.empty()) {
    receipt.write(out.json);
    std::printf("receipt: %s\n", out.json.c_str());
  }
  std::printf("\n%s", table.c_str());
  return 0;
}

int main(int argc, char** argv) {
  // Before any CUDA call: every kernel is loaded when the context is made. Under lazy loading a
  // kernel first launched beside a running resident loop (a best-effort kernel, another loop's
  // graph) can wait for that loop to end. An explicit CUDA_MODULE_LOADING is kept.
  resident::request_eager_module_loading();
  CLI::App cli{"resident: timing-predictable GPU pipelines"};
  cli.require_subcommand(1);
  cli.add_subcommand("info", "show the GPU and build this binary sees");
  const std::string command = resident::measure::command_line(argc, argv);

  // ---- bench ------------------------------------------------------------------------------
  auto* bench = cli.add_subcommand("bench", "benchmarks (see BENCHMARKS.md)");
  bench->require_subcommand(1);
  bench_output out;
  resident::bench::io_settings io;
  io.command = command;
  std::string modes = "while,tail,host-graph,eager";
  std::string workloads = "empty,matmul6";
  std::string contention = "none,stress";
  bool quick = false;
  bool no_fifo = false;
  auto* io_cmd = bench->add_subcommand("io", "sensor -> actuator latency through emulated I/O");
  io_cmd->add_option("--modes", modes, "comma-separated modes")->capture_default_str();
  io_cmd->add_option("--workloads", workloads, "empty, matmul6")->capture_default_str();
  io_cmd->add_option("--contention", contention, "none, stress")->capture_default_str();
  io_cmd->add_option("--samples", io.samples, "measured samples per configuration")
      ->capture_default_str();
  io_cmd->add_option("--rate", io.rate_hz, "sensor rate in Hz")->capture_default_str();
  io_cmd->add_option("--warmup", io.warmup, "samples released before measuring")
      ->capture_default_str();
  io_cmd->add_option("--sleep-ns", io.sleep_ns, "controller idle sleep (0 spins)")
      ->capture_default_str();
  io_cmd->add_option("--poll-ns", io.poll_ns, "handler in-kernel polling budget")
      ->capture_default_str();
  io_cmd
      ->add_option("--disturbance-ns", io.disturbance_ns,
                   "a sample is 'disturbed' when the sensor's publish or the actuator's poll "
                   "gap around it took longer")
      ->capture_default_str();
  io_cmd->add_option("--sensor-cpu", io.sensor_cpu, "core for the sensor thread (-1: auto)");
  io_cmd->add_option("--actuator-cpu", io.actuator_cpu, "core for the actuator (-1: auto)");
  io_cmd->add_option("--loop-cpu", io.loop_cpu, "core for host-driven loops (-1: auto)");
  io_cmd
      ->add_option("--observers", io.observers,
                   "actuator threads, each on its own core, each polling the output (earliest "
                   "sighting counts)")
      ->capture_default_str();
  io_cmd->add_flag("--no-fifo", no_fifo, "do not ask for SCHED_FIFO");
  io_cmd->add_flag("--stress-ng", io.stress_ng, "use stress-ng for the stress level");
  io_cmd->add_flag("--quick", quick, "every configuration in about 20 s");
  io_cmd->add_option("--json", out.json, "write the JSON receipt here");
  io_cmd->add_option("--csv", io.csv_path, "write raw latency samples here");

  resident::bench::overhead_settings overhead;
  overhead.command = command;
  bool overhead_quick = false;
  auto* overhead_cmd = bench->add_subcommand("overhead", "fixed framework costs");
  overhead_cmd->add_option("--iterations", overhead.iterations, "stamped iterations per mode")
      ->capture_default_str();
  overhead_cmd->add_option("--idle-seconds", overhead.idle_seconds, "idle loop duration")
      ->capture_default_str();
  overhead_cmd->add_option("--launches", overhead.launches, "host graph launches timed")
      ->capture_default_str();
  overhead_cmd->add_flag("--quick", overhead_quick, "a few seconds in all");
  overhead_cmd->add_option("--json", out.json, "write the JSON receipt here");

  resident::bench::lab_settings lab;
  lab.command = command;
  std::string lab_order = "eager,stream,graph";
  bool lab_quick = false;
  auto* lab_cmd = bench->add_subcommand(
      "lab", "the four-operation pipeline in eager, stream and graph submission modes");
  lab_cmd->add_option("--mode", lab.mode, "eager, stream, graph or all")->capture_default_str();
  lab_cmd->add_option("--order", lab_order, "the order the modes run in")->capture_default_str();
  lab_cmd->add_option("--elements", lab.elements, "fp32 values")->capture_default_str();
  lab_cmd->add_option("--settle-ms", lab.settle_ms, "untimed pipeline runs before the first mode")
      ->capture_default_str();
  lab_cmd
      ->add_option("--graph-edges", lab.graph_edges,
                   "graph mode: programmatic (programmatic dependent launch) or full edges")
      ->capture_default_str();
  lab_cmd->add_option("--copy", lab.copy, "the copy step: memcpy (node) or kernel")
      ->capture_default_str();
  lab_cmd->add_option("--warmup", lab.warmup, "untimed iterations per mode")->capture_default_str();
  lab_cmd->add_option("--iterations", lab.iterations, "timed iterations per repeat")
      ->capture_default_str();
  lab_cmd->add_option("--repeats", lab.repeats, "timed runs per mode (the receipt gives medians)")
      ->capture_default_str();
  lab_cmd->add_option("--buckets", lab.buckets, "graph pool bucket sizes (requests)")
      ->capture_default_str();
  lab_cmd
      ->add_option("--bucket-counts", lab.bucket_counts, "check every request count from 1 to this")
      ->capture_default_str();
  lab_cmd->add_option("--bucket-replays", lab.bucket_replays, "timed replays per bucket")
      ->capture_default_str();
  lab_cmd->add_option("--update-trials", lab.update_trials, "timed graph updates per path")
      ->capture_default_str();
  lab_cmd->add_option("--peer", lab.peer, "a scripts/peer/torch_lab.py receipt to set beside")
      ->check(CLI::ExistingFile);
  lab_cmd->add_flag("--quick", lab_quick, "fewer iterations: a few seconds");
  lab_cmd->add_option("--json", out.json, "write the JSON receipt here");

  resident::bench::loops_settings loops;
  loops.command = command;
  std::string loop_counts = "1,5,10,15,20";
  std::string loop_modes = "while,host-graph";
  std::string loop_contention = "none";
  bool loops_quick = false;
  bool loops_no_fifo = false;
  auto* loops_cmd =
      bench->add_subcommand("loops", "N concurrent loops, each on its own SM partition");
  loops_cmd->add_option("--counts", loop_counts, "loop counts to run")->capture_default_str();
  loops_cmd->add_option("--modes", loop_modes, "modes to compare")->capture_default_str();
  loops_cmd->add_option("--contention", loop_contention, "none, stress")->capture_default_str();
  loops_cmd->add_option("--workload", loops.workload, "per loop: empty, matmul6 or matmulNxK")
      ->capture_default_str();
  loops_cmd
      ->add_option("--partition-sms", loops.partition_sms,
                   "SMs per loop (0: the largest equal share for the largest count)")
      ->capture_default_str();
  loops_cmd
      ->add_option("--backend", loops.backend,
                   "SM partitions: green (disjoint SM sets) or mps (SM budgets; needs the MPS "
                   "daemon)")
      ->capture_default_str();
  loops_cmd->add_option("--samples", loops.samples, "measured samples per loop")
      ->capture_default_str();
  loops_cmd->add_option("--warmup", loops.warmup, "samples per loop before measuring")
      ->capture_default_str();
  loops_cmd->add_option("--rate", loops.rate_hz, "each sensor's rate in Hz")->capture_default_str();
  loops_cmd->add_option("--sleep-ns", loops.sleep_ns, "controller idle sleep (0 spins)")
      ->capture_default_str();
  loops_cmd->add_option("--poll-ns", loops.poll_ns, "handler in-kernel polling budget")
      ->capture_default_str();
  loops_cmd
      ->add_option("--host-cores", loops.host_cores,
                   "cores for host-driven loop threads (0: one each while cores last)")
      ->capture_default_str();
  loops_cmd->add_flag("--no-fifo", loops_no_fifo, "do not ask for SCHED_FIFO");
  bool loops_no_telemetry = false;
  loops_cmd->add_flag("--no-telemetry", loops_no_telemetry,
                      "no device timestamps per sample (no in-loop split of the latency)");
  loops_cmd
      ->add_option("--observers", loops.observers,
                   "actuator threads, each on its own core, each polling every loop (earliest "
                   "sighting counts)")
      ->capture_default_str();
  loops_cmd
      ->add_option("--disturbance-ns", loops.disturbance_ns,
                   "a sample is 'disturbed' when the sensor's publish or the actuator's round "
                   "over the loops before the sighting took longer than this")
      ->capture_default_str();
  loops_cmd->add_flag("--stress-ng", loops.stress_ng, "use stress-ng for the stress level");
  loops_cmd->add_flag("--quick", loops_quick, "counts 1,5,10 and few samples");
  loops_cmd->add_option("--json", out.json, "write the JSON receipt here");

  resident::bench::reef_settings reef;
  reef.command = command;
  std::string reef_policies;
  for (const auto& p : reef.policies) reef_policies += (reef_policies.empty() ? "" : ",") + p;
  bool reef_quick = false;
  bool reef_no_fifo = false;
  auto* reef_cmd = bench->add_subcommand(
      "reef", "real-time loops beside best-effort inference under co-scheduling policies");
  reef_cmd->add_option("--policies", reef_policies, "policies to compare, in order")
      ->capture_default_str();
  reef_cmd->add_option("--arrival", reef.arrival, "RT requests: periodic or poisson")
      ->capture_default_str();
  reef_cmd->add_option("--rate", reef.rate_hz, "RT requests per second")->capture_default_str();
  reef_cmd
      ->add_option("--disturbance-ns", reef.disturbance_ns,
                   "a sample is 'disturbed' when the sensor's publish or the actuator's poll "
                   "gap around it took longer")
      ->capture_default_str();
  reef_cmd->add_option("--samples", reef.samples, "measured RT requests per policy")
      ->capture_default_str();
  reef_cmd->add_option("--warmup", reef.warmup, "RT requests before measuring")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-model", reef.be_model,
                   "best-effort model: mlp, mlp-fused (bias and relu in the gemm) or cnn")
      ->capture_default_str();
  reef_cmd->add_option("--be-clients", reef.be_clients, "closed-loop best-effort clients")
      ->capture_default_str();
  reef_cmd->add_option("--be-window", reef.be_window, "BE launches in flight per client")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-raise", reef.rt_raise,
                   "when the RT handler raises the preempt word: detect or after-copy")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-raise-lead-us", reef.rt_raise_lead_us,
                   "preempt-lead: raise the preempt word this long before the next periodic "
                   "RT sample is due")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-window-sm", reef.be_window_sm,
                   "BE launches in flight per client under preempt-sm")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-window-split", reef.be_window_split,
                   "BE launches in flight per client under green-split")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-rt-sm-blocks", reef.be_rt_sm_blocks,
                   "under preempt-sm, at most this many BE blocks on each RT SM at once, so the "
                   "RT loop always finds room there (0: no limit)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-checkpoint", reef.be_checkpoint,
                   "preempted gemm/conv2d blocks keep their partial sums (on/off)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--pad-place-wait-us", reef.pad_place_wait_us,
                   "how long a pad block waits for the RT blocks to take SMs of their own "
                   "before it runs RT work left over")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-spread", reef.rt_spread,
                   "RT gemms without BE padding get placement slots, so each RT block takes an "
                   "SM of its own (on/off)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-placement", reef.rt_placement,
                   "RT gemm launches record where their blocks landed (rt_placement; on/off; "
                   "--be-trace turns it on)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-checkpoint-min-steps", reef.be_checkpoint_min_steps,
                   "a cut block keeps its sums only after this many K-steps of its attempt")
      ->capture_default_str();
  reef_cmd->add_option("--rt-batch", reef.rt_batch, "rows of the RT MLP's input")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-bounded-grid", reef.be_bounded_grid,
                   "preemptible BE launches keep at most this many blocks per SM on the grid, "
                   "each taking logical blocks at a fixed stride (0: one block per logical "
                   "block)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-bounded-grid-counter", reef.be_bounded_grid_counter,
                   "bounded BE grids take work from a counter instead of a fixed stride (on/off)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-l2-persist", reef.rt_l2_persist,
                   "keep the RT model's weights and activations in an L2 set-aside (on/off)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-arena", reef.rt_arena,
                   "the RT model in one allocation (off: one per buffer; needs "
                   "--rt-l2-persist off)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-split-body", reef.rt_split_body,
                   "stamp the end of the RT compute, splitting the body into compute and egress "
                   "(adds a one-thread kernel to the RT graph)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--be-trace", reef.be_trace,
                   "BE blocks trace when they run; each RT sample records whether they shared "
                   "the GPU with its body (adds the --rt-split-body kernel)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-pdl", reef.rt_pdl,
                   "the RT model's kernels after the first are launched as programmatic "
                   "dependents of the kernel before them (on/off)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--rt-out-copy", reef.rt_out_copy,
                   "the RT scores into the output port: memcpy (node) or kernel")
      ->capture_default_str();
  reef_cmd->add_option("--split-sms", reef.split_sms, "green-split: SMs of the RT partition")
      ->capture_default_str();
  reef_cmd
      ->add_option("--split-be-rest", reef.split_be_rest,
                   "green-split: the BE partition takes every SM the RT one leaves, those in no "
                   "driver group included (on/off; off: whole groups only)")
      ->capture_default_str();
  reef_cmd
      ->add_option("--pad-tolerance", reef.pad_tolerance,
                   "padded RT kernel may take this much longer than alone")
      ->capture_default_str();
  reef_cmd->add_flag("--no-fifo", reef_no_fifo, "do not ask for SCHED_FIFO");
  reef_cmd->add_flag("--progress", reef.progress,
                     "every 250 ms, log the RT loop's and the BE runners' counts");
  reef_cmd->add_flag("--quick", reef_quick, "1000 samples per policy");
  reef_cmd->add_option("--json", out.json, "write the JSON receipt here");

  // ---- report -------------------------------------------------------------------------------
  std::vector<std::string> receipts;
  std::string html;
  std::string merged;
  auto* report_cmd = cli.add_subcommand("report", "receipts -> text table and an HTML page");
  report_cmd->add_option("receipts", receipts, "JSON receipts")
      ->required()
      ->check(CLI::ExistingFile);
  report_cmd->add_option("--html", html, "write a self-contained HTML report here");
  report_cmd->add_option("--merge", merged,
                         "merge the receipts (one benchmark split across runs) into this file");

  resident::bench::sim_settings sim;
  auto* sim_cmd = cli.add_subcommand(
      "sim", "the logical issue-order model of streams: ticks, the event arithmetic, hazards");
  sim_cmd->add_option("file", sim.file, "operations (YAML); none: the lab's example")
      ->check(CLI::ExistingFile);
  sim_cmd->add_option("--drop", sim.drop, "also simulate without dependency FROM->TO");
  sim_cmd->add_option("--json", sim.json, "write the schedules as JSON here");

  resident::bench::plan_settings plan;
  auto* plan_cmd = cli.add_subcommand(
      "plan", "SM partitions for resident loops: response bounds, deadlines, fit (no GPU)");
  plan_cmd->add_option("file", plan.file, "taskset (YAML, see docs/plan.md)")
      ->required()
      ->check(CLI::ExistingFile);
  plan_cmd->add_option("--sm-count", plan.sm_count, "plan for N SMs instead of device.sm_count");
  plan_cmd->add_option("--json", plan.json, "write the plan as JSON here");
  std::string profile_sizes = "8,16,32,64,128";
  plan_cmd->add_flag("--profile", plan.profile,
                     "measure each loop's workload on partitions of --profile-sizes (GPU)");
  plan_cmd->add_option("--profile-sizes", profile_sizes, "partition sizes to profile")
      ->capture_default_str();
  plan_cmd->add_option("--profile-samples", plan.profile_samples, "samples per size")
      ->capture_default_str();

  run_settings s;
  auto* run_cmd = cli.add_subcommand(
      "run", "run the lab pipeline (affine, square, sum) between an emulated sensor and actuator");
  run_cmd->add_option("config", s.config, "YAML file of operator parameters")
      ->check(CLI::ExistingFile);
  run_cmd->add_option("--mode", s.mode, "eager, host-graph, while, tail or all")
      ->capture_default_str();
  run_cmd->add_option("--policy", s.policy, "newest, every or skip-duplicate")
      ->capture_default_str();
  run_cmd->add_option("--samples", s.samples, "samples the sensor releases per mode")
      ->check(positive())
      ->capture_default_str();
  run_cmd->add_option("--rate", s.rate_hz, "sensor rate in Hz")
      ->check(positive())
      ->capture_default_str();
  run_cmd->add_option("--elements", s.elements, "fp32 values per sample")
      ->check(positive())
      ->capture_default_str();
  run_cmd->add_option("--sleep-ns", s.sleep_ns, "idle sleep per empty iteration (0 spins)");
  run_cmd->add_option("--poll-ns", s.poll_ns, "in-kernel polling budget of the handler");
  run_cmd->add_option("--dot", s.dot, "write the built CUDA graph as Graphviz DOT");

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  try {
    if (cli.got_subcommand("info")) return info();
    if (io_cmd->parsed()) {
      if (quick) io.make_quick();
      io.modes = split_list(modes);
      io.workloads = split_list(workloads);
      io.contention = split_list(contention);
      io.realtime = !no_fifo;
      io.validate();
      if (resident::device_count() == 0) return no_gpu("bench io");
      const auto receipt = resident::bench::run_io_bench(io, std::cerr);
      const int rc = finish_bench(receipt, out, resident::bench::io_table(receipt));
      for (const auto& r : receipt.results) {
        if (r["wrong_outputs"].get<std::int64_t>() != 0) {
          std::fprintf(stderr, "resident bench io: WRONG outputs in %s/%s/%s\n",
                       r["mode"].get<std::string>().c_str(),
                       r["workload"].get<std::string>().c_str(),
                       r["contention"].get<std::string>().c_str());
          return 1;
        }
      }
      return rc;
    }
    if (overhead_cmd->parsed()) {
      if (overhead_quick) overhead.make_quick();
      overhead.validate();
      if (resident::device_count() == 0) return no_gpu("bench overhead");
      const auto receipt = resident::bench::run_overhead_bench(overhead, std::cerr);
      return finish_bench(receipt, out, resident::bench::overhead_table(receipt));
    }
    if (sim_cmd->parsed()) return resident::bench::run_sim(sim, std::cout);
    if (plan_cmd->parsed()) {
      plan.profile_sizes.clear();
      for (const auto& item : split_list(profile_sizes)) {
        std::size_t used = 0;
        int value = 0;
        try {
          value = std::stoi(item, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != item.size() || value <= 0) {
          throw std::invalid_argument("--profile-sizes: '" + item + "' is not a positive number");
        }
        plan.profile_sizes.push_back(value);
      }
      return resident::bench::run_plan(plan, std::cout);
    }
    if (loops_cmd->parsed()) {
      if (loops_quick) loops.make_quick();
      if (!loops_quick || loop_counts != "1,5,10,15,20") {
        loops.counts.clear();
        for (const auto& c : split_list(loop_counts)) {
          try {
            std::size_t used = 0;
            loops.counts.push_back(std::stoi(c, &used));
            if (used != c.size()) throw std::invalid_argument(c);
          } catch (const std::exception&) {
            throw std::invalid_argument("--counts: '" + c + "' is not a whole number");
          }
        }
      }
      loops.modes = split_list(loop_modes);
      loops.contention = split_list(loop_contention);
      loops.realtime = !loops_no_fifo;
      loops.telemetry = !loops_no_telemetry;
      loops.validate();
      if (resident::device_count() == 0) return no_gpu("bench loops");
      const auto receipt = resident::bench::run_loops_bench(loops, std::cerr);
      const int rc = finish_bench(receipt, out, resident::bench::loops_table(receipt));
      for (const auto& r : receipt.results) {
        if (r["wrong_outputs"].get<std::int64_t>() != 0) {
          std::fprintf(stderr, "resident bench loops: WRONG outputs in %s x%d\n",
                       r["mode"].get<std::string>().c_str(), r["loops"].get<int>());
          return 1;
        }
      }
      return rc;
    }
    if (reef_cmd->parsed()) {
      if (reef_quick) reef.make_quick();
      reef.policies = split_list(reef_policies);
      reef.realtime = !reef_no_fifo;
      reef.validate();
      if (resident::device_count() == 0) return no_gpu("bench reef");
      const auto receipt = resident::bench::run_reef_bench(reef, std::cerr);
      const int rc = finish_bench(receipt, out, resident::bench::reef_table(receipt));
      for (const auto& r : receipt.results) {
        if (r["wrong_outputs"].get<std::int64_t>() != 0) {
          std::fprintf(stderr, "resident bench reef: WRONG RT outputs under %s\n",
                       r["policy"].get<std::string>().c_str());
          return 1;
        }
      }
      return rc;
    }
    if (lab_cmd->parsed()) {
      if (lab_quick) lab.make_quick();
      lab.order = split_list(lab_order);
      lab.validate();
      if (resident::device_count() == 0) return no_gpu("bench lab");
      const auto receipt = resident::bench::run_lab_bench(lab, std::cerr);
      const int rc = finish_bench(receipt, out, resident::bench::lab_table(receipt));
      const std::string wrong = resident::bench::lab_failures(receipt);
      if (!wrong.empty()) {
        std::fprintf(stderr, "resident bench lab: WRONG results: %s\n", wrong.c_str());
        return 1;
      }
      return rc;
    }
    if (report_cmd->parsed()) {
      std::vector<resident::measure::receipt> parts;
      for (const auto& path : receipts) parts.push_back(resident::measure::receipt::read(path));
      if (!merged.empty()) {
        resident::measure::merge(parts).write(merged);
        std::printf("merged %zu receipts into %s\n", parts.size(), merged.c_str());
        parts = {resident::measure::receipt::read(merged)};
      }
      if (!html.empty()) {
        std::ofstream file(html);
        file << resident::measure::render_html(parts);
        if (!file) throw std::runtime_error("cannot write " + html);
        std::printf("report: %s\n", html.c_str());
      }
      std::printf("%s", resident::measure::render_text(parts).c_str());
      return 0;
    }
    return run(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resident: %s\n", e.what());
    return 1;
  }
}
