// Running an application: run(app, mode, options) -> RunHandle, counters, health and tear-down.
// Every call that waits on the loop releases the GIL, so Python sensor/actuator threads go on.

#include <pthread.h>
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <sched.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/sched/preemption.hpp"
#include "sched_bindings.hpp"

namespace py = pybind11;

namespace resident::python {
namespace {

using option_setter = std::function<void(run_options&, const py::handle&)>;

// on_loop_thread_start for run(loop_cpu=N): checked here against the process's allowed CPUs, so
// the pinning on the loop thread cannot fail.
std::function<void()> pin(const py::handle& v) {
  const int cpu = v.cast<int>();
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
      !CPU_ISSET(cpu, &allowed)) {
    throw py::value_error("run(): loop_cpu " + std::to_string(cpu) +
                          " is not a CPU this process may run on");
  }
  return [cpu] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  };
}

template <class T>
option_setter set_field(T run_options::*field) {
  return [field](run_options& o, const py::handle& v) { o.*field = v.cast<T>(); };
}

// run_options fields that make sense from Python. Callbacks (on_stall, on_loop_thread_start)
// are C++ only: they would run on C++ threads (loop_cpu gives
// on_loop_thread_start a C++ body).
const std::map<std::string, option_setter>& option_setters() {
  static const std::map<std::string, option_setter> table{
      {"policy",
       [](run_options& o, const py::handle& v) {
         o.policy = parse_sample_policy(v.cast<std::string>());
       }},
      {"poll_ns", set_field(&run_options::poll_ns)},
      {"idle_sleep_ns", set_field(&run_options::idle_sleep_ns)},
      {"stall_timeout_ms",
       [](run_options& o, const py::handle& v) {
         o.stall_timeout = std::chrono::milliseconds(v.cast<std::int64_t>());
       }},
      {"dot_path", set_field(&run_options::dot_path)},
      {"device", set_field(&run_options::device)},
      {"telemetry_samples", set_field(&run_options::telemetry_samples)},
      {"record_sms", set_field(&run_options::record_sms)},
      {"stream_priority", set_field(&run_options::stream_priority)},
      {"fuse", set_field(&run_options::fuse)},
      {"persistent_blocks", set_field(&run_options::persistent_blocks)},
      {"phase_times", set_field(&run_options::phase_times)},
      {"phase_rows", set_field(&run_options::phase_rows)},
      {"deadline_us",
       [](run_options& o, const py::handle& v) {
         const double us = v.cast<double>();
         // Checked here for what a double can hold; validate() checks the range.
         if (!(us >= 0.0 && us <= 1e6)) {
           throw py::value_error("run(): deadline_us must be 0 (none) to 1e6 (1 s), got " +
                                 py::repr(v).cast<std::string>());
         }
         o.deadline = std::chrono::nanoseconds(static_cast<std::int64_t>(us * 1000.0 + 0.5));
       }},
      {"capture",
       [](run_options& o, const py::handle& v) {
         o.capture = parse_capture_order(v.cast<std::string>());
       }},
      // The word best-effort work yields to (PreemptSignal): the handler raises it when a sample
      // comes. Run keeps the signal alive while the loop runs.
      {"preempt",
       [](run_options& o, const py::handle& v) {
         o.preempt = v.cast<const sched::preempt_signal&>().hook();
       }},
      // An SM partition (Partition from split_partitions) to confine the loop to.
      {"partition", [](run_options& o, const py::handle& v) { o.partition = partition_of(v); }},
      // Pins the host-driven modes' loop thread (a C++ callback: no Python on that thread).
      {"loop_cpu", [](run_options& o, const py::handle& v) { o.on_loop_thread_start = pin(v); }},
  };
  return table;
}

std::vector<std::string> option_names() {
  std::vector<std::string> names;
  for (const auto& [name, setter] : option_setters()) names.push_back(name);
  return names;
}

run_options to_run_options(const py::dict& options) {
  run_options o;
  for (const auto& [key, value] : options) {
    const auto name = key.cast<std::string>();
    const auto it = option_setters().find(name);
    if (it == option_setters().end()) {
      std::string known;
      for (const auto& n : option_names()) known += (known.empty() ? "" : ", ") + n;
      throw py::type_error("run(): unknown option '" + name + "'; options: " + known);
    }
    it->second(o, value);
  }
  o.validate();
  return o;
}

// A handle dropped without a tear-down tears its loop down in its destructor, which may wait
// (bounded): without the GIL, so Python threads go on meanwhile.
struct release_gil_delete {
  void operator()(run_handle* h) const {
    py::gil_scoped_release release;
    delete h;
  }
};
using run_handle_ptr = std::unique_ptr<run_handle, release_gil_delete>;

run_handle_ptr start_run(Application& app, const std::string& mode, const py::dict& options) {
  const execution_mode m = parse_execution_mode(mode);
  run_options o = to_run_options(options);
  // Compose with the GIL held: compose() is Python. Everything after is C++ only.
  (void)app.plan();
  py::gil_scoped_release release;
  return run_handle_ptr(run_async(app, m, std::move(o)).release());
}

