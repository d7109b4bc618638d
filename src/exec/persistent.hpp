#pragma once
// persistent mode: one block (or a cooperative grid), launched once, runs the handler's and the
// DAG's operators as device functions (their "device forms") in a loop, with the controller and
// end-marker steps between them (docs/design.md, "persistent mode"). The forms are the runtime's
// own: the mailbox's handler and egress, and the lab vector operators. A DAG holding any other
// operator is refused by name.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "resident/detail/loop_state.hpp"
#include "resident/io/mailbox.hpp"

namespace resident {
class Operator;
}

namespace resident::detail {

enum class device_form : std::uint32_t { mailbox_rx, mailbox_tx, copy, affine, square, sum_reduce };

/// One operator's device form and its arguments (port memory resolved).
struct persistent_step {
  device_form form{};
  const void* in{};
  void* out{};
  std::int64_t elements{};
  float scale{};
  float offset{};
  io::mailbox_view mailbox{};
};

/// The block size of the persistent kernel (the deterministic sum's form needs exactly it).
inline constexpr int persistent_threads = 512;

/// `op`'s device form; throws composition_error naming the operator when it has none.
[[nodiscard]] persistent_step device_form_of(const Operator& op);

/// How many persistent blocks fit on one SM at once
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
[[nodiscard]] int persistent_blocks_per_sm();

/// Launches the persistent kernel on `s`: `steps` (device memory) holds the handler's
/// `handler_steps` forms, then the DAG's `body_steps`. `blocks` > 1: a cooperative launch whose
/// forms are separated by grid barriers (every block must fit at once).
void launch_persistent(loop_state* loop, const persistent_step* steps, int handler_steps,
                       int body_steps, int blocks, cudaStream_t s);

}  // namespace resident::detail
