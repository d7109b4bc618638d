// The camera YAML (examples/camera.yaml, resident run camera.yaml): parse_camera_settings.

#include <cstdint>

#include "camera/camera.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  resident::fuzz::expect_named_errors([&] {
    (void)resident::camera::parse_camera_settings(resident::fuzz::text_of(data, size), "fuzz.yaml");
  });
  return 0;
}
