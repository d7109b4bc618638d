// camera_isp: the fused camera pass (see camera_isp.hpp).

#include "resident/ops/imaging/camera_isp.hpp"

#include <cuda/atomic>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "io/display_forms.cuh"
#include "io/sensor_bridge_forms.cuh"
#include "launch.cuh"
#include "ops/imaging/csi2_forms.cuh"
#include "params.hpp"
#include "resident/app/error.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/ops/imaging/csi2_math.hpp"
#include "resident/ops/imaging/demosaic_math.hpp"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::ops::imaging {

namespace detail {

struct fused_args {
  const io::frame_ref* frame;
  io::frame_integrity* integrity;
  const std::uint16_t* factors;  // csi2_workspace: each chunk's CRC shift factor
  std::uint32_t* line_crc;       // per line: XOR of the tiles' CRC terms, zero between frames
  unsigned long long* sums;      // replicas x (count, sum of levels) per channel
  std::uint64_t* multipliers;
  const std::uint8_t* lut;  // rgba16 level -> gamma-encoded 8 bits
  unsigned* done;           // [0] statistics pass, [1] fused pass
  std::uint64_t* stamps;    // camera_isp_workspace::stamps (the stamped kernel only)
  io::display_view view;
  loop_state* loop;
  std::uint64_t stream_bytes;
  std::uint32_t width;
  std::uint32_t height;
  std::uint32_t line_bytes;
  std::uint32_t chunks;
  std::uint32_t black;
  std::uint32_t max;
  int max_sum;
  float scale;
  int rx;
  int ry;
  std::uint16_t seed_term;
  std::uint8_t bits;
  std::uint8_t data_type;
  io::bayer_order order;
  bool malvar;
  bool grey_world;
  bool same_frame;
  bool block_gains;  // persistent: each block derives same-frame gains from the replicas
};

}  // namespace detail

namespace {

namespace math = csi2_math;
using detail::fused_args;
using io::detail::display_form::choose_target_once;
using io::detail::display_form::commit_frame;

constexpr int cells_x = 32;
constexpr int cells_y = 8;
constexpr int tile_threads = cells_x * cells_y;
constexpr int tile_w = 2 * cells_x;
constexpr int tile_h = 2 * cells_y;
constexpr int apron = 2;
constexpr int shared_w = tile_w + 2 * apron;
constexpr int shared_h = tile_h + 2 * apron;
constexpr int shared_words = shared_w / 2;
constexpr std::uint32_t packet_overhead = 6;
constexpr std::uint32_t chunk_pixels = detail::csi2_chunk_pixels;
constexpr int chunks_per_tile = tile_w / static_cast<int>(chunk_pixels);
constexpr unsigned replicas = camera_isp_workspace::sum_replicas;
constexpr unsigned sum_words = camera_isp_workspace::sum_words;
constexpr int stats_threads = 256;
static_assert(chunks_per_tile * tile_h <= tile_threads, "a thread per chunk of the tile's rows");

struct crc_table {
  std::uint16_t entry[256];
};
constexpr crc_table make_crc_table() {
  crc_table t{};
  for (unsigned i = 0; i < 256; ++i)
    t.entry[i] = math::crc16_update(0, static_cast<std::uint8_t>(i));
  return t;
}
__device__ const crc_table fused_crc_table = make_crc_table();

__device__ inline const std::uint8_t* packet_of(const fused_args& a, const std::uint8_t* packets,
                                                std::uint32_t y) {
  return packets + 4 + std::uint64_t{y} * (a.line_bytes + packet_overhead);
}

/// Raw sample x of a line's payload.
__device__ __forceinline__ std::uint32_t raw_sample(const fused_args& a,
                                                    const std::uint8_t* payload, std::uint32_t x) {
  const unsigned gp = math::group_pixels(a.bits);
  return math::unpack_pixel(a.bits, payload + x / gp * math::group_bytes(a.bits), x % gp);
}

/// Channel (0 red, 1 green, 2 blue) of pixel (x, y).
__device__ __forceinline__ int channel_of(const fused_args& a, std::uint32_t x, std::uint32_t y) {
  return io::bayer_channel(a.order, x, y);
}

/// Adds a sample's level to this thread's channel counters.
__device__ __forceinline__ void count_level(std::uint32_t (&c)[sum_words], int channel,
                                            std::uint32_t level) {
  c[0] += channel == 0 ? 1U : 0U;
  c[1] += channel == 0 ? level : 0U;
  c[2] += channel == 1 ? 1U : 0U;
  c[3] += channel == 1 ? level : 0U;
  c[4] += channel == 2 ? 1U : 0U;
  c[5] += channel == 2 ? level : 0U;
}

/// The block's counters (every thread's `c`) added into replica `replica` of the sums.
__device__ void merge_counts(const fused_args& a, std::uint32_t (&c)[sum_words],
                             unsigned long long* block_sums, unsigned replica) {
  for (unsigned i = 0; i < sum_words; ++i) {
    std::uint32_t v = c[i];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xFFFFFFFFU, v, offset);
    if (threadIdx.x % 32 == 0 && v != 0)
      atomicAdd(&block_sums[i], static_cast<unsigned long long>(v));
  }
  resident::device::sync_block();
  if (threadIdx.x < sum_words && block_sums[threadIdx.x] != 0) {
    atomicAdd(a.sums + replica * sum_words + threadIdx.x, block_sums[threadIdx.x]);
  }
}

