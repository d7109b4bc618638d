#pragma once
// A small sample in one 64-byte line whose every 8-byte word carries a tag of the write, so a
// reader that loads the whole line at once (a warp's one wide load over PCIe, or a host thread's
// eight relaxed loads) knows whether it got one write's words: the building block of the
// mailbox's path for samples that fit a cache line, which needs one round trip per read instead
// of three (sequence word, payload, sequence again) and no fence between the payload and its
// number on either side.
//
//   word 0     the number (a sample's sequence or a commit's number), all 64 bits
//   words 1-7  7 payload bytes (little-endian, bits 0..55) and the tag (bits 56..63): here the
//              number's low byte; the mailbox tags a slot with its lap and its output line with
//              the commit number, its sample's number in word 1 (mailbox_protocol.hpp)
//
// Each word is written and read as one aligned 8-byte access, which both the CPU's and the
// GPU's memory models make single-copy atomic, so a word is wholly one write's. A reader accepts
// a line when every word carries the tag it expects: a line mixing two writes whose tags
// differ is always refused. (A reader whose read spans 256 writes of the same
// line could be fooled; at a microsecond a read and a microsecond a write, that is a read held
// up for 256 microseconds with the writer running at full speed the whole time.)

#include <cstddef>
#include <cstdint>

#include "resident/io/frame.hpp"  // RESIDENT_HD

namespace resident::io::tagged_line {

inline constexpr std::size_t words = 8;
inline constexpr std::size_t bytes_per_word = 7;
/// The most payload bytes one line carries.
inline constexpr std::size_t capacity = (words - 1) * bytes_per_word;  // 49

/// A word of 7 payload bytes or a 56-bit value (bits 0..55) and a tag (bits 56..63).
RESIDENT_HD constexpr std::uint64_t tag_word(std::uint64_t low56, std::uint64_t tag) noexcept {
  return (low56 & 0x00FF'FFFF'FFFF'FFFFULL) | (tag & 0xFFU) << 56;
}
RESIDENT_HD constexpr std::uint64_t tag_of(std::uint64_t word) noexcept { return word >> 56; }
RESIDENT_HD constexpr std::uint64_t low56(std::uint64_t word) noexcept {
  return word & 0x00FF'FFFF'FFFF'FFFFULL;
}

/// Word `i` (0-based) of `size` payload bytes packed 7 to a word, tagged `tag` (bytes past the
/// payload are zero): what lane i of a warp stores, and what pack() writes.
RESIDENT_HD constexpr std::uint64_t pack_word(const unsigned char* payload, std::size_t size,
                                              std::size_t i, std::uint64_t tag) noexcept {
  std::uint64_t w = 0;
  for (std::size_t b = 0; b < bytes_per_word && i * bytes_per_word + b < size; ++b) {
    w |= std::uint64_t{payload[i * bytes_per_word + b]} << (8 * b);
  }
  return tag_word(w, tag);
}

/// Word `i`'s share of the first `size` payload bytes, into `out`: what lane i of a warp copies,
/// and what unpack() does for every word.
RESIDENT_HD constexpr void unpack_word(std::uint64_t w, std::size_t i, unsigned char* out,
                                       std::size_t size) noexcept {
  for (std::size_t b = 0; b < bytes_per_word && i * bytes_per_word + b < size; ++b) {
    out[i * bytes_per_word + b] = static_cast<unsigned char>(w >> (8 * b));
  }
}

/// `size` payload bytes into `count` words (`size` <= 7 * count), every word tagged `tag`.
RESIDENT_HD constexpr void pack(const unsigned char* payload, std::size_t size, std::uint64_t* out,
                                std::size_t count, std::uint64_t tag) noexcept {
  for (std::size_t i = 0; i < count; ++i) out[i] = pack_word(payload, size, i, tag);
}

/// Whether all `count` words carry `tag`.
RESIDENT_HD constexpr bool tagged_alike(const std::uint64_t* w, std::size_t count,
                                        std::uint64_t tag) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    if (tag_of(w[i]) != (tag & 0xFFU)) return false;
  }
  return true;
}

/// The first `size` payload bytes of words packed by pack().
RESIDENT_HD constexpr void unpack(const std::uint64_t* w, unsigned char* out,
                                  std::size_t size) noexcept {
  for (std::size_t i = 0; i * bytes_per_word < size; ++i) unpack_word(w[i], i, out, size);
}

/// The eight words of a line numbered `number` carrying `payload` (`size` <= capacity bytes),
/// tagged with the number's low byte.
RESIDENT_HD constexpr void encode(std::uint64_t number, const unsigned char* payload,
                                  std::size_t size, std::uint64_t* line) noexcept {
  line[0] = number;
  pack(payload, size, line + 1, words - 1, number);
}

/// The line's number when all its words are one write's (every tag is word 0's low byte), else
/// 0; on success its first `size` payload bytes are copied to `out`.
RESIDENT_HD constexpr std::uint64_t decode(const std::uint64_t* line, unsigned char* out,
                                           std::size_t size) noexcept {
  if (!tagged_alike(line + 1, words - 1, line[0])) return 0;
  unpack(line + 1, out, size);
  return line[0];
}

}  // namespace resident::io::tagged_line
