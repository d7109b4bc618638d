#pragma once
// The camera I/O operators' device-form arguments (frame_rx, display_tx), for the persistent
// mode's kernel (src/exec/persistent_kernel.cu). Host code may include it; the device bodies are
// in sensor_bridge_forms.cuh and display_forms.cuh.

#include <cstdint>

#include "resident/io/display.hpp"
#include "resident/io/frame.hpp"
#include "resident/io/sensor_bridge.hpp"

namespace resident::io::detail {

struct frame_rx_args {
  frame_ring_view ring;
  frame_ref* out;
};

/// display_tx's device form: block 0 chooses the buffer, every block encodes, block 0 commits.
inline constexpr unsigned display_form_phases = 3;

struct display_tx_args {
  display_view view;
  const void* rgb;
  const std::uint8_t* lut;
  const frame_integrity* integrity;
  bool rgba16;
};

}  // namespace resident::io::detail
