// resident bench reef: its settings, the whole run, the ratios, targets and table (see
// reef_bench.hpp; the policies in reef_policy.cpp, the work in reef_model.cpp, the trace
// analyses in reef_traces.cpp).

#include "bench/reef/reef_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "bench/common.hpp"
#include "bench/reef/reef_model.hpp"
#include "bench/reef/reef_policy.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/l2_persistence.hpp"
#include "resident/measure/threads.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::bench {

using reef_detail::config_of;
using reef_detail::policy_config;

namespace {

const std::vector<std::string> k_policies = {
    "exclusive", "sequential",  "multi-stream", "priority",     "green-split",  "exclusive-split",
    "preempt",   "preempt-pad", "preempt-sm",   "preempt-lead", "exclusive-end"};

const nlohmann::json* find_policy(const nlohmann::json& results, const std::string& p) {
  for (const auto& r : results) {
    if (r.value("policy", "") == p) return &r;
  }
  return nullptr;
}

/// A knob's name in messages: its key in the configuration file, and its flag where it has one.
std::string knob(const std::string& key) {
  static const std::vector<std::pair<std::string, std::string>> flags = {{"policies", "--policies"},
                                                                         {"arrival", "--arrival"},
                                                                         {"rate_hz", "--rate"},
                                                                         {"samples", "--samples"},
                                                                         {"warmup", "--warmup"}};
  for (const auto& [k, flag] : flags) {
    if (k == key) return flag + " (" + key + ")";
  }
  return key;
}

/// A number as a person writes it (8000, 0.05).
std::string text_of(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::optional<reef_problem> bad(const std::string& key, const std::string& must) {
  return reef_problem{key, knob(key) + " " + must};
}

template <class T>
std::optional<reef_problem> outside(const std::string& key, T value, T lo, T hi,
                                    const std::string& note = {}) {
  if (value >= lo && value <= hi) return std::nullopt;
  std::ostringstream must;
  must << "must be in " << lo << ".." << hi << note << ", got " << value;
  return bad(key, must.str());
}

std::optional<reef_problem> not_one_of(const std::string& key, const std::string& value,
                                       const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  }
  return bad(key, "must be " + list + ", got '" + value + "'");
}

}  // namespace

const std::vector<std::string>& reef_policies() { return k_policies; }

void reef_settings::make_quick() {
  samples = 1000;
  warmup = 100;
}

std::optional<reef_problem> reef_settings::choice_problem() const {
  if (policies.empty()) return bad("policies", "is empty");
  for (const auto& p : policies) {
    try {
      (void)config_of(p);
    } catch (const std::invalid_argument& e) {
      return reef_problem{"policies", e.what()};
    }
  }
  if (auto p = not_one_of("arrival", arrival, {"periodic", "poisson"})) return p;
  if (auto p = not_one_of("be_model", be_model, {"mlp", "mlp-fused", "cnn"})) return p;
  if (auto p = not_one_of("rt_raise", rt_raise, {"detect", "after-copy"})) return p;
  if (auto p = not_one_of("rt_out_copy", rt_out_copy, {"memcpy", "kernel"})) return p;
  return std::nullopt;
}

