// The preempt signal and the best-effort runner (see resident/sched/preemption.hpp).

#include "resident/sched/preemption.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"

namespace resident::sched {

namespace {

std::uint64_t load_acquire(const std::uint64_t& word) noexcept {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(word))
      .load(std::memory_order_acquire);
}

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint32_t load_relaxed(const std::uint32_t& word) noexcept {
  return std::atomic_ref<std::uint32_t>(const_cast<std::uint32_t&>(word))
      .load(std::memory_order_relaxed);
}

}  // namespace

// ---- preempt_signal -----------------------------------------------------------------------------

// The guard, a temporary of the delegating call, keeps `device` current while the members are
// made on it, and gives the caller its current device back afterwards.
preempt_signal::preempt_signal(int device) : preempt_signal(device, current_device_guard(device)) {}

preempt_signal::preempt_signal(int device, const current_device_guard& /*on_device*/)
    : _device(device),
      _word(sizeof(std::uint32_t)),
      _mirror(sizeof(preempt_mirror)),
      _staging(sizeof(std::uint32_t)),
      _stream(0) {
  set(0);
}

preempt_hook preempt_signal::hook() const noexcept {
  return {_word.data_as<std::uint32_t>(), _mirror.device_as<preempt_mirror>()};
}

void preempt_signal::set(std::uint32_t value) {
  const current_device_guard on_device(_device);
  *_staging.data_as<std::uint32_t>() = value;
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_word.data(), _staging.data(), sizeof(std::uint32_t),
                                    cudaMemcpyHostToDevice, _stream.get()));
  _stream.synchronize();
}

void preempt_signal::raise() {
  set(1);
  preempt_mirror& m = *_mirror.host_as<preempt_mirror>();
  std::atomic_ref<std::uint64_t>(m.raises).fetch_add(1, std::memory_order_release);
}

void preempt_signal::clear() {
  set(0);
  preempt_mirror& m = *_mirror.host_as<preempt_mirror>();
  std::atomic_ref<std::uint64_t>(m.clears).fetch_add(1, std::memory_order_release);
}

bool preempt_signal::raised() const noexcept {
  const preempt_mirror& m = *_mirror.host_as<preempt_mirror>();
  // clears first: a clear that lands between the two loads reads as still raised, never the
  // other way round.
  const std::uint64_t clears = load_acquire(m.clears);
  return load_acquire(m.raises) > clears;
}

std::uint64_t preempt_signal::raises() const noexcept {
  return load_acquire(_mirror.host_as<preempt_mirror>()->raises);
}

preempt_mirror preempt_signal::mirror() const noexcept {
  const preempt_mirror& m = *_mirror.host_as<preempt_mirror>();
  preempt_mirror out{};
  out.clears = load_acquire(m.clears);
  out.raises = load_acquire(m.raises);
  out.last_raise_ns = load_acquire(m.last_raise_ns);
  out.last_clear_ns = load_acquire(m.last_clear_ns);
  out.early_raises = load_acquire(m.early_raises);
  out.withdrawn = load_acquire(m.withdrawn);
  return out;
}

// ---- be_runner ----------------------------------------------------------------------------------

namespace {

std::size_t effective_window(const be_runner_options& o) {
  if (o.window == 0) {
    throw std::invalid_argument("be_runner '" + o.name + "': window must be at least 1");
  }
  if (o.bounded_grid_per_sm < 0) {
    throw std::invalid_argument("be_runner '" + o.name + "': bounded_grid_per_sm is " +
                                std::to_string(o.bounded_grid_per_sm) + "; it must be >= 0");
  }
  if (o.rt_sm_load != nullptr && (o.rt_sms == nullptr || !o.preemptible)) {
    throw std::invalid_argument("be_runner '" + o.name +
                                "': rt_sm_load needs rt_sms and preemptible (spatial preemption)");
  }
  if (o.rt_sms != nullptr && (!o.preemptible || o.sequential)) {
    throw std::invalid_argument("be_runner '" + o.name +
                                "': rt_sms (spatial preemption) needs preemptible and not "
                                "sequential");
  }
  if (o.rt_sm_load != nullptr && o.rt_sm_blocks == 0) {
    throw std::invalid_argument("be_runner '" + o.name +
                                "': rt_sm_blocks is 0; BE blocks need room on at least one SM");
  }
  return o.sequential ? 1 : o.window;
}

}  // namespace

