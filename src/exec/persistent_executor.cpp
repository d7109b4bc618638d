// persistent mode: one kernel, launched once, loops for the run's lifetime
// (resident/app/persistent_kernel.cuh).
//
//   persistent_kernel (one block, or a cooperative grid):
//       loop { handler forms; controller step; if released: DAG forms; end-marker step }
//
// Each operator offers its device form (Operator::persistent_form); the executor knows nothing
// else of it. The kernel is the smallest of the kernels the forms name (or that were
// registered) that holds every form of the DAG.
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
#include "resident/app/device_form.hpp"
#include "resident/app/error.hpp"
#include "resident/app/plan.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/detail/phase_table.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

namespace {

/// `op`'s device form; throws composition_error naming the operator when it has none.
device_form form_of(const Operator& op) {
  std::optional<device_form> f = op.persistent_form();
  if (!f) {
    throw composition_error(
        "persistent mode: operator '" + op.name() +
        "' has no device form (persistent mode runs operators as device functions inside one "
        "kernel; an operator offers one by overriding Operator::persistent_form(), see "
        "docs/api.md, \"Device forms\"); run this application in while or tail mode");
  }
  if (f->type == nullptr) {
    throw composition_error("persistent mode: operator '" + op.name() +
                            "' returned a device form without a form type");
  }
  return *f;
}

bool holds_all(const persistent_kernel_set& k, const std::vector<device_form>& forms) {
  return std::all_of(forms.begin(), forms.end(),
                     [&](const device_form& f) { return k.index_of(f.type) >= 0; });
}

/// The smallest kernel, among those the forms name and those registered, that holds every
/// form; throws composition_error naming the forms when none does.
const persistent_kernel_set& kernel_for(const std::vector<device_form>& forms,
                                        const std::vector<const Operator*>& ops) {
  std::vector<const persistent_kernel_set*> candidates = registered_persistent_kernels();
  for (const device_form& f : forms) {
    if (f.kernels != nullptr) candidates.push_back(f.kernels);
  }
  const persistent_kernel_set* best = nullptr;
  for (const persistent_kernel_set* k : candidates) {
    if (holds_all(*k, forms) && (best == nullptr || k->forms.size() < best->forms.size())) best = k;
  }
  if (best != nullptr) return *best;
  std::string listed;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    listed += (i == 0 ? "" : ", ") + ops[i]->name() + " (" + forms[i].name() + ")";
  }
  throw composition_error(
      "persistent mode: no persistent kernel runs all of this DAG's device forms together: " +
      listed +
      ". A kernel holds the forms it was compiled with: instantiate one that lists them all "
      "(resident::persistent_kernels<...>() in a .cu file) and pass it to "
      "resident::register_persistent_kernel");
}

/// A phase that ends with phase_end::last_block hands the next form nothing it wrote (only the
/// last block waits for the others). A form whose every phase ends so orders none of its writes
/// before the next form: refuses, by name, a body in which a later operator of the same pass
/// reads such a form's outputs. (A form with a barrier-ended phase may write its outputs there;
/// which phase writes them is the form's contract, docs/api.md.)
void check_last_block_consumers(const dag_plan& plan, const std::vector<device_form>& forms) {
  const std::size_t handler = plan.handler_order.size();
  for (std::size_t i = 0; i < plan.body_order.size(); ++i) {
    for (const std::size_t j : plan.body_producers[i]) {
      const device_form& f = forms[handler + j];
      const std::uint32_t all_phases = f.phases >= 32U ? ~0U : (1U << f.phases) - 1U;
      if ((f.last_block_phases & all_phases) != all_phases) continue;
      throw composition_error(
          "persistent mode: operator '" + plan.body_order[j]->name() + "' (" + f.name() +
          ") ends every phase with phase_end::last_block, so nothing it writes is ordered before "
          "the next form, but operator '" +
          plan.body_order[i]->name() +
          "' reads its output in the same pass; end that phase with a barrier, or write what "
          "later operators read in an earlier phase");
    }
  }
}

