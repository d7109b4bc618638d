// The camera operators' device forms (persistent mode) and the kernel that runs them: the
// camera's endpoints (io.frame_rx, io.display_tx), the imaging operators, and the mailbox's and
// vector operators' forms. It asks for two blocks per SM (at most 64 registers, some spilled):
// the forms are latency-bound (a line's serial CRC chain, a demosaic tile pair per block), and
// twice the blocks in flight took a 1080p frame from 91.1 to 85.3 us and a 4K one from 240.3 to
// 207.2 us on the H200, against one block per SM (116 registers). docs/findings.md, "Camera
// pipeline".

#include "io/display_forms.cuh"
#include "io/sensor_bridge_forms.cuh"
#include "ops/imaging/csi2_forms.cuh"
#include "ops/imaging/demosaic_forms.cuh"
#include "ops/imaging/forms.hpp"
#include "ops/imaging/isp_forms.cuh"
#include "ops/imaging/resize_forms.cuh"
#include "resident/app/error.hpp"
#include "resident/io/mailbox_forms.cuh"
#include "resident/ops/vector_forms.cuh"

namespace resident::ops::imaging {

namespace {

// The camera forms assume the persistent kernel's block size.
static_assert(detail::csi2_form::max_threads == persistent_block_threads);
static_assert(detail::isp_form::max_threads == persistent_block_threads);
static_assert(detail::demosaic_form::max_threads == persistent_block_threads);

struct csi2_reconstruct_form {
  static constexpr const char* name = "imaging.csi2_reconstruct";
  using args = detail::reconstruct_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    detail::csi2_form::run(a, ctx.phase, ctx.scratch);
  }
};

struct raw_isp_form {
  static constexpr const char* name = "imaging.raw_isp";
  using args = detail::isp_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    detail::isp_form::run(a, ctx.phase, ctx.scratch);
  }
};

struct demosaic_form {
  static constexpr const char* name = "imaging.demosaic";
  using args = detail::demosaic_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    detail::demosaic_form::run(a, ctx.scratch);
  }
};

struct convert_resize_form {
  static constexpr const char* name = "imaging.convert_resize";
  using args = detail::resize_args;
  __device__ static void run(const args& a, const form_context&) { detail::resize_form::run(a); }
};

const persistent_kernel_set& camera_kernels() {
  return resident::detail::persistent_kernel_set_of<
      2, io::mailbox_rx_form, io::mailbox_tx_form, copy_form, affine_form, square_form,
      sum_reduce_form, io::frame_rx_form, csi2_reconstruct_form, raw_isp_form, demosaic_form,
      convert_resize_form, io::display_tx_form>::set;
}

template <class W>
const W& initialized(const Operator& op, const W* workspace) {
  if (workspace == nullptr) {
    throw composition_error("operator '" + op.name() +
                            "': persistent mode found it not initialized (no workspace)");
  }
  return *workspace;
}

}  // namespace

std::optional<device_form> csi2_reconstruct::persistent_form() const {
  const csi2_workspace& ws = initialized(*this, workspace());
  const auto a = detail::make_reconstruct_args(bound<const io::frame_ref>("frame"),
                                               bound<std::uint16_t>("bayer"), bound_pitch("bayer"),
                                               bound<io::frame_integrity>("integrity"), ws);
  return device_form::of<csi2_reconstruct_form>(a, &camera_kernels())
      .with_phases(detail::csi2_form_phases)
      .with_shared_bytes(detail::csi2_form_shared_bytes(ws.line_bytes()));
}

std::optional<device_form> raw_isp::persistent_form() const {
  const auto a =
      detail::make_isp_args(bound<const std::uint16_t>("in"), bound<std::uint16_t>("out"),
                            bound_pitch("in"), initialized(*this, workspace()));
  return device_form::of<raw_isp_form>(a, &camera_kernels())
      .with_phases(detail::isp_form_phases(a))
      .with_shared_bytes(detail::isp_form_shared_bytes());
}

std::optional<device_form> demosaic::persistent_form() const {
  const auto a =
      detail::make_demosaic_args(bound<const std::uint16_t>("bayer"), bound_pitch("bayer"),
                                 bound<void>("rgb"), bound_pitch("rgb"), config());
  return device_form::of<demosaic_form>(a, &camera_kernels())
      .with_shared_bytes(detail::demosaic_form_shared_bytes());
}

std::optional<device_form> convert_resize::persistent_form() const {
  const auto a = detail::make_resize_args(bound<const void>("in"), bound_pitch("in"),
                                          bound<void>("out"), bound_pitch("out"), config());
  return device_form::of<convert_resize_form>(a, &camera_kernels());
}

}  // namespace resident::ops::imaging
