#pragma once
// The check an I/O endpoint that keeps device memory of its own (a mailbox's commit counter, a
// device link's ring and counter) makes in initialize(): the run's device must be its own.

#include <string>

#include "resident/app/error.hpp"
#include "resident/app/operator.hpp"
#include "resident/cuda/device.hpp"

namespace resident::io::detail {

/// Refuses, naming `op`, a run on another device than `device`; `whose` names the memory that
/// lives there ("its mailbox (config.device) is", "the link's consumer is").
inline void require_run_device(const Operator& op, const std::string& whose, int device) {
  const int run_device = current_device();
  if (run_device == device) return;
  throw composition_error("operator '" + op.name() + "': " + whose + " device " +
                          std::to_string(device) + ", but the application runs on device " +
                          std::to_string(run_device));
}

}  // namespace resident::io::detail
