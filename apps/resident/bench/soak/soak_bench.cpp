// resident bench soak (see soak_bench.hpp).

#include "bench/soak/soak_bench.hpp"

#include <cuda_runtime_api.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <ostream>
#include <random>
#include <ranges>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "bench/lab/lab_pipeline.hpp"
#include "camera/camera.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"
#include "resident/imaging/reference.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops.hpp"

namespace resident::bench {

namespace {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::uint64_t free_device_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  RESIDENT_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return free;
}

execution_mode resident_mode(const std::string& name, const char* what) {
  const execution_mode m = parse_execution_mode(name);
  if (!is_resident(m)) {
    throw std::invalid_argument(std::string("bench soak: ") + what + " '" + name +
                                "' is not GPU-resident; use while, tail or persistent");
  }
  return m;
}

// ---- the mailbox pipeline (bench/lab_pipeline.hpp) ---------------------------------------------

// A prime number of distinct samples: consecutive samples always differ, and no ring depth
// lines up with the pool.
constexpr std::size_t pool_size = 251;

struct sample_pool {
  std::vector<std::vector<float>> inputs;
  std::vector<double> expected;  // sum of (2x + 1)^2 (ops::affine's defaults), in double
};

sample_pool make_pool(std::int64_t elements) {
  std::mt19937 rng(20261204);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  sample_pool p;
  p.inputs.resize(pool_size);
  p.expected.resize(pool_size);
  for (std::size_t i = 0; i < pool_size; ++i) {
    p.inputs[i].resize(static_cast<std::size_t>(elements));
    double total = 0;
    for (auto& v : p.inputs[i]) {
      v = dist(rng);
      const double y = 2.0 * v + 1.0;
      total += y * y;
    }
    p.expected[i] = total;
  }
  return p;
}

struct mailbox_side {
  mailbox_side(std::size_t per_minute, std::size_t minutes)
      : host(per_minute, minutes), in_loop(per_minute, minutes) {}
  std::atomic<std::uint64_t> checked{0};
  std::atomic<std::uint64_t> mismatches{0};
  minute_folder host;     // publish -> the actuator sees it (the actuator thread folds it)
  minute_folder in_loop;  // sighting -> commit, device clock (the loop's supervisor folds it)
  std::vector<std::int64_t> publish_ns;  // by seq % size: when the sensor published it
  // The sensor thread's own lateness (publish time - its schedule): a stalled thread publishes
  // its backlog back to back, which the newest-sample policy drops. Written by that thread.
  std::atomic<std::uint64_t> late_releases{0};  // releases more than late_release_ns late
  std::atomic<std::int64_t> max_late_ns{0};
  static constexpr std::int64_t late_release_ns = 100'000;
  // Which samples ran beside the camera's frames (the camera's supervisor adds the frames).
  overlap_census beside_camera{landing_ns};
  // A 1080p RAW12 frame is about 3.1 MB: 60-130 µs over PCIe at 25-50 GB/s (a guess; the gap
  // histogram measures it).
  static constexpr std::uint64_t landing_ns = 200'000;
};

/// The mailbox sensor thread's lateness so far (cumulative, like the counters beside it).
json sensor_json(const mailbox_side& m) {
  return {
      {"late_over_us", static_cast<double>(mailbox_side::late_release_ns) / 1e3},
      {"late_releases", m.late_releases.load(std::memory_order_relaxed)},
      {"max_late_us", static_cast<double>(m.max_late_ns.load(std::memory_order_relaxed)) / 1e3}};
}

// The actuator: every commit it sees is checked against the sample's reference, and its latency
// (publish -> seen, host CLOCK_MONOTONIC) filed under the time it was seen.
void run_actuator(io::mailbox& mb, std::uint64_t base, const sample_pool& pool, mailbox_side& side,
                  const std::atomic<bool>& done, clock_type::time_point t0) {
  io::output_stamp last = mb.latest_output();
  float out = 0.0F;
  while (!done.load(std::memory_order_relaxed)) {
    const io::output_stamp got = mb.wait_output(last, std::as_writable_bytes(std::span(&out, 1)),
                                                std::chrono::milliseconds(20));
    if (got.empty()) continue;
    const std::int64_t seen = now_ns();
    last = got;
    const std::uint64_t index = (got.seq - base - 1) % pool_size;
    const double want = pool.expected[index];
    side.checked.fetch_add(1, std::memory_order_relaxed);
    if (std::abs(out - want) > 1e-5 * std::max(1.0, std::abs(want))) {
      side.mismatches.fetch_add(1, std::memory_order_relaxed);
    }
    const std::int64_t published =
        std::atomic_ref<std::int64_t>(side.publish_ns[got.seq % side.publish_ns.size()]).load();
    if (published > 0 && seen >= published) {
      side.host.add({seconds_since(t0), static_cast<double>(seen - published) / 1e3});
    }
  }
}

// ---- the camera: which shown frames match the CPU pipeline ------------------------------------

/// The camera's screen checks so far (the receipt and the health line report them).
struct screen_counts {
  std::uint64_t checked{0};
  std::uint64_t mismatches{0};
  std::uint64_t not_followed{0};  // previous-frame: the frame before it not processed just before
  std::uint64_t busy{0};          // the front buffer changed during the copy: not judged
  int worst_lsb{0};
};

struct camera_side {
  // Per prebuilt frame d, the screen it gives corrected with its own gains (same-frame
  // statistics, the four-operator chain) and, with previous-frame statistics,
  // with the gains of the prebuilt frame before it (d - 1: the frame the loop processed before,
  // unless it dropped one).
  std::vector<std::vector<std::uint8_t>> own;
  std::vector<std::vector<std::uint8_t>> after;
  bool previous_frame{false};
  predecessor_ring order{4096};  // filled from the camera loop's telemetry
  screen_counts counts;
  std::uint64_t next_check{0};
  std::uint64_t pending{0};  // the frame of a copied screen waiting for its predecessor
  std::chrono::steady_clock::time_point pending_since;
  std::vector<std::uint8_t> screen;
  overlap_census* census{nullptr};  // the mailbox's census of samples beside frames
};

std::vector<std::uint8_t> screen_of(const imaging::reference::rgb_planes& rgb, float max_value,
                                    double gamma) {
  const auto rgba16 = imaging::reference::to_rgba16(rgb, max_value);
  std::vector<std::uint8_t> screen(rgba16.size());
  for (std::size_t i = 0; i < screen.size(); ++i) {
    screen[i] = i % 4 == 3 ? 255 : io::gamma_encode(rgba16[i], 65535, gamma);
  }
  return screen;
}

/// Runs `work(d)` for every prebuilt frame, one thread each: the CPU pipeline takes seconds a
/// 1080p frame, and the soak's GPU time waits for it.
void for_each_frame(std::uint32_t frames, const std::function<void(std::uint32_t)>& work) {
  std::vector<std::thread> workers;
  for (std::uint32_t d = 0; d < frames; ++d) workers.emplace_back(work, d);
  for (auto& w : workers) w.join();
}

void expected_screens(const camera::camera_settings& s, const io::rgb8_image& photo,
                      camera_side& side) {
  namespace ref = imaging::reference;
  const io::sensor_bridge bridge(s.sensor, photo);  // the same prebuilt frames the run uses
  const auto& k = s.sensor;
  const unsigned bits = static_cast<unsigned>(k.format);
  const float max_value = static_cast<float>((1U << bits) - 1U);
  const bool grey_world = s.white_balance == "grey_world";
  const auto demosaic = [&](const std::vector<std::uint16_t>& raw) {
    return s.demosaic == "bilinear"
               ? ref::demosaic_bilinear(raw, k.width, k.height, k.order, max_value)
               : ref::demosaic_malvar(raw, k.width, k.height, k.order, max_value);
  };
  const std::uint32_t n = k.distinct_frames;
  side.own.assign(n, {});
  std::vector<std::array<std::uint64_t, 3>> gains(n);
  for_each_frame(n, [&](std::uint32_t d) {
    const auto isp =
        ref::raw_isp(bridge.pixels(d), k.width, k.height, k.order, bits, k.black_level, grey_world);
    gains[d] = isp.multipliers;
    side.own[d] = screen_of(demosaic(isp.raw), max_value, s.gamma);
  });
  side.after.assign(side.previous_frame ? n : 0, {});
  if (!side.previous_frame) return;
  for_each_frame(n, [&](std::uint32_t d) {
    const auto corrected = ref::correct_raw(bridge.pixels(d), k.width, k.height, k.order, bits,
                                            k.black_level, gains[(d + n - 1) % n]);
    side.after[d] = screen_of(demosaic(corrected), max_value, s.gamma);
  });
}

/// Judges the copied screen of frame `side.pending` once the frame processed before it is
/// known (previous-frame statistics: its gains are on the screen); gives up after 2 s.
void judge_pending(const io::sensor_bridge& b, camera_side& side) {
  const std::uint64_t frame = side.pending;
  const std::uint32_t d = b.distinct_of(frame);
  const std::vector<std::uint8_t>* want = &side.own[d];
  if (side.previous_frame) {
    const auto before = side.order.before(frame);
    if (!before && std::chrono::steady_clock::now() - side.pending_since < std::chrono::seconds(2))
      return;  // its telemetry may not have come in yet
    // Judged only when the frame before it was processed just before it: after a drop (or for
    // the first frame) its gains are an older frame's, and after a repeat the copy may show
    // either processing.
    if (!before || *before + 1 != frame) {
      ++side.counts.not_followed;
      side.pending = 0;
      return;
    }
    want = &side.after[d];
  }
  int worst = 0;
  for (std::size_t i = 0; i < want->size(); ++i) {
    worst = std::max(worst, std::abs(int((*want)[i]) - int(side.screen[i])));
  }
  ++side.counts.checked;
  side.counts.worst_lsb = std::max(side.counts.worst_lsb, worst);
  if (worst > 1) ++side.counts.mismatches;
  side.pending = 0;
}

// The front buffer, copied while the loop runs: judged only when the same buffer was in front
// with the same frame before and after the copy (the egress writes the other one).
void check_screen(io::display& d, const io::sensor_bridge& b, camera_side& side) {
  const std::uint32_t front = d.front();
  const std::uint64_t frame = d.buffer_frame(front);
  if (frame == 0) return;
  side.screen.resize(d.image_bytes());
  d.copy_buffer(front, side.screen);
  if (d.front() != front || d.buffer_frame(front) != frame) {
    ++side.counts.busy;
    return;
  }
  side.pending = frame;
  side.pending_since = std::chrono::steady_clock::now();
  judge_pending(b, side);
}

// ---- health lines and reconciliation ----------------------------------------------------------

json counters_json(const loop_counters& c) {
  return {{"processed", c.processed},
          {"dropped", c.dropped},
          {"repeated", c.repeated},
          {"last_seq", c.last_seq},
          {"start_seq", c.start_seq},
          {"iterations", c.iterations},
          {"unaccounted", static_cast<std::int64_t>(c.last_seq - c.start_seq) -
                              static_cast<std::int64_t>(c.processed + c.dropped)},
          {"deadline_misses", c.deadline_misses},
          {"worst_overrun_us", static_cast<double>(c.worst_overrun_ns) / 1e3},
          {"max_response_us", static_cast<double>(c.max_response_ns) / 1e3},
          {"arrival_deadline_misses", c.arrival_deadline_misses},
          {"max_arrival_response_us", static_cast<double>(c.max_arrival_response_ns) / 1e3}};
}

bool accounted(const loop_counters& c) {
  return c.processed + c.dropped == c.last_seq - c.start_seq;
}

json minute_json(const minute_summary& s) {
  return {{"minute", s.minute}, {"n", s.n},
          {"p50_us", s.p50_us}, {"p90_us", s.p90_us},
          {"p99_us", s.p99_us}, {"p999_us", s.p999_us},
          {"max_us", s.max_us}, {"tail_share", s.tail_share}};
}

/// The minutes of a receipt, each saying whether its p99 counts for drift.
json minutes_json(std::span<const minute_summary> m, double warmup_s, double run_s) {
  json out = json::array();
  for (const auto& s : m) {
    json one = minute_json(s);
    one["judged"] = minute_judged(s, warmup_s, run_s);
    out.push_back(std::move(one));
  }
  return out;
}

struct shared_state {
  std::mutex mutex;  // guards everything below
  loop_counters camera;
  screen_counts screens;       // copied from the camera's thread with its counters
  bool camera_running{false};  // the camera loop's first counters came in
  bool camera_ended{false};    // run_camera returned or threw
  std::uint64_t reconciliations{0};
  std::uint64_t reconcile_failures{0};
};

}  // namespace