// [(app, mode, options), ...] -> [handle, ...]: every loop built before any is launched
// (run_together). Each handle keeps its application alive, as _run's keep_alive does.
py::list start_runs_together(const py::list& loops) {
  std::vector<loop_request> requests;
  std::vector<py::object> apps;
  for (const py::handle item : loops) {
    const auto entry = item.cast<py::tuple>();
    if (entry.size() != 3) {
      throw py::value_error("run_together: each loop is (application, mode, options), not " +
                            std::to_string(entry.size()) + " items");
    }
    auto& app = entry[0].cast<Application&>();
    loop_request r{&app, parse_execution_mode(entry[1].cast<std::string>()),
                   to_run_options(entry[2].cast<py::dict>())};
    (void)app.plan();  // compose() is Python: with the GIL held
    requests.push_back(std::move(r));
    apps.push_back(py::reinterpret_borrow<py::object>(entry[0]));
  }
  std::vector<std::unique_ptr<run_handle>> runs;
  {
    py::gil_scoped_release release;
    runs = run_together(std::move(requests));
  }
  py::list out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    py::object h = py::cast(run_handle_ptr(runs[i].release()));
    py::detail::keep_alive_impl(h, apps[i]);
    out.append(h);
  }
  return out;
}

tear_down_report tear_down(run_handle& h, std::int64_t timeout_ms) {
  py::gil_scoped_release release;
  return h.tear_down(std::chrono::milliseconds(timeout_ms));
}

// (seq, repeat, [stamp_ns per stage]) per DAG run. Only after tear-down (the Python Run checks):
// while the loop runs, the supervisor thread appends to the vector this reads.
py::list telemetry_of(const run_handle& h) {
  py::list out;
  for (const auto& e : h.telemetry()) {
    py::list stamps;
    for (const auto ns : e.stamp_ns) stamps.append(ns);
    out.append(py::make_tuple(e.seq, e.repeat, py::tuple(stamps)));
  }
  return out;
}

void bind_reports(py::module_& m) {
  py::class_<loop_counters>(m, "LoopCounters")
      .def(py::init<>())
      .def_readonly("iterations", &loop_counters::iterations)
      .def_readonly("processed", &loop_counters::processed)
      .def_readonly("dropped", &loop_counters::dropped)
      .def_readonly("repeated", &loop_counters::repeated)
      .def_readonly("last_seq", &loop_counters::last_seq)
      .def_readonly("start_seq", &loop_counters::start_seq)
      .def_readonly("max_response_ns", &loop_counters::max_response_ns)
      .def_readonly("deadline_misses", &loop_counters::deadline_misses)
      .def_readonly("worst_overrun_ns", &loop_counters::worst_overrun_ns)
      .def_readonly("max_arrival_response_ns", &loop_counters::max_arrival_response_ns)
      .def_readonly("arrival_deadline_misses", &loop_counters::arrival_deadline_misses)
      .def_readonly("worst_arrival_overrun_ns", &loop_counters::worst_arrival_overrun_ns);
  py::class_<loop_health>(m, "LoopHealth")
      .def_readonly("launched", &loop_health::launched)
      .def_readonly("stalled", &loop_health::stalled)
      .def_readonly("stall_events", &loop_health::stall_events)
      .def_readonly("message", &loop_health::message);
  py::class_<phase_time>(m, "PhaseTime")
      .def_readonly("op", &phase_time::op)
      .def_readonly("form", &phase_time::form)
      .def_readonly("phase", &phase_time::phase)
      .def_readonly("passes", &phase_time::passes)
      .def_readonly("mean_ns", &phase_time::mean_ns)
      .def_readonly("p50_ns", &phase_time::p50_ns)
      .def_readonly("p99_ns", &phase_time::p99_ns)
      .def_readonly("max_ns", &phase_time::max_ns);
  py::class_<tear_down_report>(m, "TearDownReport")
      .def_readonly("stopped", &tear_down_report::stopped)
      .def_property_readonly("elapsed_ns",
                             [](const tear_down_report& r) { return r.elapsed.count(); })
      .def_readonly("counters", &tear_down_report::counters)
      .def_readonly("error", &tear_down_report::error)
      .def_readonly("mean_iteration_ns", &tear_down_report::mean_iteration_ns)
      .def_readonly("phases", &tear_down_report::phases);
}

}  // namespace

void bind_run(py::module_& m) {
  bind_reports(m);
  m.def("run_options", &option_names, "Option names run() accepts.");
  m.attr("_stage_count") = stage_count;  // the package's STAGES must name every one
  py::class_<run_handle, run_handle_ptr>(m, "RunHandle")
      .def_property_readonly("mode",
                             [](const run_handle& h) { return std::string(to_string(h.mode())); })
      .def_property_readonly("is_launched", &run_handle::is_launched)
      .def("counters", &run_handle::counters)
      .def("health", &run_handle::health)
      .def("tear_down", &tear_down, py::arg("timeout_ms") = 2000)
      .def("write_dot", &run_handle::write_dot, py::arg("path"),
           py::call_guard<py::gil_scoped_release>())
      .def("_telemetry", &telemetry_of)
      .def_property_readonly("telemetry_lost", &run_handle::telemetry_lost);
  // keep_alive: the loop's run guard points at the application, so the handle keeps it alive.
  m.def("_run", &start_run, py::arg("app"), py::arg("mode"), py::arg("options"),
        py::keep_alive<0, 1>());
  m.def("_run_together", &start_runs_together, py::arg("loops"),
        "[(app, mode, options), ...] -> run handles: every loop built, then launched in order.");
  m.def(
      "_check_run_options", [](const py::dict& o) { (void)to_run_options(o); },
      "Validates run() options without a GPU (raises TypeError/ValueError).");
}

}  // namespace resident::python
