#pragma once

#include <stdexcept>
#include <string>

namespace resident {

/// A mistake in how an application is put together: bad ports, flows, parameters, cycles, or a
/// mode that cannot hold the DAG. The message names the operators and ports involved.
class composition_error : public std::invalid_argument {
 public:
  explicit composition_error(const std::string& what) : std::invalid_argument(what) {}
};

/// A configuration file that cannot be read or does not match the application.
class config_error : public composition_error {
 public:
  explicit config_error(const std::string& what) : composition_error(what) {}
};

/// A failure while running an application: a CUDA error inside an operator's compute(), a loop
/// that failed on the device. The message names the operator or loop involved.
class execution_error : public std::runtime_error {
 public:
  explicit execution_error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace resident
