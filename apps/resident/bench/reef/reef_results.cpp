// bench reef: what one policy's run measured (see reef_results.hpp).

#include "bench/reef/reef_results.hpp"

#include "resident/cuda/error.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::bench::reef_detail {

void collect_latencies(const reef_settings& s, const sample_log& samples, const run_handle& handle,
                       std::uint64_t base, std::size_t total, rt_latencies& out) {
  out.stamps = stamps_by_sample(handle.telemetry(), base, total);
  for (std::size_t i = static_cast<std::size_t>(s.warmup) + 1; i <= total; ++i) {
    if (samples.seen_ns[i] < 0) {
      ++out.unobserved;
      continue;
    }
    out.us.push_back(static_cast<double>(samples.seen_ns[i] -
                                         samples.release_ns[i].load(std::memory_order_acquire)) /
                     1000.0);
    out.accounting.add(0, samples, out.stamps, i, out.us.back());
    out.wrong += samples.wrong[i];
  }
}

namespace {

double us_between(std::uint64_t from, std::uint64_t to) {
  return static_cast<double>(to - from) / 1e3;
}

/// The loop's own stamps of one sample: the word, the handler, the controller, the body.
void add_loop_stamps(const telemetry_entry& e, rt_breakdown& b) {
  const auto at = [&](stage st) { return e.stamp_ns[static_cast<std::size_t>(st)]; };
  // The loop stamps its own raise (at detect, after the copy, or a lead before the sample).
  const std::uint64_t up = at(stage::preempt_raised);
  const std::uint64_t detect = at(stage::detect);
  const std::uint64_t body = at(stage::body_start);
  if (up != 0 && at(stage::end_marker) > up) {
    b.word_up_us.push_back(us_between(up, at(stage::end_marker)));
  }
  if (up != 0 && body > up) b.raise_to_body_us.push_back(us_between(up, body));
  if (up != 0 && detect != 0) {
    // How long before the sample came the word went up (negative: after it).
    b.raise_lead_us.push_back((static_cast<double>(detect) - static_cast<double>(up)) / 1e3);
  }
  if (detect != 0 && body > detect) b.preempt_us.push_back(us_between(detect, body));
  if (detect != 0 && at(stage::controller_start) > detect) {
    b.to_controller_us.push_back(us_between(detect, at(stage::controller_start)));
  }
  if (detect != 0 && at(stage::handler_end) >= detect &&
      at(stage::controller_start) > at(stage::handler_end)) {
    b.copy_in_us.push_back(us_between(detect, at(stage::handler_end)));
    b.handoff_us.push_back(us_between(at(stage::handler_end), at(stage::controller_start)));
  }
  if (at(stage::controller_end) != 0 && body > at(stage::controller_end)) {
    b.release_us.push_back(us_between(at(stage::controller_end), body));
  }
  if (body != 0 && at(stage::commit) > body)
    b.body_us.push_back(us_between(body, at(stage::commit)));
}

/// be_trace: one sample's trace from its loop stamps and its done stamp.
rt_sample_trace trace_of(const telemetry_entry& e, const rt_done_stamp& d,
                         const sample_log& samples, std::size_t i) {
  const auto at = [&](stage st) { return e.stamp_ns[static_cast<std::size_t>(st)]; };
  rt_sample_trace t;
  if (samples.seen_ns[i] >= 0) {
    t.latency_us = static_cast<double>(samples.seen_ns[i] -
                                       samples.release_ns[i].load(std::memory_order_acquire)) /
                   1000.0;
  }
  t.body_start = at(stage::body_start);
  t.compute_end = d.ns;
  t.commit = at(stage::commit);
  t.be_running = d.be_running;
  t.be_last_begin = d.be_last_begin_ns;
  t.be_last_end = d.be_last_end_ns;
  t.be_last_stop = d.be_last_stop_ns;
  t.sm_khz = d.sm_khz;
  t.be_checkpoints = d.be_checkpoints;
  t.rt_crowded = d.rt_crowded;
  t.rt_spread_ns = d.rt_spread_ns;
  for (int l = 0; l < rt_stamped_gemms; ++l) {
    t.gemm_start[static_cast<std::size_t>(l)] = d.gemm_start_ns[l];
    t.gemm_end[static_cast<std::size_t>(l)] = d.gemm_end_ns[l];
  }
  return t;
}

}  // namespace

rt_breakdown breakdown_of(const reef_settings& s, const run_handle& handle,
                          const std::vector<rt_done_stamp>& done, const sample_log& samples,
                          std::uint64_t base, std::size_t total) {
  rt_breakdown b;
  const std::uint64_t first = base + static_cast<std::uint64_t>(s.warmup) + 1;
  const std::uint64_t final_seq = base + total;
  for (const telemetry_entry& e : handle.telemetry()) {
    if (e.seq < first || e.seq > final_seq || e.repeat != 0) continue;
    add_loop_stamps(e, b);
    if (done.empty()) continue;
    const rt_done_stamp& d = done[e.seq % done.size()];
    const std::uint64_t body = e.stamp_ns[static_cast<std::size_t>(stage::body_start)];
    const std::uint64_t commit = e.stamp_ns[static_cast<std::size_t>(stage::commit)];
    if (d.seq == e.seq && d.ns > body && commit >= d.ns && body != 0) {
      b.compute_us.push_back(us_between(body, d.ns));
      b.egress_us.push_back(us_between(d.ns, commit));
      if (s.be_trace) b.traced.push_back(trace_of(e, d, samples, e.seq - base));
    }
  }
  return b;
}

