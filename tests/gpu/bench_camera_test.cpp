// bench camera end to end in miniature: every part runs, every run accounts for its frames, the
// operators pass their checks, and the receipt judges its targets and draws its report.

#if RESIDENT_HAVE_BENCH

#include <gmock/gmock.h>

#include <filesystem>
#include <sstream>

#include "bench/camera/camera_bench.hpp"
#include "bench/camera/camera_operators.hpp"
#include "bench/camera/camera_report.hpp"
#include "gpu/support.hpp"
#include "resident/imaging/png.hpp"
#include "resident/measure/threads.hpp"

namespace resident::testing {
namespace {

/// A colour test card as a PNG in the temporary folder (the photograph set may be missing).
std::filesystem::path test_card_png() {
  constexpr std::uint32_t w = 320;
  constexpr std::uint32_t h = 240;
  std::vector<std::uint8_t> rgb(std::size_t{w} * h * 3);
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      auto* p = &rgb[(std::size_t{y} * w + x) * 3];
      p[0] = static_cast<std::uint8_t>(30 + x * 200 / w);
      p[1] = static_cast<std::uint8_t>(20 + ((x / 20 + y / 20) % 2) * 160);
      p[2] = static_cast<std::uint8_t>(40 + y * 180 / h);
    }
  }
  const auto path = std::filesystem::temp_directory_path() / "bench-camera-test-card.png";
  imaging::write_png(path, w, h, std::size_t{w} * 3, rgb, imaging::png_channels::rgb8);
  return path;
}

TEST(bench_camera, a_small_run_of_every_part_fills_the_receipt) {
  RESIDENT_REQUIRE_GPU();
  if (measure::allowed_cpus().size() < 3) GTEST_SKIP() << "bench camera needs 3 cores";
  bench::camera_bench_settings s;
  s.parts = {"software", "photon", "operators"};
  if (imaging::list_photos().size() >= 4) s.parts.emplace_back("demosaic");
  s.resolutions = {"1080p"};
  s.formats = {"raw12"};
  s.contention = {"none"};
  s.modes = {"host-graph", "while"};
  s.displays = {"vrr240-flip"};
  s.frames = 300;
  s.warmup = 50;
  s.repeats = 1;
  s.photon_seconds = 1.0;
  s.operator_reps = 20;
  s.operator_warmup = 2;
  s.photo = test_card_png().string();
  s.command = "resident bench camera (gpu test)";
  std::ostringstream log;
  const measure::receipt receipt = bench::run_camera_bench(s, log);
  SCOPED_TRACE(log.str());
  const auto failures = bench::camera_failures(receipt);
  EXPECT_TRUE(failures.empty()) << failures.front();
  std::size_t software = 0;
  std::size_t photon = 0;
  std::size_t operators = 0;
  for (const auto& r : receipt.results) {
    SCOPED_TRACE(r.dump().substr(0, 400));
    const std::string kind = r.value("kind", "");
    if (kind == "software") {
      ++software;
      EXPECT_GE(r["n"].get<std::uint64_t>(), 300U);
      EXPECT_GT(r["min_us"].get<double>(), 0.0);
      EXPECT_EQ(r["corrupt"].get<std::uint64_t>(), 0U);
      EXPECT_TRUE(r.contains("series"));
    } else if (kind == "photon") {
      ++photon;
      EXPECT_GE(r["n"].get<std::uint64_t>(), 8U);  // 15 marked frames, 2 dropped as warm-up
      EXPECT_GT(r["min_us"].get<double>(), 0.0);
    } else if (kind == "operator") {
      ++operators;
      EXPECT_GT(r["p50_us"].get<double>(), 0.0);
      if (r["operator"] == "fused raw12 stamped") {
        // The kernel's own stamps: its phases, inside the launch the events time.
        const auto& ph = r["phases"];
        EXPECT_EQ(ph["launches"], r["reps"]);
        EXPECT_GT(ph["tiles_p50_us"].get<double>(), 0.0);
        EXPECT_GT(ph["finish_p50_us"].get<double>(), 0.0);
        EXPECT_GE(ph["kernel_p50_us"].get<double>(), ph["tiles_p50_us"].get<double>());
        EXPECT_LE(ph["kernel_p50_us"].get<double>(), r["p50_us"].get<double>() * 1.5);
      }
    }
  }
  EXPECT_EQ(software, 2U);
  EXPECT_EQ(photon, 2U);
  EXPECT_EQ(operators, bench::camera_operator_names().size());
  EXPECT_FALSE(receipt.settings["targets"].empty());
  EXPECT_THAT(bench::render_camera_report(receipt), ::testing::HasSubstr("latency over time"));
}

}  // namespace
}  // namespace resident::testing

#endif  // RESIDENT_HAVE_BENCH