void soak_settings::make_quick() {
  minutes = 0.5;
  warmup_s = 5.0;
  health_every_s = 5.0;
}

void soak_settings::validate() const {
  auto range = [](const char* name, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi)) {
      std::ostringstream m;
      m << "bench soak: " << name << " must be " << lo << " to " << hi << ", got " << v;
      throw std::invalid_argument(m.str());
    }
  };
  range("--minutes", minutes, 0.05, max_minutes);
  range("--mailbox-rate", mailbox_rate_hz, 1.0, 100'000.0);
  range("--elements", static_cast<double>(elements), 1.0, 1 << 24);
  range("--check-every", static_cast<double>(check_every), 1.0, 1e9);
  range("--deadline-us", deadline_us, 0.0, 1e6);
  range("--warmup-s", warmup_s, 0.0, minutes * 60.0);
  range("--health-every-s", health_every_s, 0.0, 86400.0);
  range("--mailbox-telemetry-age-ms", mailbox_telemetry_age_ms, 0.0, 60000.0);
  (void)resident_mode(camera_mode, "--camera-mode");
  (void)resident_mode(mailbox_mode, "--mailbox-mode");
}

predecessor_ring::predecessor_ring(std::size_t slots)
    : _slots(std::max<std::size_t>(slots, 1)),
      _words(std::make_unique<std::atomic<std::uint64_t>[]>(_slots)) {
  for (std::size_t i = 0; i < _slots; ++i) _words[i].store(0, std::memory_order_relaxed);
}

