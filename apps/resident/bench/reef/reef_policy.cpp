// bench reef: what each policy changes, and one policy's run, step by step (see reef_policy.hpp).

#include "bench/reef/reef_policy.hpp"

#include "bench/reef/reef_results.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/measure/statistics.hpp"
#include "resident/measure/threads.hpp"
#include "resident/partition/green_context.hpp"
#include "resident/sched/preemption.hpp"

namespace resident::bench::reef_detail {

using namespace std::chrono_literals;

policy_config config_of(const std::string& p) {
  policy_config c;
  if (p == "exclusive" || p == "exclusive-end") {
    // exclusive-end: the RT loop alone again, after the other policies. The same loop runs
    // slower after BE work than before it (docs/findings.md), so this run shows how far the
    // baseline moved over the run.
    c.be = false;
  } else if (p == "sequential") {
    c.sequential = true;
  } else if (p == "multi-stream") {
  } else if (p == "priority") {
    c.rt_high = c.be_low = true;
  } else if (p == "green-split") {
    c.split = true;
  } else if (p == "exclusive-split") {
    // The RT loop alone in green-split's RT partition: what the confinement costs by itself.
    c.be = false;
    c.split = true;
  } else if (p == "preempt") {
    c.preemptible = c.rt_high = c.be_low = true;
  } else if (p == "preempt-pad") {
    c.preemptible = c.rt_high = c.be_low = c.pad = true;
  } else if (p == "preempt-sm") {
    c.preemptible = c.rt_high = c.be_low = c.spatial = true;
  } else if (p == "preempt-lead") {
    // preempt, with the word raised ahead of each periodic sample (preempt_hook::lead_ns): the
    // BE blocks drain before the sample comes, not on its path.
    c.preemptible = c.rt_high = c.be_low = c.lead = true;
  } else {
    std::string list;
    for (const auto& k : reef_policies()) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown policy '" + p + "'; policies: " + list);
  }
  return c;
}

namespace {

// ---- set-up -----------------------------------------------------------------------------------

/// The SM partitions a policy runs in, and what the spatial BE kernels read about the RT one.
struct policy_partitions {
  std::shared_ptr<partition::partition_set> parts;
  /// spatial: the RT partition's SMs and the count of BE blocks on each (be_rt_sm_blocks).
  std::unique_ptr<sched::spatial_share> spatial;
  std::array<std::uint32_t, 8> rt_mask{};
};

/// green-split without split_be_rest: BE gets what is left in whole groups. The driver's groups
/// of `alignment` SMs need not cover the whole device, so the largest remainder that splits is
/// found by trying.
std::shared_ptr<partition::partition_set> split_whole_groups(const reef_settings& s,
                                                             const std::string& policy) {
  std::shared_ptr<partition::partition_set> parts;
  const auto info = partition::query_sm_resource(0, false);
  const int align = std::max(1, info.alignment);
  for (int rest = (info.sm_count - s.split_sms) / align * align; rest >= align && !parts;
       rest -= align) {
    try {
      parts = partition::partition_set::split({s.split_sms, rest});
    } catch (const partition::partition_error&) {
      if (rest - align < align) throw;
    }
  }
  if (!parts) {  // check_split refuses this before any policy runs
    throw std::logic_error("bench reef " + policy + ": no SMs left for the BE partition");
  }
  return parts;
}

policy_partitions make_partitions(const reef_settings& s, const policy_config& pc,
                                  const std::string& policy) {
  policy_partitions out;
  if (pc.spatial) {
    out.parts = partition::partition_set::split({s.split_sms});
  } else if (pc.split && s.split_be_rest) {
    // BE gets every SM the RT partition leaves, the ones in no driver group included.
    const auto info = partition::query_sm_resource(0, false);
    partition::split_options so;
    so.rest_to_last = true;
    out.parts = partition::partition_set::split({s.split_sms, std::max(1, info.alignment)}, so);
  } else if (pc.split) {
    out.parts = split_whole_groups(s, policy);
  }
  // Which SMs the driver gave the RT partition (a probe kernel finds them; they may differ from
  // one split to the next): for the spatial BE kernels and for the receipt.
  if (out.parts) out.rt_mask = (*out.parts)[0].sm_mask();
  if (pc.spatial) {  // one share for every BE client
    out.spatial = std::make_unique<sched::spatial_share>(
        out.rt_mask, static_cast<std::uint32_t>(s.be_rt_sm_blocks));
  }
  return out;
}

/// The BE clients: each its own model, stream and runner, made before the RT loop starts (the
/// runner loads its kernels then: see be_runner) and started once the loop is resident.
struct be_clients {
  std::vector<std::unique_ptr<sched::be_model>> models;
  std::vector<stream> streams;
  std::vector<std::unique_ptr<sched::be_runner>> runners;
};

sched::be_runner_options runner_options(const reef_settings& s, const policy_config& pc,
                                        const policy_partitions& pp, sched::be_trace* trace,
                                        int client) {
  sched::be_runner_options ro;
  ro.name = s.be_model + std::to_string(client);
  ro.preemptible = pc.preemptible;
  ro.window = pc.spatial ? s.be_window_sm : pc.split ? s.be_window_split : s.be_window;
  ro.checkpoint = s.be_checkpoint;
  ro.checkpoint_min_steps = s.be_checkpoint_min_steps;
  ro.bounded_grid_per_sm = s.be_bounded_grid;
  ro.bounded_grid_counter = s.be_bounded_grid_counter;
  ro.sequential = pc.sequential;
  ro.trace = trace;
  if (pp.spatial) pp.spatial->apply(ro);
  if (pc.split) {
    // Events and launches from the context that owns the BE streams.
    ro.thread_scope = [parts = pp.parts]() -> std::shared_ptr<void> {
      return std::make_shared<partition::green_context::current_scope>(&(*parts)[1]);
    };
  }
  return ro;
}

be_clients make_be_clients(const reef_settings& s, const policy_config& pc,
                           const policy_partitions& pp, sched::preempt_signal& signal,
                           sched::be_trace* trace, int least_priority) {
  be_clients be;
  if (!pc.be) return be;
  for (int i = 0; i < s.be_clients; ++i) {
    be.models.push_back(make_be_model(s.be_model, s.seed + static_cast<std::uint64_t>(i)));
    const int prio = pc.be_low ? least_priority : 0;
    be.streams.push_back(pc.split ? (*pp.parts)[1].make_stream(prio) : stream(prio));
    be.runners.push_back(std::make_unique<sched::be_runner>(be.models.back()->calls(),
                                                            be.streams.back().get(), &signal,
                                                            runner_options(s, pc, pp, trace, i)));
  }
  return be;
}

/// Each RT gemm layer's launch limits: the planned padding under preempt-pad; with rt_spread,
/// placement slots wherever a layer has no BE padding.
std::vector<layer_padding> rt_limits(const reef_settings& s, const policy_config& pc,
                                     const shared_work& work) {
  std::vector<layer_padding> limits(work.model->layers());
  for (std::size_t l = 0; l < limits.size(); ++l) {
    if (pc.pad && l < work.pads.size()) limits[l] = work.pads[l];
    if (s.rt_spread && limits[l].budget == 0) {
      limits[l] = sched::placement_only(sched::gemm_blocks(work.model->gemm(l)), s.place_wait_ns());
    }
  }
  return limits;
}

run_options rt_run_options(const reef_settings& s, const std::string& policy,
                           const policy_config& pc, const policy_partitions& pp,
                           sched::preempt_signal& signal, int greatest_priority) {
  run_options o;
  o.poll_ns = s.poll_ns;
  o.telemetry_samples = static_cast<std::size_t>(s.samples + s.warmup) + 64;
  o.preempt = signal.hook();  // every policy: the mirror tells the BE runner about RT work
  o.preempt.after_input = s.raises_after_copy() ? 1U : 0U;
  o.preempt.lead_ns = s.raise_lead_ns(policy);
  if (o.preempt.lead_ns > 0) o.preempt.period_ns = s.period_ns();
  o.stream_priority = pc.rt_high ? greatest_priority : 0;
  if (pp.parts) o.partition = pp.parts->share(0);
  return o;
}

/// Release times, drawn before the threads start (nothing allocates while measuring).
std::vector<std::int64_t> release_offsets(const reef_settings& s, std::size_t total) {
  std::vector<std::int64_t> offsets(total + 1, 0);
  std::mt19937_64 rng(s.seed);
  std::exponential_distribution<double> gap(s.rate_hz);
  double t = 0;
  for (std::size_t i = 1; i <= total; ++i) {
    offsets[i] = static_cast<std::int64_t>(t * 1e9);
    t += s.arrival == "poisson" ? gap(rng) : 1.0 / s.rate_hz;
  }
  return offsets;
}

// ---- the measured run -------------------------------------------------------------------------

/// The RT client's endpoints for one run: the sensor releases every sample, the actuator notes
/// when each output first shows.
struct rt_endpoints {
  const reef_settings& s;
  const cpu_roles& cpus;
  reef_rt_app& app;
  std::uint64_t base;
  std::size_t total;
  sample_log& samples;
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> stray{0};
  measure::thread_grant sensor_grant{};
  measure::thread_grant actuator_grant{};