std::optional<reef_problem> reef_settings::range_problem() const {
  if (!(rate_hz > 0.0) || rate_hz > 20000.0) {
    return bad("rate_hz", "must be in (0, 20000] Hz, got " + text_of(rate_hz));
  }
  if (samples <= 0) return bad("samples", "must be positive, got " + std::to_string(samples));
  if (warmup < 0) return bad("warmup", "must be >= 0, got " + std::to_string(warmup));
  if (disturbance_ns <= 0) {
    return bad("disturbance_ns", "must be positive, got " + std::to_string(disturbance_ns));
  }
  if (auto p = outside<std::size_t>("be_window", be_window, 1, 8)) return p;
  if (auto p = outside<std::size_t>("be_window_sm", be_window_sm, 1, 8)) return p;
  if (auto p = outside<std::size_t>("be_window_split", be_window_split, 1, 8)) return p;
  if (auto p = outside("be_rt_sm_blocks", be_rt_sm_blocks, 0, 64, " (0: no limit)")) return p;
  if (auto p = outside("be_bounded_grid", be_bounded_grid, 0, 64, " (0: off)")) return p;
  if (!(pad_place_wait_us >= 0.0) || pad_place_wait_us > 1000.0) {
    return bad("pad_place_wait_us", "must be in [0, 1000], got " + text_of(pad_place_wait_us));
  }
  if (be_checkpoint_min_steps < 1) return bad("be_checkpoint_min_steps", "must be at least 1");
  if (auto p = outside("be_clients", be_clients, 1, 8)) return p;
  if (auto p = outside("rt_batch", rt_batch, 1, 4096)) return p;
  if (split_sms < 1) return bad("split_sms", "must be positive, got " + std::to_string(split_sms));
  if (!(pad_tolerance >= 0.0) || pad_tolerance > 1.0) {
    return bad("pad_tolerance", "must be in [0, 1], got " + text_of(pad_tolerance));
  }
  if (!(rt_raise_lead_us > 0.0)) {
    return bad("rt_raise_lead_us", "must be positive, got " + text_of(rt_raise_lead_us));
  }
  return std::nullopt;
}

std::optional<reef_problem> reef_settings::problem() const {
  if (auto p = choice_problem()) return p;
  if (auto p = range_problem()) return p;
  if (rt_l2_persist && !rt_arena) {
    return bad("rt_l2_persist",
               "needs rt_arena on (one window covers one address range); turn one of them off");
  }
  if (arrival == "periodic" &&  // (under Poisson arrivals preempt-lead does not run)
      rt_raise_lead_us * 1000.0 >= static_cast<double>(period_ns()) / 2.0) {
    return bad("rt_raise_lead_us", std::to_string(rt_raise_lead_us) +
                                       " must be under half the RT period (" +
                                       std::to_string(static_cast<double>(period_ns()) / 1000.0) +
                                       " us at --rate " + std::to_string(rate_hz) + ")");
  }
  return std::nullopt;
}

void reef_settings::validate() const {
  if (auto p = problem()) throw std::invalid_argument(p->message);
}

std::uint64_t reef_settings::raise_lead_ns(const std::string& policy) const {
  return config_of(policy).lead ? static_cast<std::uint64_t>(rt_raise_lead_us * 1000.0) : 0;
}

std::vector<std::string> reef_settings::runnable_policies() const {
  if (arrival == "periodic") return policies;
  std::vector<std::string> out;
  for (const auto& p : policies) {
    if (!config_of(p).lead) out.push_back(p);
  }
  return out;
}

bool reef_settings::needs_partition() const {
  return std::any_of(policies.begin(), policies.end(), [](const std::string& p) {
    const policy_config c = config_of(p);
    return c.split || c.spatial;
  });
}

void reef_settings::check_split(int sm_count, int alignment, int groups) const {
  if (!needs_partition()) return;
  const bool split = std::any_of(policies.begin(), policies.end(),
                                 [](const std::string& p) { return config_of(p).split; });
  // The driver hands out whole groups of `alignment` SMs; the SMs in no whole group go to no
  // partition (partition_set::split). On the H200 those are 12, not 132 % 8.
  const int unit = std::max(1, alignment);
  const int usable = (groups > 0 ? groups : sm_count / unit) * unit;
  const int rt = (split_sms + unit - 1) / unit * unit;
  const std::string asked = "split_sms " + std::to_string(split_sms) + ": ";
  const std::string device = "partitions are whole groups of " + std::to_string(unit) + " SMs, " +
                             std::to_string(usable) + " of the device's " +
                             std::to_string(sm_count) + " SMs";
  if (rt > usable) {
    throw std::invalid_argument(asked + "the RT partition needs " + std::to_string(rt) +
                                " SMs, and " + device);
  }
  if (split && usable - rt < unit) {
    throw std::invalid_argument(asked + "green-split and exclusive-split need at least " +
                                std::to_string(unit) + " SMs for the BE partition, and " + device +
                                ", so at most " + std::to_string(usable - unit) +
                                " can go to the RT partition");
  }
}

