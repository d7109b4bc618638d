#include "resident/exec/graph_pool.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "resident/cuda/error.hpp"

namespace resident {

namespace {

double elapsed_us(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since)
      .count();
}

std::int64_t free_device_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  RESIDENT_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return static_cast<std::int64_t>(free);
}

}  // namespace

void validate_buckets(std::span<const std::size_t> buckets) {
  if (buckets.empty()) throw std::invalid_argument("graph pool: no buckets given");
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i] == 0) throw std::invalid_argument("graph pool: a bucket of 0 requests");
    if (i > 0 && buckets[i] <= buckets[i - 1]) {
      throw std::invalid_argument("graph pool: buckets must be strictly increasing, got " +
                                  std::to_string(buckets[i - 1]) + " before " +
                                  std::to_string(buckets[i]));
    }
  }
}

std::optional<std::size_t> select_bucket(std::span<const std::size_t> buckets, std::size_t count) {
  if (count == 0) return std::nullopt;
  const auto it = std::lower_bound(buckets.begin(), buckets.end(), count);
  if (it == buckets.end()) return std::nullopt;
  return *it;
}

std::vector<std::size_t> parse_buckets(const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value <= 0) {
      throw std::invalid_argument("graph pool: bucket '" + item +
                                  "' is not a positive whole number (buckets look like "
                                  "1,2,4,8,16)");
    }
    out.push_back(static_cast<std::size_t>(value));
    start = comma + 1;
  }
  validate_buckets(out);
  return out;
}

graph_pool::graph_pool(std::vector<std::size_t> buckets, const recorder& record, stream_view s)
    : _buckets(std::move(buckets)) {
  validate_buckets(_buckets);
  using clock = std::chrono::steady_clock;
  for (const std::size_t bucket : _buckets) {
    bucket_cost cost;
    cost.bucket = bucket;
    RESIDENT_CUDA_TRY(cudaStreamSynchronize(s.get()));
    const std::int64_t free_before = free_device_bytes();
    auto t = clock::now();
    graph g = capture_graph(s, [&](stream_view cs) { record(bucket, cs); });
    cost.capture_us = elapsed_us(t);
    cost.nodes = g.nodes().size();
    t = clock::now();
    graph_exec exec(g.get());
    cost.instantiate_us = elapsed_us(t);
    t = clock::now();
    exec.upload(s);
    RESIDENT_CUDA_TRY(cudaStreamSynchronize(s.get()));
    cost.upload_us = elapsed_us(t);
    cost.device_bytes = std::max<std::int64_t>(0, free_before - free_device_bytes());
    _execs.push_back(std::move(exec));
    _costs.push_back(cost);
  }
}

std::optional<std::size_t> graph_pool::launch(std::size_t count, stream_view s) const {
  const auto bucket = bucket_for(count);
  if (bucket) launch_bucket(*bucket, s);
  return bucket;
}

void graph_pool::launch_bucket(std::size_t bucket, stream_view s) const {
  const auto it = std::lower_bound(_buckets.begin(), _buckets.end(), bucket);
  if (it == _buckets.end() || *it != bucket) {
    throw std::invalid_argument("graph pool: no graph for bucket " + std::to_string(bucket));
  }
  _execs[static_cast<std::size_t>(it - _buckets.begin())].launch(s);
}

}  // namespace resident