/// The replicas' totals into `totals` (by the first sum_words threads; `clear`: left zero).
__device__ void sum_replicas(const fused_args& a, unsigned long long* totals, bool clear) {
  if (threadIdx.x < sum_words) {
    unsigned long long t = 0;
    for (unsigned r = 0; r < replicas; ++r) t += __ldcg(a.sums + r * sum_words + threadIdx.x);
    if (clear) {
      for (unsigned r = 0; r < replicas; ++r) a.sums[r * sum_words + threadIdx.x] = 0;
    }
    totals[threadIdx.x] = t;
  }
}

/// Channel c's grey-world Q16 multiplier from the frame's totals.
__device__ std::uint64_t multiplier_of(const fused_args& a, const unsigned long long* totals,
                                       int c) {
  const double gain =
      isp_math::grey_world_gain(totals[2 * c + 1], totals[2 * c], totals[3], totals[2]);
  return isp_math::multiplier_q16(gain, a.black, a.max);
}

/// The replicas' totals (left zero) and the multipliers from them, by one block.
__device__ void write_multipliers(const fused_args& a, unsigned long long* totals) {
  sum_replicas(a, totals, true);
  resident::device::sync_block();
  if (threadIdx.x < 3) a.multipliers[threadIdx.x] = multiplier_of(a, totals, threadIdx.x);
}

using tile_t = std::uint32_t[shared_h][shared_words];

/// The pair of raw samples at (x, y), (x + 1, y), x even, from a line's payload: one packing
/// group's bytes (RAW12: the pair is the group; RAW10: half of it and the low-bits byte).
template <unsigned Bits>
__device__ __forceinline__ uint2 raw_pair(const std::uint8_t* payload, std::uint32_t x) {
  constexpr unsigned gp = math::group_pixels(Bits);
  constexpr unsigned gb = math::group_bytes(Bits);
  const std::uint8_t* g = payload + x / gp * gb;
  if constexpr (Bits == 8) return make_uint2(g[0], g[1]);  // a byte a sample
  const unsigned k = x % gp;
  return make_uint2(math::unpack_pixel(Bits, g, k), math::unpack_pixel(Bits, g, k + 1));
}

constexpr int tile_words = shared_h * shared_words;
constexpr int words_per_thread = (tile_words + tile_threads - 1) / tile_threads;

/// Word i of the tile at (x0, y0): its pair of raw samples and the frame line they come from.
/// An interior tile reads each pair's bytes once; at the frame's edges each sample is mirrored on
/// its own (mirroring keeps a column's parity, so its channel).
template <unsigned Bits>
__device__ __forceinline__ uint2 gather_pair(const fused_args& a, const std::uint8_t* packets,
                                             int x0, int y0, bool interior, int i,
                                             std::uint32_t& y) {
  const int yy = y0 - apron + i / shared_words;
  const int xx = x0 - apron + 2 * (i % shared_words);  // even
  if (interior) {
    y = static_cast<std::uint32_t>(yy);
    return raw_pair<Bits>(packet_of(a, packets, y) + 4, static_cast<std::uint32_t>(xx));
  }
  const int w = static_cast<int>(a.width);
  y = static_cast<std::uint32_t>(demosaic_math::mirror(yy, static_cast<int>(a.height)));
  const std::uint8_t* payload = packet_of(a, packets, y) + 4;
  const auto xa = static_cast<std::uint32_t>(demosaic_math::mirror(xx, w));
  const auto xb = static_cast<std::uint32_t>(demosaic_math::mirror(xx + 1, w));
  constexpr unsigned gp = math::group_pixels(Bits);
  constexpr unsigned gb = math::group_bytes(Bits);
  return make_uint2(math::unpack_pixel(Bits, payload + xa / gp * gb, xa % gp),
                    math::unpack_pixel(Bits, payload + xb / gp * gb, xb % gp));
}