spatial_share::spatial_share(const std::array<std::uint32_t, 8>& rt_sm_mask,
                             std::uint32_t rt_sm_blocks)
    : _mask(rt_sm_mask), _rt_sm_blocks(rt_sm_blocks) {
  if (rt_sm_blocks > 64) {
    throw std::invalid_argument("spatial_share: rt_sm_blocks is " + std::to_string(rt_sm_blocks) +
                                "; it must be 0 (no cap) to 64");
  }
  if (sm_count() == 0) throw std::invalid_argument("spatial_share: the SM mask marks no SM");
  const int device = current_device();
  _rt_sms = device_buffer(sizeof(_mask));
  RESIDENT_CUDA_TRY(
      cudaMemcpy(_rt_sms.data(), _mask.data(), sizeof(_mask), cudaMemcpyHostToDevice));
  if (rt_sm_blocks > 0) {
    _rt_sm_load = zeroed_device_buffer(rt_sm_load_words * sizeof(std::uint32_t), device);
  }
}

int spatial_share::sm_count() const noexcept {
  int n = 0;
  for (const std::uint32_t w : _mask) n += std::popcount(w);
  return n;
}

void spatial_share::apply(be_runner_options& options) const {
  options.rt_sms = _rt_sms.data_as<std::uint32_t>();
  if (_rt_sm_blocks > 0) {
    options.rt_sm_load = _rt_sm_load.data_as<std::uint32_t>();
    options.rt_sm_blocks = _rt_sm_blocks;
  }
}

be_runner::be_runner(std::vector<be_call> calls, cudaStream_t stream, const preempt_signal* signal,
                     be_runner_options options)
    : _calls(std::move(calls)),
      _stream(stream),
      _signal(signal),
      _options(std::move(options)),
      _queue(effective_window(_options)) {
  const std::string who = "be_runner '" + _options.name + "'";
  if (_calls.empty()) throw std::invalid_argument(who + ": no calls to run");
  if (_calls.size() < _queue.window()) {
    throw std::invalid_argument(
        who + ": " + std::to_string(_calls.size()) + " calls, fewer than the window of " +
        std::to_string(_queue.window()) + " (record slots are reused every other sequence)");
  }
  if (_signal == nullptr && (_options.preemptible || _options.sequential)) {
    throw std::invalid_argument(who + ": preemptible and sequential runs need a preempt_signal");
  }
  for (const auto& c : _calls) {
    if (c.blocks <= 0 || !c.launch) {
      throw std::invalid_argument(who + ": call '" + c.name +
                                  "' has no blocks or no launch function");
    }
    if (c.saved_floats < 0) {
      throw std::invalid_argument(who + ": call '" + c.name + "' has a negative checkpoint size");
    }
    _offsets.push_back(_record_words);
    _record_words += static_cast<std::size_t>(c.blocks);
    _saved_offsets.push_back(_saved_per_parity);
    if (_options.checkpoint && _options.preemptible) {
      _saved_per_parity += static_cast<std::size_t>(c.blocks) * c.saved_floats;
    }
  }
  if (_saved_per_parity > 0) {
    _saved = device_buffer(2 * _saved_per_parity * sizeof(float));
    _progress = device_buffer(2 * _record_words * sizeof(std::uint32_t));
  }
  _done = device_buffer(2 * _record_words * sizeof(std::uint32_t));
  std::int32_t most = 0;
  for (const auto& c : _calls) most = std::max(most, c.blocks);
  _done_host = pinned_buffer(static_cast<std::size_t>(most) * sizeof(std::uint32_t));
  _runs = device_buffer(2 * _record_words * sizeof(std::uint32_t));
  _words = device_buffer(k_words * k_word_stride * sizeof(std::uint32_t));
  // Under lazy module loading a kernel's first launch beside a running resident loop can wait
  // for ever (seen on the H200: the second launch of a BE sequence never started, and no copy on
  // any other stream finished after it). Loaded here, a runner made before the loop starts is
  // safe.
  load_be_kernels();
}

