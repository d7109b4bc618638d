// The camera pipeline's endpoints for Python: the emulated sensor bridge (the data-ready side)
// and the emulated display (the egress side). Their operators (io.frame_rx, io.display_tx) are
// make_operator kinds (application.cpp); the imaging operators between them too.

#include <pybind11/stl.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "resident/io/display.hpp"
#include "resident/io/sensor_bridge.hpp"

namespace py = pybind11;

namespace resident::python {
namespace {

template <class E>
E choose(const std::string& what, const std::string& value,
         const std::vector<std::pair<std::string, E>>& options) {
  std::string known;
  for (const auto& [name, e] : options) {
    if (name == value) return e;
    known += (known.empty() ? "" : ", ") + name;
  }
  throw py::value_error(what + " is '" + value + "'; one of " + known);
}

// (name, value) pairs of an enumeration named by to_string(), for choose().
template <class E, std::size_t N>
std::vector<std::pair<std::string, E>> named(const std::array<E, N>& all) {
  std::vector<std::pair<std::string, E>> out;
  for (const E e : all) out.emplace_back(std::string(to_string(e)), e);
  return out;
}

// An (height, width, 3) uint8 array (or any C-contiguous buffer of that shape) as the photograph.
io::rgb8_image photo_of(const py::buffer& photo) {
  const py::buffer_info info = photo.request();
  const bool c_contiguous = info.ndim == 3 && info.strides[2] == 1 && info.strides[1] == 3 &&
                            info.strides[0] == static_cast<py::ssize_t>(info.shape[1] * 3);
  if (info.itemsize != 1 || info.ndim != 3 || info.shape[2] != 3 || !c_contiguous) {
    throw py::value_error(
        "SensorBridge: photo must be a C-contiguous (height, width, 3) array of "
        "8-bit RGB");
  }
  io::rgb8_image image;
  image.width = static_cast<std::uint32_t>(info.shape[1]);
  image.height = static_cast<std::uint32_t>(info.shape[0]);
  const auto* data = static_cast<const std::uint8_t*>(info.ptr);
  image.rgb.assign(data, data + info.size);
  return image;
}

std::shared_ptr<io::sensor_bridge> make_bridge(const py::buffer& photo, std::uint32_t width,
                                               std::uint32_t height, const std::string& format,
                                               const std::string& bayer, double rate_hz,
                                               std::uint32_t ring_slots,
                                               const std::string& delivery,
                                               std::uint32_t distinct_frames, int cpu) {
  io::sensor_config c;
  c.width = width;
  c.height = height;
  c.format = choose("format", format, named(io::csi2::all_raw_formats));
  c.order = choose("bayer", bayer, named(io::all_bayer_orders));
  c.rate_hz = rate_hz;
  c.ring_slots = ring_slots;
  c.delivery = choose<io::frame_delivery>(
      "delivery", delivery,
      {{"device", io::frame_delivery::device}, {"host", io::frame_delivery::host}});
  c.distinct_frames = distinct_frames;
  c.cpu = cpu;
  const io::rgb8_image image = photo_of(photo);
  py::gil_scoped_release release;  // builds the frames (host work) and allocates the ring
  return std::make_shared<io::sensor_bridge>(c, image);
}

std::shared_ptr<io::display> make_display(std::uint32_t width, std::uint32_t height,
                                          double refresh_hz, const std::string& sync,
                                          const std::string& present, double min_refresh_hz) {
  io::display_config c;
  c.width = width;
  c.height = height;
  c.refresh_hz = refresh_hz;
  c.min_refresh_hz = min_refresh_hz;
  c.sync = choose<io::display_sync>(
      "sync", sync, {{"fixed", io::display_sync::fixed}, {"variable", io::display_sync::variable}});
  c.mode = choose<io::present_mode>(
      "present", present,
      {{"flip", io::present_mode::flip}, {"front_buffer", io::present_mode::front_buffer}});
  return std::make_shared<io::display>(c);
}

py::dict display_counters(const io::display& d) {
  const io::display_counters c = d.counters();
  return py::dict(py::arg("scanouts") = c.scanouts, py::arg("flips_latched") = c.flips_latched,
                  py::arg("flips_replaced") = c.flips_replaced,
                  py::arg("frames_written") = c.frames_written,
                  py::arg("corrupt_frames") = c.corrupt_frames,
                  py::arg("rewritten_frames") = c.rewritten_frames,
                  py::arg("events_dropped") = c.events_dropped);
}

py::bytes copy_front(const io::display& d) {
  std::vector<std::uint8_t> pixels(d.image_bytes());
  {
    py::gil_scoped_release release;
    d.copy_front(pixels);
  }
  return py::bytes(reinterpret_cast<const char*>(pixels.data()), pixels.size());
}

void bind_bridge(py::module_& m) {
  py::class_<io::sensor_bridge, std::shared_ptr<io::sensor_bridge>>(m, "SensorBridge")
      .def(py::init(&make_bridge), py::arg("photo"), py::kw_only(), py::arg("width") = 1920,
           py::arg("height") = 1080, py::arg("format") = "raw12", py::arg("bayer") = "rggb",
           py::arg("rate_hz") = 60.0, py::arg("ring_slots") = 4, py::arg("delivery") = "device",
           py::arg("distinct_frames") = 8, py::arg("cpu") = -1)
      .def("start", &io::sensor_bridge::start, py::call_guard<py::gil_scoped_release>())
      .def("stop", &io::sensor_bridge::stop, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("running", &io::sensor_bridge::running)
      .def_property_readonly("produced", &io::sensor_bridge::produced)
      .def_property_readonly("frame_bytes", &io::sensor_bridge::frame_bytes)
      .def_property_readonly("failure", &io::sensor_bridge::failure)
      .def(
          "inject_bit_flip",
          [](io::sensor_bridge& b, std::size_t offset, std::uint8_t mask) {
            b.inject({io::bridge_fault::kind::flip_bits, offset, mask, {}});
          },
          py::arg("offset"), py::arg("mask"), "XOR `mask` into byte `offset` of the next frame")
      .def(
          "inject_bad_status",
          [](io::sensor_bridge& b) {
            b.inject({io::bridge_fault::kind::bad_status, 0, 0, {}});
          },
          "the next frame's record says link_error")
      .def(
          "inject_stall",
          [](io::sensor_bridge& b, double seconds) {
            b.inject({io::bridge_fault::kind::stall, 0, 0,
                      std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6))});
          },
          py::arg("seconds"), "the sensor pauses this long at the next frame start")
      .def("make_handler", &io::sensor_bridge::make_handler, py::arg("rx"));
}

void bind_display(py::module_& m) {
  py::class_<io::display, std::shared_ptr<io::display>>(m, "Display")
      .def(py::init(&make_display), py::kw_only(), py::arg("width") = 1920,
           py::arg("height") = 1080, py::arg("refresh_hz") = 240.0, py::arg("sync") = "variable",
           py::arg("present") = "flip", py::arg("min_refresh_hz") = 30.0)
      .def("start", &io::display::start, py::call_guard<py::gil_scoped_release>())
      .def(
          "stop",
          [](io::display& d, int timeout_ms) { d.stop(std::chrono::milliseconds(timeout_ms)); },
          py::arg("timeout_ms") = 1000, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("running", &io::display::running)
      .def("counters", &display_counters)
      .def("copy_front", &copy_front, "the screen now: width * height * 4 bytes of RGBA8")
      .def_property_readonly("image_bytes", &io::display::image_bytes);
}

}  // namespace

void bind_camera(py::module_& m) {
  bind_bridge(m);
  bind_display(m);
}

}  // namespace resident::python