void predecessor_ring::add(std::span<const telemetry_entry> batch) {
  constexpr std::uint64_t low = 0xffff'ffffULL;
  for (const telemetry_entry& e : batch) {
    const std::uint64_t before = e.repeat != 0 ? e.seq : _last;
    _last = e.seq;
    if (e.seq == 0 || e.seq > low || before > e.seq) continue;
    _words[e.seq % _slots].store(e.seq << 32 | (e.seq - before), std::memory_order_release);
  }
}

std::optional<std::uint64_t> predecessor_ring::before(std::uint64_t frame) const {
  if (frame == 0 || frame > 0xffff'ffffULL) return std::nullopt;
  const std::uint64_t w = _words[frame % _slots].load(std::memory_order_acquire);
  if (w >> 32 != frame) return std::nullopt;
  return frame - (w & 0xffff'ffffULL);
}

overlap_census::overlap_census(std::uint64_t landing_ns, std::size_t calibration,
                               std::size_t frames, std::size_t pending)
    : _landing_ns(landing_ns),
      _calibration(std::max<std::size_t>(calibration, 1)),
      _frames(std::max<std::size_t>(frames, 1)),
      _pending(std::max<std::size_t>(pending, 1)) {
  _first.reserve(_calibration);
}

void overlap_census::add_frame(std::uint64_t arrival_ns, std::uint64_t sighting_ns,
                               std::uint64_t commit_ns) {
  if (arrival_ns == 0 || sighting_ns == 0 || commit_ns < sighting_ns) return;  // not stamped
  std::lock_guard lock(_mutex);
  _frames[_frames_added % _frames.size()] = {arrival_ns, sighting_ns, commit_ns};
  ++_frames_added;
  _longest_work_ns = std::max(_longest_work_ns, commit_ns - sighting_ns);
  settle(false);
}

void overlap_census::add_sample(std::uint64_t sighting_ns, std::uint64_t commit_ns) {
  if (sighting_ns == 0 || commit_ns < sighting_ns) return;  // not stamped
  std::lock_guard lock(_mutex);
  if (_first.size() < _calibration) {
    _first.push_back(static_cast<double>(commit_ns - sighting_ns) / 1e3);
    if (_first.size() == _calibration) {
      const auto mid = _first.begin() + static_cast<std::ptrdiff_t>(_first.size() / 2);
      std::nth_element(_first.begin(), mid, _first.end());
      _counts.slow_above_us = 1.5 * *mid;
    }
  }
  if (_pending_n == _pending.size()) retire_oldest();  // full: judged with what is known
  _pending[(_pending_head + _pending_n) % _pending.size()] = {sighting_ns, commit_ns};
  ++_pending_n;
  settle(false);
}

overlap_census::counts overlap_census::result(bool settle_all) {
  std::lock_guard lock(_mutex);
  if (settle_all) settle(true);
  return _counts;
}

void overlap_census::settle(bool all) {
  while (_pending_n > 0) {
    const span_ns& s = _pending[_pending_head % _pending.size()];
    const bool covered =
        _counts.slow_above_us > 0 && _frames_added > 0 &&
        _frames[(_frames_added - 1) % _frames.size()].arrival_ns > s.end_ns + _landing_ns;
    if (!covered && !all) return;
    retire_oldest();
  }
}

void overlap_census::retire_oldest() {
  const span_ns& s = _pending[_pending_head % _pending.size()];
  if (_counts.slow_above_us > 0) {
    judge(s);
  } else {
    ++_counts.unjudged;  // the run ended, or the room filled, before the calibration did
  }
  ++_pending_head;
  --_pending_n;
}

void overlap_census::judge(const span_ns& s) {
  const std::uint64_t n = _frames.size();
  const std::uint64_t lo = _frames_added > n ? _frames_added - n : 0;
  const auto at = [&](std::uint64_t i) -> const frame_window& { return _frames[i % n]; };
  if (lo > 0 && at(lo).arrival_ns > s.begin_ns) {  // frames that could touch it are gone
    ++_counts.unjudged;
    return;
  }
  // Frames are kept in processing order, so both their work and their arrivals rise with the
  // index: the first whose key reaches `from_ns`.
  const auto kept = std::views::iota(lo, _frames_added);
  const auto first_from = [&](std::uint64_t frame_window::*key, std::uint64_t from_ns) {
    const auto it =
        std::ranges::partition_point(kept, [&](std::uint64_t i) { return at(i).*key < from_ns; });
    return lo + static_cast<std::uint64_t>(it - kept.begin());
  };
  bool in_work = false;
  const std::uint64_t reach = s.begin_ns > _longest_work_ns ? s.begin_ns - _longest_work_ns : 0;
  for (std::uint64_t i = first_from(&frame_window::begin_ns, reach);
       i < _frames_added && at(i).begin_ns < s.end_ns && !in_work; ++i) {
    in_work = at(i).end_ns > s.begin_ns;
  }
  // The first frame arriving after the sample began: how long after the sample's end it
  // arrived (0 when inside it); its landing [arrival - landing, arrival] touches the sample when
  // that gap is shorter than the landing.
  const std::uint64_t next = first_from(&frame_window::arrival_ns, s.begin_ns);
  std::size_t gap = gap_buckets - 1;  // no later frame
  bool in_landing = false;
  if (next < _frames_added) {
    const std::uint64_t arrival = at(next).arrival_ns;
    const std::uint64_t gap_ns = arrival > s.end_ns ? arrival - s.end_ns : 0;
    in_landing = gap_ns < _landing_ns;
    gap = static_cast<std::size_t>(
        std::ranges::upper_bound(gap_edges_us, static_cast<double>(gap_ns) / 1e3) -
        gap_edges_us.begin());
  }
  const bool slow = static_cast<double>(s.end_ns - s.begin_ns) / 1e3 > _counts.slow_above_us;
  ++(slow ? _counts.slow_by_gap : _counts.fast_by_gap)[gap];
  ++(slow ? _counts.slow : _counts.fast);
  if (in_work) {
    ++(slow ? _counts.slow_in_work : _counts.fast_in_work);
  } else if (in_landing) {
    ++(slow ? _counts.slow_in_landing : _counts.fast_in_landing);
  }
}

std::optional<timed_latency> in_loop_latency(const telemetry_entry& e, std::uint64_t base,
                                             double rate_hz) {
  constexpr auto detect = static_cast<std::size_t>(stage::detect);
  constexpr auto commit = static_cast<std::size_t>(stage::commit);
  if (e.repeat != 0 || e.seq <= base || e.stamp_ns[detect] == 0 ||
      e.stamp_ns[commit] < e.stamp_ns[detect]) {
    return std::nullopt;
  }
  return timed_latency{static_cast<double>(e.seq - base) / rate_hz,
                       static_cast<double>(e.stamp_ns[commit] - e.stamp_ns[detect]) / 1e3};
}

std::uint64_t resident_set_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

/// Ends the process with `what` (exit status 3) unless disarmed within `limit`: a set-up stuck
/// in a CUDA call beside a running loop cannot be interrupted, and a soak must not hang.
class setup_watchdog {
 public:
  setup_watchdog(std::ostream& log, std::string what, std::chrono::seconds limit)
      : _thread([this, &log, what = std::move(what), limit] {
          std::unique_lock lock(_mutex);
          if (_cv.wait_for(lock, limit, [this] { return _disarmed; })) return;
          log << "bench soak: " << what << " did not finish within " << limit.count()
              << " s (waiting in a CUDA call); giving up without a receipt\n"
              << std::flush;
          std::fflush(nullptr);
          std::_Exit(3);
        }) {}
  setup_watchdog(const setup_watchdog&) = delete;
  setup_watchdog& operator=(const setup_watchdog&) = delete;
  ~setup_watchdog() {
    {
      std::lock_guard lock(_mutex);
      _disarmed = true;
    }
    _cv.notify_all();
    _thread.join();
  }

 private:
  std::mutex _mutex;
  std::condition_variable _cv;
  bool _disarmed{false};
  std::thread _thread;
};

struct soak_memory {
  std::uint64_t rss_warm{0};  // host RSS after the warm-up
  std::uint64_t rss_end{0};
  std::uint64_t free_warm{0};  // free device memory after the warm-up
  std::uint64_t free_end{0};
};

/// What the run left to judge.
struct soak_outcome {
  const camera::camera_result& camera;
  const std::string& camera_failure;
  const camera_side& screens;
  const mailbox_side& mailbox;
  const tear_down_report& mailbox_report;
  std::uint64_t mailbox_telemetry_lost;
  const minute_folder& camera_latency;  // frame arrival -> scanout written, device clock
  std::uint64_t published;
  double run_s;  // the sensor's seconds, from t0
  soak_memory memory;
  overlap_census::counts beside_camera;
};

/// The census of mailbox samples beside the camera's frames, with each group's shares.
json census_json(const overlap_census::counts& c) {
  const auto share = [](std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
  };
  return {{"what",
           "mailbox samples (sighting -> commit) that overlapped a camera frame's work (its "
           "sighting -> commit) or, failing that, its landing (the " +
               std::to_string(mailbox_side::landing_ns / 1000) +
               " us before its arrival stamp), device clock; slow: above 1.5 x the median of the "
               "first 4,096 samples"},
          {"slow_above_us", c.slow_above_us},
          {"slow", c.slow},
          {"slow_in_work", c.slow_in_work},
          {"slow_in_landing", c.slow_in_landing},
          {"slow_in_work_share", share(c.slow_in_work, c.slow)},
          {"slow_in_landing_share", share(c.slow_in_landing, c.slow)},
          {"fast", c.fast},
          {"fast_in_work", c.fast_in_work},
          {"fast_in_landing", c.fast_in_landing},
          {"fast_in_work_share", share(c.fast_in_work, c.fast)},
          {"fast_in_landing_share", share(c.fast_in_landing, c.fast)},
          {"unjudged", c.unjudged},
          {"gap_to_next_arrival",
           {{"what",
             "samples by how long before the next camera frame's arrival stamp they ended (0: "
             "the arrival fell inside the sample), in buckets up to each edge, then beyond the "
             "last edge, then no later frame"},
            {"edges_us", overlap_census::gap_edges_us},
            {"slow", c.slow_by_gap},
            {"fast", c.fast_by_gap}}}};
}

json drift_json(std::optional<double> drift) { return drift ? json(*drift) : json(nullptr); }

/// The receipt's results and judgments from the run's outcome; `ok` when every check passed.
void record_soak(measure::receipt& receipt, const soak_settings& s, const soak_outcome& o,
                 const shared_state& state, bool& ok) {
  // Per minute, folded as the run went: the camera's frames by their place in the run; the
  // mailbox loop's own response (sighting -> commit, device clock) is what drift is judged on;
  // the actuator's view (publish -> seen, host clock) adds the host threads' wake-ups and is
  // reported beside it.
  const auto camera_minutes = o.camera_latency.summaries();
  const auto mailbox_minutes = o.mailbox.in_loop.summaries();
  const auto host_minutes = o.mailbox.host.summaries();
  const auto camera_drift = p99_drift(camera_minutes, s.warmup_s, o.run_s);
  const auto mailbox_drift = p99_drift(mailbox_minutes, s.warmup_s, o.run_s);
  const auto host_drift = p99_drift(host_minutes, s.warmup_s, o.run_s);
  const std::int64_t rss_growth =
      static_cast<std::int64_t>(o.memory.rss_end) - static_cast<std::int64_t>(o.memory.rss_warm);
  const std::int64_t device_moved =
      static_cast<std::int64_t>(o.memory.free_warm) - static_cast<std::int64_t>(o.memory.free_end);

  json mailbox = {{"pipeline", "mailbox"},
                  {"mode", s.mailbox_mode},
                  {"published", o.published},
                  {"counters", counters_json(o.mailbox_report.counters)},
                  {"stopped", o.mailbox_report.stopped},
                  {"error", o.mailbox_report.error},
                  {"checked", o.mailbox.checked.load()},
                  {"mismatches", o.mailbox.mismatches.load()},
                  {"sensor", sensor_json(o.mailbox)},
                  {"latency", "handler sighting -> commit, device clock"},
                  {"telemetry_lost", o.mailbox_telemetry_lost},
                  {"minutes", minutes_json(mailbox_minutes, s.warmup_s, o.run_s)},
                  {"p99_drift", drift_json(mailbox_drift)},
                  {"host_latency", "sensor publish -> actuator sees the output, host clock"},
                  {"host_minutes", minutes_json(host_minutes, s.warmup_s, o.run_s)},
                  {"host_p99_drift", drift_json(host_drift)},
                  {"beside_camera", census_json(o.beside_camera)}};
  json camera = {{"pipeline", "camera"},
                 {"mode", s.camera_mode},
                 {"produced", o.camera.produced},
                 {"counters", counters_json(o.camera.counters)},
                 {"error", o.camera_failure.empty() ? o.camera.error : o.camera_failure},
                 {"corrupt_frames", o.camera.display.corrupt_frames},
                 {"rewritten_frames", o.camera.display.rewritten_frames},
                 {"frames_written", o.camera.display.frames_written},
                 {"screens_checked", o.screens.counts.checked},
                 {"screens_busy", o.screens.counts.busy},
                 {"screens_not_followed", o.screens.counts.not_followed},
                 {"screen_mismatches", o.screens.counts.mismatches},
                 {"worst_screen_lsb", o.screens.counts.worst_lsb},
                 {"latency", "frame arrival -> scanout written, device clock"},
                 {"minutes", minutes_json(camera_minutes, s.warmup_s, o.run_s)},
                 {"p99_drift", drift_json(camera_drift)}};
  receipt.results.push_back(mailbox);
  receipt.results.push_back(camera);
  receipt.results.push_back({{"memory",
                              {{"rss_after_warmup_bytes", o.memory.rss_warm},
                               {"rss_end_bytes", o.memory.rss_end},
                               {"rss_growth_bytes", rss_growth},
                               {"free_device_after_warmup_bytes", o.memory.free_warm},
                               {"free_device_end_bytes", o.memory.free_end},
                               {"free_device_moved_bytes", device_moved}}},
                             {"reconciliations", state.reconciliations},
                             {"reconcile_failures", state.reconcile_failures}});
  const bool camera_ok = o.camera_failure.empty() && o.camera.error.empty() &&
                         accounted(o.camera.counters) && o.screens.counts.mismatches == 0 &&
                         o.screens.counts.checked > 0;
  const bool mailbox_ok = o.mailbox_report.stopped && o.mailbox_report.error.empty() &&
                          accounted(o.mailbox_report.counters) && o.mailbox.mismatches == 0 &&
                          o.mailbox.checked > 0;
  json judgments = json::array();
  judgments.push_back(soak_judgment("mailbox: every output checked matches, counters exact",
                                    mailbox_ok, o.mailbox.mismatches.load()));
  judgments.push_back(soak_judgment("camera: every shown frame checked matches, counters exact",
                                    camera_ok, o.screens.counts.mismatches));
  judgments.push_back(soak_judgment("counters reconciled every second",
                                    state.reconcile_failures == 0, state.reconcile_failures));
  judgments.push_back(rss_growth_judgment(rss_growth));
  judgments.push_back(device_memory_judgment(device_moved));
  judgments.push_back(drift_judgment("mailbox per-minute p99 drifts <= 5%", mailbox_drift));
  judgments.push_back(drift_judgment("camera per-minute p99 drifts <= 5%", camera_drift));
  receipt.results.push_back({{"judgments", judgments}});
  ok = camera_ok && mailbox_ok && state.reconcile_failures == 0;
}

/// The receipt's header: the machine and the settings.
measure::receipt soak_receipt(const soak_settings& s) {
  measure::receipt receipt("soak", s.command);
  describe_machine(receipt);
  receipt.settings = {{"minutes", s.minutes},
                      {"camera_config", s.camera_config},
                      {"camera_mode", s.camera_mode},
                      {"mailbox_mode", s.mailbox_mode},
                      {"mailbox_rate_hz", s.mailbox_rate_hz},
                      {"elements", s.elements},
                      {"check_every", s.check_every},
                      {"deadline_us", s.deadline_us},
                      {"warmup_s", s.warmup_s},
                      {"mailbox_telemetry_age_ms", s.mailbox_telemetry_age_ms}};
  return receipt;
}

/// The camera's configuration, refused when the soak cannot check what it shows (NPP's
/// demosaic has no CPU reference). Previous-frame statistics are said on `log`: their check
/// follows the loop's processing order.
camera::camera_settings soak_camera(const soak_settings& s, std::ostream& log) {
  camera::camera_settings cam = camera::load_camera_settings(s.camera_config);
  if (cam.demosaic == "npp") {
    throw std::invalid_argument(
        "bench soak: the camera's demosaic 'npp' has no CPU reference to "
        "check shown frames against; use malvar or bilinear");
  }
  if (cam.isp == "fused" && cam.statistics == "previous-frame") {
    log << "soak: the camera's fused pass runs with previous-frame statistics: a shown frame is "
           "checked with the gains of the frame the loop processed before it (from its "
           "telemetry); one whose predecessor was dropped is counted, not judged\n";
  }
  return cam;
}

/// The camera's photograph, or the built-in test card where the photograph set is missing.
io::rgb8_image soak_photo(const camera::camera_settings& cam, std::ostream& log) {
  try {
    return camera::load_photo(cam.photo);
  } catch (const config_error& e) {
    if (cam.photo.ends_with(".png")) throw;
    log << "note: " << e.what() << "; using the built-in test card\n";
    return camera::test_card(640, 480);
  }
}

// How long either loop's set-up may take before the soak gives up on it.
constexpr auto setup_limit = std::chrono::seconds(120);

/// Waits until the camera loop runs (or its run ended), watched like any set-up.
void wait_for_camera_start(shared_state& state, std::ostream& log) {
  const setup_watchdog guard(log, "the camera loop's set-up", setup_limit);
  for (;;) {
    {
      std::lock_guard lock(state.mutex);
      if (state.camera_running || state.camera_ended) return;
    }
    std::this_thread::sleep_for(10ms);
  }
}

/// Where the health lines go: the file asked for (opened before anything starts, so a path that
/// cannot be written is refused at once), or stderr.
class health_output {
 public:
  explicit health_output(const std::string& path) {
    if (path.empty()) return;
    _file.open(path);
    if (!_file) throw std::runtime_error("bench soak: cannot write the health lines to " + path);
  }
  [[nodiscard]] std::ostream& stream() { return _file.is_open() ? _file : std::cerr; }

 private:
  std::ofstream _file;
};

/// Host RSS and free device memory once the warm-up is over (the monitor reads them).
struct warm_memory {
  std::uint64_t rss = 0;
  std::uint64_t free_device = 0;
};

json latest_json(const minute_folder& f) {
  const auto m = f.latest();
  return m ? minute_json(*m) : json(nullptr);
}

/// One health line: the counters, the checks so far, the latest whole minute's latencies and
/// the memory, host and device, and the warm-up after which memory and drift are judged (so the
/// lines alone can be judged: resident report).
json health_line(double t, double warmup_s, const loop_counters& mailbox, const shared_state& state,
                 const mailbox_side& mside, const minute_folder& camera_latency) {
  const screen_counts& sc = state.screens;
  return {{"t_s", t},
          {"warmup_s", warmup_s},
          {"mailbox", counters_json(mailbox)},
          {"camera", counters_json(state.camera)},
          {"mailbox_checked", mside.checked.load()},
          {"mailbox_mismatches", mside.mismatches.load()},
          {"mailbox_sensor", sensor_json(mside)},
          {"camera_screens",
           {{"checked", sc.checked},
            {"mismatches", sc.mismatches},
            {"not_followed", sc.not_followed},
            {"busy", sc.busy},
            {"worst_lsb", sc.worst_lsb}}},
          {"latest_minute",
           {{"mailbox", latest_json(mside.in_loop)},
            {"mailbox_host", latest_json(mside.host)},
            {"camera", latest_json(camera_latency)}}},
          {"rss_bytes", resident_set_bytes()},
          {"free_device_bytes", free_device_bytes()}};
}

/// The sensor (the calling thread) for `seconds` from t0: publishes at the rate and does nothing
/// else, so nothing it waits for (a CUDA call, /proc, the health file, a lock a minute's sort
/// holds) bunches its samples into drops. `published` is stored after each publish.
void run_sensor(const soak_settings& s, lab_pipeline& app, const sample_pool& pool,
                mailbox_side& mside, std::uint64_t base, clock_type::time_point t0, double seconds,
                std::atomic<std::uint64_t>& published) {
  const auto period_ns = static_cast<std::int64_t>(1e9 / s.mailbox_rate_hz);
  const std::int64_t start_ns = now_ns();
  std::uint64_t n = 0;
  while (seconds_since(t0) < seconds) {
    const std::int64_t due = start_ns + static_cast<std::int64_t>(n) * period_ns;
    wait_until(due);
    const std::uint64_t seq = base + n + 1;
    const std::int64_t at = now_ns();
    const std::int64_t late = at - due;
    if (late > mailbox_side::late_release_ns) {
      mside.late_releases.fetch_add(1, std::memory_order_relaxed);
    }
    if (late > mside.max_late_ns.load(std::memory_order_relaxed)) {  // the only writer
      mside.max_late_ns.store(late, std::memory_order_relaxed);
    }
    std::atomic_ref<std::int64_t>(mside.publish_ns[seq % mside.publish_ns.size()]).store(at);
    (void)app.mailbox->publish(std::as_bytes(std::span(pool.inputs[n % pool_size])));
    published.store(++n, std::memory_order_release);
  }
}

/// The monitor, on its own thread until `done`: every second it reconciles both loops'
/// counters, every health_every_s it writes a health line, and once past the warm-up it reads
/// host RSS and free device memory into `warm`.
void run_monitor(const soak_settings& s, const mailbox_side& mside,
                 const minute_folder& camera_latency, run_handle& mrun, shared_state& state,
                 std::uint64_t base, clock_type::time_point t0,
                 const std::atomic<std::uint64_t>& published, const std::atomic<bool>& done,
                 std::ostream& health, warm_memory& warm) {
  double next_health = s.health_every_s;
  for (int second = 1; !done.load(std::memory_order_acquire); ++second) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(second));
    if (done.load(std::memory_order_acquire)) break;
    const double t = seconds_since(t0);
    if (warm.rss == 0 && t >= s.warmup_s) {
      warm.rss = resident_set_bytes();
      warm.free_device = free_device_bytes();
    }
    // The counters first, then what was published: a sample the loop has seen was published
    // before this read.
    const loop_counters mc = mrun.counters();
    const std::uint64_t sent = published.load(std::memory_order_acquire);
    std::lock_guard lock(state.mutex);
    ++state.reconciliations;
    if (!accounted(mc) || mc.last_seq > base + sent ||
        (state.camera.last_seq != 0 && !accounted(state.camera))) {
      ++state.reconcile_failures;
    }
    if (s.health_every_s > 0 && t >= next_health) {
      next_health += s.health_every_s;
      health << health_line(t, s.warmup_s, mc, state, mside, camera_latency).dump() << '\n'
             << std::flush;
    }
  }
}

