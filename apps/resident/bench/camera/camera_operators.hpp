#pragma once
// The `operators` and `demosaic` parts of resident bench camera: each imaging operator of the
// camera pipeline timed alone, and our demosaic against NPP's on photographs.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "resident/io/bayer.hpp"

namespace resident::bench {

/// The operators timed, in the order of the results: reconstruct raw10, reconstruct raw12, isp,
/// demosaic malvar, demosaic bilinear, demosaic npp (only where the build has NPP), egress.
[[nodiscard]] std::vector<std::string> camera_operator_names();

/// Each operator of camera_operator_names() at `width` x `height`, alone: one Application per
/// operator between external buffers, and per launch one direct submission of just that
/// operator on a dedicated stream between two timing events (the kernels' device time plus
/// their launch gaps, no host time). `warmup` launches, then `reps` timed. The input is
/// `photo` as the camera sees it (RAW12, RGGB, black level 256, the bridge's colour cast);
/// before timing, reconstruction's output is checked against the mosaic and its integrity
/// record, and the ISP's against the CPU reference. One result per operator: {kind "operator",
/// operator, resolution, width, height, reps, warmup, p50_us, p99_us, mean_us, min_us, max_us,
/// checked}. Throws when a check fails.
[[nodiscard]] nlohmann::json time_camera_operators(const std::string& resolution,
                                                   std::uint32_t width, std::uint32_t height,
                                                   const io::rgb8_image& photo, int reps,
                                                   int warmup, std::ostream& log);

/// Our demosaic (Malvar-He-Cutler and bilinear, rgba16 out) and NPP's (where built) on each
/// photograph: mosaiced RGGB at 12 bits, black level 0, no cast, its size rounded down to even,
/// demosaiced on the GPU, compared with the photograph. One result per photograph: {kind
/// "demosaic_quality", photo, width, height, psnr_malvar_db, psnr_bilinear_db, psnr_npp_db (null
/// without NPP)}.
[[nodiscard]] nlohmann::json demosaic_quality(const std::vector<std::filesystem::path>& photos,
                                              std::ostream& log);

/// PSNR in dB of an RGBA16 image (`width` x `height`, 4 samples a pixel, full scale
/// `full_scale`) against the photograph's top-left `width` x `height` pixels, in the
/// photograph's 8-bit units (peak 255): each output sample becomes v * 255 / full_scale,
/// unrounded; alpha is ignored. Throws std::invalid_argument when the sizes do not fit.
[[nodiscard]] double psnr_against_photo(std::span<const std::uint16_t> rgba, double full_scale,
                                        const io::rgb8_image& photo, std::uint32_t width,
                                        std::uint32_t height);

}  // namespace resident::bench
