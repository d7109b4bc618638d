#pragma once
// A stand-in for a mailbox end, for pipelines that are only checked (a mailbox needs a GPU): the
// lab pipeline under `resident run --check`, and the lab configuration's fuzz harness. Host only.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/app/operator.hpp"

namespace resident::bench {

/// Stands in for a mailbox end when the pipeline is only checked (a mailbox needs a GPU): the
/// same name and port, and nothing to run.
class endpoint_stub final : public Operator {
 public:
  endpoint_stub(port_direction direction, std::string port, std::size_t bytes)
      : _direction(direction), _port(std::move(port)), _bytes(bytes) {}
  void setup(OperatorSpec& spec) override {
    if (_direction == port_direction::output) {
      spec.device_output(_port, _bytes);
    } else {
      spec.device_input(_port, _bytes);
    }
  }
  void compute(CaptureContext& /*ctx*/) override {
    throw std::logic_error("endpoint_stub: a checked pipeline does not run");
  }

 private:
  port_direction _direction;
  std::string _port;
  std::size_t _bytes;
};

}  // namespace resident::bench
