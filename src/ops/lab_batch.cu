#include <cstring>
#include <stdexcept>
#include <string>

#include "resident/cuda/error.hpp"
#include "resident/ops/lab_batch.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::ops {

lab_batch::lab_batch(std::size_t capacity, std::size_t width)
    : _capacity(capacity),
      _width(width),
      _input(capacity * width * sizeof(float)),
      _work(capacity * width * sizeof(float)),
      _affine(capacity * width * sizeof(float)),
      _squared(capacity * width * sizeof(float)),
      _result(sizeof(float)),
      _valid(sizeof(std::int64_t)),
      _all(sizeof(std::int64_t)),
      _staging(capacity * width * sizeof(float) + sizeof(std::int64_t)),
      _result_host(sizeof(float)) {
  if (capacity == 0 || width == 0) {
    throw std::invalid_argument("lab_batch: capacity and width must be positive");
  }
  const auto all = static_cast<std::int64_t>(capacity * width);
  RESIDENT_CUDA_TRY(cudaMemcpy(_all.data(), &all, sizeof(all), cudaMemcpyHostToDevice));
  RESIDENT_CUDA_TRY(cudaMemset(_input.data(), 0, _input.size()));
  RESIDENT_CUDA_TRY(cudaMemset(_valid.data(), 0, sizeof(std::int64_t)));
}

std::size_t lab_batch::device_bytes() const noexcept {
  return _input.size() + _work.size() + _affine.size() + _squared.size() + _result.size() +
         _valid.size() + _all.size();
}

void lab_batch::record(std::size_t slots, stream_view s, bool mask) const {
  if (slots == 0 || slots > _capacity) {
    throw std::invalid_argument("lab_batch: " + std::to_string(slots) +
                                " slots do not fit a capacity of " + std::to_string(_capacity) +
                                " requests");
  }
  const auto n = static_cast<std::int64_t>(slots * _width);
  const auto bytes = static_cast<std::size_t>(n) * sizeof(float);
  RESIDENT_CUDA_TRY(
      cudaMemcpyAsync(_work.data(), _input.data(), bytes, cudaMemcpyDeviceToDevice, s.get()));
  detail::launch_affine(_work.data_as<const float>(), _affine.data_as<float>(), n, 2.0F, 1.0F,
                        s.get());
  detail::launch_square(_affine.data_as<const float>(), _squared.data_as<float>(), n, s.get());
  detail::launch_masked_sum_reduce(_squared.data_as<const float>(), _result.data_as<float>(), n,
                                   (mask ? _valid : _all).data_as<const std::int64_t>(), s.get());
}

void lab_batch::stage(std::span<const float> values, std::size_t padded_slots, stream_view s) {
  if (values.size() % _width != 0) {
    throw std::invalid_argument("lab_batch: " + std::to_string(values.size()) +
                                " values are not a whole number of requests of width " +
                                std::to_string(_width));
  }
  const std::size_t count = values.size() / _width;
  if (count == 0 || padded_slots < count || padded_slots > _capacity) {
    throw std::invalid_argument("lab_batch: a batch of " + std::to_string(count) +
                                " requests padded to " + std::to_string(padded_slots) +
                                " slots does not fit a capacity of " + std::to_string(_capacity));
  }
  auto* staged = _staging.data_as<float>();
  std::memcpy(staged, values.data(), values.size_bytes());
  const auto valid = static_cast<std::int64_t>(values.size());
  auto* staged_valid = reinterpret_cast<std::int64_t*>(staged + _capacity * _width);
  *staged_valid = valid;
  RESIDENT_CUDA_TRY(
      cudaMemcpyAsync(_input.data(), staged, values.size_bytes(), cudaMemcpyHostToDevice, s.get()));
  if (padded_slots > count) {
    RESIDENT_CUDA_TRY(cudaMemsetAsync(_input.data_as<float>() + values.size(), 0,
                                      (padded_slots - count) * _width * sizeof(float), s.get()));
  }
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_valid.data(), staged_valid, sizeof(std::int64_t),
                                    cudaMemcpyHostToDevice, s.get()));
}

float lab_batch::read_result(stream_view s) {
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_result_host.data(), _result.data(), sizeof(float),
                                    cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  return *_result_host.data_as<float>();
}

lab_batch::outcome lab_batch::run(std::span<const float> values, const graph_pool& pool,
                                  stream_view s) {
  const std::size_t count = values.size() / _width;
  outcome out;
  out.bucket = pool.bucket_for(count);
  stage(values, out.bucket.value_or(count), s);
  if (out.bucket) {
    pool.launch_bucket(*out.bucket, s);
  } else {
    record(count, s);  // eager fallback: the same steps, submitted directly for exactly count
  }
  out.sum = read_result(s);
  return out;
}

}  // namespace resident::ops
