// The hand-written peers (peers.hpp): their kernels, graphs and host loop.

#include <cublas_v2.h>

#include <cuda/atomic>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/workloads.hpp"
#include "exec/capture.hpp"  // detail::add_conditional: the CUDA calls that add a conditional node
#include "peers.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/graph.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/io/mailbox_forms.cuh"
#include "resident/ops/matmul.hpp"

namespace resident::peers {

namespace {

constexpr std::size_t slot_header_bytes = 64;  // the mailbox slot's {seq} header
constexpr int threads = 32;                    // 8-byte payloads: one warp copies them
constexpr std::int64_t matmul_n = 512;
constexpr int matmul_chain = 6;

/// Host-mapped words: the host writes `quit`; the loop writes the rest.
struct peer_words {
  std::uint32_t quit;
  std::uint32_t stopped;
  std::int32_t device_error;
  std::uint64_t processed;
  std::uint64_t last_seq;
};

/// The loop's own state, in device memory.
struct peer_state {
  io::mailbox_view mb;
  std::uint64_t last;   // the last sample taken
  std::uint64_t taken;  // the sample this iteration took (0: none)
  std::uint64_t processed;
  std::uint64_t poll_ns;
  cudaGraphConditionalHandle while_h;
  cudaGraphConditionalHandle if_h;
  cudaGraphExec_t main_exec;  // tail: the poll graph
  cudaGraphExec_t work_exec;  // tail: the body and commit graph
  std::byte* sample;          // the taken payload (device memory)
  const std::byte* out;       // what the commit writes (the sample, or the body's probe)
  peer_words* words;          // device address of the host-mapped words
};

// The runtime's system-scope accessors and clock (plain inline wrappers, no loop machinery).
using device::load_acquire_system;
using device::store_relaxed_system;
using device::store_release_system;
inline __device__ std::uint64_t now_ns() { return device::globaltimer_ns(); }

/// Block-wide: the newest sample after `last`, polled for up to `budget_ns`, its payload copied
/// into `dst` under the slot's sequence lock (retaken when the sensor overwrote it meanwhile).
/// Returns its sequence number, or 0 when none came within the budget.
__device__ std::uint64_t take_newest(const io::mailbox_view& mb, std::uint64_t last,
                                     std::uint64_t budget_ns, std::byte* dst) {
  __shared__ std::uint64_t chosen;
  __shared__ bool consistent;
  const std::uint64_t start = now_ns();
  for (;;) {
    if (threadIdx.x == 0) {
      std::uint64_t pick = 0;
      for (;;) {
        const std::uint64_t head = load_acquire_system(*mb.head);
        if (head > last) {
          pick = head;
          break;
        }
        if (now_ns() - start >= budget_ns) break;
      }
      chosen = pick;
    }
    resident::device::sync_block();
    const std::uint64_t pick = chosen;
    if (pick == 0) return 0;
    const std::byte* slot = mb.slots + (pick % mb.depth) * mb.slot_stride;
    if (mb.lines) {  // one tagged line (mailbox_format::lines): warp 0 reads and checks it
      if (threadIdx.x < 32) {
        const std::uint64_t w = io::detail::load_line_word(slot, threadIdx.x);
        const bool whole = io::detail::take_slot_line(mb, pick, w, threadIdx.x, dst);
        if (threadIdx.x == 0) consistent = whole;
      }
      resident::device::sync_block();
      if (consistent) return pick;
      continue;
    }
    for (std::size_t i = threadIdx.x; i < mb.input_bytes; i += blockDim.x) {
      dst[i] = static_cast<std::byte>(
          reinterpret_cast<const volatile unsigned char*>(slot + slot_header_bytes)[i]);
    }
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
    resident::device::sync_block();
    if (threadIdx.x == 0) {
      consistent = load_acquire_system(*reinterpret_cast<const std::uint64_t*>(slot)) == pick;
    }
    resident::device::sync_block();
    if (consistent) return pick;
  }
}

/// Block-wide: commits `src` (output_bytes) as sample `seq`'s output, versioned by a new commit
/// number, then the loop's counters.
__device__ void commit(peer_state* s, std::uint64_t seq) {
  const io::mailbox_view& mb = s->mb;
  std::uint64_t number = 0;
  if (threadIdx.x == 0) {
    number = io::detail::next_commit(*mb.commits, mb.commit_floor);  // above host commits
    *mb.commits = number;
    if (!mb.lines) {
      store_relaxed_system(*mb.out_begin, number);
      __threadfence_system();
    }
  }
  if (mb.lines) {  // one tagged line (mailbox_format::lines), stored by warp 0's lanes 0-7
    if (threadIdx.x < 32) {
      number = __shfl_sync(io::detail::full_warp, number, 0);
      io::detail::store_output_line(mb, number, seq, s->out, threadIdx.x);
    }
    if (threadIdx.x == 0) {
      s->last = seq;
      store_relaxed_system(s->words->processed, ++s->processed);
      store_release_system(s->words->last_seq, seq);
    }
    return;
  }
  resident::device::sync_block();
  for (std::size_t i = threadIdx.x; i < mb.output_bytes; i += blockDim.x) {
    reinterpret_cast<volatile unsigned char*>(mb.out_payload)[i] =
        static_cast<unsigned char>(s->out[i]);
  }
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    store_relaxed_system(*mb.out_seq, seq);
    __threadfence_system();
    store_release_system(*mb.out_end, number);
    s->last = seq;
    store_relaxed_system(s->words->processed, ++s->processed);
    store_release_system(s->words->last_seq, seq);
  }
}

__device__ bool quit_requested(const peer_state* s) {
  return load_acquire_system(s->words->quit) != 0U;
}

__device__ void mark_stopped(peer_state* s) { store_release_system(s->words->stopped, 1U); }

__device__ void fail(peer_state* s, cudaError_t e) {
  store_relaxed_system(s->words->device_error, static_cast<std::int32_t>(e));
  mark_stopped(s);
}

// ---- while ----------------------------------------------------------------------------------
__global__ void while_poll_kernel(peer_state* s) {
  const std::uint64_t pick = take_newest(s->mb, s->last, s->poll_ns, s->sample);
  if (threadIdx.x != 0) return;
  s->taken = pick;
  cudaGraphSetConditional(s->if_h, pick != 0 ? 1U : 0U);
  if (pick == 0 && quit_requested(s)) {
    cudaGraphSetConditional(s->while_h, 0U);
    mark_stopped(s);
  }
}

__global__ void commit_kernel(peer_state* s) {
  if (s->taken != 0) commit(s, s->taken);
}

// ---- tail -----------------------------------------------------------------------------------
__global__ void tail_poll_kernel(peer_state* s) {
  const std::uint64_t pick = take_newest(s->mb, s->last, s->poll_ns, s->sample);
  if (threadIdx.x != 0) return;
  s->taken = pick;
  if (pick == 0 && quit_requested(s)) {
    mark_stopped(s);
    return;
  }
  const cudaError_t e =
      cudaGraphLaunch(pick != 0 ? s->work_exec : s->main_exec, cudaStreamGraphTailLaunch);
  if (e != cudaSuccess) fail(s, e);
}

__global__ void tail_commit_kernel(peer_state* s) {
  commit(s, s->taken);
  if (threadIdx.x != 0) return;
  const cudaError_t e = cudaGraphLaunch(s->main_exec, cudaStreamGraphTailLaunch);
  if (e != cudaSuccess) fail(s, e);
}

// ---- host-graph -----------------------------------------------------------------------------
__global__ void take_kernel(peer_state* s) {
  const std::uint64_t pick = take_newest(s->mb, s->last, 0, s->sample);
  if (threadIdx.x == 0) s->taken = pick;
}

__global__ void take_commit_kernel(peer_state* s) {
  const std::uint64_t pick = take_newest(s->mb, s->last, 0, s->sample);
  if (pick != 0) commit(s, pick);
}

// ---- persistent -----------------------------------------------------------------------------
__global__ void persistent_kernel(peer_state* s) {
  __shared__ bool quit;
  for (;;) {
    const std::uint64_t pick = take_newest(s->mb, s->last, s->poll_ns, s->sample);
    if (pick != 0) {
      commit(s, pick);
      resident::device::sync_block();  // s->last is thread 0's write: every thread polls after it
      continue;
    }
    if (threadIdx.x == 0) quit = quit_requested(s);
    resident::device::sync_block();
    if (quit) break;
  }
  if (threadIdx.x == 0) mark_stopped(s);
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("peer matmul6 body: ") + call +
                             " failed: " + cublasGetStatusName(status));
  }
}