/// The camera run's options. It starts before the mailbox and t0: a few seconds more keep it
/// running to the end. Each processed frame's latency is folded into `latency`, filed by its
/// place in the run (the first frame processed starts it; only the camera loop's supervisor
/// calls that); `watch` checks a shown frame now and then and publishes the counters.
camera::camera_run_options camera_run(const soak_settings& s, const camera::camera_settings& cam,
                                      double seconds, std::chrono::nanoseconds deadline,
                                      const std::atomic<bool>& stop, minute_folder& latency,
                                      camera_side& cside, shared_state& state) {
  camera::camera_run_options o;
  o.stop = &stop;
  o.frames = static_cast<std::uint64_t>(cam.sensor.rate_hz * (seconds + 10.0));
  o.progress = false;
  o.timeout = std::chrono::seconds(static_cast<std::int64_t>(seconds) + 60);
  o.deadline = deadline;
  const double rate_hz = cam.sensor.rate_hz;
  o.on_telemetry = [&latency, &cside, rate_hz,
                    first = std::uint64_t{0}](std::span<const telemetry_entry> batch) mutable {
    cside.order.add(batch);
    for (const telemetry_entry& e : batch) {
      const auto us = camera::software_latency_us(e);
      if (!us) continue;
      if (cside.census != nullptr) {
        const auto at = [&e](stage st) { return e.stamp_ns[static_cast<std::size_t>(st)]; };
        cside.census->add_frame(at(stage::arrival), at(stage::detect), at(stage::commit));
      }
      if (first == 0) first = e.seq;
      latency.add({static_cast<double>(e.seq - first) / rate_hz, *us});
    }
  };
  o.watch = [&s, &cside, &state](io::sensor_bridge& b, io::display& d, const loop_counters& c) {
    if (cside.pending != 0) {
      judge_pending(b, cside);
    } else if (c.processed >= cside.next_check) {
      check_screen(d, b, cside);
      cside.next_check = c.processed + s.check_every;
    }
    std::lock_guard lock(state.mutex);
    state.camera = c;
    state.screens = cside.counts;
    state.camera_running = true;
  };
  return o;
}

