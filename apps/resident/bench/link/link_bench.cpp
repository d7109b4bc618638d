// resident bench link (link_bench.hpp).

#include "bench/link/link_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "bench/common.hpp"
#include "bench/link/clock_offset.hpp"
#include "resident/app/application.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/exec/mode.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/mailbox.hpp"

namespace resident::bench {

namespace {

constexpr std::size_t most_bytes = std::size_t{1} << 30U;

std::uint64_t at(const telemetry_entry& e, stage s) {
  return e.stamp_ns[static_cast<std::size_t>(s)];
}

bool processed(const telemetry_entry& e) { return e.seq != 0 && e.repeat == 0; }

/// host -> mailbox -> link_tx on the producer device.
class producer_app final : public Application {
 public:
  producer_app(std::shared_ptr<io::device_link> link, int device)
      : Application("link_producer"),
        _mailbox(
            std::make_shared<io::mailbox>(io::mailbox::config{.input_bytes = link->settings().bytes,
                                                              .output_bytes = 0,
                                                              .depth = 4,
                                                              .device = device})),
        _link(std::move(link)) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto tx = make_operator<io::link_tx>("link", _link);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, tx, {{"sample", "in"}});
  }
  [[nodiscard]] io::mailbox& mailbox() const { return *_mailbox; }

 private:
  std::shared_ptr<io::mailbox> _mailbox;
  std::shared_ptr<io::device_link> _link;
};

/// link_rx -> mailbox_tx -> host on the consumer device: the host sees each payload whole.
class consumer_app final : public Application {
 public:
  consumer_app(std::shared_ptr<io::device_link> link, int device)
      : Application("link_consumer"),
        _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{.input_bytes = 8,
                                .output_bytes = link->settings().bytes,
                                .depth = 4,
                                .device = device})),
        _link(std::move(link)) {}
  void compose() override {
    auto rx = make_operator<io::link_rx>("link", _link);
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_link->make_handler(rx));
    add_flow(rx, tx, {{"sample", "in"}});
  }
  [[nodiscard]] io::mailbox& mailbox() const { return *_mailbox; }

 private:
  std::shared_ptr<io::mailbox> _mailbox;
  std::shared_ptr<io::device_link> _link;
};

/// Copy bandwidth from `from` to `to` (GB/s) for `bytes`: the median of 20 timed peer copies.
double peer_bandwidth_gbps(int from, int to, std::size_t bytes) {
  device_buffer src = zeroed_device_buffer(bytes, from);
  device_buffer dst = zeroed_device_buffer(bytes, to);
  const current_device_guard on(from);
  stream s(0);
  const event begin(true);
  const event end(true);
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    begin.record(s.view());
    RESIDENT_CUDA_TRY(cudaMemcpyPeerAsync(dst.data(), to, src.data(), from, bytes, s.get()));
    end.record(s.view());
    s.synchronize();
    if (i >= 3) ms.push_back(event::elapsed_ms(begin, end));  // the first copies warm it up
  }
  std::sort(ms.begin(), ms.end());
  const double median_s = ms[ms.size() / 2] / 1e3;
  return static_cast<double>(bytes) / median_s / 1e9;
}

/// `nvidia-smi topo -m`, or why it is missing.
std::string topology() {
  std::string out;
  if (FILE* p = popen("nvidia-smi topo -m 2>&1", "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    if (pclose(p) != 0) out += "(nvidia-smi topo -m failed)";
  } else {
    out = "(nvidia-smi not available)";
  }
  return out;
}

nlohmann::json peer_attributes(int a, int b) {
  nlohmann::json j = nlohmann::json::object();
  if (a == b) return j;
  for (const auto& [name, attr] :
       {std::pair{"access_supported", cudaDevP2PAttrAccessSupported},
        std::pair{"performance_rank", cudaDevP2PAttrPerformanceRank},
        std::pair{"native_atomics", cudaDevP2PAttrNativeAtomicSupported}}) {
    int v = 0;
    RESIDENT_CUDA_TRY(cudaDeviceGetP2PAttribute(&v, attr, a, b));
    j[name] = v;
  }
  return j;
}

struct drive_result {
  std::size_t wrong{0};
  std::size_t missing{0};
};

/// Publishes `total` payloads at the settings' rate, each after the previous one's output came
/// back (lockstep), and compares each output with its payload byte for byte. Each payload
/// differs from the last (its index in its first word, the rest a pattern shifted by it).
drive_result drive(producer_app& producer, consumer_app& consumer, std::size_t bytes,
                   std::size_t total, double rate_hz) {
  using namespace std::chrono_literals;
  std::vector<std::byte> payload(bytes);
  std::vector<std::byte> out(bytes);
  drive_result r;
  const auto period = static_cast<std::int64_t>(1e9 / rate_hz);
  const std::int64_t start = now_ns();
  for (std::size_t k = 0; k < total; ++k) {
    for (std::size_t i = 0; i < bytes; i += 4096) {
      payload[i] = static_cast<std::byte>((i / 4096 + k) & 0xFFU);
    }
    std::memcpy(payload.data(), &k, std::min(sizeof k, bytes));
    wait_until(start + static_cast<std::int64_t>(k) * period);
    const io::output_stamp before = consumer.mailbox().latest_output();
    (void)producer.mailbox().publish(payload);
    const io::output_stamp got = consumer.mailbox().wait_output(before, out, 2s);
    if (got.seq == 0 || got.commit == before.commit) {
      ++r.missing;
    } else if (std::memcmp(out.data(), payload.data(), bytes) != 0) {
      ++r.wrong;
    }
  }
  return r;
}

nlohmann::json counters_json(const loop_counters& c) {
  return {{"processed", c.processed}, {"dropped", c.dropped}, {"repeated", c.repeated}};
}

nlohmann::json summary_or_null(const std::vector<double>& v) {
  return v.empty() ? nlohmann::json(nullptr) : measure::summary_fields(measure::summarize(v));
}

}  // namespace

