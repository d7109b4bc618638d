#pragma once
// bench camera's white-balance statistics study: previous-frame against same-frame grey-world
// gains on a panned sequence with a change of illuminant, scored by PSNR against the
// photograph. It runs the CPU pipeline (reference::correct_raw, demosaic_malvar), which the
// fused camera pass equals within 1 LSB (tests/gpu/camera_isp_test.cu), so it needs no GPU.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "resident/io/bayer.hpp"

namespace resident::bench {

/// The default sequence is one second of a 60 Hz camera with the illuminant changing halfway:
/// the mean over it weighs the one lagging frame as a viewer would; the step frame's own loss is
/// reported beside it (step_loss_db).
struct statistics_study_options {
  std::uint32_t frames{60};
  std::uint32_t step_at{30};            // the first frame under the second illuminant
  std::uint32_t pan_step{8};            // the photograph moves this many pixels a frame (x; y half)
  float before[3]{0.55F, 0.8F, 0.35F};  // the sensor's channel gains before the step
  float after[3]{0.35F, 0.8F, 0.6F};    // and after (green unchanged: one exposure)
};

/// One photograph, RAW12 at its own size (even sides): per frame, the PSNR (dB) of the ISP's
/// linear RGB (Malvar) against the panned photograph at the sensor's green exposure, with
/// same-frame gains and with the previous frame's (frame 0 has gain 1 and primes them); their
/// means over frames 1 on; `settle_frames`: frames from the step on until previous-frame is
/// within 0.1 dB of same-frame again; `step_loss_db`: same-frame minus previous-frame on the step
/// frame. {"kind": "statistics", "photo", "frames", "step_at", "psnr_same_db",
/// "psnr_previous_db", "mean_same_db", "mean_previous_db", "settle_frames", "step_loss_db"}.
[[nodiscard]] nlohmann::json statistics_study(const io::rgb8_image& photo, const std::string& name,
                                              const statistics_study_options& o = {});

}  // namespace resident::bench
