#pragma once
// raw_isp: black level, grey-world white balance and range stretch on a 16-bit Bayer image, in
// place or into another buffer (the kernels are correct when "out" is "in").
//
//   input  "in"   width x height, bayer_<order>16
//   output "out"  the same image descriptor
//
// Parameters: width (1920), height (1080), order (rggb), bits (12; 8, 10 or 12), black_level
// (256), white_balance (grey_world | none).
//
// Per frame, two kernels. The statistics kernel counts a 3 x 256-bin histogram (the pixel's
// filter channel, its value after black-level correction on 8 bits; counted per position in the
// 2x2 cell) with CUB's block histogram in shared memory, adds each block's counts into the
// global histogram, and its last block to finish derives each channel's grey-world gain and Q16
// multiplier from it (and clears it for the next frame). The correction kernel then writes out =
// clamp(round((v - black) * gain_c * max / (max - black)), 0, max) in fixed point. isp_math.hpp
// defines every step; reference::raw_isp is the CPU twin.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/io/bayer.hpp"

namespace resident::ops::imaging {

struct raw_isp_config {
  std::uint32_t width{1920};
  std::uint32_t height{1080};
  io::bayer_order order{io::bayer_order::rggb};
  unsigned bits{12};
  std::uint32_t black_level{256};
  bool grey_world{true};
};

/// The histogram, the gains' multipliers and the statistics kernel's block counter, sized and
/// allocated once.
class raw_isp_workspace {
 public:
  explicit raw_isp_workspace(const raw_isp_config& config);

  [[nodiscard]] const raw_isp_config& config() const noexcept { return _config; }
  /// 4 x 256 counters, zero between frames: position in the 2x2 Bayer cell (top-left,
  /// top-right, bottom-left, bottom-right) * 256 + 8-bit level after black level.
  [[nodiscard]] int* histogram() const noexcept { return _histogram.data_as<int>(); }
  /// Three Q16 multipliers (red, green, blue), written by the gains kernel.
  [[nodiscard]] std::uint64_t* multipliers() const noexcept {
    return _multipliers.data_as<std::uint64_t>();
  }
  [[nodiscard]] unsigned* done_counter() const noexcept { return _done.data_as<unsigned>(); }
  /// The statistics kernel's grid: at most what the device holds at once.
  [[nodiscard]] unsigned statistics_blocks() const noexcept { return _statistics_blocks; }

 private:
  raw_isp_config _config;
  device_buffer _histogram;
  device_buffer _multipliers;
  device_buffer _done;
  unsigned _statistics_blocks{1};
};

class raw_isp final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] const raw_isp_config& config() const noexcept { return _config; }
  /// Its device buffers (after initialize(); null before).
  [[nodiscard]] const raw_isp_workspace* workspace() const noexcept { return _workspace.get(); }

 private:
  raw_isp_config _config;
  std::unique_ptr<raw_isp_workspace> _workspace;
};

namespace detail {

/// Enqueues the whole ISP (histogram, gains, correction) from `in` to `out` (may equal `in`),
/// rows `pitch` bytes apart.
void launch_raw_isp(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                    const raw_isp_workspace& ws, cudaStream_t s, bool programmatic = false);
/// Its steps, for a fused pipeline: the statistics (histogram and gains), the correction.
void launch_raw_isp_statistics(const std::uint16_t* in, std::size_t pitch,
                               const raw_isp_workspace& ws, cudaStream_t s,
                               bool programmatic = false);
void launch_raw_isp_correct(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                            const raw_isp_workspace& ws, cudaStream_t s, bool programmatic = false);

}  // namespace detail

}  // namespace resident::ops::imaging