void reef_ratios(nlohmann::json& results) {
  const auto* ex = find_policy(results, "exclusive");
  const auto* ex_end = find_policy(results, "exclusive-end");
  const auto* seq = find_policy(results, "sequential");
  for (auto& r : results) {
    if (ex != nullptr) {
      r["rt_mean_over_exclusive"] = r["mean_us"].get<double>() / ex->at("mean_us").get<double>();
      r["rt_p99_over_exclusive"] = r["p99_us"].get<double>() / ex->at("p99_us").get<double>();
      r["rt_max_over_exclusive"] = r["max_us"].get<double>() / ex->at("max_us").get<double>();
    }
    if (ex != nullptr && r.contains("undisturbed_p99_us") && ex->contains("undisturbed_p99_us")) {
      // Both without the samples the measuring threads may have stretched (no target: the
      // targets take every sample).
      r["rt_undisturbed_p99_over_exclusive"] =
          r["undisturbed_p99_us"].get<double>() / ex->at("undisturbed_p99_us").get<double>();
    }
    if (ex_end != nullptr) {  // the same ratio against the baseline measured last (no target)
      r["rt_p99_over_exclusive_end"] =
          r["p99_us"].get<double>() / ex_end->at("p99_us").get<double>();
    }
    if (seq != nullptr && seq->at("be").at("gflops").get<double>() > 0) {
      r["be_gflops_over_sequential"] =
          r["be"]["gflops"].get<double>() / seq->at("be").at("gflops").get<double>();
    }
  }
}

nlohmann::json reef_targets(const nlohmann::json& results) {
  nlohmann::json t = nlohmann::json::array();
  const auto* ex = find_policy(results, "exclusive");
  const auto* seq = find_policy(results, "sequential");
  // green-split is judged on RT and BE only: it never preempts (its RT kernels find their SMs
  // free), so a preemption latency would be its start latency under another name.
  for (const std::string p :
       {"green-split", "preempt", "preempt-pad", "preempt-sm", "preempt-lead"}) {
    const auto* r = find_policy(results, p);
    if (r == nullptr) continue;
    if (config_of(p).preemptible) {
      // From the sample's detect, or from the raise where that came first (preempt-lead): the
      // later start of the two, so a lead never shortens the number judged.
      const double after_sample = r->at("preemption_latency").value("p99_us", 0.0);
      const double from_raise = r->contains("preemption_from_raise")
                                    ? r->at("preemption_from_raise").value("p99_us", 0.0)
                                    : 0.0;
      const double pl = std::max(after_sample, from_raise);
      nlohmann::json pt{{"name", p + ": preemption latency p99 (us)"},
                        {"value", pl},
                        {"target", 20.0},
                        {"met", pl > 0 && pl <= 20.0}};
      if (from_raise > after_sample) pt["after_sample"] = after_sample;
      t.push_back(std::move(pt));
    }
    if (ex != nullptr) {
      const double ratio = r->at("p99_us").get<double>() / ex->at("p99_us").get<double>();
      nlohmann::json rt{{"name", p + ": RT p99 / exclusive p99"},
                        {"value", ratio},
                        {"target", 1.05},
                        {"met", ratio <= 1.05}};
      // The same ratio without the host's share, beside it (the target takes every sample): a
      // run whose exclusive had a host tail can meet it while the device misses it.
      if (r->contains("undisturbed_p99_us") && ex->contains("undisturbed_p99_us")) {
        rt["undisturbed"] =
            r->at("undisturbed_p99_us").get<double>() / ex->at("undisturbed_p99_us").get<double>();
      }
      const auto in_loop = [](const nlohmann::json& x) {
        const auto m = x.find("measurement");
        if (m == x.end() || !m->contains("in_loop_us")) return 0.0;
        return m->at("in_loop_us").value("p99_us", 0.0);
      };
      if (in_loop(*r) > 0 && in_loop(*ex) > 0) rt["in_loop"] = in_loop(*r) / in_loop(*ex);
      t.push_back(std::move(rt));
    }
    if (seq != nullptr) {
      const double base = seq->at("be").at("gflops").get<double>();
      const double ratio = base > 0 ? r->at("be").at("gflops").get<double>() / base : 0.0;
      t.push_back({{"name", p + ": BE throughput / sequential"},
                   {"value", ratio},
                   {"target", 1.5},
                   {"met", ratio >= 1.5}});
    }
  }
  return t;
}

