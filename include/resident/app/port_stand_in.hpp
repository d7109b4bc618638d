#pragma once
// An operator with one device port and nothing to run: it stands in for an endpoint that needs a
// GPU to exist (a mailbox end) when a pipeline is only checked (`resident run ... --check`, the
// pipeline files' check, the fuzz harnesses). Host only.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/app/operator.hpp"

namespace resident {

class port_stand_in final : public Operator {
 public:
  port_stand_in(port_direction direction, std::string port, std::size_t bytes)
      : _direction(direction), _port(std::move(port)), _bytes(bytes) {}
  void setup(OperatorSpec& spec) override {
    if (_direction == port_direction::output) {
      spec.device_output(_port, _bytes);
    } else {
      spec.device_input(_port, _bytes);
    }
  }
  void compute(CaptureContext& /*ctx*/) override {
    throw std::logic_error("port_stand_in: a checked pipeline does not run");
  }

 private:
  port_direction _direction;
  std::string _port;
  std::size_t _bytes;
};

}  // namespace resident
