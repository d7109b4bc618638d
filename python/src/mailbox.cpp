// The host-mapped mailbox: Python sensor and actuator threads on one side, the loop on the other.
// Payloads are any C-contiguous buffer (bytes, bytearray, array.array, NumPy arrays).

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "bindings.hpp"
#include "resident/io/mailbox.hpp"

namespace py = pybind11;

namespace resident::python {
namespace {

std::span<const std::byte> bytes_of(const py::buffer_info& info) {
  return {static_cast<const std::byte*>(info.ptr),
          static_cast<std::size_t>(info.size) * static_cast<std::size_t>(info.itemsize)};
}

std::uint64_t publish(io::mailbox& mb, const py::buffer& payload) {
  // PyBUF_C_CONTIGUOUS through request(): a strided view would publish the wrong bytes.
  py::buffer_info info(payload.request());
  if (info.ndim > 1 || (info.ndim == 1 && info.strides[0] != info.itemsize)) {
    throw py::value_error("Mailbox.publish: payload must be a contiguous buffer");
  }
  py::gil_scoped_release release;  // the buffer stays pinned by `info`
  return mb.publish(bytes_of(info));
}

py::tuple read_output(const io::mailbox& mb) {
  std::string out(mb.settings().output_bytes, '\0');
  const io::output_stamp s = mb.read_output(std::as_writable_bytes(std::span(out)));
  return py::make_tuple(s, py::bytes(out));
}

py::tuple wait_output(const io::mailbox& mb, const io::output_stamp& after, double timeout_s) {
  std::string out(mb.settings().output_bytes, '\0');
  io::output_stamp s;
  {
    py::gil_scoped_release release;  // busy-polls: let the Python sensor thread run meanwhile
    const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(timeout_s));
    s = mb.wait_output(after, std::as_writable_bytes(std::span(out)), timeout);
  }
  return py::make_tuple(s, py::bytes(out));
}

void bind_stamp(py::module_& m) {
  py::class_<io::output_stamp>(m, "OutputStamp")
      .def(py::init([](std::uint64_t seq, std::uint64_t commit) {
             return io::output_stamp{seq, commit};
           }),
           py::arg("seq") = 0, py::arg("commit") = 0)
      .def_readonly("seq", &io::output_stamp::seq)
      .def_readonly("commit", &io::output_stamp::commit)
      .def_property_readonly("empty", &io::output_stamp::empty)
      .def(py::self == py::self)
      .def("__repr__", [](const io::output_stamp& s) {
        return "OutputStamp(seq=" + std::to_string(s.seq) + ", commit=" + std::to_string(s.commit) +
               ")";
      });
}

}  // namespace

void bind_mailbox(py::module_& m) {
  bind_stamp(m);
  py::class_<io::mailbox, std::shared_ptr<io::mailbox>>(m, "Mailbox")
      .def(py::init([](std::size_t input_bytes, std::size_t output_bytes, std::size_t depth) {
             return std::make_shared<io::mailbox>(io::mailbox::config{
                 .input_bytes = input_bytes, .output_bytes = output_bytes, .depth = depth});
           }),
           py::arg("input_bytes"), py::arg("output_bytes"), py::arg("depth") = 4)
      .def("publish", &publish, py::arg("payload"))
      .def_property_readonly("published", &io::mailbox::published)
      .def_property_readonly("output_seq", &io::mailbox::output_seq)
      .def("latest_output", &io::mailbox::latest_output)
      .def("read_output", &read_output)
      .def("wait_output", &wait_output, py::arg("after") = io::output_stamp{},
           py::arg("timeout") = 1.0)
      .def("make_handler", &io::mailbox::make_handler, py::arg("rx"))
      .def_property_readonly("input_bytes",
                             [](const io::mailbox& mb) { return mb.settings().input_bytes; })
      .def_property_readonly("output_bytes",
                             [](const io::mailbox& mb) { return mb.settings().output_bytes; })
      .def_property_readonly("depth", [](const io::mailbox& mb) { return mb.settings().depth; });
}

}  // namespace resident::python
