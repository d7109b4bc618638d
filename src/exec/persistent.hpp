#pragma once
// persistent mode: one block (or a cooperative grid), launched once, runs the handler's and the
// DAG's operators as device functions (their "device forms") in a loop, with the controller and
// end-marker steps between them (docs/design.md, "persistent mode"). The forms are the runtime's
// own: the mailbox's handler and egress, the lab vector operators, and the camera operators
// (frame_rx, csi2_reconstruct, raw_isp, demosaic, convert_resize, display_tx). A DAG holding any
// other operator is refused by name.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "io/forms.hpp"
#include "ops/imaging/forms.hpp"
#include "resident/detail/loop_state.hpp"
#include "resident/detail/phase_table.hpp"
#include "resident/io/mailbox.hpp"

namespace resident {
class Operator;
}

namespace resident::detail {

enum class device_form : std::uint32_t {
  mailbox_rx,
  mailbox_tx,
  copy,
  affine,
  square,
  sum_reduce,
  // The camera operators' forms: a kernel that holds them is a separate instantiation, so the
  // mailbox's loop keeps its registers and its lack of dynamic shared memory.
  frame_rx,
  csi2_reconstruct,
  raw_isp,
  demosaic,
  convert_resize,
  display_tx,
};

[[nodiscard]] constexpr bool is_camera_form(device_form f) noexcept {
  return f >= device_form::frame_rx;
}

/// One operator's device form and its arguments (port memory resolved).
struct persistent_step {
  device_form form{};
  std::uint32_t phases{1};     // the form's steps, with a grid (block) barrier after each
  std::size_t shared_bytes{};  // dynamic shared memory the form uses
  const void* in{};
  void* out{};
  std::int64_t elements{};
  float scale{};
  float offset{};
  io::mailbox_view mailbox{};
  io::detail::frame_rx_args frame_rx{};
  io::detail::display_tx_args display{};
  ops::imaging::detail::reconstruct_args csi2{};
  ops::imaging::detail::isp_args isp{};
  ops::imaging::detail::demosaic_args demosaic{};
  ops::imaging::detail::resize_args resize{};
};

/// The block size of the persistent kernel (the deterministic sum's form needs exactly it).
inline constexpr int persistent_threads = 512;

/// `op`'s device form; throws composition_error naming the operator when it has none.
[[nodiscard]] persistent_step device_form_of(const Operator& op);

/// Which kernel runs the forms and with how much dynamic shared memory.
struct persistent_kernel_choice {
  bool camera{false};          // any camera form among the steps
  bool sensor_bridge{false};   // a frame_rx form: the bridge's commit kernel runs beside it
  std::size_t shared_bytes{};  // the largest form's
  bool timed{false};           // run_options::phase_times: the instantiation that stamps phases
};

/// SMs' worth of blocks that "as many as fit" leaves free when a sensor bridge feeds the loop.
inline constexpr int bridge_reserved_sms = 4;

/// How many persistent blocks of that kernel fit on one SM at once
/// (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
[[nodiscard]] int persistent_blocks_per_sm(const persistent_kernel_choice& k);

/// Launches the persistent kernel on `s`: `steps` (device memory) holds the handler's
/// `handler_steps` forms, then the DAG's `body_steps`. `blocks` > 1: a cooperative launch whose
/// forms are separated by grid barriers (every block must fit at once).
void launch_persistent(loop_state* loop, const persistent_step* steps, int handler_steps,
                       int body_steps, int blocks, const persistent_kernel_choice& k,
                       cudaStream_t s);

}  // namespace resident::detail