void be_runner::prepare() {
  if (!_events.empty()) return;
  if (_options.thread_scope && !_scope) _scope = _options.thread_scope();
  // Again in the context the launches come from, when that is not the constructor's.
  if (_scope) load_be_kernels();
  _copy = std::make_unique<stream>(0);
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_words.data(), 0, _words.size(), _stream));
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_done.data(), 0, _done.size(), _stream));
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_runs.data(), 0, _runs.size(), _stream));
  if (_progress.size() > 0) {
    RESIDENT_CUDA_TRY(cudaMemsetAsync(_progress.data(), 0, _progress.size(), _stream));
  }
  if (_options.bounded_grid_per_sm > 0) {
    int device = 0;
    int sms = 0;
    RESIDENT_CUDA_TRY(cudaGetDevice(&device));
    RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    _max_grid = _options.bounded_grid_per_sm * sms;
  }
  const bool spatial = _options.preemptible && _options.rt_sms != nullptr;
  if (spatial || (_max_grid > 0 && _options.bounded_grid_counter)) {
    _counters = device_buffer(2 * _queue.window() * sizeof(std::uint32_t));
    RESIDENT_CUDA_TRY(cudaMemsetAsync(_counters.data(), 0, _counters.size(), _stream));
  }
  if (spatial) {
    // A hand-back area per launch in flight, each on lines of its own, with an entry per grid
    // block (each cut ends its CUDA block).
    std::int32_t most = 0;
    for (const auto& c : _calls) most = std::max(most, c.blocks);
    _handback_capacity = _max_grid > 0 ? std::min(_max_grid, most) : most;
    const auto words = static_cast<std::size_t>(handback_words(_handback_capacity));
    _handback_stride = (words + k_word_stride - 1) / k_word_stride * k_word_stride;
    _handback = device_buffer(_queue.window() * _handback_stride * sizeof(std::uint32_t));
    RESIDENT_CUDA_TRY(cudaMemsetAsync(_handback.data(), 0, _handback.size(), _stream));
  }
  for (std::size_t i = 0; i < _queue.window(); ++i) {
    _events.emplace_back(false);
    _free_events.push_back(i);
  }
}

be_runner::~be_runner() {
  if (_thread.joinable()) {
    _stop.store(true);
    _thread.join();
  }
}

std::uint32_t* be_runner::word(std::size_t i) const {
  return _words.data_as<std::uint32_t>() + i * k_word_stride;
}

std::uint32_t* be_runner::done_words(const launch_meta& m) const {
  return _done.data_as<std::uint32_t>() + m.parity * _record_words + _offsets[m.call];
}

void be_runner::enqueue_sequence() {
  const std::uint64_t seq = _next_sequence++;
  const std::size_t parity = seq % 2;
  // Sequence seq - 2 used these slots; every launch of it has finished (a sequence is enqueued
  // only once the previous one is fully submitted, and it has at least `window` calls).
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_done.data_as<std::uint32_t>() + parity * _record_words, 0,
                                    _record_words * sizeof(std::uint32_t), _stream));
  // Stream-ordered before this sequence's launches, after every launch of seq - 2.
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_runs.data_as<std::uint32_t>() + parity * _record_words, 0,
                                    _record_words * sizeof(std::uint32_t), _stream));
  if (_progress.size() > 0) {  // no checkpoint of seq - 2 carries over (the floats need no reset)
    RESIDENT_CUDA_TRY(cudaMemsetAsync(_progress.data_as<std::uint32_t>() + parity * _record_words,
                                      0, _record_words * sizeof(std::uint32_t), _stream));
  }
  for (std::size_t i = 0; i < _calls.size(); ++i) {
    const launch_id id = _queue.enqueue(_calls[i].name, _calls[i].blocks, _calls[i].idempotent);
    _meta.emplace(id, launch_meta{i, parity, seq});
  }
}

void be_runner::retire(const flight& f, std::uint64_t floor) {
  const launch_meta& m = _meta.at(f.id);
  const be_call& call = _calls[m.call];
  // The launch has drained (its event completed): its words are final. A copy on the
  // runner's own stream, which runs beside the BE launches now in flight.
  const auto bytes = static_cast<std::size_t>(call.blocks) * sizeof(std::uint32_t);
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_done_host.data(), done_words(m), bytes, cudaMemcpyDeviceToHost,
                                    _copy->get()));
  // The launch has drained, so the copy is done in microseconds: spin for it without sleeping
  // (a polling wait that slept between queries cost BE throughput about 40% in bench reef
  // --quick, since with one launch in flight the next submission waits for this retire), but
  // not forever: a copy still pending after stop_timeout means the device is stuck, and the
  // runner says so instead of hanging its thread.
  if (!_copy->synchronize_for(_options.stop_timeout, std::chrono::nanoseconds::zero())) {
    throw std::runtime_error("be_runner '" + _options.name + "': the copy of launch " +
                             std::to_string(f.id) + " (call '" + call.name + "', attempt " +
                             std::to_string(f.attempt) + ")'s done words did not finish within " +
                             std::to_string(_options.stop_timeout.count()) + " ms");
  }
  const auto* done = _done_host.data_as<const std::uint32_t>();
  std::vector<std::int64_t> blocks;
  for (std::int32_t b = 0; b < call.blocks; ++b) {
    if (load_relaxed(done[b]) == f.attempt) blocks.push_back(b);
  }
  // The device's record is the truth: be_queue throws if a non-idempotent block came twice.
  _queue.report_blocks(f.id, blocks);
  if (_queue.preempted()) {
    _queue.preempted_exit(f.id);
  } else if (_queue.remaining_blocks(f.id) == 0) {
    _queue.complete(f.id);
  } else {
    // Cut short by a raise and clear that both fell between two polls: handle it as the
    // preemption it was.
    (void)_queue.preempt();
    ++_stats.preemptions;
    _queue.preempted_exit(f.id);
    if (_options.rt_sms == nullptr) {
      _await_raise = true;
      _await_floor = floor;
      _await_since_ns = steady_ns();
    }
  }
  if (_queue.finished(f.id)) {
    if (m.call + 1 == _calls.size()) ++_stats.sequences;
    _meta.erase(f.id);
  }
}