/// The mailbox loop's options: the loop's own latency per sample streams through a ring of 2^14
/// entries (8 s at 2 kHz; the supervisor drains it once half full, or as often as
/// --mailbox-telemetry-age-ms asks) into the per-minute folder and the census beside the
/// camera. Samples published before the run (none) would be filed under `base`, which the caller
/// sets before the first publish.
run_options mailbox_run_options(const soak_settings& s, std::chrono::nanoseconds deadline,
                                mailbox_side& mside, const std::atomic<std::uint64_t>& base) {
  run_options o;
  o.deadline = deadline;
  o.persistent_blocks = 1;
  o.telemetry_samples = 1 << 14;
  o.telemetry_max_age =
      std::chrono::milliseconds(static_cast<std::int64_t>(s.mailbox_telemetry_age_ms));
  o.on_telemetry = [&s, &mside, &base](std::span<const telemetry_entry> batch) {
    const std::uint64_t b = base.load(std::memory_order_acquire);
    for (const telemetry_entry& e : batch) {
      const auto l = in_loop_latency(e, b, s.mailbox_rate_hz);
      if (!l) continue;
      mside.in_loop.add(*l);
      mside.beside_camera.add_sample(e.stamp_ns[static_cast<std::size_t>(stage::detect)],
                                     e.stamp_ns[static_cast<std::size_t>(stage::commit)]);
    }
  };
  return o;
}

