// persistent mode: one kernel, launched once, loops for the run's lifetime
// (src/exec/persistent.hpp).
//
//   persistent_kernel (one block, or a cooperative grid):
//       loop { handler forms; controller step; if released: DAG forms; end-marker step }
//
// Forward progress: the grid is sized from the occupancy API (refused when it does not fit at
// once on the device or the run's partition), so every block is resident from its launch; a
// grid of several blocks is a cooperative launch. The kernel waits only for the sensor's word
// (bounded by poll_ns per pass) and for its own barriers, and leaves on tear-down within one
// iteration.

#include <algorithm>
#include <fstream>

#include "exec/loop_executor.hpp"
#include "exec/modes.hpp"
#include "exec/persistent.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/io/display.hpp"
#include "resident/io/sensor_bridge.hpp"
#include "resident/ops/imaging/convert_resize.hpp"
#include "resident/ops/imaging/csi2_reconstruct.hpp"
#include "resident/ops/imaging/demosaic.hpp"
#include "resident/ops/imaging/raw_isp.hpp"
#include "resident/ops/vector_ops.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

namespace {

const void* port_memory(const Operator& op, const char* name) {
  const port_spec* p = op.spec().find_port(name);
  if (p == nullptr || p->bound == nullptr) {
    throw composition_error("operator '" + op.name() +
                            "': persistent mode found no memory for its port '" + name + "'");
  }
  return p->bound;
}

const char* form_name(device_form f) {
  switch (f) {
    case device_form::mailbox_rx:
      return "mailbox_rx";
    case device_form::mailbox_tx:
      return "mailbox_tx";
    case device_form::copy:
      return "copy";
    case device_form::affine:
      return "affine";
    case device_form::square:
      return "square";
    case device_form::sum_reduce:
      return "sum_reduce";
    case device_form::frame_rx:
      return "frame_rx";
    case device_form::csi2_reconstruct:
      return "csi2_reconstruct";
    case device_form::raw_isp:
      return "raw_isp";
    case device_form::demosaic:
      return "demosaic";
    case device_form::convert_resize:
      return "convert_resize";
    case device_form::display_tx:
      return "display_tx";
  }
  return "?";
}

template <class T>
T* port_as(const Operator& op, const char* name) {
  return static_cast<T*>(const_cast<void*>(port_memory(op, name)));
}

/// The row pitch of an image port, as the operator declared it in setup().
std::size_t image_pitch(const Operator& op, const char* name) {
  const port_spec* p = op.spec().find_port(name);
  if (p == nullptr || !p->image) {
    throw composition_error("operator '" + op.name() + "': persistent mode found no image port '" +
                            name + "'");
  }
  return p->image->pitch();
}

template <class W>
const W& initialized(const Operator& op, const W* workspace) {
  if (workspace == nullptr) {
    throw composition_error("operator '" + op.name() +
                            "': persistent mode found it not initialized (no workspace)");
  }
  return *workspace;
}

/// The camera operators' forms; false when `op` is none of them.
bool camera_form_of(const Operator& op, persistent_step& s) {
  namespace im = ops::imaging;
  if (const auto* rx = dynamic_cast<const io::frame_rx*>(&op)) {
    s.form = device_form::frame_rx;
    s.frame_rx.ring = rx->bridge().device_view();
    if (s.frame_rx.ring.host_delivery != 0U) {
      throw composition_error("operator '" + op.name() +
                              "' (frame_rx): host delivery runs in eager mode only; persistent "
                              "mode needs device delivery");
    }
    s.frame_rx.out = port_as<io::frame_ref>(op, "frame");
  } else if (const auto* c = dynamic_cast<const im::csi2_reconstruct*>(&op)) {
    const im::csi2_workspace& ws = initialized(op, c->workspace());
    s.form = device_form::csi2_reconstruct;
    s.phases = im::detail::csi2_form_phases;
    s.csi2 = im::detail::make_reconstruct_args(
        port_as<const io::frame_ref>(op, "frame"), port_as<std::uint16_t>(op, "bayer"),
        image_pitch(op, "bayer"), port_as<io::frame_integrity>(op, "integrity"), ws);
    s.shared_bytes = im::detail::csi2_form_shared_bytes(ws.line_bytes());
  } else if (const auto* isp = dynamic_cast<const im::raw_isp*>(&op)) {
    s.form = device_form::raw_isp;
    s.isp = im::detail::make_isp_args(port_as<const std::uint16_t>(op, "in"),
                                      port_as<std::uint16_t>(op, "out"), image_pitch(op, "in"),
                                      initialized(op, isp->workspace()));
    s.phases = im::detail::isp_form_phases(s.isp);
    s.shared_bytes = im::detail::isp_form_shared_bytes();
  } else if (const auto* d = dynamic_cast<const im::demosaic*>(&op)) {
    s.form = device_form::demosaic;
    s.demosaic = im::detail::make_demosaic_args(port_as<const std::uint16_t>(op, "bayer"),
                                                image_pitch(op, "bayer"), port_as<void>(op, "rgb"),
                                                image_pitch(op, "rgb"), d->config());
    s.shared_bytes = im::detail::demosaic_form_shared_bytes();
  } else if (const auto* r = dynamic_cast<const im::convert_resize*>(&op)) {
    s.form = device_form::convert_resize;
    s.resize =
        im::detail::make_resize_args(port_as<const void>(op, "in"), image_pitch(op, "in"),
                                     port_as<void>(op, "out"), image_pitch(op, "out"), r->config());
  } else if (const auto* tx = dynamic_cast<const io::display_tx*>(&op)) {
    if (tx->lut() == nullptr) {
      throw composition_error("operator '" + op.name() +
                              "': persistent mode found it not initialized (no encoding table)");
    }
    s.form = device_form::display_tx;
    s.phases = io::detail::display_form_phases;
    s.display.view = tx->target().device_view();
    s.display.rgb = port_memory(op, "rgb");
    s.display.lut = tx->lut();
    s.display.integrity = port_as<const io::frame_integrity>(op, "integrity");
    s.display.rgba16 = tx->rgba16_input();
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<phase_time> summarize_phases(const std::vector<std::uint64_t>& table,
                                         const std::vector<phase_time>& names, std::uint32_t rows) {
  const std::size_t stride = names.size() + 1;
  const std::uint64_t passes = table.empty() ? 0 : table[0];
  // The pass that stopped the loop wrote a row it did not count, over the oldest one.
  const std::uint64_t kept = std::min<std::uint64_t>(passes, rows - 1);
  std::vector<phase_time> out = names;
  std::vector<double> d(kept);
  for (std::size_t k = 0; k < names.size(); ++k) {
    for (std::uint64_t i = 0; i < kept; ++i) {
      const std::uint64_t* row = table.data() + 1 + ((passes - kept + i) % rows) * stride;
      d[i] = static_cast<double>(row[k + 1] - row[k]);
    }
    phase_time& t = out[k];
    t.passes = kept;
    if (kept == 0) continue;
    double sum = 0;
    for (const double x : d) sum += x;
    t.mean_ns = sum / static_cast<double>(kept);
    std::sort(d.begin(), d.end());
    const auto at = [&](double q) { return d[static_cast<std::size_t>(q * (kept - 1) + 0.5)]; };
    t.p50_ns = at(0.5);
    t.p99_ns = at(0.99);
    t.max_ns = d.back();
  }
  return out;
}

persistent_step device_form_of(const Operator& op) {
  persistent_step s;
  const auto ports = [&](const char* in, const char* out) {
    s.in = in != nullptr ? port_memory(op, in) : nullptr;
    s.out = out != nullptr ? const_cast<void*>(port_memory(op, out)) : nullptr;
  };
  if (const auto* rx = dynamic_cast<const io::mailbox_rx*>(&op)) {
    s.form = device_form::mailbox_rx;
    s.mailbox = rx->box().device_view();
    ports(nullptr, "sample");
  } else if (const auto* tx = dynamic_cast<const io::mailbox_tx*>(&op)) {
    s.form = device_form::mailbox_tx;
    s.mailbox = tx->box().device_view();
    ports("in", nullptr);
  } else if (const auto* c = dynamic_cast<const ops::copy*>(&op)) {
    s.form = device_form::copy;
    s.elements = c->elements();
    ports("in", "out");
  } else if (const auto* a = dynamic_cast<const ops::affine*>(&op)) {
    s.form = device_form::affine;
    s.elements = a->elements();
    s.scale = a->scale();
    s.offset = a->offset();
    ports("in", "out");
  } else if (const auto* q = dynamic_cast<const ops::square*>(&op)) {
    s.form = device_form::square;
    s.elements = q->elements();
    ports("in", "out");
  } else if (const auto* r = dynamic_cast<const ops::sum_reduce*>(&op)) {
    s.form = device_form::sum_reduce;
    s.elements = r->elements();
    ports("in", "out");
  } else if (!camera_form_of(op, s)) {
    throw composition_error(
        "persistent mode: operator '" + op.name() +
        "' has no device form (persistent mode runs operators as device functions inside one "
        "kernel; device forms exist for io.mailbox_rx, io.mailbox_tx, ops.copy, ops.affine, "
        "ops.square, ops.sum_reduce and the camera operators io.frame_rx, "
        "ops.csi2_reconstruct, ops.raw_isp, ops.demosaic, ops.convert_resize and "
        "io.display_tx); run this application in while or tail mode");
  }
  return s;
}

namespace {

class persistent_executor final : public resident_executor {
 public:
  persistent_executor(Application& app, const run_options& options)
      : resident_executor(app, execution_mode::persistent, options) {
    for (const Operator* op : plan().handler_order) _steps.push_back(device_form_of(*op));
    for (const Operator* op : plan().body_order) _steps.push_back(device_form_of(*op));
    for (const persistent_step& s : _steps) {
      _kernel.camera = _kernel.camera || is_camera_form(s.form);
      _kernel.sensor_bridge = _kernel.sensor_bridge || s.form == device_form::frame_rx;
      _kernel.shared_bytes = std::max(_kernel.shared_bytes, s.shared_bytes);
    }
    _kernel.timed = options.phase_times;
    _blocks = grid_size(options, _kernel);
    if (options.phase_times) prepare_phase_table(options.phase_rows);
    _device_steps = device_buffer(_steps.size() * sizeof(persistent_step));
    RESIDENT_CUDA_TRY(cudaMemcpy(_device_steps.data(), _steps.data(), _device_steps.size(),
                                 cudaMemcpyHostToDevice));
  }

  ~persistent_executor() override { stop_before_destruction(); }

  /// run_options::persistent_blocks, checked against what fits at once: blocks per SM
  /// (occupancy API) times the SMs of the run's partition, or of the device.
  static int grid_size(const run_options& options, const persistent_kernel_choice& kernel) {
    const int per_sm = persistent_blocks_per_sm(kernel);
    const int sms =
        options.partition ? options.partition->sm_count() : query_device(options.device).sm_count;
    const int fit = per_sm * sms;
    const std::string where = options.partition ? "its partition's " + std::to_string(sms) + " SMs"
                                                : "the device's " + std::to_string(sms) + " SMs";
    if (fit < 1) {
      throw execution_error("persistent mode: one block of " + std::to_string(persistent_threads) +
                            " threads of its kernel does not fit on an SM of this device");
    }
    // "As many as fit" leaves room for the bridge's commit kernel, which the loop waits for.
    const int room = kernel.sensor_bridge ? per_sm * std::min(bridge_reserved_sms, sms - 1) : 0;
    const int blocks = options.persistent_blocks == 0 ? fit - room : options.persistent_blocks;
    if (blocks > fit) {
      throw execution_error("persistent mode: run_options::persistent_blocks is " +
                            std::to_string(blocks) + ", but only " + std::to_string(fit) + " (" +
                            std::to_string(per_sm) + " per SM on " + where +
                            ") fit at once; every block must be resident");
    }
    if (blocks > 1) {
      int cooperative = 0;
      RESIDENT_CUDA_TRY(
          cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, options.device));
      if (cooperative == 0) {
        throw execution_error("persistent mode: " + std::to_string(blocks) +
                              " blocks need a cooperative launch, which this device does not "
                              "support; use persistent_blocks = 1");
      }
    }
    return blocks;
  }

  /// run_options::phase_times: one name per stamped interval of a DAG pass, and the table the
  /// kernel's leader stamps (zeroed: a pass count of 0).
  void prepare_phase_table(std::uint32_t rows) {
    for (std::size_t i = 0; i < plan().body_order.size(); ++i) {
      const persistent_step& s = _steps[plan().handler_order.size() + i];
      for (unsigned p = 0; p < s.phases; ++p) {
        _phase_names.push_back({plan().body_order[i]->name(), form_name(s.form), p});
      }
    }
    _phase_names.push_back({"(end marker)", "", 0});
    _phase_names.push_back({"(closing barrier)", "", 0});
    const auto stride = static_cast<std::uint32_t>(_phase_names.size() + 1);
    _phase_table = device_buffer((1 + std::size_t{rows} * stride) * sizeof(std::uint64_t));
    RESIDENT_CUDA_TRY(cudaMemset(_phase_table.data(), 0, _phase_table.size()));
    res().config.phase_stamps = _phase_table.data_as<std::uint64_t>();
    res().config.phase_stride = stride;
    res().config.phase_rows = rows;
  }

  std::vector<phase_time> phase_times() override {
    if (_phase_names.empty()) return {};
    std::vector<std::uint64_t> table(_phase_table.size() / sizeof(std::uint64_t));
    RESIDENT_CUDA_TRY(
        cudaMemcpy(table.data(), _phase_table.data(), _phase_table.size(), cudaMemcpyDeviceToHost));
    return summarize_phases(table, _phase_names, res().config.phase_rows);
  }

  void write_dot(const std::string& path) const override {
    // No graph: the DOT shows the kernel's loop over the forms, in the order it runs them.
    std::ofstream out(path);
    if (!out) throw execution_error("write_dot: cannot open '" + path + "' for writing");
    out << "// persistent mode: one kernel (" << _blocks << " block(s) of " << persistent_threads
        << " threads) loops over these device forms\ndigraph persistent {\n";
    const std::size_t handler = plan().handler_order.size();
    for (std::size_t i = 0; i < _steps.size(); ++i) {
      const Operator* op = i < handler ? plan().handler_order[i] : plan().body_order[i - handler];
      out << "  s" << i << " [label=\"" << op->name() << " (" << form_name(_steps[i].form)
          << ")\"];\n";
      if (i == handler) out << "  ctrl -> s" << i << " [label=\"released\"];\n";
    }
    out << "  ctrl [label=\"controller step\" shape=box];\n  end [label=\"end-marker step\" "
           "shape=box];\n";
    if (handler > 0) out << "  s" << handler - 1 << " -> ctrl;\n";
    for (std::size_t i = 0; i + 1 < _steps.size(); ++i) {
      if (i + 1 != handler) out << "  s" << i << " -> s" << i + 1 << ";\n";
    }
    if (_steps.size() > handler) out << "  s" << _steps.size() - 1 << " -> end;\n";
    out << "}\n";
  }

 protected:
  void launch_graphs() override {
    const int handler = static_cast<int>(plan().handler_order.size());
    const int body = static_cast<int>(plan().body_order.size());
    launch_persistent(loop(), _device_steps.data_as<persistent_step>(), handler, body, _blocks,
                      _kernel, res().loop_stream.get());
  }
  void leak_graphs() noexcept override {
    (void)new device_buffer(std::move(_device_steps));  // the kernel may still read it
    (void)new device_buffer(std::move(_phase_table));   // and write this
  }

 private:
  std::vector<persistent_step> _steps;
  persistent_kernel_choice _kernel;
  device_buffer _device_steps;
  int _blocks{1};
  std::vector<phase_time> _phase_names;  // op, form and phase of each interval; no times yet
  device_buffer _phase_table;
};

}  // namespace

std::unique_ptr<Executor> make_persistent_executor(Application& app, const run_options& options) {
  return std::make_unique<persistent_executor>(app, options);
}

}  // namespace resident::detail
