#include "resident/ops/catalog.hpp"

#include <algorithm>
#include <stdexcept>

#include "resident/app/error.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/display.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/io/sensor_bridge.hpp"
#include "resident/ops/imaging.hpp"
#include "resident/ops/matmul.hpp"
#include "resident/ops/vector_ops.hpp"
#ifdef RESIDENT_HAVE_NPP
#include "resident/ops/imaging/npp_demosaic.hpp"
#endif

namespace resident::ops {

namespace {

template <class T>
std::shared_ptr<T> need(const std::shared_ptr<T>& endpoint, const char* kind, const char* what) {
  if (!endpoint) throw std::invalid_argument(std::string(kind) + " needs " + what);
  return endpoint;
}

template <class Op>
operator_kind plain(std::string name, std::string summary, bool form) {
  return {std::move(name), std::move(summary), kind_input::none, form,
          [](const kind_inputs&) -> std::shared_ptr<Operator> { return std::make_shared<Op>(); }};
}

std::vector<operator_kind> make_catalog() {
  std::vector<operator_kind> c{
      plain<copy>("ops.copy", "out = in (fp32 vector)", true),
      plain<affine>("ops.affine", "out = scale * in + offset (fp32 vector)", true),
      plain<square>("ops.square", "out = in * in (fp32 vector)", true),
      plain<sum_reduce>("ops.sum_reduce", "out[0] = the sum of in, in a fixed order", true),
      plain<matmul>("ops.matmul", "out = in x W, n x n fp32 through cuBLAS (no TF32)", false),
      {"ops.external_source", "an output over memory the caller owns", kind_input::memory, false,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<external_source>(in.memory, in.bytes);
       }},
      {"ops.external_sink", "an input over memory the caller owns", kind_input::memory, false,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<external_sink>(in.memory, in.bytes);
       }},
      {"ops.captured_graph", "a CUDA graph captured elsewhere (cuBLAS, cuDNN, PyTorch)",
       kind_input::captured_graph, false,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         // A null graph is refused by the operator's setup(), which names the operator.
         return std::make_shared<captured_graph>(in.graph, in.ports);
       }},
      plain<imaging::csi2_reconstruct>("imaging.csi2_reconstruct",
                                       "CSI-2 packets -> Bayer image, with the integrity checks",
                                       true),
      plain<imaging::raw_isp>("imaging.raw_isp", "black level and white balance on Bayer", true),
      plain<imaging::demosaic>("imaging.demosaic", "Bayer -> RGB (bilinear or Malvar-He-Cutler)",
                               true),
      plain<imaging::convert_resize>("imaging.convert_resize",
                                     "RGB -> resized planar or interleaved tensor", true),
#ifdef RESIDENT_HAVE_NPP
      plain<imaging::npp_demosaic>("imaging.npp_demosaic", "NPP's bilinear demosaic", false),
#endif
      {"io.mailbox_rx", "the data-ready handler of a host-mapped mailbox", kind_input::mailbox,
       true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<io::mailbox_rx>(need(in.mailbox, "io.mailbox_rx", "a mailbox"));
       }},
      {"io.mailbox_tx", "the egress to a host-mapped mailbox", kind_input::mailbox, true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<io::mailbox_tx>(need(in.mailbox, "io.mailbox_tx", "a mailbox"));
       }},
      {"io.link_rx", "the data-ready handler of a device link's ring (the consumer GPU's side)",
       kind_input::device_link, true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<io::link_rx>(need(in.link, "io.link_rx", "a device link"));
       }},
      {"io.link_tx", "the egress into a device link's ring on another GPU (the producer's side)",
       kind_input::device_link, true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<io::link_tx>(need(in.link, "io.link_tx", "a device link"));
       }},
      {"io.frame_rx", "the data-ready handler of a sensor bridge's frame ring",
       kind_input::sensor_bridge, true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<io::frame_rx>(need(in.bridge, "io.frame_rx", "a sensor bridge"));
       }},
      {"io.display_tx", "the egress to an emulated display", kind_input::display, true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<io::display_tx>(need(in.display, "io.display_tx", "a display"));
       }},
      {"imaging.camera_isp",
       "CSI-2 slot -> display scanout in one pass: reconstruction with every check, black "
       "level, white balance, demosaic, gamma; the commit waits for the frame's verdict",
       kind_input::display, true,
       [](const kind_inputs& in) -> std::shared_ptr<Operator> {
         return std::make_shared<imaging::camera_isp>(
             need(in.display, "imaging.camera_isp", "a display"));
       }},
  };
  std::sort(c.begin(), c.end(),
            [](const operator_kind& a, const operator_kind& b) { return a.name < b.name; });
  return c;
}

}  // namespace

const std::vector<operator_kind>& operator_catalog() {
  static const std::vector<operator_kind> catalog = make_catalog();
  return catalog;
}

const operator_kind& operator_kind_named(std::string_view name) {
  for (const operator_kind& k : operator_catalog()) {
    if (k.name == name) return k;
  }
  std::string known;
  for (const operator_kind& k : operator_catalog()) known += (known.empty() ? "" : ", ") + k.name;
  throw composition_error("unknown operator kind '" + std::string(name) + "'; kinds: " + known);
}

std::vector<parameter_info> kind_parameters(const operator_kind& kind) {
  if (kind.input != kind_input::none) return {};
  const std::shared_ptr<Operator> op = kind.make({});
  OperatorSpec spec(kind.name, {});
  op->setup(spec);
  return spec.parameters();
}

}  // namespace resident::ops
