#pragma once
// camera_isp: the whole camera chain in one pass, from the bridge's CSI-2 slot to the display's
// scanout buffer, as a hardware ISP streams each pixel through once.
//
//   input   "frame"      io::frame_ref (the frame_rx handler's output)
//   output  "integrity"  io::frame_integrity (as csi2_reconstruct writes it)
//   display             the io::display it writes and commits to (flip mode only)
//
// Parameters: width (1920), height (1080), format (raw12), order (rggb), black_level (256),
// white_balance (grey_world | none), demosaic (malvar | bilinear), gamma (2.2), statistics
// (previous-frame | same-frame).
//
// One block per 64 x 16 tile: it reads the tile's packet bytes and a two-pixel apron straight
// from the slot, unpacks them, applies black level and the white-balance multipliers while they
// go to shared memory, demosaics each 2x2 cell, gamma-encodes and stores RGBA8 in the display's
// back buffer. Beside it, each block adds its rows' CRC terms into a per-line word (CRC-16 is
// linear: csi2_math.hpp) and each channel's count and sum of 8-bit levels into a few replicated
// counters. The last block to finish decides the frame: every line's header ECC, data type,
// word count and CRC, the frame start and end packets, the slot re-read; it writes the
// integrity record and commits the frame to the display only when the whole frame is sound (a
// corrupt frame is counted and never flipped to), and derives the next gains.
//
// statistics: previous-frame (the default, what ISPs do) corrects frame F with the grey-world
// gains of the last sound frame before it (gain 1 before the first); same-frame runs a
// statistics pass first and equals the unfused chain (csi2_reconstruct -> raw_isp -> demosaic
// rgba16 -> display_tx) byte for byte. Grey world needs only each channel's count and sum of
// levels, so those are gathered instead of a 3 x 256 histogram: the same gains, 6 numbers a block
// to merge instead of 768.
//
// Front-buffer display mode is refused by name: the frame's verdict is known only after every
// pixel is written, so a corrupt frame would be on screen.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/io/bayer.hpp"
#include "resident/io/csi2.hpp"
#include "resident/io/display.hpp"
#include "resident/ops/imaging/csi2_reconstruct.hpp"

namespace resident::ops::imaging {

enum class isp_statistics : std::uint8_t { previous_frame, same_frame };

struct camera_isp_config {
  std::uint32_t width{1920};
  std::uint32_t height{1080};
  io::csi2::raw_format format{io::csi2::raw_format::raw12};
  io::bayer_order order{io::bayer_order::rggb};
  std::uint32_t black_level{256};
  bool grey_world{true};
  bool malvar{true};
  double gamma{2.2};
  isp_statistics statistics{isp_statistics::previous_frame};
  /// Graph modes' launch: as many blocks as fit on the GPU at once, each taking tiles in turn
  /// (true), or one block per tile (false: thousands at 4K, each with its own set-up, sums
  /// merge and arrival).
  bool resident_grid{true};
  /// Graph modes: the fused kernel stamps its phases on the device clock at every launch
  /// (camera_isp::stamp_phases; bench camera's operators part). Persistent mode ignores it.
  bool phase_stamps{false};
};

/// One launch of the fused kernel on the device clock (camera_isp_config::phase_stamps), µs.
struct fused_pass_times {
  double tiles_us{0};    // the first block's start -> the last block's tiles written
  double arrival_us{0};  // -> the last block to arrive begins the frame's verdict
  double finish_us{0};   // the verdict, the integrity record, the gains and the commit
  double total_us{0};    // the first block's start -> the commit
};

/// Device memory of camera_isp besides its ports: the CSI-2 tables, a CRC word per line, the
/// replicated channel sums, the multipliers, the gamma table and the blocks' counters.
class camera_isp_workspace {
 public:
  /// Replicas of the channel sums (blocks add into replica blockIdx % replicas).
  static constexpr unsigned sum_replicas = 32;
  static constexpr unsigned sum_words = 6;  // count and sum of levels, per channel

