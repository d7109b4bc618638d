// Writes the CSI-2 harness's seeds with the code's own packet writer (io::csi2::frame_packets):
// a few small frames in each format, prefixed by the harness's two selector bytes (format,
// width in packing groups - 1). Usage: make_csi2_seeds DIR.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "resident/io/csi2.hpp"

int main(int argc, char** argv) {
  namespace csi2 = resident::io::csi2;
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_csi2_seeds DIR\n");
    return 2;
  }
  int written = 0;
  for (std::size_t fi = 0; fi < csi2::all_raw_formats.size(); ++fi) {
    const csi2::raw_format f = csi2::all_raw_formats[fi];
    const auto bits = static_cast<unsigned>(f);
    const std::size_t group = bits == 10 ? 4 : bits == 12 ? 2 : 1;
    for (const std::size_t groups : {1, 3, 8}) {
      const std::size_t width = groups * group;
      const std::size_t height = groups == 8 ? 4 : 2;
      std::vector<std::uint16_t> pixels(width * height);
      for (std::size_t i = 0; i < pixels.size(); ++i) {
        pixels[i] = static_cast<std::uint16_t>((i * 37 + 11) % (1U << bits));
      }
      auto stream =
          csi2::frame_packets(f, width, height, pixels, static_cast<std::uint16_t>(fi + 1));
      stream.insert(stream.begin(),
                    {static_cast<std::uint8_t>(fi), static_cast<std::uint8_t>(groups - 1)});
      const std::string name = std::string(argv[1]) + "/" + std::string(csi2::to_string(f)) + "_" +
                               std::to_string(width) + "x" + std::to_string(height);
      std::ofstream out(name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(stream.data()),
                static_cast<std::streamsize>(stream.size()));
      ++written;
    }
  }
  std::printf("%d seeds in %s\n", written, argv[1]);
  return 0;
}
