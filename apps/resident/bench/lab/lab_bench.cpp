#include "bench/lab/lab_bench.hpp"

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
#include "bench/lab/lab_common.hpp"
#include "bench/overhead/overhead_bench.hpp"
#include "resident/measure/break_even.hpp"

namespace resident::bench {

using namespace lab_detail;

namespace {

const std::vector<std::string> lab_modes{"eager", "stream", "graph", "persistent"};

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
    throw std::invalid_argument("--mode must be eager, stream, graph, persistent or all, got '" +
                                mode + "'");
  }
  if (order.empty()) throw std::invalid_argument("--order names no mode");
  std::set<std::string> seen;
  for (const auto& m : order) {
    if (std::find(lab_modes.begin(), lab_modes.end(), m) == lab_modes.end()) {
      throw std::invalid_argument("--order: unknown mode '" + m +
                                  "' (eager, stream, graph, persistent)");
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
  if (persistent_workers < 1 || persistent_workers > 1024) {
    throw std::invalid_argument("--persistent-workers must be in 1..1024, got " +
                                std::to_string(persistent_workers));
  }
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
      values(linspace01(n)) {
  // The first (timed) launch reads the input before any check fills it: it holds the values.
  RESIDENT_CUDA_TRY(cudaMemcpy(input.data(), values.data(), input.size(), cudaMemcpyHostToDevice));
}

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
