#pragma once
// Shared declarations of the _resident extension module: each part registers its classes.

#include <pybind11/pybind11.h>

namespace resident::python {

void bind_errors(pybind11::module_& m);
void bind_application(pybind11::module_& m);
void bind_run(pybind11::module_& m);
void bind_mailbox(pybind11::module_& m);
void bind_camera(pybind11::module_& m);
void bind_drive(pybind11::module_& m);
void bind_translated(pybind11::module_& m);
void bind_sched(pybind11::module_& m);

}  // namespace resident::python