/// Loads tile (x0, y0) (64 x 16 pixels) and its apron, corrected, into `tile`, a pair of samples
/// (one shared word) per step, by threads `tid` 0..tile_threads-1; counts the levels of the
/// tile's own samples into `c` when `count`. A thread gathers all its words before it corrects
/// any, so their loads wait for memory once.
template <unsigned Bits>
__device__ void load_tile_bits(const fused_args& a, const std::uint8_t* packets, int x0, int y0,
                               tile_t& tile, const std::uint64_t* m, bool count,
                               std::uint32_t (&c)[sum_words], int tid) {
  const int w = static_cast<int>(a.width);
  const int h = static_cast<int>(a.height);
  const bool interior =
      x0 >= apron && y0 >= apron && x0 + tile_w + apron <= w && y0 + tile_h + apron <= h;
  uint2 v[words_per_thread];
  std::uint32_t line[words_per_thread];
#pragma unroll
  for (int k = 0; k < words_per_thread; ++k) {
    const int i = tid + k * tile_threads;
    if (i < tile_words) v[k] = gather_pair<Bits>(a, packets, x0, y0, interior, i, line[k]);
  }
#pragma unroll
  for (int k = 0; k < words_per_thread; ++k) {
    const int i = tid + k * tile_threads;
    if (i >= tile_words) break;
    const int r = i / shared_words;
    const int p = i % shared_words;
    const int even = channel_of(a, 0, line[k]);
    const int odd = channel_of(a, 1, line[k]);
    tile[r][p] = static_cast<std::uint32_t>(isp_math::correct(v[k].x, a.black, m[even], a.max)) |
                 static_cast<std::uint32_t>(isp_math::correct(v[k].y, a.black, m[odd], a.max))
                     << 16;
    // The tile's own samples: rows [apron, apron + tile_h), pairs [1, 1 + tile_w / 2), inside
    // the frame (an edge tile's own part may end before the tile does).
    const int yy = y0 - apron + r;
    const int xx = x0 - apron + 2 * p;
    if (count && r >= apron && r < apron + tile_h && p >= apron / 2 && p < apron / 2 + tile_w / 2 &&
        yy < h && xx < w) {
      count_level(c, even, isp_math::bin_of(v[k].x, a.black, a.max));
      count_level(c, odd, isp_math::bin_of(v[k].y, a.black, a.max));
    }
  }
}

/// XOR of the CRC terms of the tile's chunks on each of its rows, into the rows' line words
/// (threads tid < 128 of the tile's, whole warps). A thread reads its chunk's bytes before the
/// serial CRC steps, so they wait for memory once.
template <unsigned Bits>
__device__ void add_crc_terms(const fused_args& a, const std::uint8_t* packets, int x0, int y0,
                              const std::uint16_t* table, int tid) {
  if (tid >= chunks_per_tile * tile_h) return;
  constexpr unsigned chunk_bytes =
      chunk_pixels / math::group_pixels(Bits) * math::group_bytes(Bits);
  const int r = tid / chunks_per_tile;
  const auto j = static_cast<std::uint32_t>(x0) / chunk_pixels +
                 static_cast<std::uint32_t>(tid % chunks_per_tile);
  const auto y = static_cast<std::uint32_t>(y0 + r);
  unsigned term = 0;
  if (y < a.height && j < a.chunks) {
    const std::uint32_t pixels = min(chunk_pixels, a.width - j * chunk_pixels);
    const std::uint32_t n = pixels / math::group_pixels(Bits) * math::group_bytes(Bits);
    const std::uint8_t* b = packet_of(a, packets, y) + 4 + j * chunk_bytes;
    std::uint8_t bytes[chunk_bytes];
#pragma unroll
    for (std::uint32_t k = 0; k < chunk_bytes; ++k) bytes[k] = k < n ? b[k] : 0;
    std::uint16_t crc = 0;
#pragma unroll
    for (std::uint32_t k = 0; k < chunk_bytes; ++k) {
      if (k < n) crc = static_cast<std::uint16_t>((crc >> 8) ^ table[(crc ^ bytes[k]) & 0xFFU]);
    }
    term = math::crc16_multiply(crc, a.factors[j]);
  }
  for (int offset = chunks_per_tile / 2; offset > 0; offset /= 2) {
    term ^= __shfl_xor_sync(0xFFFFFFFFU, term, offset);
  }
  if (tid % chunks_per_tile == 0 && term != 0 && y < a.height) atomicXor(a.line_crc + y, term);
}

/// The tile's corrected samples (load_tile_bits) and its chunks' CRC terms (add_crc_terms).
__device__ void load_tile(const fused_args& a, const std::uint8_t* packets, int x0, int y0,
                          tile_t& tile, const std::uint64_t* m, bool count,
                          std::uint32_t (&c)[sum_words], const std::uint16_t* table, int tid) {
  switch (a.bits) {
    case 12:
      load_tile_bits<12>(a, packets, x0, y0, tile, m, count, c, tid);
      add_crc_terms<12>(a, packets, x0, y0, table, tid);
      break;
    case 10:
      load_tile_bits<10>(a, packets, x0, y0, tile, m, count, c, tid);
      add_crc_terms<10>(a, packets, x0, y0, table, tid);
      break;
    default:
      load_tile_bits<8>(a, packets, x0, y0, tile, m, count, c, tid);
      add_crc_terms<8>(a, packets, x0, y0, table, tid);
      break;
  }
}

/// Pixel pair (x, y), (x + 1, y) as RGBA8 after demosaic, the rgba16 level and the gamma table.
__device__ __forceinline__ uint2 encode_pair(const fused_args& a, const int (&left)[3],
                                             const int (&right)[3]) {
  const auto level = [&](int s) {
    const float v = static_cast<float>(s < 0 ? 0 : s > a.max_sum ? a.max_sum : s) * a.scale;
    return unsigned{__ldg(a.lut + __float2uint_rn(v))};
  };
  uint2 p;
  p.x = level(left[0]) | level(left[1]) << 8 | level(left[2]) << 16 | 0xFF000000U;
  p.y = level(right[0]) | level(right[1]) << 8 | level(right[2]) << 16 | 0xFF000000U;
  return p;
}

