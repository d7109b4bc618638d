// conv_norm's kernels and device form. The same two device functions run as two kernels in
// eager, host-graph, while and tail modes, and as the form's two phases in persistent mode.

#include "conv_norm.hpp"

#include <cmath>
#include <stdexcept>

#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/mailbox_forms.cuh"  // resident::persistent_kernels<...>()

namespace custom {

namespace {

constexpr int tile = 16;
constexpr int halo = tile + 2;

struct conv_norm_args {
  const float* in;
  float* out;
  float* conv;
  float* tile_sums;
  float weights[9];
  int width;
  int height;
};

__device__ int tiles_across(const conv_norm_args& a) { return (a.width + tile - 1) / tile; }
__device__ int tile_count(const conv_norm_args& a) {
  return tiles_across(a) * ((a.height + tile - 1) / tile);
}

// Phase 0: each block takes tiles in turn; a tile and its one-pixel halo go to shared memory
// (zero outside the image), each pixel's nine products are summed in a fixed order, and the
// tile's first thread sums its squares in row order.
__device__ void convolve_tiles(const conv_norm_args& a, float* patch) {
  for (int t = blockIdx.x; t < tile_count(a); t += gridDim.x) {
    const int x0 = (t % tiles_across(a)) * tile;
    const int y0 = (t / tiles_across(a)) * tile;
    for (int i = threadIdx.x; i < halo * halo; i += blockDim.x) {
      const int x = x0 - 1 + i % halo;
      const int y = y0 - 1 + i / halo;
      patch[i] = x >= 0 && y >= 0 && x < a.width && y < a.height ? a.in[y * a.width + x] : 0.0F;
    }
    resident::device::sync_block();
    for (int i = threadIdx.x; i < tile * tile; i += blockDim.x) {
      const int x = x0 + i % tile;
      const int y = y0 + i / tile;
      if (x >= a.width || y >= a.height) continue;
      float sum = 0.0F;
      for (int k = 0; k < 9; ++k) {
        sum = __fadd_rn(
            sum, __fmul_rn(a.weights[k], patch[(i / tile + k / 3) * halo + i % tile + k % 3]));
      }
      a.conv[y * a.width + x] = sum;
    }
    resident::device::sync_block();
    if (threadIdx.x == 0) {
      float squares = 0.0F;
      for (int y = y0; y < min(y0 + tile, a.height); ++y) {
        for (int x = x0; x < min(x0 + tile, a.width); ++x) {
          const float v = a.conv[y * a.width + x];
          squares = __fadd_rn(squares, __fmul_rn(v, v));
        }
      }
      a.tile_sums[t] = squares;
    }
  }
}

// Phase 1: every block's first thread adds the tiles' sums in order (the same value in every
// block), then every thread divides its pixels by the root mean square.
__device__ void normalize(const conv_norm_args& a, float* shared_rms) {
  if (threadIdx.x == 0) {
    float total = 0.0F;
    for (int t = 0; t < tile_count(a); ++t) total = __fadd_rn(total, a.tile_sums[t]);
    *shared_rms = sqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(a.width * a.height)), 1e-6F));
  }
  resident::device::sync_block();
  const float rms = *shared_rms;
  const int n = a.width * a.height;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    a.out[i] = __fdiv_rn(a.conv[i], rms);
  }
}

constexpr std::size_t shared_bytes = halo * halo * sizeof(float);

__global__ void convolve_kernel(conv_norm_args a) {
  extern __shared__ float patch[];
  convolve_tiles(a, patch);
}

__global__ void normalize_kernel(conv_norm_args a) {
  __shared__ float rms;
  normalize(a, &rms);
}

// The device form: the two phases, a grid barrier between them (the default).
struct conv_norm_form {
  static constexpr const char* name = "custom.conv_norm";
  using args = conv_norm_args;
  __device__ static void run(const args& a, const resident::form_context& ctx) {
    auto* scratch = reinterpret_cast<float*>(ctx.scratch);
    if (ctx.phase == 0) {
      convolve_tiles(a, scratch);
    } else {
      normalize(a, scratch);
    }
  }
};

}  // namespace