  explicit camera_isp_workspace(const camera_isp_config& config);

  [[nodiscard]] const camera_isp_config& config() const noexcept { return _config; }
  [[nodiscard]] const csi2_workspace& csi2() const noexcept { return _csi2; }
  [[nodiscard]] std::uint32_t* line_crc() const noexcept {
    return _line_crc.data_as<std::uint32_t>();
  }
  [[nodiscard]] unsigned long long* sums() const noexcept {
    return _sums.data_as<unsigned long long>();
  }
  /// Three Q16 multipliers (red, green, blue): the ones the next frame is corrected with.
  [[nodiscard]] std::uint64_t* multipliers() const noexcept {
    return _multipliers.data_as<std::uint64_t>();
  }
  [[nodiscard]] const std::uint8_t* lut() const noexcept { return _lut.data_as<std::uint8_t>(); }
  /// [0] the statistics pass's finished blocks, [1] the main pass's.
  [[nodiscard]] unsigned* done() const noexcept { return _done.data_as<unsigned>(); }
  /// Blocks of the fused kernel that fit on the current device at once (its occupancy times
  /// the SMs): the graph modes' grid when config().resident_grid.
  [[nodiscard]] unsigned resident_blocks() const noexcept { return _resident_blocks; }
  /// Copies the current multipliers to the host (a synchronous copy: tests and tools).
  [[nodiscard]] std::array<std::uint64_t, 3> read_multipliers() const;
  /// The phase stamps (config().phase_stamps; null otherwise): [0] the earliest block start and
  /// [1] the latest tiles' end of the launch in flight, [2] the launches stamped, then a ring of
  /// phase_ring launches of four stamps (start, tiles, verdict begun, committed).
  [[nodiscard]] std::uint64_t* stamps() const noexcept {
    return _stamps.size() == 0 ? nullptr : _stamps.data_as<std::uint64_t>();
  }
  static constexpr unsigned phase_ring = 256;
  /// The stamped launches' phases, oldest first (the last phase_ring of them; a synchronous
  /// copy; empty without config().phase_stamps).
  [[nodiscard]] std::vector<fused_pass_times> read_phase_times() const;

 private:
  camera_isp_config _config;
  csi2_workspace _csi2;
  device_buffer _line_crc;
  device_buffer _sums;
  device_buffer _multipliers;
  device_buffer _lut;
  device_buffer _done;
  device_buffer _stamps;
  unsigned _resident_blocks{1};
};

class camera_isp final : public Operator {
 public:
  explicit camera_isp(std::shared_ptr<io::display> d) : _display(std::move(d)) {}
  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;
  /// One phase (previous-frame statistics or none) ending with last-block work, or two
  /// (same-frame: the statistics pass, a grid barrier, the tiles).
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] const camera_isp_config& config() const noexcept { return _config; }
  /// Its device memory (after initialize(); null before).
  [[nodiscard]] const camera_isp_workspace* workspace() const noexcept { return _workspace.get(); }
  /// Before initialize(): the graph modes' kernel stamps its phases (phase_times()).
  void stamp_phases() noexcept { _config.phase_stamps = true; }
  /// The stamped launches' phases, oldest first (empty unless stamp_phases() was called).
  [[nodiscard]] std::vector<fused_pass_times> phase_times() const;

 private:
  std::shared_ptr<io::display> _display;
  camera_isp_config _config;
  std::unique_ptr<camera_isp_workspace> _workspace;
};

namespace detail {

/// Enqueues one frame: with same-frame statistics the statistics pass, then the fused pass.
void launch_camera_isp(const io::frame_ref* frame, io::frame_integrity* integrity,
                       const camera_isp_workspace& ws, const io::display_view& view,
                       loop_state* loop, cudaStream_t s);

}  // namespace detail

}  // namespace resident::ops::imaging