/// Thread `tid`'s 2x2 cell of the tile, demosaiced, encoded and stored in `out`.
__device__ void write_cell(const fused_args& a, const tile_t& tile, int x0, int y0,
                           std::uint8_t* out, int tid) {
  const int cx = tid % cells_x;
  const int cy = tid / cells_x;
  const int x = x0 + 2 * cx;
  const int y = y0 + 2 * cy;
  if (x >= static_cast<int>(a.width) || y >= static_cast<int>(a.height)) return;
  demosaic_math::neighbourhood n;
#pragma unroll
  for (int r = 0; r < 6; ++r) {
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t word = tile[2 * cy + r][cx + k];
      n.n[r][2 * k] = static_cast<int>(word & 0xFFFFU);
      n.n[r][2 * k + 1] = static_cast<int>(word >> 16);
    }
  }
#pragma unroll
  for (int py = 0; py < 2; ++py) {
    int left[3];
    int right[3];
    demosaic_math::pixel_rgb(n, 0, py, a.rx, a.ry, a.malvar, left);
    demosaic_math::pixel_rgb(n, 1, py, a.rx, a.ry, a.malvar, right);
    auto* row = out + static_cast<std::size_t>(y + py) * a.view.pitch;
    *reinterpret_cast<uint2*>(row + static_cast<std::size_t>(x) * 4) = encode_pair(a, left, right);
  }
}

/// Every line's verdict (header, data type, word count, CRC from its tiles' terms), counted by
/// the last block (every thread; the sums for every thread). Leaves the line words zero.
__device__ math::frame_counts count_lines(const fused_args& a, bool stream_ok) {
  __shared__ unsigned counts[5];  // lines, corrected, corrupt, crc, format
  if (threadIdx.x < 5) counts[threadIdx.x] = 0;
  resident::device::sync_block();
  math::frame_counts mine;
  // A thread reads `batch` lines (line word, header, footer) before it judges any, so their
  // loads wait for memory once, not once a line.
  constexpr unsigned batch = 4;
  const std::uint8_t* packets = a.frame->packets;
  for (std::uint32_t y0 = threadIdx.x; y0 < a.height; y0 += batch * blockDim.x) {
    std::uint32_t terms[batch] = {};
    std::uint8_t header[batch][4] = {};
    std::uint16_t sent[batch] = {};
#pragma unroll
    for (unsigned k = 0; k < batch; ++k) {
      const std::uint32_t y = y0 + k * blockDim.x;
      if (y >= a.height) break;
      terms[k] = __ldcg(a.line_crc + y);
      if (!stream_ok) continue;  // a short stream: no packet is read
      const std::uint8_t* p = packet_of(a, packets, y);
      for (int i = 0; i < 4; ++i) header[k][i] = p[i];
      sent[k] = static_cast<std::uint16_t>(p[4 + a.line_bytes] | p[5 + a.line_bytes] << 8);
    }
#pragma unroll
    for (unsigned k = 0; k < batch; ++k) {
      const std::uint32_t y = y0 + k * blockDim.x;
      if (y >= a.height) break;
      a.line_crc[y] = 0;
      if (!stream_ok) continue;
      const math::header_fields h =
          math::decode_header(header[k][0], header[k][1], header[k][2], header[k][3]);
      mine.add(math::line_verdict_of(h, sent[k], a.data_type, a.line_bytes,
                                     static_cast<std::uint16_t>(a.seed_term ^ terms[k])));
    }
  }
  const unsigned values[5] = {mine.lines, mine.corrected_headers, mine.corrupt_headers,
                              mine.crc_errors, mine.format_errors};
  for (int i = 0; i < 5; ++i) {
    if (values[i] != 0) atomicAdd(&counts[i], values[i]);
  }
  resident::device::sync_block();
  return {counts[0], counts[1], counts[2], counts[3], counts[4]};
}

/// After every block's tiles, by the last block (every thread): the verdict, the integrity
/// record, the commit (or the count of a corrupt frame), the statistics' totals (previous-frame:
/// the next gains, from a sound frame only; same-frame in persistent mode: cleared).
__device__ void finish_frame(const fused_args& a, loop_state* loop) {
  __shared__ unsigned long long totals[sum_words];
  __shared__ bool ok;
  const bool stream_ok = a.frame->bytes == a.stream_bytes;
  const math::frame_counts lines = count_lines(a, stream_ok);
  if (threadIdx.x == 0) {
    const io::frame_integrity verdict =
        detail::csi2_form::integrity_record(a.frame, a.height, a.stream_bytes, lines, stream_ok);
    *a.integrity = verdict;
    ok = verdict.ok();
  }
  resident::device::sync_block();
  const bool previous = a.grey_world && !a.same_frame;
  if (previous && ok) {
    write_multipliers(a, totals);
  } else if ((previous || (a.same_frame && a.block_gains)) && threadIdx.x < replicas * sum_words) {
    a.sums[threadIdx.x] = 0;  // dropped: a corrupt frame's, or this frame's (used already)
  }
  if (threadIdx.x != 0) return;
  io::detail::display_shared* sh = a.view.shared;
  if (ok) {
    __threadfence();  // every block's pixels (seen through the arrivals) before the flip
    commit_frame(a.view, *const_cast<volatile std::uint32_t*>(&sh->target), loop);
  } else {
    io::detail::display_form::count_refused(sh, *a.integrity);  // never flipped to
  }
  io::detail::display_form::reset_target_choice(sh);
}

