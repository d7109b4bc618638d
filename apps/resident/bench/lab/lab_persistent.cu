// resident bench lab, persistent mode: worker blocks launched once claim work descriptors from a
// bounded queue in host-mapped memory and run the four-operation pipeline on each.
//
//   host (producer)                         worker block (one of `workers`)
//   ticket t = next++                        t = atomicAdd(claim, 1)      (device memory)
//   wait slot(t).done == t - capacity + 1    wait slot(t).published == t + 1   (acquire, system)
//   write the descriptor                     read the descriptor; run copy, 2x+1, square, sum
//   release slot(t).published = t + 1        release slot(t).done = t + 1      (system)
//
// Every shared word has one writer: `published` and the descriptor the host, `done` the worker
// that claimed the ticket. A slot is recycled for ticket t + capacity only once its `done` says
// ticket t finished, so no worker reads a descriptor the host is rewriting. Termination: one quit
// descriptor per worker; each worker claims exactly one and returns. Forward progress: workers
// never wait for each other, only for the host's next descriptor, and the grid is at most what
// the occupancy API says is resident.

#include <cuda/atomic>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <thread>

#include "bench/common.hpp"
#include "bench/lab/lab_bench.hpp"
#include "bench/lab/lab_common.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"
#include "resident/ops/vector_forms.cuh"

namespace resident::bench {

using namespace lab_detail;

namespace {

constexpr int worker_threads = ops::detail::reduce_threads;  // the sum's form needs this block
constexpr std::uint32_t queue_capacity = 64;

/// One queue slot (host-mapped). The descriptor fields are the host's; `done` the worker's.
struct work_slot {
  std::uint64_t published;  // ticket + 1 once the descriptor below is complete
  std::uint64_t done;       // ticket + 1 once its result is written
  const float* in;
  float* out;
  std::int64_t elements;
  std::uint32_t quit;
  std::uint32_t pad;
};

using device::globaltimer_ns;
using device::load_acquire_system;

__global__ void __launch_bounds__(worker_threads)
    lab_workers(work_slot* slots, unsigned long long* claim, float* scratch,
                unsigned long long* busy_ns, std::int64_t max_elements) {
  __shared__ std::uint64_t ticket;
  __shared__ const float* in;
  __shared__ float* out;
  __shared__ std::int64_t n;
  __shared__ bool quit;
  __shared__ std::uint64_t started;
  float* work = scratch + blockIdx.x * 3 * max_elements;
  float* affine = work + max_elements;
  float* squared = affine + max_elements;
  for (;;) {
    if (threadIdx.x == 0) {
      ticket = atomicAdd(claim, 1ULL);
      const work_slot& s = slots[ticket % queue_capacity];
      while (load_acquire_system(s.published) != ticket + 1) {
      }
      started = globaltimer_ns();
      in = s.in;
      out = s.out;
      n = s.elements;
      quit = s.quit != 0U;
    }
    resident::device::sync_block();
    work_slot& s = slots[ticket % queue_capacity];
    if (!quit) {
      ops::detail::copy_range(in, work, n, threadIdx.x, blockDim.x);
      resident::device::sync_block();
      ops::detail::affine_range(work, affine, n, 2.0F, 1.0F, threadIdx.x, blockDim.x);
      resident::device::sync_block();
      ops::detail::square_range(affine, squared, n, threadIdx.x, blockDim.x);
      resident::device::sync_block();
      ops::detail::sum_reduce_block(squared, out, n);
    }
    if (threadIdx.x == 0) {
      // Release at system scope: a host that acquires `done` sees the result (thread 0 wrote it
      // in the sum's form).
      cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>(s.done).store(
          ticket + 1, cuda::memory_order_release);
      if (!quit) busy_ns[blockIdx.x] += globaltimer_ns() - started;
    }
    const bool leave = quit;
    resident::device::sync_block();  // the shared descriptor is rewritten only after every thread
                                     // read it
    if (leave) return;
  }
}

/// The host side: the queue, the workers, their scratch, and the producer's ticket count.
class work_queue {
 public:
  work_queue(int workers, std::int64_t max_elements)
      : _workers(workers),
        _slots(queue_capacity * sizeof(work_slot)),
        _claim(sizeof(unsigned long long)),
        _scratch(static_cast<std::size_t>(workers) * 3 * static_cast<std::size_t>(max_elements) *
                 sizeof(float)),
        _busy(static_cast<std::size_t>(workers) * sizeof(unsigned long long)),
        _results(queue_capacity * sizeof(float)),
        _max_elements(max_elements) {
    std::fill_n(_slots.host_as<work_slot>(), queue_capacity, work_slot{});
    RESIDENT_CUDA_TRY(cudaMemset(_claim.data(), 0, _claim.size()));
    RESIDENT_CUDA_TRY(cudaMemset(_busy.data(), 0, _busy.size()));
  }
  ~work_queue() {
    if (!_running) return;
    try {
      (void)stop(std::chrono::milliseconds(2000));
    } catch (const std::exception& e) {
      // A full queue whose items never complete: the workers are stuck. Say so; the process's
      // exit ends them.
      std::fprintf(stderr, "bench lab persistent: the workers did not stop: %s\n", e.what());
    }
  }
  work_queue(const work_queue&) = delete;
  work_queue& operator=(const work_queue&) = delete;

