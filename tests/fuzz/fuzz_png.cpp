// The PNG reader (read_png: the camera's photo and the imaging references): the input is
// written to a file in a private temporary folder and read back as RGB8.

#include <cstdint>
#include <fstream>

#include "fuzz_support.hpp"
#include "resident/imaging/png.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = resident::fuzz::scratch_dir() / "input.png";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const auto image = resident::imaging::read_png(path);
    if (image.rgb.size() != std::size_t{image.width} * image.height * 3) {
      resident::fuzz::unexpected("image", "rgb size does not match width x height x 3");
    }
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
