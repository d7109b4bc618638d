// Best-effort work from Python: the preempt word a real-time loop raises (PreemptSignal, also
// the run option `preempt`), a translated model run over and over by a preempting runner
// (BestEffortRunner), and a captured CUDA graph gated at its kernel boundaries (GatedGraph).

#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/partition/green_context.hpp"
#include "resident/sched/gated_graph.hpp"
#include "resident/sched/preemption.hpp"
#include "resident/sched/stamp_ring.hpp"
#include "sched_bindings.hpp"

namespace py = pybind11;

namespace resident::python {

namespace {

/// A runner over a translated model's calls on a stream of its own (the lowest priority; in a
/// partition when one is given: its stream, and the scheduler thread in its context).
struct runner {
  runner(const translated& m, const sched::preempt_signal& signal, std::size_t window,
         std::int32_t bounded_grid_per_sm, bool sequential, bool preemptible,
         const partition_handle* part, std::size_t activity_stamps,
         const sched::spatial_share* spatial)
      : part(part != nullptr ? part->p : nullptr),
        work(part != nullptr ? part->p->make_stream(0) : resident::stream(0)),
        trace(activity_stamps > 0 ? zeroed_device_buffer(sizeof(sched::be_trace), current_device())
                                  : device_buffer{}),
        activity(activity_stamps > 0 ? std::optional<sched::stamp_ring>(activity_stamps)
                                     : std::nullopt),
        r(m.model.calls(), work.get(), &signal,
          options(window, bounded_grid_per_sm, sequential, preemptible, this->part,
                  trace.data_as<sched::be_trace>(),
                  activity ? activity->view() : sched::stamp_ring_view{}, spatial)) {}
  static sched::be_runner_options options(std::size_t window, std::int32_t bounded, bool sequential,
                                          bool preemptible,
                                          std::shared_ptr<const partition::green_context> p,
                                          sched::be_trace* trace, sched::stamp_ring_view activity,
                                          const sched::spatial_share* spatial) {
    sched::be_runner_options o;
    o.trace = trace;
    o.activity = activity;
    o.name = "translated";
    o.window = window;
    o.bounded_grid_per_sm = bounded;
    o.sequential = sequential;  // submit only while the word is down, one launch at a time
    o.preemptible = preemptible;
    if (spatial != nullptr) {
      if (!preemptible || sequential) {
        throw std::invalid_argument(
            "BestEffortRunner: spatial needs preemptible=True and sequential=False");
      }
      spatial->apply(o);
    }
    if (p) {
      o.thread_scope = [p]() -> std::shared_ptr<void> {
        return std::make_shared<partition::green_context::current_scope>(p.get());
      };
    }
    return o;
  }
  std::shared_ptr<const partition::green_context> part;
  resident::stream work;
  device_buffer trace;                        // be_trace, with activity stamps
  std::optional<sched::stamp_ring> activity;  // when BE blocks came and left
  sched::be_runner r;
};

/// A stamp ring's stamps as (ns, flag) pairs: the flag is the stamp's bit 0.
py::list flagged_stamps(const std::vector<std::uint64_t>& stamps) {
  py::list out;
  for (const std::uint64_t s : stamps)
    out.append(py::make_tuple(s & ~std::uint64_t{1}, (s & 1U) != 0U));
  return out;
}

py::dict stats_dict(const sched::be_runner_stats& s) {
  py::dict d;
  d["sequences"] = s.sequences;
  d["kernels"] = s.kernels;
  d["preemptions"] = s.preemptions;
  d["preempted_launches"] = s.preempted_launches;
  d["resumed_launches"] = s.resumed_launches;
  d["blocks_completed"] = s.blocks_completed;
  d["blocks_rerun"] = s.blocks_rerun;
  d["early_exits"] = s.early_exits;
  d["checkpoints"] = s.checkpoints;
  d["repeated_commits"] = s.repeated_commits;
  d["submissions"] = s.submissions;
  return d;
}

py::dict gate_dict(const sched::gate_stats& s) {
  py::dict d;
  d["passes"] = s.passes;
  d["waits"] = s.waits;
  d["waited_ns"] = s.waited_ns;
  d["max_wait_ns"] = s.max_wait_ns;
  d["timeouts"] = s.timeouts;
  d["first_wait_ns"] = s.first_wait_ns;
  return d;
}

/// Raises a signal's word from the device and keeps the stamp of when (bench: preemption
/// latency on the gates' clock).
struct device_raiser {
  explicit device_raiser(const sched::preempt_signal& s) : word(s.hook().word) {}
  std::uint32_t* word;
  device_buffer stamp{sizeof(std::uint64_t)};
};

}  // namespace

std::shared_ptr<const partition::green_context> partition_of(const py::handle& v) {
  return v.cast<const partition_handle&>().p;
}

namespace {

/// Partitions and streams.
void bind_partitions(py::module_& m) {
  py::class_<partition_handle>(m, "Partition",
                               "A green-context SM partition (the run option `partition`, and "
                               "BestEffortRunner's `partition`).")
      .def_property_readonly("sm_count", [](const partition_handle& h) { return h.p->sm_count(); })
      .def_property_readonly("index", [](const partition_handle& h) { return h.p->index(); })
      .def(
          "make_stream",
          [](const partition_handle& h, int priority) { return h.p->make_stream(priority); },
          py::arg("priority") = 0, py::keep_alive<0, 1>(),
          "A non-blocking Stream whose kernels run on this partition's SMs only (it keeps the "
          "partition alive). A CUDA graph captured on it keeps its kernels there; one captured "
          "elsewhere runs where it was captured.");
  py::class_<resident::stream>(m, "Stream",
                               "A CUDA stream of its own (non-blocking), e.g. to capture a graph "
                               "on (torch: torch.cuda.ExternalStream(s.handle)).")
      .def(py::init<int>(), py::arg("priority") = 0)
      .def_property_readonly(
          "handle",
          [](const resident::stream& s) { return reinterpret_cast<std::uintptr_t>(s.get()); })
      .def("synchronize", [](const resident::stream& s) {
        py::gil_scoped_release release;
        s.synchronize();
      });
  m.def(
      "split_partitions",
      [](const std::vector<int>& sm_counts, bool rest_to_last, int device) {
        partition::split_options o;
        o.device = device;
        o.rest_to_last = rest_to_last;
        const auto set = partition::partition_set::split(sm_counts, o);
        std::vector<partition_handle> out;
        for (std::size_t i = 0; i < set->size(); ++i) out.push_back({set->share(i)});
        return out;
      },
      py::arg("sm_counts"), py::arg("rest_to_last") = true, py::arg("device") = 0,
      "Green-context partitions of at least these many SMs each (the last also takes the rest "
      "with rest_to_last); RuntimeError naming the ask when they do not fit.");
}

/// The preempt word, spatial sharing and the translated models' runner.
void bind_preemption(py::module_& m) {
  py::class_<sched::preempt_signal>(
      m, "PreemptSignal",
      "The preempt word a real-time loop raises when its work comes (run option `preempt`) "
      "and best-effort work yields to. Keep it alive while a loop or a runner uses it.")
      .def(py::init<int>(), py::arg("device") = 0)
      .def(
          "raise_word", [](sched::preempt_signal& s) { s.raise(); },
          "Raises the word from the host (not while a loop holds it).")
      .def(
          "clear", [](sched::preempt_signal& s) { s.clear(); },
          "Clears the word from the host (not while a loop holds it).")
      .def_property_readonly("raised", &sched::preempt_signal::raised)
      .def_property_readonly("raises", &sched::preempt_signal::raises);

  py::class_<sched::spatial_share>(
      m, "SpatialShare",
      "Spatial preemption beside a real-time loop run in partition `rt`: BestEffortRunner("
      "spatial=...) clears only that partition's SMs when the word is raised and keeps running "
      "on the others; at most rt_sm_blocks of its blocks hold an RT SM at once (0: no cap), so "
      "the loop's handler always finds room. Share one between every runner beside that loop.")
      .def(py::init([](const partition_handle& rt, int blocks) {
             if (blocks < 0) {  // the library's count is unsigned: a negative one never reaches it
               throw std::invalid_argument("SpatialShare: rt_sm_blocks is " +
                                           std::to_string(blocks) + "; it must be 0 to 64");
             }
             return std::make_unique<sched::spatial_share>(rt.p->sm_mask(),
                                                           static_cast<std::uint32_t>(blocks));
           }),
           py::arg("rt"), py::arg("rt_sm_blocks") = 3)
      .def_property_readonly("sm_count", &sched::spatial_share::sm_count)
      .def_property_readonly("rt_sm_blocks", &sched::spatial_share::rt_sm_blocks);

  py::class_<runner>(m, "BestEffortRunner",
                     "A translated model's inference run over and over on a stream of its own, "
                     "its launches preempted while the signal's word is up and resumed after.")
      .def(
          py::init<const translated&, const sched::preempt_signal&, std::size_t, std::int32_t, bool,
                   bool, const partition_handle*, std::size_t, const sched::spatial_share*>(),
          py::arg("model"), py::arg("signal"), py::arg("window") = 2,
          py::arg("bounded_grid_per_sm") = 0, py::arg("sequential") = false,
          py::arg("preemptible") = true, py::arg("partition") = nullptr,
          py::arg("activity_stamps") = 0, py::arg("spatial") = nullptr, py::keep_alive<1, 2>(),
          py::keep_alive<1, 3>(), py::keep_alive<1, 10>())
      .def(
          "activity",
          [](const runner& r) {
            return r.activity ? flagged_stamps(r.activity->read()) : py::list();
          },
          "With activity_stamps=N (a power of two): when BE blocks came onto the GPU (ns, True) "
          "and when the last one left (ns, False), device clock, oldest first; after stop().")
      .def_property_readonly("activity_lost",
                             [](const runner& r) { return r.activity ? r.activity->lost() : 0U; })
      .def(
          "start", [](runner& r) { r.r.start(); }, "Starts the scheduler thread.")
      .def(
          "stop",
          [](runner& r) {
            sched::be_runner_stats s;
            {
              py::gil_scoped_release release;
              s = r.r.stop();
            }
            return stats_dict(s);
          },
          "Stops submitting, drains, joins; the counters as a dict.")
      .def("progress", [](const runner& r) {
        const auto p = r.r.progress();
        return py::make_tuple(p.submissions, p.retired);
      });
}

/// Closed graphs gated at kernel boundaries, and the device-side raiser.
void bind_gates(py::module_& m) {
  py::class_<sched::gated_graph>(
      m, "GatedGraph",
      "A copy of a captured CUDA graph (e.g. torch.cuda.CUDAGraph(keep_graph=True)"
      ".raw_cuda_graph()) with a gate before its kernels: it stops at its next kernel boundary "
      "while the signal's word is up.")
      .def(py::init([](std::uintptr_t graph, const sched::preempt_signal& signal,
                       std::int32_t every, double timeout_ms, std::size_t hold_stamps) {
             return std::make_unique<sched::gated_graph>(
                 reinterpret_cast<cudaGraph_t>(graph), signal.word(),
                 sched::gate_options{
                     every, std::chrono::nanoseconds(static_cast<std::int64_t>(timeout_ms * 1e6)),
                     hold_stamps});
           }),
           py::arg("graph"), py::arg("signal"), py::arg("every") = 1, py::arg("timeout_ms") = 100.0,
           py::arg("hold_stamps") = 0, py::keep_alive<1, 3>())
      .def(
          "holds", [](const sched::gated_graph& g) { return g.holds(); },
          "With hold_stamps=N: when each gate that found the word up began to hold (device "
          "clock, ns), oldest first.")
      .def_property_readonly("holds_lost", &sched::gated_graph::holds_lost)
      .def(
          "launch",
          [](const sched::gated_graph& g, std::uintptr_t stream) {
            py::gil_scoped_release release;
            g.launch(reinterpret_cast<cudaStream_t>(stream));
          },
          py::arg("stream"), "Launches on a stream handle (torch: stream.cuda_stream).")
      .def_property_readonly("gates", &sched::gated_graph::gates)
      .def_property_readonly("kernels", &sched::gated_graph::kernels)
      .def("stats", [](const sched::gated_graph& g) { return gate_dict(g.stats()); })
      .def("reset_first_wait", &sched::gated_graph::reset_first_wait,
           "Forgets first_wait_ns before the next raise.");

  py::class_<device_raiser>(m, "DeviceRaiser",
                            "Raises a PreemptSignal's word from the device, stamping "
                            "%globaltimer first (measuring preemption latency).")
      .def(py::init<const sched::preempt_signal&>(), py::arg("signal"), py::keep_alive<1, 2>())
      .def(
          "fire",
          [](device_raiser& r, std::uintptr_t stream) {
            sched::raise_on_device(r.word, r.stamp.data_as<std::uint64_t>(),
                                   reinterpret_cast<cudaStream_t>(stream));
          },
          py::arg("stream"))
      .def("raised_ns", [](const device_raiser& r) {
        std::uint64_t ns = 0;
        RESIDENT_CUDA_TRY(cudaMemcpy(&ns, r.stamp.data(), sizeof ns, cudaMemcpyDeviceToHost));
        return ns;
      });
}

}  // namespace

void bind_sched(py::module_& m) {
  bind_partitions(m);
  bind_preemption(m);
  bind_gates(m);
}

}  // namespace resident::python