  void actuator() {
    actuator_grant = measure::configure_current_thread(cpus.actuator, s.realtime);
    io::mailbox& mb = app.mailbox();
    std::uint64_t last = mb.output_seq();
    std::array<std::byte, 8> out{};
    // The clock before the last read that found the output unchanged: `t - polled` bounds how
    // late a sighting can be (a long one: this thread lost its core).
    std::int64_t polled = now_ns();
    while (!stop.load(std::memory_order_relaxed)) {
      const std::int64_t before = now_ns();
      const std::uint64_t seq = mb.output_seq();
      if (seq == last) {
        polled = before;
        cpu_relax();
        continue;
      }
      const std::int64_t t = now_ns();
      const std::uint64_t read = mb.read_output(out).seq;
      const std::uint64_t i = seq - base;
      if (seq > base && i <= total && samples.seen_ns[i] < 0) {
        samples.seen_ns[i] = t;
        samples.poll_gap_ns[i] = t - polled;
        if (read == seq && !app.output_matches(out)) samples.wrong[i] = 1;
      } else {
        ++stray;
      }
      last = seq;
    }
  }

  void sensor(const std::vector<std::int64_t>& offsets) {
    sensor_grant = measure::configure_current_thread(cpus.sensor, s.realtime);
    io::mailbox& mb = app.mailbox();
    const std::int64_t start = now_ns() + 20'000'000;  // BE clients reach steady state first
    for (std::size_t i = 1; i <= total; ++i) {
      wait_until(start + offsets[i]);
      const std::uint64_t token = base + i;
      const std::int64_t t = now_ns();
      samples.release_ns[i].store(t, std::memory_order_release);
      mb.publish(std::as_bytes(std::span(&token, 1)));
      samples.publish_ns[i] = now_ns() - t;
      samples.late_ns[i] = t - (start + offsets[i]);
    }
  }
};

/// --progress: every 250 ms, where a run that does not finish got stuck (the loop, or a BE
/// stream), until `stop`.
void log_progress(const std::string& policy, const run_handle& handle, const be_clients& be,
                  const sched::preempt_signal& signal, std::uint64_t base, std::size_t total,
                  const std::atomic<bool>& stop) {
  const std::int64_t t0 = now_ns();
  while (!stop.load()) {
    std::this_thread::sleep_for(250ms);
    const loop_counters c = handle.counters();
    std::ostringstream line;
    line << "reef " << policy << " +" << (now_ns() - t0) / 1'000'000 << " ms: loop heartbeat "
         << c.iterations << ", last seq " << c.last_seq - std::min(c.last_seq, base) << "/" << total
         << ", processed " << c.processed << "; word raises " << signal.raises();
    for (std::size_t i = 0; i < be.runners.size(); ++i) {
      const sched::be_runner_progress p = be.runners[i]->progress();
      line << "; BE" << i << " submitted " << p.submissions << ", retired " << p.retired;
    }
    std::cerr << line.str() << std::endl;
  }
}

/// Releases every sample and waits (at most 5 s after the last) for the loop to process them.
void drive_samples(rt_endpoints& ends, const std::string& policy, const run_handle& handle,
                   const be_clients& be, const sched::preempt_signal& signal, std::ostream& log) {
  const std::vector<std::int64_t> offsets = release_offsets(ends.s, ends.total);
  // The sensor ends when its samples are released; the actuator when told to stop.
  stopping_thread actuator([&] { ends.stop = true; }, [&] { ends.actuator(); });
  stopping_thread sensor([] {}, [&] { ends.sensor(offsets); });
  std::atomic<bool> monitor_stop{false};
  std::optional<stopping_thread> monitor;
  if (ends.s.progress) {
    monitor.emplace(
        [&] { monitor_stop = true; },
        [&] { log_progress(policy, handle, be, signal, ends.base, ends.total, monitor_stop); });
  }
  sensor.join();
  const bool all_seen = wait_for_sample(handle, ends.base + ends.total, 5'000'000'000);
  std::this_thread::sleep_for(2ms);
  ends.stop = true;
  actuator.join();
  monitor.reset();  // asks it to stop and joins it
  if (!all_seen) {
    const loop_counters c = handle.counters();
    log << "reef " << policy << ": the RT loop had not processed the last sample 5 s after its "
        << "release (last sequence " << c.last_seq - std::min(c.last_seq, ends.base) << " of "
        << ends.total << ", heartbeat " << c.iterations << ")\n";
  }
}

/// The pad job's counters before a run, to take the run's share from them after it.
struct pad_counts {
  std::uint64_t taken{0};
  std::uint32_t rt_late{0};
  sched::pad_placement placement;
};

pad_counts pad_counts_of(const pad_source& pad, const policy_config& pc) {
  return {pc.pad ? pad.job.taken() : 0, pad.job.rt_late_takes(), pad.job.placement()};
}

/// Where the RT gemm blocks landed, the preempt word's counts, the thread grants, the SMs.
void add_placement_and_word(nlohmann::json& r, const pad_source& pad, const pad_counts& before,
                            const sched::preempt_signal& signal, const run_options& o) {
  // RT gemm items that began only after a pad block waited for them (see pad_limits).
  r["rt_late_items"] = pad.job.rt_late_takes() - before.rt_late;
  if (pad.job.records_placement()) {
    // Where the RT gemm blocks landed, over the run's merged launches (warm-up included).
    const sched::pad_placement after = pad.job.placement();
    const std::uint32_t launches = after.launches - before.placement.launches;
    const std::uint64_t spread = after.spread_ns - before.placement.spread_ns;
    r["rt_placement"] = {
        {"gemm_launches", launches},
        {"crowded_launches", after.crowded_launches - before.placement.crowded_launches},
        {"mean_start_spread_us",
         launches == 0 ? 0.0 : static_cast<double>(spread) / 1000.0 / launches}};
  }
  const preempt_mirror mirror = signal.mirror();
  r["preempt_word"] = {{"raises", mirror.raises},
                       {"clears", mirror.clears},
                       {"lead_ns", o.preempt.lead_ns},
                       {"early_raises", mirror.early_raises},
                       {"withdrawn", mirror.withdrawn}};
}

void add_split_sms(nlohmann::json& r, const policy_config& pc, const policy_partitions& pp) {
  if (pc.split) {
    r["split_sms"] = {{"rt", (*pp.parts)[0].sm_count()}, {"be", (*pp.parts)[1].sm_count()}};
  } else if (pc.spatial) {
    r["split_sms"] = {{"rt", (*pp.parts)[0].sm_count()},
                      {"be", "all, leaving the RT SMs when raised"}};
  }
  if (pp.parts) r["split_sms"]["rt_sm_ids"] = sm_ids(pp.rt_mask);
}

/// A device buffer of `bytes` zeros, or none when `bytes` is 0.
device_buffer zeroed(std::size_t bytes) {
  if (bytes == 0) return {};
  device_buffer b(bytes);
  RESIDENT_CUDA_TRY(cudaMemset(b.data(), 0, b.size()));
  return b;
}

}  // namespace

nlohmann::json run_policy(const reef_settings& s, const std::string& policy,
                          const shared_work& work, std::ostream& log) {
  const policy_config pc = config_of(policy);
  int least = 0;
  int greatest = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const policy_partitions pp = make_partitions(s, pc, policy);
  sched::preempt_signal signal;
  // be_trace: where the BE blocks were, read by the RT op at the end of its compute.
  device_buffer trace_mem = zeroed(s.be_trace && pc.be ? sizeof(sched::be_trace) : 0);
  auto* trace = trace_mem.size() > 0 ? trace_mem.data_as<sched::be_trace>() : nullptr;
  be_clients be = make_be_clients(s, pc, pp, signal, trace, least);
  // rt_split_body, be_trace: one stamp per sample, indexed by sequence number (no wrap in a
  // run).
  const auto done_capacity = static_cast<std::uint32_t>(s.samples + s.warmup) + 64U;
  const bool stamp_done = s.rt_split_body || s.be_trace;
  device_buffer done_ring = zeroed(stamp_done ? done_capacity * sizeof(rt_done_stamp) : 0);
  rt_app_options ao;
  ao.pads = rt_limits(s, pc, work);
  ao.copy_kernel = s.rt_out_copy == "kernel";
  ao.pdl = s.rt_pdl;
  ao.l2_window = work.l2_window;
  ao.done_ring = stamp_done ? done_ring.data_as<rt_done_stamp>() : nullptr;
  ao.done_capacity = done_capacity;
  ao.be_trace = trace;
  ao.clock_probe = s.be_trace;
  reef_rt_app app(work.model, work.pad, ao);
  const run_options o = rt_run_options(s, policy, pc, pp, signal, greatest);
  auto handle = run_async(app, execution_mode::while_loop, o);

  const pad_counts pad_before = pad_counts_of(*work.pad, pc);
  const std::int64_t be0 = now_ns();
  for (auto& r : be.runners) r->start();
  const auto total = static_cast<std::size_t>(s.samples + s.warmup);
  sample_log samples(total);
  rt_endpoints ends{s, work.cpus, app, app.mailbox().published(), total, samples};
  drive_samples(ends, policy, *handle, be, signal, log);

  std::vector<sched::be_runner_stats> be_stats;
  for (auto& r : be.runners) be_stats.push_back(r->stop());
  const double be_seconds = static_cast<double>(now_ns() - be0) * 1e-9;
  for (auto& st : be.streams) st.synchronize();
  const tear_down_report report = handle->tear_down();
  if (!report.stopped || !report.error.empty()) {
    throw std::runtime_error("reef " + policy +
                             ": the RT loop did not stop cleanly: " + report.error);
  }
  const std::uint64_t pad_blocks = pc.pad ? work.pad->job.taken() - pad_before.taken : 0;

  rt_latencies lat(s.disturbance_ns);
  collect_latencies(s, samples, *handle, ends.base, total, lat);
  if (lat.us.empty()) throw std::runtime_error("reef " + policy + ": no RT output seen");
  std::vector<rt_done_stamp> done;
  if (stamp_done) {
    done.resize(done_capacity);
    RESIDENT_CUDA_TRY(
        cudaMemcpy(done.data(), done_ring.data(), done_ring.size(), cudaMemcpyDeviceToHost));
  }
  const rt_breakdown b = breakdown_of(s, *handle, done, samples, ends.base, total);
  const measure::summary sum = measure::summarize(lat.us);
  nlohmann::json r =
      rt_result(s, policy, lat, sum, report, total, ends.stray.load(), b, stamp_done, trace);
  r["be"] = be_result(s, be_stats, be.runners.size(), be_seconds, pad_blocks, *work.pad);
  add_placement_and_word(r, *work.pad, pad_before, signal, o);
  // Preemption latency above runs from the sample's detect; from the raise it is longer by the
  // lead where the word went up ahead of the sample (rt_raise_lead_us).
  r["preemption_from_raise"] = brief(b.raise_to_body_us);
  r["raise_lead"] = brief(b.raise_lead_us);
  r["rt_stream_priority"] = o.stream_priority;
  r["rt_l2_marked_kernels"] = app.l2_marked();
  if (work.l2_window && app.l2_marked() == 0) {
    throw std::runtime_error("rt_l2_persist: no RT kernel node took the L2 window");
  }
  r["threads"] = {{"sensor", measure::to_json(ends.sensor_grant)},
                  {"actuator", measure::to_json(ends.actuator_grant)}};
  add_split_sms(r, pc, pp);
  log << "reef " << policy << ": RT p50 " << sum.p50 << " us, p99 " << sum.p99 << " us, max "
      << sum.max << " us; BE " << r["be"]["inferences_per_s"].get<double>() << " inf/s, "
      << r["be"]["gflops"].get<double>() << " GFLOP/s; wrong " << lat.wrong << ", unobserved "
      << lat.unobserved << "\n";
  return r;
}

}  // namespace resident::bench::reef_detail