/// What a block holds while it makes tiles: the gains, the buffer, the CRC table, the sums.
struct block_state {
  std::uint64_t m[3];
  unsigned long long sums[sum_words];
  unsigned long long totals[sum_words];
  std::uint16_t table[256];
  std::uint32_t target;
};

/// The block's set-up before its tiles (every thread): the buffer, the table, the gains (the
/// workspace's, or with block_gains this frame's from the statistics pass's replicas).
__device__ void begin_tiles(const fused_args& a, block_state& b, bool stream_ok) {
  if (threadIdx.x == 0 && stream_ok) b.target = choose_target_once(a.view);
  if (threadIdx.x < sum_words) b.sums[threadIdx.x] = 0;
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) b.table[i] = fused_crc_table.entry[i];
  const bool local_gains = a.block_gains && a.same_frame && a.grey_world;
  if (local_gains) sum_replicas(a, b.totals, false);
  resident::device::sync_block();
  if (threadIdx.x < 3) {
    b.m[threadIdx.x] =
        local_gains ? multiplier_of(a, b.totals, threadIdx.x) : __ldcg(a.multipliers + threadIdx.x);
  }
  resident::device::sync_block();
}

/// Tiles first, first + step, ... in turns of `halves` tiles a block (every thread calls it;
/// the block's thread h * tile_threads + tid makes half h's tile), then the block's sums.
__device__ void run_tiles(const fused_args& a, block_state& b, tile_t* tiles, int first, int step,
                          unsigned replica) {
  const io::frame_ref* ref = a.frame;
  const bool stream_ok = ref->bytes == a.stream_bytes;
  begin_tiles(a, b, stream_ok);
  const bool count = a.grey_world && !a.same_frame;
  std::uint32_t c[sum_words] = {0, 0, 0, 0, 0, 0};
  const int tiles_x = static_cast<int>((a.width + tile_w - 1) / tile_w);
  const int total = tiles_x * static_cast<int>((a.height + tile_h - 1) / tile_h);
  const int half = static_cast<int>(threadIdx.x) / tile_threads;
  const int tid = static_cast<int>(threadIdx.x) % tile_threads;
  for (int base = first; stream_ok && base < total; base += step) {
    const int t = base + half;
    const int x0 = t % tiles_x * tile_w;
    const int y0 = t / tiles_x * tile_h;
    if (t < total) {
      load_tile(a, ref->packets, x0, y0, tiles[half], b.m, count, c, b.table, tid);
    }
    resident::device::sync_block();
    if (t < total) write_cell(a, tiles[half], x0, y0, a.view.buffers[b.target], tid);
    resident::device::sync_block();  // the tile is read before the next turn loads over it
  }
  if (count) merge_counts(a, c, b.sums, replica);
}

/// Every sample's level counted (groups of 8 pixels from `first` by `stride`) and the block's
/// counts added into a replica: same-frame statistics.
__device__ void count_frame(const fused_args& a, unsigned long long* block_sums,
                            std::uint64_t first, std::uint64_t stride, unsigned replica) {
  if (threadIdx.x < sum_words) block_sums[threadIdx.x] = 0;
  resident::device::sync_block();
  const io::frame_ref* ref = a.frame;
  std::uint32_t c[sum_words] = {0, 0, 0, 0, 0, 0};
  if (ref->bytes == a.stream_bytes) {
    const std::uint32_t groups = (a.width + 7) / 8;
    const std::uint64_t total = std::uint64_t{groups} * a.height;
    for (std::uint64_t g = first; g < total; g += stride) {
      const auto y = static_cast<std::uint32_t>(g / groups);
      const auto x0 = static_cast<std::uint32_t>(g % groups) * 8;
      const std::uint8_t* payload = packet_of(a, ref->packets, y) + 4;
      for (std::uint32_t x = x0; x < x0 + 8 && x < a.width; ++x) {
        count_level(c, channel_of(a, x, y),
                    isp_math::bin_of(raw_sample(a, payload, x), a.black, a.max));
      }
    }
  }
  merge_counts(a, c, block_sums, replica);
}

/// The stamped kernel's record of a launch, by the last block's thread 0 after its commit: the
/// launch's four stamps into the ring, and the running minimum and maximum reset for the next.
__device__ void record_phases(std::uint64_t* st, std::uint64_t verdict, std::uint64_t committed) {
  const auto k = static_cast<unsigned>(st[2]++ % camera_isp_workspace::phase_ring);
  std::uint64_t* slot = st + 4 + 4 * std::size_t{k};
  slot[0] = __ldcg(st);
  slot[1] = __ldcg(st + 1);
  slot[2] = verdict;
  slot[3] = committed;
  st[0] = ~std::uint64_t{0};
  st[1] = 0;
}