nlohmann::json be_result(const reef_settings& s, const std::vector<sched::be_runner_stats>& stats,
                         std::size_t clients, double be_seconds, std::uint64_t pad_blocks,
                         const pad_source& pad) {
  nlohmann::json be = {{"clients", clients}, {"seconds", be_seconds}};
  std::uint64_t sequences = 0;
  nlohmann::json per = nlohmann::json::array();
  for (const auto& st : stats) {
    sequences += st.sequences;
    per.push_back({{"sequences", st.sequences},
                   {"kernels", st.kernels},
                   {"submissions", st.submissions},
                   {"preemptions", st.preemptions},
                   {"preempted_launches", st.preempted_launches},
                   {"resumed_launches", st.resumed_launches},
                   {"blocks_completed", st.blocks_completed},
                   {"blocks_rerun", st.blocks_rerun},
                   {"early_exits", st.early_exits},
                   {"checkpoints", st.checkpoints},
                   {"handbacks", st.handbacks},
                   {"repeated_commits_non_idempotent", st.repeated_commits}});
  }
  const double seq_gflop = be_gflop(s.be_model);
  const double pad_gflop = static_cast<double>(pad_blocks) * pad.gflop_per_block();
  be["sequences"] = sequences;
  be["inferences_per_s"] = be_seconds > 0 ? static_cast<double>(sequences) / be_seconds : 0.0;
  be["gflops_inference"] =
      be_seconds > 0 ? static_cast<double>(sequences) * seq_gflop / be_seconds : 0.0;
  be["pad_blocks"] = pad_blocks;
  be["gflops_padding"] = be_seconds > 0 ? pad_gflop / be_seconds : 0.0;
  be["gflops"] =
      be_seconds > 0 ? (static_cast<double>(sequences) * seq_gflop + pad_gflop) / be_seconds : 0.0;
  be["runners"] = per;
  return be;
}

nlohmann::json rt_result(const reef_settings& s, const std::string& policy, const rt_latencies& lat,
                         const measure::summary& sum, const tear_down_report& report,
                         std::size_t total, std::int64_t stray, const rt_breakdown& b,
                         bool stamp_done, const sched::be_trace* trace) {
  nlohmann::json r =
      measure::latency_result(policy, "rt-mlp", "be-" + s.be_model, sum, report.counters.processed,
                              report.counters.dropped, report.counters.repeated);
  r["policy"] = policy;
  add_response_fields(r, report.counters);
  r["released"] = total;
  r["unobserved"] = lat.unobserved;
  r["wrong_outputs"] = lat.wrong;
  r["stray_outputs"] = stray;
  // Every latency stays in the statistics above (the targets use them all).
  lat.accounting.write_undisturbed(r);
  r["measurement"] = lat.accounting.measurement(
      "a sample is disturbed when the sensor took longer than the threshold to publish it or "
      "the actuator's last poll before it saw the output was longer than the threshold; "
      "in_loop: the device's detect -> commit (%globaltimer), outside: the rest of the same "
      "sample's latency (the trips between host and device); slowest: the slowest samples, "
      "each split against the sample before it",
      false);
  r["preemption_latency"] = measure::summary_fields(
      b.preempt_us.empty() ? measure::summary{} : measure::summarize(b.preempt_us));
  r["rt_body"] = brief(b.body_us);
  // How long each sample holds the word up, and the share of the run's time that makes at the
  // run's rate: what a policy that stops BE work on the word can never give to BE.
  r["rt_word_up"] = brief(b.word_up_us);
  if (!b.word_up_us.empty()) {
    r["rt_word_up"]["duty"] = r["rt_word_up"]["mean_us"].get<double>() * 1e-6 * s.rate_hz;
  }
  if (stamp_done) {
    r["rt_body_split"] = {{"compute", brief(b.compute_us)}, {"egress", brief(b.egress_us)}};
  }
  if (trace != nullptr) {
    sched::be_trace last{};
    RESIDENT_CUDA_TRY(cudaMemcpy(&last, trace, sizeof last, cudaMemcpyDeviceToHost));
    r["be_trace"] = be_overlap(b.traced);
    r["be_trace"]["checkpoints_total"] = last.checkpoints;
    r["be_trace"]["before_body"] = before_body(b.traced);
  }
  if (s.be_trace) r["rt_placement_by_body"] = rt_placement(b.traced);
  if (s.be_trace) r["rt_compute_split"] = rt_compute_split(b.traced);
  if (s.be_trace) r["rt_clock"] = rt_clock(b.traced);
  r["preemption_breakdown"] = {{"detect_to_controller", brief(b.to_controller_us)},
                               {"detect_to_handler_end", brief(b.copy_in_us)},
                               {"handler_end_to_controller", brief(b.handoff_us)},
                               {"controller_end_to_body_start", brief(b.release_us)}};
  return r;
}

}  // namespace resident::bench::reef_detail
