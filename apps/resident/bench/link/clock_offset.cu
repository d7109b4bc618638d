// Ping-pong over peer memory between two GPUs (clock_offset.hpp).

#include "bench/link/clock_offset.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "resident/app/loop_device.cuh"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/stream.hpp"

namespace resident::bench {

clock_offset estimate_clock_offset(std::span<const ping_pong_round> rounds) {
  if (rounds.empty()) throw std::invalid_argument("clock offset: no ping-pong rounds");
  clock_offset out;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  out.round_trip_ns = lo;
  for (const ping_pong_round& r : rounds) {
    if (r.a_back < r.a_sent) {
      throw std::invalid_argument("clock offset: a round's answer came back before it was sent");
    }
    const double trip = static_cast<double>(r.a_back - r.a_sent);
    const double mid = static_cast<double>(r.a_sent) + trip / 2.0;
    const double estimate = static_cast<double>(r.b_seen) - mid;
    lo = std::min(lo, estimate);
    hi = std::max(hi, estimate);
    if (trip < out.round_trip_ns) {
      out.round_trip_ns = trip;
      out.b_minus_a_ns = estimate;
    }
  }
  out.error_ns = out.round_trip_ns / 2.0;
  out.spread_ns = hi - lo;
  out.rounds = rounds.size();
  return out;
}

namespace {

constexpr std::uint64_t give_up_ns = 1'000'000'000;

/// Waits until `word` reads `value`; false after give_up_ns.
__device__ bool wait_for(const std::uint64_t& word, std::uint64_t value) {
  const std::uint64_t start = device::globaltimer_ns();
  while (device::load_acquire_system(word) != value) {
    if (device::globaltimer_ns() - start > give_up_ns) return false;
  }
  return true;
}

// Side A: `token_at_b` is B's memory (a peer pointer), `answer` and `answer_stamp` A's own.
__global__ void ping_kernel(std::uint64_t* token_at_b, const std::uint64_t* answer,
                            const std::uint64_t* answer_stamp, ping_pong_round* rounds,
                            std::uint64_t count, int* failed) {
  for (std::uint64_t r = 1; r <= count; ++r) {
    const std::uint64_t sent = device::globaltimer_ns();
    device::store_release_system(*token_at_b, r);
    if (!wait_for(*answer, r)) {
      *failed = 1;
      return;
    }
    const std::uint64_t back = device::globaltimer_ns();
    rounds[r - 1] = {sent, *static_cast<const volatile std::uint64_t*>(answer_stamp), back};
  }
}

// Side B: `token` is B's own memory, `answer` and `answer_stamp` A's (peer pointers).
__global__ void pong_kernel(const std::uint64_t* token, std::uint64_t* answer,
                            std::uint64_t* answer_stamp, std::uint64_t count, int* failed) {
  for (std::uint64_t r = 1; r <= count; ++r) {
    if (!wait_for(*token, r)) {
      *failed = 1;
      return;
    }
    device::store_relaxed_system(*answer_stamp, device::globaltimer_ns());
    device::store_release_system(*answer, r);  // orders the stamp before it
  }
}

}  // namespace

std::vector<ping_pong_round> ping_pong(int a, int b, std::size_t rounds) {
  if (rounds == 0 || rounds > 1'000'000) {
    throw std::invalid_argument("clock offset: rounds must be 1 to 1000000, got " +
                                std::to_string(rounds));
  }
  enable_peer_access(a, b);
  enable_peer_access(b, a);
  // A's memory: answer, answer stamp, failed flag, then the rounds; B's: the token, its flag.
  const std::size_t a_bytes = 4 * sizeof(std::uint64_t) + rounds * sizeof(ping_pong_round);
  device_buffer at_a = zeroed_device_buffer(a_bytes, a);
  device_buffer at_b = zeroed_device_buffer(2 * sizeof(std::uint64_t), b);
  auto* a_words = at_a.data_as<std::uint64_t>();
  auto* b_words = at_b.data_as<std::uint64_t>();
  auto* log = reinterpret_cast<ping_pong_round*>(a_words + 4);
  std::optional<stream> on_b;
  {
    const current_device_guard on(b);
    on_b.emplace(0);
    pong_kernel<<<1, 1, 0, on_b->get()>>>(b_words, a_words, a_words + 1, rounds,
                                          reinterpret_cast<int*>(b_words + 1));
    RESIDENT_CUDA_CHECK_LAUNCH("pong_kernel (clock offset)");
  }
  const current_device_guard on(a);
  stream on_a(0);
  ping_kernel<<<1, 1, 0, on_a.get()>>>(b_words, a_words, a_words + 1, log, rounds,
                                       reinterpret_cast<int*>(a_words + 2));
  RESIDENT_CUDA_CHECK_LAUNCH("ping_kernel (clock offset)");
  on_a.synchronize();
  {
    const current_device_guard on_dev_b(b);
    on_b->synchronize();
    on_b.reset();  // destroyed with its own device current
  }
  std::vector<std::uint64_t> head(4);
  std::uint64_t b_failed = 0;
  RESIDENT_CUDA_TRY(cudaMemcpy(head.data(), a_words, head.size() * sizeof(std::uint64_t),
                               cudaMemcpyDeviceToHost));
  RESIDENT_CUDA_TRY(cudaMemcpy(&b_failed, b_words + 1, sizeof b_failed, cudaMemcpyDeviceToHost));
  if (head[2] != 0 || b_failed != 0) {
    throw std::runtime_error("clock offset: the ping-pong between devices " + std::to_string(a) +
                             " and " + std::to_string(b) +
                             " stalled for a second (its two one-thread kernels did not run at "
                             "once)");
  }
  std::vector<ping_pong_round> out(rounds);
  RESIDENT_CUDA_TRY(
      cudaMemcpy(out.data(), log, rounds * sizeof(ping_pong_round), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace resident::bench