template <bool Stamped>
__global__ void __launch_bounds__(tile_threads) fused_kernel(fused_args a) {
  using resident::device::globaltimer_ns;
  resident::device::let_next_kernel_start();
  resident::device::wait_for_previous_kernels();
  if (Stamped && threadIdx.x == 0) {
    atomicMin(reinterpret_cast<unsigned long long*>(a.stamps), globaltimer_ns());
  }
  __shared__ tile_t tile[1];
  __shared__ block_state b;
  __shared__ bool last;
  const auto t = static_cast<int>(blockIdx.x);
  run_tiles(a, b, tile, t, static_cast<int>(gridDim.x), blockIdx.x % replicas);
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    if (Stamped) atomicMax(reinterpret_cast<unsigned long long*>(a.stamps + 1), globaltimer_ns());
    __threadfence();  // the block's pixels, line words and sums before its arrival
    last = atomicAdd(&a.done[1], 1U) == gridDim.x - 1;
    if (last) __threadfence();
  }
  resident::device::sync_block();
  if (!last) return;
  const std::uint64_t verdict = Stamped ? globaltimer_ns() : 0;
  finish_frame(a, a.loop);
  if (threadIdx.x == 0) {
    a.done[1] = 0;  // for the next frame (its launch starts after this one)
    if (Stamped) record_phases(a.stamps, verdict, globaltimer_ns());
  }
}

/// same-frame statistics in kernel mode: the counts, then the last block derives the
/// multipliers the fused kernel uses.
__global__ void __launch_bounds__(stats_threads) statistics_kernel(fused_args a) {
  resident::device::let_next_kernel_start();
  resident::device::wait_for_previous_kernels();
  __shared__ unsigned long long block_sums[sum_words];
  __shared__ unsigned long long totals[sum_words];
  __shared__ bool last;
  count_frame(a, block_sums, std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x,
              std::uint64_t{gridDim.x} * blockDim.x, blockIdx.x % replicas);
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&a.done[0], 1U) == gridDim.x - 1;
    if (last) __threadfence();
  }
  resident::device::sync_block();
  if (!last) return;
  write_multipliers(a, totals);
  if (threadIdx.x == 0) a.done[0] = 0;
}

// ---- persistent mode ---------------------------------------------------------------------------

/// imaging.camera_isp's device form (blocks of persistent_block_threads: two tiles at a time).
/// previous-frame or no white balance: one phase, the tiles, ending with last-block work (the
/// verdict and the commit) instead of a grid barrier. same-frame: the statistics pass first (a
/// grid barrier), then the tiles with the gains each block derives from the replicas.
struct camera_isp_form {
  static constexpr const char* name = "imaging.camera_isp";
  using args = detail::fused_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    __shared__ block_state b;
    auto* tiles = reinterpret_cast<tile_t*>(ctx.scratch);
    const bool statistics_pass = a.same_frame && a.grey_world;
    if (statistics_pass && ctx.phase == 0) {
      count_frame(a, b.sums, std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x,
                  std::uint64_t{gridDim.x} * blockDim.x, blockIdx.x % replicas);
      return;
    }
    constexpr int halves = persistent_block_threads / tile_threads;
    run_tiles(a, b, tiles, static_cast<int>(blockIdx.x) * halves,
              static_cast<int>(gridDim.x) * halves, blockIdx.x % replicas);
  }
  __device__ static void finish(const args& a, const form_context& ctx) {
    finish_frame(a, ctx.loop);
  }
};

static_assert(persistent_block_threads % tile_threads == 0);

fused_args make_args(const io::frame_ref* frame, io::frame_integrity* integrity,
                     const camera_isp_workspace& ws, const io::display_view& view,
                     loop_state* loop) {
  const camera_isp_config& k = ws.config();
  const csi2_workspace& csi2 = ws.csi2();
  fused_args a{};
  a.frame = frame;
  a.integrity = integrity;
  a.factors = csi2.chunk_factors();
  a.line_crc = ws.line_crc();
  a.sums = ws.sums();
  a.multipliers = ws.multipliers();
  a.lut = ws.lut();
  a.done = ws.done();
  a.stamps = ws.stamps();
  a.view = view;
  a.loop = loop;
  a.stream_bytes = io::csi2::frame_packet_bytes(k.format, k.width, k.height);
  a.width = k.width;
  a.height = k.height;
  a.line_bytes = csi2.line_bytes();
  a.chunks = csi2.chunks();
  a.black = k.black_level;
  a.bits = static_cast<std::uint8_t>(k.format);
  a.max = (1U << a.bits) - 1U;
  a.max_sum = static_cast<int>(16 * a.max);
  a.scale = 65535.0F / static_cast<float>(16 * a.max);
  a.rx = k.order == io::bayer_order::grbg || k.order == io::bayer_order::bggr ? 1 : 0;
  a.ry = k.order == io::bayer_order::gbrg || k.order == io::bayer_order::bggr ? 1 : 0;
  a.seed_term = csi2.seed_term();
  a.data_type = static_cast<std::uint8_t>(io::csi2::data_type_of(k.format));
  a.order = k.order;
  a.malvar = k.malvar;
  a.grey_world = k.grey_world;
  a.same_frame = k.statistics == isp_statistics::same_frame;
  return a;
}

}  // namespace