/// The matmul6 body: six dependent products of the io benchmark's fixed input, the first two
/// values of the last one copied to `probe`.
struct matmul_body {
  matmul_body() {
    const auto bytes = static_cast<std::size_t>(matmul_n * matmul_n) * sizeof(float);
    const auto input = bench::matmul_input(matmul_n);
    input_buffer = device_buffer(bytes);
    RESIDENT_CUDA_TRY(cudaMemcpy(input_buffer.data(), input.data(), bytes, cudaMemcpyHostToDevice));
    for (int i = 0; i < matmul_chain; ++i) {
      const auto w = ops::matmul::make_weights(matmul_n, static_cast<std::uint64_t>(i + 1));
      weights.emplace_back(bytes);
      RESIDENT_CUDA_TRY(cudaMemcpy(weights.back().data(), w.data(), bytes, cudaMemcpyHostToDevice));
      products.emplace_back(bytes);
      // Zeroed at creation, like every buffer a loop reads (compute-sanitizer initcheck).
      RESIDENT_CUDA_TRY(cudaMemset(products.back().data(), 0, bytes));
    }
    probe = device_buffer(8);
    RESIDENT_CUDA_TRY(cudaMemset(probe.data(), 0, probe.size()));  // read before the first run
    workspace = device_buffer(4U << 20);
    check_cublas(cublasCreate(&handle), "cublasCreate");
    check_cublas(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  }
  ~matmul_body() {
    if (handle != nullptr) (void)cublasDestroy(handle);
  }
  matmul_body(const matmul_body&) = delete;
  matmul_body& operator=(const matmul_body&) = delete;

  /// Captures the body on `s` (which is capturing).
  void capture(cudaStream_t s) {
    check_cublas(cublasSetStream(handle, s), "cublasSetStream");
    check_cublas(cublasSetWorkspace(handle, workspace.data(), workspace.size()),
                 "cublasSetWorkspace");
    const float alpha = 1.0F;
    const float beta = 0.0F;
    const int n = static_cast<int>(matmul_n);
    const float* in = input_buffer.data_as<const float>();
    for (int i = 0; i < matmul_chain; ++i) {
      float* out = products[static_cast<std::size_t>(i)].data_as<float>();
      check_cublas(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                               weights[static_cast<std::size_t>(i)].data_as<const float>(), n, in,
                               n, &beta, out, n),
                   "cublasSgemm");
      in = out;
    }
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(probe.data(), in, 8, cudaMemcpyDeviceToDevice, s));
  }

  device_buffer input_buffer;
  std::vector<device_buffer> weights;
  std::vector<device_buffer> products;
  device_buffer probe;
  device_buffer workspace;
  cublasHandle_t handle{};
};

