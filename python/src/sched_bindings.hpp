#pragma once
// What the translated-model and best-effort bindings share.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "resident/cuda/stream.hpp"
#include "resident/partition/green_context.hpp"
#include "resident/sched/translated_model.hpp"

namespace resident::python {

/// resident.TranslatedModel: the model and the stream its unpreempted inferences run on.
struct translated {
  translated(std::vector<std::int32_t> input_shape, const pybind11::list& layers,
             std::int32_t output);
  static std::vector<sched::plan_layer> convert(const pybind11::list& layers);
  sched::translated_model model;
  resident::stream s;
};

/// resident.Partition: a green-context SM partition, shared with the set it came from.
struct partition_handle {
  std::shared_ptr<const partition::green_context> p;
};

/// The partition a Python Partition holds (the run option `partition`).
std::shared_ptr<const partition::green_context> partition_of(const pybind11::handle& v);

}  // namespace resident::python
