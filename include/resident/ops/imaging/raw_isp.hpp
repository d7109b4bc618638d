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
// Per frame: a 3 x 256-bin histogram (the pixel's filter channel, its value after black-level
// correction on 8 bits) by CUB's DeviceHistogram into preallocated temporary storage (counted
// per position in the 2x2 cell, so CUB keeps each 256-bin histogram in shared memory); a
// one-block kernel derives each channel's grey-world gain and Q16 multiplier from it; a
// per-pixel kernel writes out = clamp(round((v - black) * gain_c * max / (max - black)), 0, max)
// in fixed point. isp_math.hpp defines every step; reference::raw_isp is the CPU twin.

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

/// The histogram, the gains' multipliers and CUB's temporary storage, sized and allocated once.
class raw_isp_workspace {
 public:
  explicit raw_isp_workspace(const raw_isp_config& config);

  [[nodiscard]] const raw_isp_config& config() const noexcept { return _config; }
  /// 4 x 256 counters (int, CUB's counter type): position in the 2x2 Bayer cell (top-left,
  /// top-right, bottom-left, bottom-right) * 256 + 8-bit level after black level.
  [[nodiscard]] int* histogram() const noexcept { return _histogram.data_as<int>(); }
  /// Three Q16 multipliers (red, green, blue), written by the gains kernel.
  [[nodiscard]] std::uint64_t* multipliers() const noexcept {
    return _multipliers.data_as<std::uint64_t>();
  }
  [[nodiscard]] void* cub_storage() const noexcept { return _cub_storage.data(); }
  [[nodiscard]] std::size_t cub_storage_bytes() const noexcept { return _cub_bytes; }

 private:
  raw_isp_config _config;
  device_buffer _histogram;
  device_buffer _multipliers;
  device_buffer _cub_storage;
  std::size_t _cub_bytes{};
};

class raw_isp final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] const raw_isp_config& config() const noexcept { return _config; }

 private:
  raw_isp_config _config;
  std::unique_ptr<raw_isp_workspace> _workspace;
};

namespace detail {

/// Enqueues the whole ISP (histogram, gains, correction) from `in` to `out` (may equal `in`),
/// rows `pitch` bytes apart.
void launch_raw_isp(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                    const raw_isp_workspace& ws, cudaStream_t s, bool programmatic = false);
/// Its steps, for a fused pipeline: the histogram (CUB), the gains kernel, the correction.
void launch_raw_isp_histogram(const std::uint16_t* in, std::size_t pitch,
                              const raw_isp_workspace& ws, cudaStream_t s);
void launch_raw_isp_gains(const raw_isp_workspace& ws, cudaStream_t s, bool programmatic = false);
void launch_raw_isp_correct(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                            const raw_isp_workspace& ws, cudaStream_t s, bool programmatic = false);

}  // namespace detail

}  // namespace resident::ops::imaging
