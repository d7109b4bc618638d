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
#include "resident/exec/run_options.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/mailbox.hpp"

namespace py = pybind11;

namespace resident::python {
namespace {

// A C-contiguous view of any buffer (bytes, bytearray, array.array, NumPy arrays of any shape),
// released on scope exit. A strided view would not be the bytes the caller means, so it fails
// (BufferError) rather than being copied.
class contiguous_view {
 public:
  contiguous_view(const py::object& buffer, bool writable) {
    const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(buffer.ptr(), &_view, flags) != 0) throw py::error_already_set();
  }
  contiguous_view(const contiguous_view&) = delete;
  contiguous_view& operator=(const contiguous_view&) = delete;
  ~contiguous_view() { PyBuffer_Release(&_view); }
  [[nodiscard]] std::span<std::byte> bytes() const noexcept {
    return {static_cast<std::byte*>(_view.buf), static_cast<std::size_t>(_view.len)};
  }

 private:
  Py_buffer _view{};
};

std::uint64_t publish(io::mailbox& mb, const py::object& payload) {
  const contiguous_view view(payload, false);
  py::gil_scoped_release release;  // the view keeps the buffer alive and unmoved
  return mb.publish(view.bytes());
}

// The output goes into `out` when given (a writable buffer of output_bytes, reused across calls
// by an actuator loop), else into a new bytes object.
std::span<std::byte> output_target(const io::mailbox& mb, std::span<std::byte> out) {
  if (out.size() != mb.settings().output_bytes) {
    throw py::value_error("Mailbox: out is " + std::to_string(out.size()) +
                          " bytes; the mailbox's outputs are " +
                          std::to_string(mb.settings().output_bytes));
  }
  return out;
}

py::tuple read_output(const io::mailbox& mb, const py::object& out) {
  if (!out.is_none()) {
    const contiguous_view view(out, true);
    return py::make_tuple(mb.read_output(output_target(mb, view.bytes())), out);
  }
  std::string copy(mb.settings().output_bytes, '\0');
  const io::output_stamp s = mb.read_output(std::as_writable_bytes(std::span(copy)));
  return py::make_tuple(s, py::bytes(copy));
}

io::output_stamp wait_into(const io::mailbox& mb, const io::output_stamp& after,
                           std::span<std::byte> out, double timeout_s) {
  const auto target = output_target(mb, out);  // checked before the GIL goes
  const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(timeout_s));
  py::gil_scoped_release release;  // busy-polls: a Python sensor thread runs meanwhile
  return mb.wait_output(after, target, timeout);
}

py::tuple wait_output(const io::mailbox& mb, const io::output_stamp& after, double timeout_s,
                      const py::object& out) {
  if (!out.is_none()) {
    const contiguous_view view(out, true);
    return py::make_tuple(wait_into(mb, after, view.bytes(), timeout_s), out);
  }
  std::string copy(mb.settings().output_bytes, '\0');
  const io::output_stamp s =
      wait_into(mb, after, std::as_writable_bytes(std::span(copy)), timeout_s);
  return py::make_tuple(s, py::bytes(copy));
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

// A host loop in place of the GPU loop (a CPU-driven peer). Short calls: the GIL stays held.
std::uint64_t read_input(const io::mailbox& mb, std::uint64_t after, const py::object& out,
                         const std::string& policy) {
  const contiguous_view view(out, true);
  if (view.bytes().size() != mb.settings().input_bytes) {
    throw py::value_error("Mailbox.read_input: out is " + std::to_string(view.bytes().size()) +
                          " bytes; the mailbox's samples are " +
                          std::to_string(mb.settings().input_bytes));
  }
  return mb.read_input(after, view.bytes(), resident::parse_sample_policy(policy));
}

void commit_output(io::mailbox& mb, std::uint64_t seq, const py::object& payload) {
  const contiguous_view view(payload, false);
  if (view.bytes().size() != mb.settings().output_bytes) {
    throw py::value_error(
        "Mailbox.commit_output: payload is " + std::to_string(view.bytes().size()) +
        " bytes; the mailbox's outputs are " + std::to_string(mb.settings().output_bytes));
  }
  mb.commit_output_from_host(seq, view.bytes());
}

}  // namespace