void link_settings::make_quick() {
  samples = 200;
  warmup = 20;
  clock_rounds = 200;
}

void link_settings::validate() const {
  const auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("bench link: " + what);
  };
  need(producer >= 0, "--producer must be a device ordinal (>= 0)");
  need(consumer >= -1, "--consumer must be a device ordinal (>= 0)");
  need(!sizes.empty(), "--sizes: name at least one payload size");
  for (const std::size_t b : sizes) {
    need(b >= 1 && b <= most_bytes,
         "--sizes: each 1 to 1073741824 bytes, got " + std::to_string(b));
  }
  need(!modes.empty(), "--modes: name at least one mode");
  for (const std::string& m : modes) {
    const execution_mode mode = parse_execution_mode(m);  // throws naming it
    need(mode != execution_mode::eager,
         "--modes: eager launches from the host; name a graph or "
         "GPU-resident mode");
  }
  need(samples >= 1 && samples <= 10'000'000, "--samples must be 1 to 10000000");
  need(warmup <= 1'000'000, "--warmup must be 0 to 1000000");
  need(rate_hz > 0 && rate_hz <= 100'000, "--rate must be > 0 and <= 100000 Hz");
  need(depth >= 2 && depth <= 4096, "--depth must be 2 to 4096");
  need(clock_rounds >= 1 && clock_rounds <= 1'000'000, "--clock-rounds must be 1 to 1000000");
  need(slack_us >= 0, "--slack-us must be >= 0");
}

std::vector<double> handoff_us(std::span<const telemetry_entry> consumer, double b_minus_a_ns) {
  std::vector<double> out;
  for (const telemetry_entry& e : consumer) {
    if (!processed(e) || at(e, stage::arrival) == 0 || at(e, stage::detect) == 0) continue;
    const double egress_on_b = static_cast<double>(at(e, stage::arrival)) + b_minus_a_ns;
    out.push_back((static_cast<double>(at(e, stage::detect)) - egress_on_b) / 1e3);
  }
  return out;
}

std::vector<double> publish_us(std::span<const telemetry_entry> producer,
                               std::span<const telemetry_entry> consumer) {
  std::vector<std::uint64_t> commits;
  for (const telemetry_entry& e : producer) {
    if (processed(e)) commits.push_back(at(e, stage::commit));
  }
  std::vector<double> out;
  std::size_t k = 0;
  for (const telemetry_entry& e : consumer) {
    if (!processed(e)) continue;
    if (k >= commits.size()) break;
    const std::uint64_t egress = at(e, stage::arrival);
    const std::uint64_t commit = commits[k++];
    if (egress != 0 && commit >= egress) out.push_back(static_cast<double>(commit - egress) / 1e3);
  }
  return out;
}

namespace {

/// The tail after the first `warmup` values (all of them when there are fewer).
std::vector<double> after_warmup(std::vector<double> v, std::size_t warmup) {
  if (v.size() > warmup) v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(warmup));
  return v;
}

struct link_case {
  int producer;
  int consumer;
  std::size_t bytes;
  std::string mode;
  double peer_gbps;
};

