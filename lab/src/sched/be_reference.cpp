// fp64 CPU references of the BE kernels: straightforward loops, the ground truth of the GPU
// tests and of the models' reference().

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "resident/sched/be_models.hpp"

namespace resident::sched {

namespace {

void require_size(const char* function, const char* what, std::size_t size, std::int64_t expected) {
  if (expected <= 0) {
    throw std::invalid_argument(std::string(function) + ": the shape of " + what +
                                " is empty or negative (" + std::to_string(expected) + ")");
  }
  if (size != static_cast<std::size_t>(expected)) {
    throw std::invalid_argument(std::string(function) + ": " + what + " has " +
                                std::to_string(size) + " values, the shape needs " +
                                std::to_string(expected));
  }
}

}  // namespace

std::vector<double> to_double(std::span<const float> x) { return {x.begin(), x.end()}; }

std::vector<double> gemm_reference(std::span<const double> a, std::span<const double> b,
                                   std::int32_t m, std::int32_t n, std::int32_t k) {
  require_size("gemm_reference", "a", a.size(), std::int64_t{m} * k);
  require_size("gemm_reference", "b", b.size(), std::int64_t{k} * n);
  std::vector<double> c(static_cast<std::size_t>(m) * n, 0.0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(m); ++i) {
    for (std::size_t l = 0; l < static_cast<std::size_t>(k); ++l) {
      const double x = a[i * k + l];
      for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j)
        c[i * n + j] += x * b[l * n + j];
    }
  }
  return c;
}

std::vector<double> conv2d_reference(std::span<const double> input, std::span<const double> filter,
                                     const conv2d_shape& sh) {
  const bool positive = sh.n > 0 && sh.c > 0 && sh.h > 0 && sh.w > 0 && sh.k > 0 && sh.r > 0 &&
                        sh.s > 0 && sh.stride > 0 && sh.pad >= 0;
  if (!positive || sh.h + 2 * sh.pad < sh.r || sh.w + 2 * sh.pad < sh.s) {
    throw std::invalid_argument(
        "conv2d_reference: the shape is invalid or the filter does not "
        "fit the padded input");
  }
  require_size("conv2d_reference", "input", input.size(), std::int64_t{sh.n} * sh.c * sh.h * sh.w);
  require_size("conv2d_reference", "filter", filter.size(),
               std::int64_t{sh.k} * sh.c * sh.r * sh.s);
  const std::int64_t p = sh.p();
  const std::int64_t q = sh.q();
  std::vector<double> out(static_cast<std::size_t>(std::int64_t{sh.n} * sh.k * p * q), 0.0);
  std::size_t o = 0;
  for (std::int64_t img = 0; img < sh.n; ++img) {
    for (std::int64_t kc = 0; kc < sh.k; ++kc) {
      for (std::int64_t y = 0; y < p; ++y) {
        for (std::int64_t x = 0; x < q; ++x, ++o) {
          double sum = 0.0;
          for (std::int64_t c = 0; c < sh.c; ++c) {
            for (std::int64_t r = 0; r < sh.r; ++r) {
              const std::int64_t ih = y * sh.stride - sh.pad + r;
              if (ih < 0 || ih >= sh.h) continue;  // zero padding
              for (std::int64_t s = 0; s < sh.s; ++s) {
                const std::int64_t iw = x * sh.stride - sh.pad + s;
                if (iw < 0 || iw >= sh.w) continue;
                sum += input[static_cast<std::size_t>(((img * sh.c + c) * sh.h + ih) * sh.w + iw)] *
                       filter[static_cast<std::size_t>(((kc * sh.c + c) * sh.r + r) * sh.s + s)];
              }
            }
          }
          out[o] = sum;
        }
      }
    }
  }
  return out;
}

void bias_act_reference(std::span<double> x, std::span<const double> bias, std::int64_t inner,
                        activation act) {
  if (bias.empty() || inner <= 0) {
    throw std::invalid_argument("bias_act_reference: bias is empty or inner is not positive");
  }
  const auto channels = static_cast<std::int64_t>(bias.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v =
        x[i] + bias[static_cast<std::size_t>(static_cast<std::int64_t>(i) / inner % channels)];
    x[i] = act == activation::relu ? std::max(v, 0.0) : v;
  }
}

std::vector<double> maxpool2d_reference(std::span<const double> input, std::int32_t n,
                                        std::int32_t c, std::int32_t h, std::int32_t w) {
  if (h < 2 || w < 2) throw std::invalid_argument("maxpool2d_reference: h and w must be >= 2");
  require_size("maxpool2d_reference", "input", input.size(), std::int64_t{n} * c * h * w);
  const std::size_t oh = static_cast<std::size_t>(h / 2);
  const std::size_t ow = static_cast<std::size_t>(w / 2);
  const std::size_t planes = static_cast<std::size_t>(n) * c;
  const auto sw = static_cast<std::size_t>(w);
  std::vector<double> out(planes * oh * ow);
  for (std::size_t pl = 0; pl < planes; ++pl) {
    const double* src = input.data() + pl * static_cast<std::size_t>(h) * sw;
    for (std::size_t y = 0; y < oh; ++y) {
      for (std::size_t x = 0; x < ow; ++x) {
        const double* at = src + 2 * y * sw + 2 * x;
        out[(pl * oh + y) * ow + x] = std::max({at[0], at[1], at[sw], at[sw + 1]});
      }
    }
  }
  return out;
}

std::vector<double> row_sum_reference(std::span<const double> x, std::int32_t rows,
                                      std::int32_t cols) {
  require_size("row_sum_reference", "x", x.size(), std::int64_t{rows} * cols);
  std::vector<double> out(static_cast<std::size_t>(rows), 0.0);
  for (std::size_t r = 0; r < out.size(); ++r) {
    for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c) out[r] += x[r * cols + c];
  }
  return out;
}

}  // namespace resident::sched