void be_runner::poll_once(bool submit, bool enqueue) {
  const bool watch = _options.preemptible || _options.sequential;
  // The count before the state: a launch submitted in this pass is cut only by a raise the
  // count does not hold yet.
  const std::uint64_t raises_seen = watch ? _signal->raises() : 0;
  const bool raised = watch && _signal->raised();
  const bool spatial = _options.rt_sms != nullptr;
  if (_options.preemptible && !spatial) {
    const std::uint64_t raises = _signal->raises();
    const bool new_raise = raises != _seen_raises;
    _seen_raises = raises;
    if ((raised || new_raise) && !_queue.preempted()) {
      (void)_queue.preempt();  // stop submitting; what is in flight drains on the word
      ++_stats.preemptions;
    }
  }
  // Retire in submission order: a stream finishes its launches in that order.
  while (!_in_flight.empty()) {
    const flight f = _in_flight.front();
    const cudaError_t q = cudaEventQuery(_events[f.event].get());
    if (q == cudaErrorNotReady) break;
    RESIDENT_CUDA_TRY(q);
    // The raise that cut a launch short came after the oldest launch then in flight was
    // submitted (its count was read before that submission).
    const std::uint64_t floor = f.raises_at_submit;
    _in_flight.erase(_in_flight.begin());
    _free_events.push_back(f.event);
    retire(f, floor);
    _live_retired.fetch_add(1, std::memory_order_relaxed);
  }
  if (_await_raise && (_signal == nullptr || _signal->raises() > _await_floor ||
                       steady_ns() - _await_since_ns > 1'000'000)) {
    _await_raise = false;
  }
  // Spatial: the blocks a raised word stopped go back at once; the SMs they find busy with
  // real-time work stop them again, the others run them.
  if (_queue.preempted() && _in_flight.empty() && (!raised || spatial) && !_await_raise) {
    _queue.resume();
    // Stream-ordered before every resubmission: the halt a preempted block set is lifted.
    RESIDENT_CUDA_TRY(cudaMemsetAsync(word(0), 0, sizeof(std::uint32_t), _stream));
  }
  if (!submit) return;
  if (_options.sequential && raised) return;  // best-effort waits for the real-time iteration
  if (enqueue && _queue.counters().pending == 0) enqueue_sequence();
  while (auto sub = _queue.next_submission()) {
    const launch_meta& m = _meta.at(sub->id);
    const be_call& call = _calls[m.call];
    be_launch_view v;
    v.preempt = _options.preemptible ? _signal->word() : nullptr;
    // Spatial launches hand their cut blocks back within the launch, so the halt only guards
    // the next launch in flight against one that still ended short (or a custom kernel that
    // ignores the hand-back): with one launch in flight there is none to guard.
    v.halt = _options.preemptible && (!spatial || _queue.window() > 1) ? word(0) : nullptr;
    v.rt_sms = _options.preemptible ? _options.rt_sms : nullptr;
    const std::size_t ev = _free_events.back();
    if (v.rt_sms != nullptr) {
      // Spatial: work from this event slot's counter pair and hand-back area, which the
      // launch's last block leaves zero.
      v.next = _counters.data_as<std::uint32_t>() + 2 * ev;
      v.next_left = v.next + 1;
      v.max_grid = _max_grid;
      v.handback = _handback.data_as<std::uint32_t>() + ev * _handback_stride;
      v.handback_capacity = _handback_capacity;
      v.handbacks = word(3);
      v.rt_sm_load = _options.rt_sm_load;
      v.rt_sm_blocks = _options.rt_sm_blocks;
    } else if (_max_grid > 0 && _options.preemptible) {
      v.max_grid = _max_grid;
      if (_options.bounded_grid_counter) {
        // This event slot's counter pair: zero, since its last launch's last block left.
        v.next = _counters.data_as<std::uint32_t>() + 2 * ev;
        v.next_left = v.next + 1;
      }
    }
    v.done = done_words(m);
    v.runs = _runs.data_as<std::uint32_t>() + m.parity * _record_words + _offsets[m.call];
    v.exits = word(1);
    v.repeats = word(2);
    v.trace = _options.trace;
    v.activity = _options.activity;
    if (_saved.size() > 0 && call.saved_floats > 0) {
      v.saved = _saved.data_as<float>() + m.parity * _saved_per_parity + _saved_offsets[m.call];
      v.progress = _progress.data_as<std::uint32_t>() + m.parity * _record_words + _offsets[m.call];
      v.saves = word(4);
      v.saved_floats = call.saved_floats;
      v.min_saved_steps = _options.checkpoint_min_steps;
    }
    v.attempt = static_cast<std::uint32_t>(sub->attempt);
    v.first_block = static_cast<std::int32_t>(sub->first_block);
    v.blocks = call.blocks;
    // Only a resumed attempt has done blocks to skip (the first spares every block the read).
    // A non-idempotent one must; an idempotent one may re-run them, which wastes the work.
    v.skip_done = v.attempt > 1 && (!call.idempotent || _options.exact_resume_always) ? 1U : 0U;
    call.launch(_stream, v);
    _free_events.pop_back();
    _events[ev].record(_stream);
    _in_flight.push_back({sub->id, v.attempt, ev, raises_seen});
    _live_submissions.fetch_add(1, std::memory_order_relaxed);
  }
}