measure::receipt run_soak_bench(const soak_settings& s, std::ostream& log, bool& ok) {
  s.validate();
  health_output health(s.health_path);
  measure::receipt receipt = soak_receipt(s);
  camera::camera_settings cam = soak_camera(s, log);
  cam.sensor.log_frames = 0;  // the soak reads no frame log: none, for runs of any length
  receipt.settings["camera_pipeline"] = {
      {"isp", cam.isp}, {"statistics", cam.statistics}, {"demosaic", cam.demosaic}};
  const io::rgb8_image photo = soak_photo(cam, log);
  const auto deadline = std::chrono::nanoseconds(static_cast<std::int64_t>(s.deadline_us * 1e3));
  const double seconds = s.minutes * 60.0;

  // Everything the run needs is built before the first loop starts: a CUDA allocation or free
  // while a resident loop runs may wait for the device to be idle, which it never is (the CPU
  // reference's sensor bridge, freed at the end of expected_screens, hung the soak that way).
  camera_side cside;
  cside.previous_frame = cam.isp == "fused" && cam.statistics == "previous-frame";
  expected_screens(cam, photo, cside);

  lab_pipeline app(s.elements, true);
  const sample_pool pool = make_pool(s.elements);
  // Latencies are folded per minute as the run goes: room for one minute of each series (and a
  // summary a minute) is taken now, so nothing grows with the run's length.
  const auto run_minutes = static_cast<std::size_t>(std::ceil(s.minutes)) + 1;
  mailbox_side mside(static_cast<std::size_t>(s.mailbox_rate_hz * 60.0 * 1.1) + 1024, run_minutes);
  mside.publish_ns.assign(1 << 16, 0);
  cside.census = &mside.beside_camera;
  minute_folder camera_latency(static_cast<std::size_t>(cam.sensor.rate_hz * 60.0 * 1.1) + 1024,
                               run_minutes);

  // The camera first, on a thread of its own (run_camera returns when its frames are done): its
  // set-up allocates (the bridge's ring, the display, the telemetry sized by the run's length),
  // and an allocation beside a running resident loop may wait for the device to be idle, which
  // it never is. The mailbox loop starts once the camera loop runs.
  shared_state state;
  camera::camera_result cres;
  std::string camera_failure;
  std::atomic<bool> camera_stop{false};
  stopping_thread camera_thread(
      [&] { camera_stop = true; },
      [&] {
        try {
          const camera::camera_run_options o =
              camera_run(s, cam, seconds, deadline, camera_stop, camera_latency, cside, state);
          cres = camera::run_camera(cam, camera::parse_camera_mode(s.camera_mode), o, photo);
        } catch (const std::exception& e) {
          camera_failure = e.what();
        }
        std::lock_guard lock(state.mutex);
        state.camera_ended = true;
      });
  wait_for_camera_start(state, log);

  // The mailbox loop (its application and mailbox were made before the camera started).
  std::atomic<std::uint64_t> telemetry_base{0};
  const run_options mopts = mailbox_run_options(s, deadline, mside, telemetry_base);
  std::unique_ptr<run_handle> mrun;
  {
    const setup_watchdog guard(log, "the mailbox loop's set-up", setup_limit);
    mrun = run_async(app, resident_mode(s.mailbox_mode, "--mailbox-mode"), mopts);
  }
  const std::uint64_t base = app.mailbox->published();
  telemetry_base.store(base, std::memory_order_release);
  const auto t0 = clock_type::now();
  std::atomic<bool> done{false};
  stopping_thread actuator([&] { done = true; },
                           [&] { run_actuator(*app.mailbox, base, pool, mside, done, t0); });

  warm_memory warm;
  std::atomic<std::uint64_t> sent{0};
  std::atomic<bool> sensor_done{false};
  stopping_thread monitor([&] { sensor_done = true; },
                          [&] {
                            run_monitor(s, mside, camera_latency, *mrun, state, base, t0, sent,
                                        sensor_done, health.stream(), warm);
                          });
  run_sensor(s, app, pool, mside, base, t0, seconds, sent);
  sensor_done = true;
  monitor.join();
  const std::uint64_t published = sent.load();
  const std::uint64_t rss_end = resident_set_bytes();
  const std::uint64_t free_end = free_device_bytes();
  std::this_thread::sleep_for(50ms);  // the last samples come out
  done = true;
  actuator.join();
  const double run_s = seconds_since(t0);
  const tear_down_report mrep = mrun->tear_down();
  camera_thread.join();
  const double total_s = seconds_since(t0);
  if (mrun->telemetry_lost() > 0) {
    log << "bench soak: " << mrun->telemetry_lost()
        << " mailbox telemetry entries lost (the drain fell behind); the per-minute figures "
           "leave them out\n";
  }
  log << "bench soak: " << total_s << " s, " << published << " mailbox samples, "
      << cres.counters.processed << " camera frames\n";

  soak_outcome outcome{cres,
                       camera_failure,
                       cside,
                       mside,
                       mrep,
                       mrun->telemetry_lost(),
                       camera_latency,
                       published,
                       run_s,
                       {warm.rss, rss_end, warm.free_device, free_end},
                       mside.beside_camera.result(true)};
  record_soak(receipt, s, outcome, state, ok);
  return receipt;
}

}  // namespace resident::bench