void bind_mailbox(py::module_& m) {
  bind_stamp(m);
  py::class_<io::mailbox, std::shared_ptr<io::mailbox>>(m, "Mailbox")
      .def(py::init([](std::size_t input_bytes, std::size_t output_bytes, std::size_t depth,
                       const std::string& format, int device) {
             return std::make_shared<io::mailbox>(
                 io::mailbox::config{.input_bytes = input_bytes,
                                     .output_bytes = output_bytes,
                                     .depth = depth,
                                     .format = io::parse_mailbox_format(format),
                                     .device = device});
           }),
           py::arg("input_bytes"), py::arg("output_bytes"), py::arg("depth") = 4,
           py::arg("format") = "automatic", py::arg("device") = 0,
           "format: 'automatic' (one tagged line per sample and for the output where they fit: "
           "samples up to 49 bytes, outputs up to 42), 'lines' or 'sequence-lock'; device: the "
           "GPU of the loop that uses it (the run option device)")
      .def_property_readonly(
          "format", [](const io::mailbox& mb) { return std::string(io::to_string(mb.format())); })
      .def("publish", &publish, py::arg("payload"))
      .def_property_readonly("published", &io::mailbox::published)
      .def_property_readonly("output_seq", &io::mailbox::output_seq)
      .def("latest_output", &io::mailbox::latest_output,
           "The latest whole output's stamp. Raises ExecutionError when no commit is whole "
           "within 1 s (a writer stopped mid-commit), never returns a torn one.")
      .def("read_output", &read_output, py::arg("out") = py::none(),
           "A consistent copy of the latest output and its stamp; raises ExecutionError as "
           "latest_output does.")
      .def("wait_output", &wait_output, py::arg("after") = io::output_stamp{},
           py::arg("timeout") = 1.0, py::arg("out") = py::none())
      .def("make_handler", &io::mailbox::make_handler, py::arg("rx"))
      .def("read_input", &read_input, py::arg("after"), py::arg("out"),
           py::arg("policy") = "skip-duplicate",
           "A host loop's read of the sample `policy` takes after `after` (\"every\": the next "
           "one; otherwise the newest) into `out` (input_bytes); its sequence number, 0 when "
           "there is none newer. Never while a loop runs.")
      .def("commit_output", &commit_output, py::arg("seq"), py::arg("payload"),
           "A host loop's commit of sample `seq`'s output, as the egress does on the device.")
      .def_property_readonly("input_bytes",
                             [](const io::mailbox& mb) { return mb.settings().input_bytes; })
      .def_property_readonly("output_bytes",
                             [](const io::mailbox& mb) { return mb.settings().output_bytes; })
      .def_property_readonly("depth", [](const io::mailbox& mb) { return mb.settings().depth; });

  py::class_<io::device_link, std::shared_ptr<io::device_link>>(
      m, "DeviceLink",
      "A link between loops on two GPUs (or two loops on one), no host between them: "
      "io.link_tx in the producer's loop writes each sample into a ring in the consumer GPU's "
      "memory, and io.link_rx, the consumer loop's data-ready handler, takes it from there, "
      "with the mailbox's policies and exact accounting.")
      .def(py::init(
               [](std::size_t bytes, std::size_t depth, int producer_device, int consumer_device) {
                 return std::make_shared<io::device_link>(
                     io::device_link::config{bytes, depth, producer_device, consumer_device});
               }),
           py::arg("bytes"), py::arg("depth") = 4, py::arg("producer_device") = 0,
           py::arg("consumer_device") = 0,
           "bytes: one sample's payload; depth: ring slots; the devices: each loop's run option "
           "device. Enables peer access from the producer to the consumer; devices that cannot "
           "reach each other are refused by name.")
      .def("make_handler", &io::device_link::make_handler, py::arg("rx"),
           "The consumer loop's data-ready handler around `rx` (an io.link_rx of this link).")
      .def_property_readonly("published", &io::device_link::published,
                             "The sequence number the producer published last.")
      .def_property_readonly("bytes", [](const io::device_link& l) { return l.settings().bytes; })
      .def_property_readonly("depth", [](const io::device_link& l) { return l.settings().depth; })
      .def_property_readonly("producer_device",
                             [](const io::device_link& l) { return l.settings().producer_device; })
      .def_property_readonly("consumer_device",
                             [](const io::device_link& l) { return l.settings().consumer_device; });
}

}  // namespace resident::python