/// The kernel's step for form `f` (the form's index in kernel `k`).
form_step step_of(const device_form& f, const persistent_kernel_set& k) {
  form_step s;
  s.form = static_cast<std::uint32_t>(k.index_of(f.type));
  s.phases = f.phases;
  s.last_block_phases = f.last_block_phases;
  std::copy(f.args.begin(), f.args.end(), s.args);
  return s;
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

namespace {

class persistent_executor final : public resident_executor {
 public:
  persistent_executor(Application& app, const run_options& options)
      : resident_executor(app, execution_mode::persistent, options) {
    for (const Operator* op : plan().handler_order) _ops.push_back(op);
    for (const Operator* op : plan().body_order) _ops.push_back(op);
    for (const Operator* op : _ops) _forms.push_back(form_of(*op));
    check_last_block_consumers(plan(), _forms);
    _kernel = &kernel_for(_forms, _ops);
    std::uint32_t reserve_sms = 0;
    for (const device_form& f : _forms) {
      _shared_bytes = std::max(_shared_bytes, f.shared_bytes);
      reserve_sms = std::max(reserve_sms, f.reserve_sms);
    }
    _timed = options.phase_times;
    _blocks = grid_size(options, reserve_sms);
    if (options.phase_times) prepare_phase_table(options.phase_rows);
    upload_steps();
  }

  ~persistent_executor() override { stop_before_destruction(); }

  /// run_options::persistent_blocks, checked against what fits at once: blocks per SM
  /// (occupancy API) times the SMs of the run's partition, or of the device.
  int grid_size(const run_options& options, std::uint32_t reserve_sms) const {
    const int per_sm = _kernel->blocks_per_sm(_timed, _shared_bytes);
    const int sms =
        options.partition ? options.partition->sm_count() : query_device(options.device).sm_count;
    const int fit = per_sm * sms;
    const std::string where = options.partition ? "its partition's " + std::to_string(sms) + " SMs"
                                                : "the device's " + std::to_string(sms) + " SMs";
    if (fit < 1) {
      throw execution_error("persistent mode: one block of " +
                            std::to_string(persistent_block_threads) +
                            " threads of its kernel does not fit on an SM of this device");
    }
    // "As many as fit" leaves room for kernels outside the loop that a form waits for.
    const int room = per_sm * std::min(static_cast<int>(reserve_sms), sms - 1);
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

  /// The steps in device memory, and one zeroed arrival count per step (last-block phases).
  void upload_steps() {
    _arrivals = device_buffer(std::max<std::size_t>(_forms.size(), 1) * sizeof(std::uint32_t));
    RESIDENT_CUDA_TRY(cudaMemset(_arrivals.data(), 0, _arrivals.size()));
    std::vector<form_step> steps;
    for (std::size_t i = 0; i < _forms.size(); ++i) {
      steps.push_back(step_of(_forms[i], *_kernel));
      steps.back().arrivals = _arrivals.data_as<std::uint32_t>() + i;
    }
    _device_steps = device_buffer(std::max<std::size_t>(steps.size(), 1) * sizeof(form_step));
    if (!steps.empty()) {
      RESIDENT_CUDA_TRY(cudaMemcpy(_device_steps.data(), steps.data(),
                                   steps.size() * sizeof(form_step), cudaMemcpyHostToDevice));
    }
  }

  /// run_options::phase_times: one name per stamped interval of a DAG pass, and the table the
  /// kernel's leader stamps (zeroed: a pass count of 0).
  void prepare_phase_table(std::uint32_t rows) {
    const std::size_t handler = plan().handler_order.size();
    for (std::size_t i = handler; i < _forms.size(); ++i) {
      for (unsigned p = 0; p < _forms[i].phases; ++p) {
        _phase_names.push_back({_ops[i]->name(), _forms[i].name(), p});
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
    out << "// persistent mode: one kernel (" << _blocks << " block(s) of "
        << persistent_block_threads << " threads) loops over these device forms\n"
        << "digraph persistent {\n";
    const std::size_t handler = plan().handler_order.size();
    for (std::size_t i = 0; i < _forms.size(); ++i) {
      out << "  s" << i << " [label=\"" << _ops[i]->name() << " (" << _forms[i].name() << ")\"];\n";
      if (i == handler) out << "  ctrl -> s" << i << " [label=\"released\"];\n";
    }
    out << "  ctrl [label=\"controller step\" shape=box];\n  end [label=\"end-marker step\" "
           "shape=box];\n";
    if (handler > 0) out << "  s" << handler - 1 << " -> ctrl;\n";
    for (std::size_t i = 0; i + 1 < _forms.size(); ++i) {
      if (i + 1 != handler) out << "  s" << i << " -> s" << i + 1 << ";\n";
    }
    if (_forms.size() > handler) out << "  s" << _forms.size() - 1 << " -> end;\n";
    out << "}\n";
  }

 protected:
  void launch_graphs() override {
    persistent_launch l;
    l.loop = loop();
    l.steps = _device_steps.data_as<form_step>();
    l.handler_steps = static_cast<int>(plan().handler_order.size());
    l.body_steps = static_cast<int>(plan().body_order.size());
    l.blocks = _blocks;
    l.shared_bytes = _shared_bytes;
    l.timed = _timed;
    l.stream = res().loop_stream.get();
    _kernel->launch(l);
  }
  void leak_graphs() noexcept override {
    (void)new device_buffer(std::move(_device_steps));  // the kernel may still read it
    (void)new device_buffer(std::move(_arrivals));      // and write these
    (void)new device_buffer(std::move(_phase_table));
  }

 private:
  std::vector<const Operator*> _ops;  // the handler's, then the DAG's, in the order they run
  std::vector<device_form> _forms;    // one per operator
  const persistent_kernel_set* _kernel{};
  std::size_t _shared_bytes{};
  bool _timed{false};
  device_buffer _device_steps;
  device_buffer _arrivals;
  int _blocks{1};
  std::vector<phase_time> _phase_names;  // op, form and phase of each interval; no times yet
  device_buffer _phase_table;
};

}  // namespace

std::unique_ptr<Executor> make_persistent_executor(Application& app, const run_options& options) {
  return std::make_unique<persistent_executor>(app, options);
}

}  // namespace resident::detail