cudaGraphNode_t add_kernel(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps,
                           void (*kernel)(peer_state*), peer_state* s) {
  void* args[] = {&s};
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(kernel);
  p.gridDim = dim3(1);
  p.blockDim = dim3(threads);
  p.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  RESIDENT_CUDA_TRY(cudaGraphAddKernelNode(&node, g, deps.data(), deps.size(), &p));
  return node;
}

/// The body (if any) as a child graph node of `g` after `deps`; returns what follows it.
std::vector<cudaGraphNode_t> add_body(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps,
                                      matmul_body* body, cudaStream_t s) {
  if (body == nullptr) return deps;
  RESIDENT_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    body->capture(s);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(s, &broken);
    if (broken != nullptr) (void)cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t captured = nullptr;
  RESIDENT_CUDA_TRY(cudaStreamEndCapture(s, &captured));
  const graph owned = graph::adopt(captured);
  cudaGraphNode_t node = nullptr;
  RESIDENT_CUDA_TRY(cudaGraphAddChildGraphNode(&node, g, deps.data(), deps.size(), owned.get()));
  return {node};
}

}  // namespace

struct peer_loop::impl {
  impl(const io::mailbox& mb, peer_config c)
      : mailbox(&mb),
        config(std::move(c)),
        words_mem(sizeof(peer_words)),
        state_mem(sizeof(peer_state)),
        sample(mb.settings().input_bytes) {
    if (config.body == peer_body::matmul6 && config.kind == peer_kind::persistent) {
      throw std::invalid_argument(
          "peer 'persistent' runs the empty body only (cuBLAS cannot run inside a kernel)");
    }
    if (config.body == peer_body::matmul6) body = std::make_unique<matmul_body>();
    // Zeros until the first sample lands: an iteration that took none commits what is there.
    RESIDENT_CUDA_TRY(cudaMemset(sample.data(), 0, sample.size()));
    state.mb = mb.device_view();
    state.poll_ns = config.poll_ns;
    state.sample = sample.data_as<std::byte>();
    state.out = body ? body->probe.data_as<const std::byte>() : state.sample;
    state.words = words_mem.device_as<peer_words>();
    build();
  }

