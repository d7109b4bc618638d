#pragma once
// One operator on its own between external sources and sinks, so that its ports read and write
// the caller's memory: how the GPU tests check an operator against its CPU reference and how the
// benchmarks time one. The operator is whatever `make` creates (it names it).

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "resident/app/application.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::lab {

/// A port of the operator and the caller's device memory behind it.
struct port_binding {
  std::string port;
  void* memory;
  std::size_t bytes;
};

class one_operator_app final : public Application {
 public:
  using factory = std::function<std::shared_ptr<Operator>(Application&)>;
  one_operator_app(factory make, std::vector<port_binding> inputs,
                   std::vector<port_binding> outputs)
      : Application("one_operator"),
        _make(std::move(make)),
        _inputs(std::move(inputs)),
        _outputs(std::move(outputs)) {}

  void compose() override {
    const auto op = _make(*this);
    for (const auto& p : _inputs) {
      auto src = make_operator<ops::external_source>("in_" + p.port, p.memory, p.bytes);
      add_flow(src, op, {{"out", p.port}});
    }
    for (const auto& p : _outputs) {
      auto sink = make_operator<ops::external_sink>("out_" + p.port, p.memory, p.bytes);
      add_flow(op, sink, {{p.port, "in"}});
    }
  }

 private:
  factory _make;
  std::vector<port_binding> _inputs;
  std::vector<port_binding> _outputs;
};

/// `v` in a new device buffer (at least one byte, so an empty `v` still has an address).
template <class T>
device_buffer upload(std::span<const T> v) {
  device_buffer b(std::max<std::size_t>(v.size_bytes(), 1));
  RESIDENT_CUDA_TRY(cudaMemcpy(b.data(), v.data(), v.size_bytes(), cudaMemcpyHostToDevice));
  return b;
}
template <class T>
device_buffer upload(const std::vector<T>& v) {
  return upload(std::span<const T>(v));
}

/// The first `n` values of type T in `b`, waited for.
template <class T>
std::vector<T> download(const device_buffer& b, std::size_t n) {
  std::vector<T> v(n);
  RESIDENT_CUDA_TRY(cudaMemcpy(v.data(), b.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace resident::lab