  void launch() {
    lab_workers<<<_workers, worker_threads, 0, _stream.get()>>>(
        _slots.device_as<work_slot>(), _claim.data_as<unsigned long long>(),
        _scratch.data_as<float>(), _busy.data_as<unsigned long long>(), _max_elements);
    RESIDENT_CUDA_CHECK_LAUNCH("lab_workers");
    _running = true;
  }

  /// Queues one pipeline run over `in`; returns its ticket. Waits while the queue is full.
  std::uint64_t submit(const float* in, std::int64_t n, bool quit = false) {
    const std::uint64_t t = _next++;
    work_slot& s = _slots.host_as<work_slot>()[t % queue_capacity];
    if (t >= queue_capacity) wait_done(t - queue_capacity);  // recycle only a finished slot
    s.in = in;
    s.out = result_of(t);
    s.elements = n;
    s.quit = quit ? 1U : 0U;
    std::atomic_ref<std::uint64_t>(s.published).store(t + 1, std::memory_order_release);
    return t;
  }

  void wait_done(std::uint64_t t) const {
    const work_slot& s = _slots.host_as<work_slot>()[t % queue_capacity];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(s.done))
               .load(std::memory_order_acquire) < t + 1) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("bench lab persistent: work item " + std::to_string(t) +
                                 " did not complete within 5 s");
      }
    }
  }

  /// Waits for every ticket submitted so far.
  void drain() const {
    const std::uint64_t first = _next > queue_capacity ? _next - queue_capacity : 0;
    for (std::uint64_t t = first; t < _next; ++t) wait_done(t);
  }

  [[nodiscard]] float* result_of(std::uint64_t t) const {
    return _results.data_as<float>() + t % queue_capacity;
  }

  /// One quit descriptor per worker, then the kernel's end (bounded).
  bool stop(std::chrono::milliseconds limit) {
    for (int w = 0; w < _workers; ++w) (void)submit(nullptr, 0, true);
    _running = !stream_view(_stream.get()).synchronize_for(limit);
    return !_running;
  }

  [[nodiscard]] double busy_ns_total() const {
    std::vector<unsigned long long> b(static_cast<std::size_t>(_workers));
    RESIDENT_CUDA_TRY(cudaMemcpy(b.data(), _busy.data(), _busy.size(), cudaMemcpyDeviceToHost));
    double total = 0;
    for (const auto v : b) total += static_cast<double>(v);
    return total;
  }

 private:
  int _workers;
  host_mapped_buffer _slots;
  device_buffer _claim;
  device_buffer _scratch;
  device_buffer _busy;
  device_buffer _results;
  std::int64_t _max_elements;
  resident::stream _stream;
  std::uint64_t _next{0};
  bool _running{false};
};

/// A result float from device memory, over `s` (never the workers' stream).
float read_float(const float* p, stream_view s) {
  float v = 0;
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(&v, p, sizeof v, cudaMemcpyDeviceToHost, s.get()));
  sync(s);
  return v;
}

}  // namespace