  [[nodiscard]] peer_words* words() const noexcept { return words_mem.host_as<peer_words>(); }
  [[nodiscard]] peer_state* device_state() const noexcept {
    return state_mem.data_as<peer_state>();
  }

  void build() {
    peer_state* s = device_state();
    switch (config.kind) {
      case peer_kind::while_loop: {
        RESIDENT_CUDA_TRY(cudaGraphConditionalHandleCreate(&state.while_h, root.get(), 1,
                                                           cudaGraphCondAssignDefault));
        cudaGraph_t loop_body =
            detail::add_conditional(root.get(), {}, state.while_h, cudaGraphCondTypeWhile);
        RESIDENT_CUDA_TRY(cudaGraphConditionalHandleCreate(&state.if_h, loop_body, 0,
                                                           cudaGraphCondAssignDefault));
        const cudaGraphNode_t poll = add_kernel(loop_body, {}, while_poll_kernel, s);
        cudaGraph_t work =
            detail::add_conditional(loop_body, {poll}, state.if_h, cudaGraphCondTypeIf);
        (void)add_kernel(work, add_body(work, {}, body.get(), stream.get()), commit_kernel, s);
        exec = std::make_unique<graph_exec>(root.get());
        break;
      }
      case peer_kind::tail: {
        (void)add_kernel(root.get(), {}, tail_poll_kernel, s);
        (void)add_kernel(work_graph.get(), add_body(work_graph.get(), {}, body.get(), stream.get()),
                         tail_commit_kernel, s);
        exec = std::make_unique<graph_exec>(root.get(), cudaGraphInstantiateFlagDeviceLaunch);
        work_exec =
            std::make_unique<graph_exec>(work_graph.get(), cudaGraphInstantiateFlagDeviceLaunch);
        work_exec->upload(stream);
        state.main_exec = exec->get();
        state.work_exec = work_exec->get();
        break;
      }
      case peer_kind::host_graph: {
        if (body) {
          const cudaGraphNode_t take = add_kernel(root.get(), {}, take_kernel, s);
          (void)add_kernel(root.get(), add_body(root.get(), {take}, body.get(), stream.get()),
                           commit_kernel, s);
        } else {
          (void)add_kernel(root.get(), {}, take_commit_kernel, s);
        }
        exec = std::make_unique<graph_exec>(root.get());
        break;
      }
      case peer_kind::persistent:
        break;  // one kernel, launched once
    }
    if (exec) exec->upload(stream);
    stream_view(stream.get()).synchronize();
  }

  void start() {
    if (running)
      throw std::logic_error("peer '" + std::string(to_string(config.kind)) + "': already running");
    const std::uint64_t from = mailbox->published();
    *words() = peer_words{0, 0, 0, 0, from};
    state.last = from;
    state.taken = 0;
    state.processed = 0;
    RESIDENT_CUDA_TRY(cudaMemcpy(device_state(), &state, sizeof state, cudaMemcpyHostToDevice));
    running = true;
    switch (config.kind) {
      case peer_kind::while_loop:
      case peer_kind::tail:
        exec->launch(stream);
        break;
      case peer_kind::host_graph:
        stop_flag.store(false);
        exited.store(false);
        thread = std::thread([this, from] { host_loop(from); });
        break;
      case peer_kind::persistent:
        persistent_kernel<<<1, threads, 0, stream.get()>>>(device_state());
        RESIDENT_CUDA_CHECK_LAUNCH("persistent_kernel (peer)");
        break;
    }
  }