namespace {

/// The L2 set-aside that keeps the RT model's lines (rt_l2_persist), and its window.
struct rt_l2 {
  std::optional<l2_set_aside> set_aside;
  std::optional<cudaAccessPolicyWindow> window;
};

rt_l2 make_rt_l2(const reef_settings& s, const reef_detail::rt_model& model) {
  rt_l2 l2;
  if (!s.rt_l2_persist) return l2;
  l2.set_aside.emplace(model.arena_used());
  if (l2.set_aside->granted() == 0) {
    throw std::runtime_error("rt_l2_persist: the device sets no L2 aside");
  }
  // A window larger than the set-aside would make its lines evict each other.
  l2.window =
      persisting_window(model.arena(), std::min(model.arena_used(), l2.set_aside->granted()));
  return l2;
}

const std::vector<std::int32_t> rt_widths{256, 512, 512, 256};

/// The receipt's settings: every knob, and what the run made of them.
nlohmann::json receipt_settings(const reef_settings& s, const reef_detail::shared_work& work,
                                const rt_l2& l2) {
  return {{"policies", s.policies},
          {"arrival", s.arrival},
          {"rate_hz", s.rate_hz},
          {"samples", s.samples},
          {"warmup", s.warmup},
          {"rt",
           {{"model", "mlp"},
            {"batch", s.rt_batch},
            {"widths", rt_widths},
            {"gflop", work.model->gflop()},
            {"mode", "while"},
            {"poll_ns", s.poll_ns}}},
          {"disturbance_ns", s.disturbance_ns},
          {"be",
           {{"model", s.be_model},
            {"clients", s.be_clients},
            {"gflop_per_inference", reef_detail::be_gflop(s.be_model)},
            {"window", s.be_window},
            {"window_sm", s.be_window_sm},
            {"window_split", s.be_window_split},
            {"rt_sm_blocks", s.be_rt_sm_blocks},
            {"checkpoint", s.be_checkpoint},
            {"checkpoint_min_steps", s.be_checkpoint_min_steps},
            {"bounded_grid_per_sm", s.be_bounded_grid},
            {"bounded_grid_counter", s.be_bounded_grid_counter}}},
          {"pad_place_wait_us", s.pad_place_wait_us},
          {"rt_spread", s.rt_spread},
          {"rt_placement", s.records_placement()},
          {"split_sms", s.split_sms},
          {"split_be_rest", s.split_be_rest},
          {"rt_out_copy", s.rt_out_copy},
          {"rt_pdl", s.rt_pdl},
          {"rt_raise", s.rt_raise},
          {"rt_raise_lead_us", s.rt_raise_lead_us},
          {"rt_l2_persist",
           {{"on", s.rt_l2_persist},
            {"arena", s.rt_arena},
            {"split_body", s.rt_split_body},
            {"model_bytes", work.model->arena_used()},
            {"set_aside_bytes", l2.set_aside ? l2.set_aside->granted() : 0},
            {"window_bytes", l2.window ? l2.window->num_bytes : 0}}},
          {"be_trace", s.be_trace},
          {"cpus", {{"sensor", work.cpus.sensor}, {"actuator", work.cpus.actuator}}},
          {"realtime_requested", s.realtime}};
}

/// The sensor's and actuator's cores, with every other thread of the process kept off them.
reef_detail::cpu_roles claim_cpus(std::ostream& log) {
  const auto roles = measure::assign_cpus({{"sensor", -1}, {"actuator", -1}});
  reef_detail::cpu_roles cpus{roles.at("sensor"), roles.at("actuator")};
  const auto others = measure::remaining_cpus({cpus.sensor, cpus.actuator});
  // The BE runner threads and CUDA's helpers stay off the sensor's and actuator's cores.
  if (!others.empty() && !measure::confine_process(others)) {
    log << "reef: could not keep other threads off the sensor and actuator cores\n";
  }
  return cpus;
}

}  // namespace

