// The CSI-2 packet parser and checks: io::csi2::parse_frame (the host receiver) against the
// device path's pieces in csi2_math (line_verdict, check_frame_ends, unpack_pixel, the CRC
// arithmetic), which must agree with it on every stream; then a round trip of the pixels
// parse_frame took through frame_packets.
//
// Input: byte 0 picks the format (RAW8, RAW10, RAW12), byte 1 the width in packing groups
// (1..64); the rest is the packet stream, whose length sets the height (the largest that fits,
// up to 64 lines; the stream is cut to it). A stream of another length is also parsed as given.

#include <cstdint>
#include <vector>

#include "fuzz_support.hpp"
#include "resident/io/csi2.hpp"
#include "resident/ops/imaging/csi2_math.hpp"

namespace {

namespace csi2 = resident::io::csi2;
namespace math = resident::ops::imaging::csi2_math;

void require(bool ok, const char* what) {
  if (!ok) resident::fuzz::unexpected("disagreement", what);
}

/// The CRC from a zero register (crc0 in csi2_math's notation).
std::uint16_t crc0(const std::uint8_t* p, std::size_t n) {
  std::uint16_t crc = 0;
  for (std::size_t i = 0; i < n; ++i) crc = csi2::crc16_update(crc, p[i]);
  return crc;
}

/// The device path over a stream of exactly frame_packet_bytes(f, width, height).
void check_device_path(std::span<const std::uint8_t> stream, csi2::raw_format f, std::size_t width,
                       std::size_t height, const csi2::frame_check& host,
                       const std::vector<std::uint16_t>& host_pixels) {
  const auto bits = static_cast<unsigned>(f);
  const std::size_t line = csi2::line_bytes(f, width);
  math::frame_counts counts;
  std::size_t at = 4;
  for (std::size_t y = 0; y < height; ++y, at += 4 + line + 2) {
    const std::uint8_t* payload = stream.data() + at + 4;
    const std::uint16_t crc = csi2::crc16({payload, line});
    // crc(seed, A) = shift(seed, |A|) ^ crc0(A), and crc0 over two chunks combines.
    const std::size_t half = line / 2;
    const std::uint16_t chunked =
        math::crc16_combine(crc0(payload, half), crc0(payload + half, line - half), line - half);
    require((math::crc16_shift(csi2::crc16_seed, line) ^ chunked) == crc,
            "chunked CRC differs from crc16");
    const std::uint8_t verdict =
        math::line_verdict(stream.data() + at, static_cast<std::uint8_t>(csi2::data_type_of(f)),
                           static_cast<std::uint32_t>(line), crc);
    counts.add(verdict);
    if ((verdict & math::verdict_line) == 0) continue;
    const unsigned n = math::group_pixels(bits);
    for (std::size_t x = 0; x < width; ++x) {
      const std::uint16_t p = math::unpack_pixel(bits, payload + x / n * math::group_bytes(bits),
                                                 static_cast<unsigned>(x % n));
      require(p == host_pixels[y * width + x], "unpack_pixel differs from unpack_line");
    }
  }
  math::check_frame_ends(stream.data(), stream.data() + at, host.frame_number, counts);
  require(counts.lines == host.lines, "lines differ");
  require(counts.corrected_headers == host.corrected_headers, "corrected headers differ");
  require(counts.corrupt_headers == host.corrupt_headers, "corrupt headers differ");
  require(counts.crc_errors == host.crc_errors, "CRC errors differ");
  require(counts.format_errors == host.format_errors, "format errors differ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const csi2::raw_format f = csi2::all_raw_formats[data[0] % csi2::all_raw_formats.size()];
  const std::size_t group = f == csi2::raw_format::raw10 ? 4 : f == csi2::raw_format::raw12 ? 2 : 1;
  const std::size_t width = (data[1] % 64 + 1) * group;
  const std::span<const std::uint8_t> rest(data + 2, size - 2);
  const std::size_t line = csi2::line_bytes(f, width);
  const std::size_t height =
      rest.size() < 8 ? 0 : std::min<std::size_t>(64, (rest.size() - 8) / (4 + line + 2));
  const auto stream = rest.first(std::min(rest.size(), csi2::frame_packet_bytes(f, width, height)));

  std::vector<std::uint16_t> pixels(width * height, 0);
  const csi2::frame_check host = csi2::parse_frame(stream, f, width, height, pixels);
  // As given (any length): a stream of the wrong size is one format error and nothing else.
  std::vector<std::uint16_t> spare(width * height, 0);
  const csi2::frame_check whole = csi2::parse_frame(rest, f, width, height, spare);
  if (rest.size() != stream.size()) require(whole.format_errors == 1 && whole.lines == 0, "size");
  if (stream.size() != csi2::frame_packet_bytes(f, width, height)) {
    require(host.format_errors == 1 && host.lines == 0, "a short stream is one format error");
    return 0;
  }
  check_device_path(stream, f, width, height, host, pixels);
  // Whatever parse_frame took, frame_packets writes back into a stream that parses complete.
  const std::uint16_t number = host.frame_number == 0 ? 1 : host.frame_number;
  const auto again = csi2::frame_packets(f, width, height, pixels, number);
  std::vector<std::uint16_t> back(width * height, 0);
  const csi2::frame_check round = csi2::parse_frame(again, f, width, height, back);
  require(round.complete(static_cast<std::uint32_t>(height)) && back == pixels, "round trip");
  return 0;
}