void be_runner::drain() {
  const auto deadline = std::chrono::steady_clock::now() + _options.stop_timeout;
  while (!_in_flight.empty()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      const flight& f = _in_flight.front();
      const auto meta = _meta.find(f.id);
      const std::string call = meta == _meta.end() ? "?" : _calls[meta->second.call].name;
      throw std::runtime_error("be_runner '" + _options.name + "': launch " + std::to_string(f.id) +
                               " (call '" + call + "', attempt " + std::to_string(f.attempt) +
                               ") did not finish within " +
                               std::to_string(_options.stop_timeout.count()) +
                               " ms of stop(): its event is still not complete (" +
                               std::to_string(_in_flight.size()) + " launches in flight)");
    }
    poll_once(false, false);
    std::this_thread::yield();
  }
}

be_runner_stats be_runner::collect() const {
  be_runner_stats s = _stats;
  s.submissions = _live_submissions.load(std::memory_order_relaxed);
  const be_counters& c = _queue.counters();
  s.kernels = c.completed;
  s.preempted_launches = c.preempted_launches;
  s.resumed_launches = c.resumed_launches;
  s.blocks_completed = c.blocks_completed;
  s.blocks_rerun = c.blocks_rerun;
  if (!_events.empty()) {
    std::uint32_t words[k_words * k_word_stride] = {};
    // The runner has drained (or is idle): nothing of its stream still writes these. A plain
    // copy, because the caller's thread need not be in the stream's (green) context.
    RESIDENT_CUDA_TRY(cudaMemcpy(words, _words.data(), sizeof words, cudaMemcpyDeviceToHost));
    s.early_exits = words[1 * k_word_stride];
    s.repeated_commits = words[2 * k_word_stride];
    s.checkpoints = words[4 * k_word_stride];
    s.handbacks = words[3 * k_word_stride];
  }
  return s;
}

void be_runner::start() {
  if (_thread.joinable()) {
    throw std::logic_error("be_runner '" + _options.name + "': already started");
  }
  _stop.store(false);
  _thread = std::thread([this] {
    try {
      prepare();
      while (!_stop.load(std::memory_order_relaxed)) poll_once(true, true);
      drain();
    } catch (...) {
      _error = std::current_exception();
    }
    _scope.reset();  // leave the thread's context before the thread ends
  });
}

be_runner_stats be_runner::stop() {
  if (_thread.joinable()) {
    _stop.store(true);
    _thread.join();
  }
  if (_error) std::rethrow_exception(std::exchange(_error, nullptr));
  return collect();
}

be_runner_stats be_runner::run_sequences(std::uint64_t sequences,
                                         const std::function<void(std::uint64_t)>& each_poll) {
  prepare();
  std::uint64_t poll = 0;
  const std::uint64_t target = _stats.sequences + sequences;
  while (_stats.sequences < target) {
    if (each_poll) each_poll(poll);
    ++poll;
    poll_once(true, _next_sequence < target);
  }
  return collect();
}

}  // namespace resident::sched