measure::receipt run_reef_bench(const reef_settings& s, std::ostream& log) {
  s.validate();
  if (device_count() == 0) {
    throw std::runtime_error("bench reef needs a CUDA GPU; none is usable here (" +
                             no_device_reason() + ")");
  }
  const measure::affinity_restorer restore_affinity;  // the caller's cores back on return
  reef_detail::shared_work work;
  work.cpus = claim_cpus(log);
  RESIDENT_CUDA_TRY(cudaSetDevice(0));
  if (s.needs_partition()) {
    const auto info = partition::query_sm_resource(0, false);
    s.check_split(info.sm_count, info.alignment, info.whole_groups);
  }
  work.model = std::make_shared<const reef_detail::rt_model>(s.rt_batch, rt_widths, s.rt_arena);
  std::int32_t rt_capacity = 0;
  for (std::size_t l = 0; l < work.model->layers(); ++l) {
    rt_capacity = std::max(rt_capacity, sched::gemm_blocks(work.model->gemm(l)));
  }
  work.pad = std::make_shared<reef_detail::pad_source>(rt_capacity, s.records_placement());
  nlohmann::json padding_report;
  const bool any_pad =
      std::find(s.policies.begin(), s.policies.end(), "preempt-pad") != s.policies.end();
  if (any_pad) {
    work.pads = reef_detail::plan_padding(*work.model, *work.pad, s.pad_tolerance, padding_report);
  }
  for (auto& p : work.pads) p.place_wait_ns = s.place_wait_ns();
  // After the padding profiles (measured without it), for every policy alike.
  const rt_l2 l2 = make_rt_l2(s, *work.model);
  work.l2_window = l2.window;

  measure::receipt receipt("reef", s.command);
  describe_machine(receipt);
  receipt.settings = receipt_settings(s, work, l2);
  if (any_pad) receipt.settings["padding"] = padding_report;
  const std::vector<std::string> runnable = s.runnable_policies();
  if (runnable.size() != s.policies.size()) {
    // A Poisson sensor's next sample is not due at any time: nothing to raise ahead of.
    log << "reef: preempt-lead left out: it needs --arrival periodic\n";
    receipt.settings["left_out"] = {{"preempt-lead", "needs --arrival periodic"}};
  }
  if (runnable.empty()) throw std::invalid_argument("no policy can run");
  for (const auto& p : runnable) {
    receipt.results.push_back(reef_detail::run_policy(s, p, work, log));
  }
  // Each policy against the baselines: the RT latency increase over exclusive, the BE
  // throughput against sequential.
  reef_ratios(receipt.results);
  receipt.settings["targets"] = reef_targets(receipt.results);
  return receipt;
}

std::string reef_table(const measure::receipt& receipt) {
  std::ostringstream out;
  out << "policy        RT mean   p50    p99     max   | preempt p99 | BE inf/s  GFLOP/s\n";
  char line[256];
  for (const auto& r : receipt.results) {
    std::snprintf(line, sizeof line, "%-12s %7.1f %6.1f %7.1f %7.1f | %11.1f | %8.1f %8.1f\n",
                  r.value("policy", "?").c_str(), r.value("mean_us", 0.0), r.value("p50_us", 0.0),
                  r.value("p99_us", 0.0), r.value("max_us", 0.0),
                  r.at("preemption_latency").value("p99_us", 0.0),
                  r.at("be").value("inferences_per_s", 0.0), r.at("be").value("gflops", 0.0));
    out << line;
  }
  if (receipt.settings.contains("targets")) {
    for (const auto& t : receipt.settings["targets"]) {
      out << (t.value("met", false) ? "met    " : "missed ") << t.value("name", "") << ": "
          << t.value("value", 0.0) << " (target " << t.value("target", 0.0) << ")";
      if (t.contains("undisturbed")) out << "; undisturbed " << t.value("undisturbed", 0.0);
      if (t.contains("in_loop")) out << "; in-loop " << t.value("in_loop", 0.0);
      if (t.contains("after_sample")) {
        out << "; from the sample " << t.value("after_sample", 0.0);
      }
      out << "\n";
    }
  }
  return out.str();
}
}  // namespace resident::bench