// ---- workspace ---------------------------------------------------------------------------------

camera_isp_workspace::camera_isp_workspace(const camera_isp_config& config)
    : _config(config), _csi2(config.format, config.width, config.height) {
  _line_crc = device_buffer(std::size_t{config.height} * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(_line_crc.data(), 0, _line_crc.size()));
  _sums = device_buffer(std::size_t{sum_replicas} * sum_words * sizeof(unsigned long long));
  RESIDENT_CUDA_TRY(cudaMemset(_sums.data(), 0, _sums.size()));
  const std::uint32_t max = (1U << static_cast<unsigned>(config.format)) - 1U;
  const std::uint64_t unity = isp_math::multiplier_q16(1.0, config.black_level, max);
  const std::uint64_t m[3] = {unity, unity, unity};
  _multipliers = device_buffer(sizeof(m));
  RESIDENT_CUDA_TRY(cudaMemcpy(_multipliers.data(), m, sizeof(m), cudaMemcpyHostToDevice));
  std::vector<std::uint8_t> lut(65536);
  for (std::uint32_t v = 0; v < lut.size(); ++v) lut[v] = io::gamma_encode(v, 65535, config.gamma);
  _lut = device_buffer(lut.size());
  RESIDENT_CUDA_TRY(cudaMemcpy(_lut.data(), lut.data(), lut.size(), cudaMemcpyHostToDevice));
  _done = device_buffer(2 * sizeof(unsigned));
  RESIDENT_CUDA_TRY(cudaMemset(_done.data(), 0, _done.size()));
  if (config.phase_stamps) {
    std::vector<std::uint64_t> st(4 + 4 * std::size_t{phase_ring}, 0);
    st[0] = ~std::uint64_t{0};
    _stamps = device_buffer(st.size() * sizeof(std::uint64_t));
    RESIDENT_CUDA_TRY(
        cudaMemcpy(_stamps.data(), st.data(), _stamps.size(), cudaMemcpyHostToDevice));
  }
  int per_sm = 0;
  RESIDENT_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_kernel<false>, tile_threads, 0));
  int sms = 0;
  RESIDENT_CUDA_TRY(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, resident::current_device()));
  _resident_blocks = static_cast<unsigned>(std::max(1, per_sm * sms));
}

std::vector<fused_pass_times> camera_isp_workspace::read_phase_times() const {
  std::vector<fused_pass_times> out;
  if (stamps() == nullptr) return out;
  std::vector<std::uint64_t> st(_stamps.size() / sizeof(std::uint64_t));
  RESIDENT_CUDA_TRY(cudaMemcpy(st.data(), _stamps.data(), _stamps.size(), cudaMemcpyDeviceToHost));
  const std::uint64_t launches = st[2];
  const std::uint64_t kept = std::min<std::uint64_t>(launches, phase_ring);
  const auto us = [](std::uint64_t later, std::uint64_t earlier) {
    return later > earlier ? static_cast<double>(later - earlier) / 1e3 : 0.0;
  };
  for (std::uint64_t i = launches - kept; i < launches; ++i) {
    const std::uint64_t* s = st.data() + 4 + 4 * (i % phase_ring);
    out.push_back({us(s[1], s[0]), us(s[2], s[1]), us(s[3], s[2]), us(s[3], s[0])});
  }
  return out;
}

std::array<std::uint64_t, 3> camera_isp_workspace::read_multipliers() const {
  std::array<std::uint64_t, 3> m{};
  RESIDENT_CUDA_TRY(cudaMemcpy(m.data(), _multipliers.data(), sizeof(m), cudaMemcpyDeviceToHost));
  return m;
}

namespace detail {

void launch_camera_isp(const io::frame_ref* frame, io::frame_integrity* integrity,
                       const camera_isp_workspace& ws, const io::display_view& view,
                       loop_state* loop, cudaStream_t s) {
  const fused_args a = make_args(frame, integrity, ws, view, loop);
  if (a.same_frame && a.grey_world) {
    const std::uint64_t groups = (std::uint64_t{a.width} + 7) / 8 * a.height;
    const auto blocks = static_cast<unsigned>(
        std::min<std::uint64_t>((groups + stats_threads - 1) / stats_threads, 1024));
    statistics_kernel<<<blocks, stats_threads, 0, s>>>(a);
    RESIDENT_CUDA_CHECK_LAUNCH("camera_isp statistics_kernel");
  }
  const unsigned tiles = (a.width + tile_w - 1) / tile_w * ((a.height + tile_h - 1) / tile_h);
  // The blocks take tiles blockIdx, blockIdx + gridDim, ...: a resident grid does each block's
  // set-up, sums merge and arrival once, not once a tile.
  const unsigned blocks = ws.config().resident_grid ? std::min(tiles, ws.resident_blocks()) : tiles;
  if (a.stamps != nullptr) {
    fused_kernel<true><<<blocks, tile_threads, 0, s>>>(a);
  } else {
    fused_kernel<false><<<blocks, tile_threads, 0, s>>>(a);
  }
  RESIDENT_CUDA_CHECK_LAUNCH("camera_isp fused_kernel");
}

}  // namespace detail