void conv_norm::setup(resident::OperatorSpec& spec) {
  _width = spec.param<int>("width", 64, "image width");
  _height = spec.param<int>("height", 48, "image height");
  if (_width < 1 || _height < 1 || _width > 4096 || _height > 4096) {
    throw std::invalid_argument("conv_norm: width and height must be 1 to 4096");
  }
  // A sharpening kernel by default; any nine weights (row by row) may be given.
  const float defaults[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
  for (int k = 0; k < 9; ++k) {
    _weights[k] = spec.param<float>("w" + std::to_string(k), defaults[k]);
  }
  const auto bytes = static_cast<std::size_t>(_width) * _height * sizeof(float);
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void conv_norm::initialize() {
  _conv = resident::device_buffer(static_cast<std::size_t>(_width) * _height * sizeof(float));
  const std::size_t tiles =
      static_cast<std::size_t>((_width + tile - 1) / tile) * ((_height + tile - 1) / tile);
  _tile_sums = resident::device_buffer(tiles * sizeof(float));
}

namespace {
conv_norm_args make_args(const float* in, float* out, float* conv, float* tile_sums, int width,
                         int height, const std::array<float, 9>& weights) {
  conv_norm_args a{in, out, conv, tile_sums, {}, width, height};
  for (int k = 0; k < 9; ++k) a.weights[k] = weights[k];
  return a;
}
}  // namespace

void conv_norm::compute(resident::CaptureContext& ctx) {
  const auto a =
      make_args(ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"),
                _conv.data_as<float>(), _tile_sums.data_as<float>(), _width, _height, _weights);
  const int tiles = ((_width + tile - 1) / tile) * ((_height + tile - 1) / tile);
  convolve_kernel<<<tiles, 128, shared_bytes, ctx.stream()>>>(a);
  RESIDENT_CUDA_CHECK_LAUNCH("convolve_kernel");
  normalize_kernel<<<(_width * _height + 255) / 256, 256, 0, ctx.stream()>>>(a);
  RESIDENT_CUDA_CHECK_LAUNCH("normalize_kernel");
}

std::optional<resident::device_form> conv_norm::persistent_form() const {
  const auto a = make_args(bound<const float>("in"), bound<float>("out"), _conv.data_as<float>(),
                           _tile_sums.data_as<float>(), _width, _height, _weights);
  return resident::device_form::of<conv_norm_form>(a,
                                                   &resident::persistent_kernels<conv_norm_form>())
      .with_phases(2)
      .with_shared_bytes(shared_bytes);
}

std::vector<float> conv_norm_reference(const std::vector<float>& in, int width, int height,
                                       const std::array<float, 9>& w) {
  std::vector<float> conv(in.size());
  auto at = [&](int x, int y) {
    return x >= 0 && y >= 0 && x < width && y < height ? in[y * width + x] : 0.0F;
  };
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      float sum = 0.0F;
      for (int k = 0; k < 9; ++k) sum += w[k] * at(x - 1 + k % 3, y - 1 + k / 3);
      conv[y * width + x] = sum;
    }
  }
  float total = 0.0F;
  for (int ty = 0; ty < height; ty += tile) {
    for (int tx = 0; tx < width; tx += tile) {
      float squares = 0.0F;
      for (int y = ty; y < std::min(ty + tile, height); ++y) {
        for (int x = tx; x < std::min(tx + tile, width); ++x) {
          squares += conv[y * width + x] * conv[y * width + x];
        }
      }
      total += squares;
    }
  }
  const float rms = std::sqrt(total / static_cast<float>(width * height) + 1e-6F);
  std::vector<float> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = conv[i] / rms;
  return out;
}

}  // namespace custom