  /// The careful hand-written CPU-driven loop: gate on the sensor's word (host memory), launch
  /// one graph, wait for it; nothing else per sample.
  void host_loop(std::uint64_t last) {
    try {
      if (config.on_loop_thread_start) config.on_loop_thread_start();
      RESIDENT_CUDA_TRY(cudaSetDevice(device));
      while (!stop_flag.load(std::memory_order_acquire)) {
        if (mailbox->published() <= last) continue;
        exec->launch(stream);
        RESIDENT_CUDA_TRY(cudaStreamSynchronize(stream.get()));
        last = std::atomic_ref<std::uint64_t>(words()->last_seq).load(std::memory_order_acquire);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    exited.store(true, std::memory_order_release);
  }

  bool stop(std::chrono::milliseconds limit) {
    if (!running) return true;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    if (config.kind == peer_kind::host_graph) {
      stop_flag.store(true, std::memory_order_release);
      while (!exited.load(std::memory_order_acquire)) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      thread.join();
    } else {
      std::atomic_ref<std::uint32_t>(words()->quit).store(1U, std::memory_order_release);
      while (std::atomic_ref<std::uint32_t>(words()->stopped).load(std::memory_order_acquire) ==
             0) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      if (!stream_view(stream.get()).synchronize_for(std::chrono::milliseconds(1000))) return false;
    }
    running = false;
    const auto code = static_cast<cudaError_t>(
        std::atomic_ref<std::int32_t>(words()->device_error).load(std::memory_order_acquire));
    if (code != cudaSuccess) {
      throw std::runtime_error(
          "peer '" + std::string(to_string(config.kind)) +
          "': cudaGraphLaunch (tail launch) failed on the device: " + cudaGetErrorName(code));
    }
    if (!error.empty()) {
      throw std::runtime_error("peer '" + std::string(to_string(config.kind)) + "': " + error);
    }
    return true;
  }

  const io::mailbox* mailbox;
  peer_config config;
  int device{current_device()};
  host_mapped_buffer words_mem;
  device_buffer state_mem;
  device_buffer sample;
  std::unique_ptr<matmul_body> body;
  peer_state state{};
  resident::stream stream;
  graph root;
  graph work_graph;
  std::unique_ptr<graph_exec> exec;
  std::unique_ptr<graph_exec> work_exec;
  std::thread thread;
  std::atomic<bool> stop_flag{false};
  std::atomic<bool> exited{false};
  std::string error;
  bool running{false};
};

std::string_view to_string(peer_kind k) noexcept {
  switch (k) {
    case peer_kind::while_loop:
      return "while";
    case peer_kind::tail:
      return "tail";
    case peer_kind::host_graph:
      return "host-graph";
    case peer_kind::persistent:
      return "persistent";
  }
  return "?";
}

peer_kind parse_peer(std::string_view name) {
  for (const peer_kind k :
       {peer_kind::while_loop, peer_kind::tail, peer_kind::host_graph, peer_kind::persistent}) {
    if (name == to_string(k)) return k;
  }
  throw std::invalid_argument("unknown peer '" + std::string(name) +
                              "'; peers: while, tail, host-graph, persistent");
}

}  // namespace resident::peers

namespace resident::peers {

peer_loop::peer_loop(const io::mailbox& mailbox, peer_config config)
    : _impl(std::make_unique<impl>(mailbox, std::move(config))) {}

peer_loop::~peer_loop() {
  if (!_impl || !_impl->running) return;
  bool stopped = false;
  try {
    stopped = _impl->stop(std::chrono::milliseconds(2000));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resident: %s\n", e.what());
    stopped = true;  // it stopped, with an error
  }
  if (!stopped) {
    std::fprintf(stderr, "resident: peer '%s' did not stop within 2 s; its memory is left to it\n",
                 std::string(to_string(_impl->config.kind)).c_str());
    if (_impl->thread.joinable()) _impl->thread.detach();
    (void)_impl.release();  // deliberately never freed: the loop may still touch it
  }
}

void peer_loop::start() { _impl->start(); }

std::uint64_t peer_loop::last_seq() const noexcept {
  return std::atomic_ref<std::uint64_t>(_impl->words()->last_seq).load(std::memory_order_acquire);
}

std::uint64_t peer_loop::processed() const noexcept {
  return std::atomic_ref<std::uint64_t>(_impl->words()->processed).load(std::memory_order_acquire);
}

bool peer_loop::stop(std::chrono::milliseconds limit) { return _impl->stop(limit); }

std::string peer_loop::name() const { return "peer-" + std::string(to_string(_impl->config.kind)); }

}  // namespace resident::peers