// ---- operator ----------------------------------------------------------------------------------

void camera_isp::setup(OperatorSpec& spec) {
  auto& k = _config;
  k.width = params::side(spec, "width", 1920, true, "frame width in pixels");
  k.height = params::side(spec, "height", 1080, true, "frame height in lines");
  k.format = params::named(spec, "format", io::csi2::raw_format::raw12, io::csi2::all_raw_formats,
                           "CSI-2 pixel packing");
  k.order = params::order(spec);
  const auto bits = static_cast<unsigned>(k.format);
  const auto black = spec.param<std::int64_t>("black_level", 256, "sensor black level");
  const std::int64_t max = (std::int64_t{1} << bits) - 1;
  if (black < 0 || black >= max) {
    params::fail(spec, "black_level",
                 "must be in [0, " + std::to_string(max) + ") for " + std::to_string(bits) +
                     "-bit samples, got " + std::to_string(black));
  }
  k.black_level = static_cast<std::uint32_t>(black);
  k.grey_world = params::choice(spec, "white_balance", "grey_world", {"grey_world", "none"},
                                "white balance: grey-world gains, or none") == 0;
  k.malvar = params::choice(spec, "demosaic", "malvar", {"malvar", "bilinear"},
                            "Malvar-He-Cutler or bilinear interpolation") == 0;
  k.gamma = spec.param<double>("gamma", 2.2, "display gamma: out = 255 * (v / full)^(1 / gamma)");
  if (!(k.gamma > 0) || !std::isfinite(k.gamma)) {
    params::fail(spec, "gamma", "must be positive, got " + std::to_string(k.gamma));
  }
  k.statistics =
      params::choice(spec, "statistics", "previous-frame", {"previous-frame", "same-frame"},
                     "white-balance statistics: the previous sound frame's (one pass) "
                     "or this frame's (a statistics pass first)") == 0
          ? isp_statistics::previous_frame
          : isp_statistics::same_frame;
  k.resident_grid = params::choice(spec, "grid", "resident", {"resident", "tiles"},
                                   "graph modes' launch: as many blocks as fit at once, taking "
                                   "tiles in turn, or one block per tile") == 0;
  if (_display == nullptr) params::fail(spec, "display", "is missing (camera_isp needs a display)");
  const io::display_config& d = _display->config();
  if (d.width != k.width || d.height != k.height) {
    params::fail(spec, "width",
                 "and height must be the display's " + std::to_string(d.width) + "x" +
                     std::to_string(d.height) + ", got " + std::to_string(k.width) + "x" +
                     std::to_string(k.height));
  }
  if (d.mode != io::present_mode::flip) {
    throw composition_error(
        "operator '" + spec.operator_name() +
        "' (camera_isp): a front-buffer display is refused: the fused pass learns whether a "
        "frame is sound only after writing it, so a corrupt frame would be on screen; use "
        "present: flip, or the unfused chain");
  }
  spec.device_input("frame", sizeof(io::frame_ref));
  spec.device_output("integrity", sizeof(io::frame_integrity));
}

std::optional<device_form> camera_isp::persistent_form() const {
  if (_workspace == nullptr) {
    throw composition_error("operator '" + name() +
                            "': persistent mode found it not initialized (no workspace)");
  }
  fused_args a =
      make_args(bound<const io::frame_ref>("frame"), bound<io::frame_integrity>("integrity"),
                *_workspace, _display->device_view(), nullptr);
  a.block_gains = true;
  const std::uint32_t phases = a.same_frame && a.grey_world ? 2 : 1;
  // The camera's handler (io.frame_rx) and this form, in a kernel of their own: two blocks an SM.
  static const persistent_kernel_set& kernels =
      resident::detail::persistent_kernel_set_of<2, io::frame_rx_form, camera_isp_form>::set;
  return device_form::of<camera_isp_form>(a, &kernels)
      .with_phases(phases)
      .with_phase_end(phases - 1, phase_end::last_block)
      .with_shared_bytes(persistent_block_threads / tile_threads * sizeof(tile_t));
}

void camera_isp::initialize() { _workspace = std::make_unique<camera_isp_workspace>(_config); }

std::vector<fused_pass_times> camera_isp::phase_times() const {
  return _workspace == nullptr ? std::vector<fused_pass_times>{} : _workspace->read_phase_times();
}

void camera_isp::compute(CaptureContext& ctx) {
  if (_workspace == nullptr) {
    throw composition_error("operator '" + ctx.operator_name() +
                            "' (camera_isp): compute() before initialize()");
  }
  detail::launch_camera_isp(ctx.device_memory<const io::frame_ref>("frame"),
                            ctx.device_memory<io::frame_integrity>("integrity"), *_workspace,
                            _display->device_view(), ctx.loop(), ctx.stream());
}

}  // namespace resident::ops::imaging