int lab_persistent_workers(int requested) {
  int per_sm = 0;
  RESIDENT_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lab_workers, worker_threads, 0));
  const int sms = query_device(current_device()).sm_count;
  return std::clamp(requested, 1, std::max(1, per_sm * sms));
}

nlohmann::json run_lab_persistent(const lab_settings& s, int order_index, std::ostream& log) {
  lab_buffers buf(s.elements);
  resident::stream host_side;  // fills and reads; the workers' stream never synchronizes
  const int workers = lab_persistent_workers(s.persistent_workers);
  nlohmann::json r = {{"implementation", "resident"},
                      {"mode", "persistent"},
                      {"order_index", order_index},
                      {"elements", s.elements},
                      {"iterations", s.iterations},
                      {"repeats", s.repeats},
                      {"warmup", s.warmup},
                      {"workers", workers},
                      {"queue_capacity", queue_capacity},
                      {"kernels_per_iteration", 0},
                      {"operations_per_iteration", 4},
                      {"capture_us", nullptr},
                      {"instantiate_us", nullptr}};
  r["notes"] = nlohmann::json::array(
      {"worker blocks launched once claim descriptors from a bounded host-mapped queue "
       "(system-scope acquire/release) and run copy, 2x+1, square and sum as device functions; "
       "host_submit_us includes waiting for a free slot once the queue is full",
       "device_us: the workers' busy time per item (%globaltimer from claiming a published "
       "descriptor to releasing its completion)"});
  std::int64_t t0 = now_ns();
  work_queue q(workers, s.elements);
  q.launch();
  r["setup_us"] = us_since(t0);
  t0 = now_ns();
  const float* in = buf.input.data_as<const float>();
  q.wait_done(q.submit(in, s.elements));
  r["first_launch_us"] = us_since(t0);
  // Preflight: known inputs through the timed path.
  const double n = static_cast<double>(s.elements);
  auto check = [&](float value, double expected) {
    buf.fill(value, host_side);
    const std::uint64_t t = q.submit(in, s.elements);
    q.wait_done(t);
    const double got = read_float(q.result_of(t), host_side);
    return nlohmann::json{{"sum", got},
                          {"expected", expected},
                          {"ok", relative_error(got, expected) <= lab_tolerance}};
  };
  r["preflight"] = {
      {"tolerance", lab_tolerance}, {"zeros", check(0.0F, n)}, {"ones", check(1.0F, 9 * n)}};
  buf.restore(host_side);
  for (std::int64_t i = 0; i < s.warmup; ++i) (void)q.submit(in, s.elements);
  q.drain();
  std::vector<double> host_us, e2e_us, device_us;
  for (std::int64_t rep = 0; rep < s.repeats; ++rep) {
    const double busy0 = q.busy_ns_total();
    const std::int64_t a = now_ns();
    for (std::int64_t i = 0; i < s.iterations; ++i) (void)q.submit(in, s.elements);
    const std::int64_t b = now_ns();
    q.drain();
    const std::int64_t c = now_ns();
    const double iters = static_cast<double>(s.iterations);
    host_us.push_back(static_cast<double>(b - a) / 1e3 / iters);
    e2e_us.push_back(static_cast<double>(c - a) / 1e3 / iters);
    device_us.push_back((q.busy_ns_total() - busy0) / 1e3 / iters);
  }
  r["host_submit_us"] = median(host_us);
  r["device_us"] = median(device_us);
  r["end_to_end_us"] = median(e2e_us);
  r["host_submit_us_runs"] = host_us;
  r["device_us_runs"] = device_us;
  r["end_to_end_us_runs"] = e2e_us;
  const std::uint64_t last = q.submit(in, s.elements);
  q.wait_done(last);
  const double got = read_float(q.result_of(last), host_side);
  r["result"] = got;
  r["reference"] = buf.reference();
  r["relative_error"] = relative_error(got, buf.reference());
  if (!q.stop(std::chrono::milliseconds(2000))) {
    throw std::runtime_error("bench lab persistent: the workers did not stop within 2 s");
  }
  log << "lab persistent: end-to-end " << r["end_to_end_us"].get<double>()
      << " us/iteration, relative error " << r["relative_error"].get<double>() << "\n";
  return r;
}

}  // namespace resident::bench