nlohmann::json run_case(const link_settings& s, const link_case& c, const clock_offset& off) {
  const execution_mode mode = parse_execution_mode(c.mode);
  auto link = std::make_shared<io::device_link>(
      io::device_link::config{c.bytes, s.depth, c.producer, c.consumer});
  producer_app producer(link, c.producer);
  consumer_app consumer(link, c.consumer);
  const std::size_t total = s.warmup + s.samples;
  run_options po;
  po.device = c.producer;
  po.telemetry_samples = total + 64;
  run_options co = po;
  co.device = c.consumer;
  // The producer's blocks share the copy; the consumer's handler copies with one block. On one
  // GPU both cooperative grids must fit at once.
  po.persistent_blocks = c.producer == c.consumer ? 64 : 0;
  co.persistent_blocks = 8;
  auto consumer_run = run_async(consumer, mode, co);
  auto producer_run = run_async(producer, mode, po);
  const drive_result d = drive(producer, consumer, c.bytes, total, s.rate_hz);
  const tear_down_report p = producer_run->tear_down();
  const tear_down_report q = consumer_run->tear_down();
  const auto& pt = producer_run->telemetry();
  const auto& ct = consumer_run->telemetry();
  const std::vector<double> handoff = after_warmup(handoff_us(ct, off.b_minus_a_ns), s.warmup);
  const std::vector<double> publish = after_warmup(publish_us(pt, ct), s.warmup);
  const double bound = static_cast<double>(c.bytes) / (c.peer_gbps * 1e3) + s.slack_us;
  nlohmann::json r = {{"bytes", c.bytes},
                      {"mode", c.mode},
                      {"producer", c.producer},
                      {"consumer", c.consumer},
                      {"samples", s.samples},
                      {"warmup", s.warmup},
                      {"wrong_outputs", d.wrong},
                      {"missing_outputs", d.missing},
                      {"handoff_us", summary_or_null(handoff)},
                      {"publish_us", summary_or_null(publish)},
                      {"peer_bandwidth_gbps", c.peer_gbps},
                      {"bound_us", bound},
                      {"clock_error_us", off.error_ns / 1e3},
                      {"producer_counters", counters_json(p.counters)},
                      {"consumer_counters", counters_json(q.counters)},
                      {"link_published", link->published()},
                      {"stopped", p.stopped && q.stopped},
                      {"error", p.error.empty() ? q.error : p.error}};
  r["meets_target"] = !handoff.empty() && measure::summarize(handoff).p99 <= bound;
  return r;
}

}  // namespace

measure::receipt run_link_bench(const link_settings& settings, std::ostream& log) {
  settings.validate();
  const int n = device_count();
  if (n == 0) throw std::runtime_error("bench link: no usable GPU");
  const int a = settings.producer;
  const int b = settings.consumer >= 0 ? settings.consumer : (n > 1 ? 1 : 0);
  for (const auto& [what, d] : {std::pair{"--producer", a}, std::pair{"--consumer", b}}) {
    if (const std::string why = missing_device(d); !why.empty()) {
      throw std::invalid_argument(std::string("bench link: ") + what + " " + why);
    }
  }
  measure::receipt receipt("link", settings.command);
  describe_machine(receipt);
  log << "bench link: device " << a << " (" << query_device(a).name << ") -> device " << b << " ("
      << query_device(b).name << "); calibrating the clocks ..." << std::endl;
  const std::vector<ping_pong_round> rounds = ping_pong(a, b, settings.clock_rounds);
  const clock_offset off = estimate_clock_offset(rounds);
  receipt.settings = {{"producer", a},
                      {"consumer", b},
                      {"devices", {query_device(a).name, query_device(b).name}},
                      {"sizes", settings.sizes},
                      {"modes", settings.modes},
                      {"samples", settings.samples},
                      {"warmup", settings.warmup},
                      {"rate_hz", settings.rate_hz},
                      {"depth", settings.depth},
                      {"slack_us", settings.slack_us},
                      {"topology", topology()},
                      {"peer", peer_attributes(a, b)},
                      {"clock_offset",
                       {{"b_minus_a_ns", off.b_minus_a_ns},
                        {"error_ns", off.error_ns},
                        {"round_trip_ns", off.round_trip_ns},
                        {"spread_ns", off.spread_ns},
                        {"rounds", off.rounds}}}};
  log << "bench link: clock offset " << off.b_minus_a_ns << " ns +- " << off.error_ns << " ns"
      << std::endl;
  for (const std::size_t bytes : settings.sizes) {
    const double gbps = peer_bandwidth_gbps(a, b, bytes);
    for (const std::string& mode : settings.modes) {
      log << "bench link: " << bytes << " bytes, " << mode << " ..." << std::endl;
      receipt.results.push_back(run_case(settings, {a, b, bytes, mode, gbps}, off));
    }
  }
  return receipt;
}

std::string link_table(const measure::receipt& receipt) {
  std::ostringstream t;
  t << std::fixed << std::setprecision(1);
  t << "bytes      mode        handoff p50   p99     max  (us)  publish p50  bound  target  "
       "wrong/missing\n";
  for (const auto& r : receipt.results) {
    t << std::left << std::setw(11) << r["bytes"].get<std::size_t>() << std::setw(12)
      << r["mode"].get<std::string>() << std::right;
    const auto& h = r["handoff_us"];
    if (h.is_null()) {
      t << "   (no samples)              ";
    } else {
      t << std::setw(10) << h["p50_us"].get<double>() << std::setw(8) << h["p99_us"].get<double>()
        << std::setw(8) << h["max_us"].get<double>() << "      ";
    }
    const auto& p = r["publish_us"];
    t << std::setw(11) << (p.is_null() ? 0.0 : p["p50_us"].get<double>()) << std::setw(7)
      << r["bound_us"].get<double>() << "  " << (r["meets_target"].get<bool>() ? "met " : "MISS")
      << "    " << r["wrong_outputs"].get<std::size_t>() << "/"
      << r["missing_outputs"].get<std::size_t>() << "\n";
  }
  return t.str();
}

}  // namespace resident::bench
