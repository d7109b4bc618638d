"""resident: GPU-resident sensor -> GPU -> actuator loops, from Python.

The C++ runtime does the work (resident._resident); this package adds Python habits on top:
an Application whose compose() is written in Python, runs that are context managers, and
counters and reports as frozen dataclasses.
"""

from __future__ import annotations

import dataclasses
import os
import weakref
from typing import Any, Iterable, Mapping, Optional, Tuple, Union

from . import _resident
from ._resident import (
    CompositionError,
    ConfigError,
    CudaError,
    DataReadyHandler,
    DeviceLink,
    Display,
    ExecutionError,
    Mailbox,
    Operator,
    OutputStamp,
    SensorBridge,
    device_count,
    modes,
    no_device_reason,
    operator_catalog,
    operator_kinds,
    policies,
)

__version__: str = _resident.__version__

# The exceptions are resident's, whichever module defines them.
for _error in (CompositionError, ConfigError, CudaError, ExecutionError):
    _error.__module__ = __name__

__all__ = [
    "Application", "Buffer", "CompositionError", "ConfigError", "Counters", "CudaError",
    "DataReadyHandler", "DeviceLink", "Display", "ExecutionError", "GraphPort", "Health",
    "Mailbox", "Operator", "OutputStamp", "PhaseTime", "Plan", "Run", "STAGES", "SensorBridge",
    "TearDownReport", "TelemetryEntry", "device_count", "modes", "no_device_reason",
    "operator_catalog", "operator_kinds", "policies", "run_options", "run_together",
]


def run_options() -> list[str]:
    """The keyword options Application.run() accepts (run_options fields)."""
    return list(_resident.run_options())


@dataclasses.dataclass(frozen=True)
class Counters:
    """Exact counters of one loop: processed + dropped == last_seq - start_seq. Response times
    of processed samples on the device clock, in ns (run option deadline_us counts misses):
    release -> commit, and arrival -> commit where the handler knows the arrival."""

    processed: int = 0
    dropped: int = 0
    repeated: int = 0
    last_seq: int = 0
    start_seq: int = 0
    iterations: int = 0
    max_response_ns: int = 0
    deadline_misses: int = 0
    worst_overrun_ns: int = 0
    max_arrival_response_ns: int = 0
    arrival_deadline_misses: int = 0
    worst_arrival_overrun_ns: int = 0

    @classmethod
    def _from(cls, c: Any) -> "Counters":
        return cls(**{f.name: getattr(c, f.name) for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class Health:
    launched: bool
    stalled: bool
    stall_events: int
    message: str


@dataclasses.dataclass(frozen=True)
class PhaseTime:
    """Device time of one phase of a persistent DAG pass (run option phase_times), in ns."""

    op: str  # the operator, or "(end marker)" / "(closing barrier)"
    form: str  # its device form; empty for the framework's steps
    phase: int
    passes: int  # DAG passes summarized
    mean_ns: float
    p50_ns: float
    p99_ns: float
    max_ns: float

    @classmethod
    def _from(cls, p: Any) -> "PhaseTime":
        return cls(**{f.name: getattr(p, f.name) for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class TearDownReport:
    stopped: bool  # the loop exited within the timeout
    elapsed_ns: int
    counters: Counters  # exact once stopped
    error: str  # why the loop failed or did not stop; empty when fine
    mean_iteration_ns: float  # 0: unknown
    phases: Tuple[PhaseTime, ...] = ()  # phase_times=True (persistent mode), in pass order

    @classmethod
    def _from(cls, r: Any) -> "TearDownReport":
        return cls(r.stopped, r.elapsed_ns, Counters._from(r.counters), r.error,
                   r.mean_iteration_ns, tuple(PhaseTime._from(p) for p in r.phases))


# The loop's stages in TelemetryEntry.stamps order (resident::stage in resident/app/loop.hpp).
STAGES = ("handler_start", "detect", "controller_start", "controller_end", "body_start", "commit",
          "end_marker", "handler_end", "last_empty_poll", "preempt_raised", "arrival")


@dataclasses.dataclass(frozen=True)
class TelemetryEntry:
    """One DAG run as the loop saw it: device clock (ns) per stage, 0 where none stamped."""

    seq: int
    repeat: int  # 1 when it re-processed the last sample
    stamps: Tuple[int, ...]  # in STAGES order

    def stamp(self, stage: str) -> int:
        return self.stamps[STAGES.index(stage)]


@dataclasses.dataclass(frozen=True)
class Buffer:
    bytes: int
    producer: str  # "affine.out"
    consumers: Tuple[str, ...]  # ("square.in", ...)
    external: bool  # memory an endpoint supplies (not allocated by the runtime)


@dataclasses.dataclass(frozen=True)
class Plan:
    handler_order: Tuple[str, ...]
    body_order: Tuple[str, ...]
    buffers: Tuple[Buffer, ...]
    runtime_bytes: int


class Run:
    """A running loop. Use it as a context manager: the loop is torn down on exit, also when
    the block raises. tear_down() may also be called directly; it tears down once, and later
    calls (and the exit) return the same report, kept as `report`."""

    def __init__(self, handle: Any, timeout_ms: int = 2000) -> None:
        self._handle = handle
        self._mode = getattr(handle, "mode", "")
        self._timeout_ms = timeout_ms
        self.report: Optional[TearDownReport] = None
        self._telemetry: list[TelemetryEntry] = []
        self._telemetry_lost = 0

    @property
    def mode(self) -> str:
        return self._mode

    def counters(self) -> Counters:
        if self._handle is None:  # released after the tear-down: the exact counters
            return self.report.counters  # type: ignore[union-attr]
        return Counters._from(self._handle.counters())

    def health(self) -> Health:
        if self._handle is None:
            return Health(False, False, 0, "")
        h = self._handle.health()
        return Health(h.launched, h.stalled, h.stall_events, h.message)

    def tear_down(self, timeout_ms: Optional[int] = None) -> TearDownReport:
        if self.report is not None:
            return self.report
        timeout = self._timeout_ms if timeout_ms is None else timeout_ms
        self.report = TearDownReport._from(self._handle.tear_down(timeout_ms=timeout))
        return self.report

    def _release(self) -> None:
        """After the tear-down: keeps counters and telemetry, then lets the C++ run go (its
        graphs and device memory), which frees the application for another run. Freeing device
        memory waits for every kernel on the device, so Application.run() calls this when the
        next run of the same application starts, not the tear-down: a Display engine or another
        loop may still be running then, and the free would wait for it forever. The same holds
        at that next run if another GPU-resident loop runs by then: run_together frees every
        earlier run before it launches any loop."""
        if self._handle is None or self.report is None:
            return
        handle = self._handle
        if hasattr(handle, "_telemetry"):
            self._telemetry = [TelemetryEntry(seq, rep, stamps)
                               for seq, rep, stamps in handle._telemetry()]
        self._telemetry_lost = getattr(handle, "telemetry_lost", 0)
        self._handle = None

    def telemetry(self) -> list[TelemetryEntry]:
        """The entries kept (run options telemetry_samples=N); complete after tear_down(), and
        only read then: while the loop runs the supervisor thread is still filing them."""
        if self.report is None:
            raise RuntimeError("Run.telemetry(): call it after tear_down() (or the with block)")
        if self._handle is None:
            return list(self._telemetry)
        return [TelemetryEntry(seq, rep, stamps) for seq, rep, stamps in self._handle._telemetry()]

    @property
    def telemetry_lost(self) -> int:
        return self._handle.telemetry_lost if self._handle is not None else self._telemetry_lost

    def write_dot(self, path: Union[str, os.PathLike]) -> None:
        if self._handle is None:
            raise RuntimeError("Run.write_dot(): this run was released when the application ran "
                               "again; write the DOT before that (or Application.to_dot())")
        self._handle.write_dot(os.fspath(path))

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> bool:
        report = self.tear_down()
        # A loop that failed or could not be stopped must not pass silently; an exception from
        # the block takes precedence (the report stays in `report`).
        if exc_type is None and report.error:
            raise ExecutionError(report.error)
        return False


PortPairs = Union[None, Mapping[str, str], Iterable[Tuple[str, str]]]
# A captured graph's port: (name, device pointer as an int, bytes).
GraphPort = Tuple[str, int, int]


class Application(_resident.Application):
    """A DAG of operators, written once and run in any mode. Subclass it and override
    compose(), which creates operators (make_operator) and flows (add_flow)."""

    def __init__(self, name: str = "app") -> None:
        super().__init__(name)

    def compose(self) -> None:
        raise NotImplementedError("Application.compose() must be overridden")

    def make_captured_graph(self, name: str, graph: int, inputs: Iterable[GraphPort] = (),
                            outputs: Iterable[GraphPort] = ()) -> Operator:
        """An ops.captured_graph operator: runs a CUDA graph captured elsewhere. `graph` is a
        cudaGraph_t as an int (torch.cuda.CUDAGraph(keep_graph=True).raw_cuda_graph()), cloned
        here; each port is memory the graph reads (inputs) or writes (outputs), which must
        outlive every run. In compose() only, like make_operator."""
        return self.make_operator("ops.captured_graph", name, graph=graph, inputs=list(inputs),
                                  outputs=list(outputs))

    def load_config(self, path: Union[str, os.PathLike]) -> None:
        super().load_config(os.fspath(path))

    def plan(self) -> Plan:
        """Composes (once), validates and plans buffers. CPU only."""
        p = self._plan_summary()
        buffers = tuple(Buffer(b["bytes"], b["producer"], tuple(b["consumers"]), b["external"])
                        for b in p["buffers"])
        return Plan(tuple(p["handler_order"]), tuple(p["body_order"]), buffers,
                    p["runtime_bytes"])

    def _check_capture_partitions(self, partition: Any) -> None:
        """A PyTorch graph's kernels keep the context (whole GPU or green-context partition)
        they were captured in, and CUDA refuses to instantiate them in another with only
        'invalid argument': refuses such a run first, naming the operator."""
        def where(p: Any) -> str:
            return "the whole GPU" if p is None else f"a partition of {p.sm_count} SMs"

        for made in self.__dict__.get("_torch_operators", []):
            if made.partition is partition:
                continue
            both = made.partition is not None and partition is not None
            raise ValueError(
                f"operator '{made.operator.name}' (a PyTorch graph) was captured for "
                f"{where(made.partition)}, but this run is in "
                f"{'another partition' if both else where(partition)}: a captured graph's "
                f"kernels keep the context they were captured in; pass the run's partition to "
                f"make_torch_operator(..., partition=...)")

    def run(self, mode: str = "while", *, timeout_ms: int = 2000, **options: Any) -> Run:
        """Launches the loop in `mode` ("eager", "host-graph", "while", "tail"). `options` are
        run_options fields (policy, poll_ns, ...); `timeout_ms` bounds the tear-down."""
        self._before_run(options)
        return self._started(Run(_resident._run(self, mode, options), timeout_ms), options)

    def _before_run(self, options: dict) -> None:
        # A torn-down earlier run of this application still holds the C++ run (and with it
        # the application); release it now (see Run._release).
        last = self.__dict__.get("_last_run")
        previous = last() if last is not None else None
        if previous is not None and previous.report is not None:
            previous._release()
        # Compose first (once; CPU only): the PyTorch graphs to check exist only after it.
        self._plan_summary()
        self._check_capture_partitions(options.get("partition"))

    def _started(self, run: "Run", options: dict) -> "Run":
        run._keep_alive = options.get("preempt")  # the loop raises its word
        self.__dict__["_last_run"] = weakref.ref(run)
        return run


def run_together(*loops: Tuple[Application, str, Mapping[str, Any]],
                 timeout_ms: int = 2000) -> list[Run]:
    """Several loops of one program set up before any of them runs: each (application, mode,
    options) is built first (memory, captures, CUDA graph instantiation), then the loops are
    launched in the order given; returns their Runs in that order. Prefer it to run() one loop
    after another: a set-up beside a running loop can wait for the device to go idle, which it
    never does (instantiating a PyTorch graph beside a running loop did), and a producer launched
    before its consumer loses what it sends first. Put consumers first. If a build fails,
    nothing was launched; if a launch fails, the loops already running are torn down, and the
    error names the loop. Each application at most once; `timeout_ms` bounds each tear-down."""
    requests = []
    for i, loop in enumerate(loops):
        if not (isinstance(loop, tuple) and len(loop) == 3):
            raise TypeError(f"run_together: loop {i} must be (application, mode, options), "
                            f"not {loop!r}")
        app, mode, options = loop
        if not isinstance(app, Application):
            raise TypeError(f"run_together: loop {i}: {app!r} is not a resident.Application")
        if not isinstance(options, Mapping):
            raise TypeError(f"run_together: loop {i}: options must be a mapping of run() "
                            f"options, not {type(options).__name__}")
        options = dict(options)
        app._before_run(options)
        requests.append((app, mode, options))
    handles = _resident._run_together(requests)
    return [app._started(Run(h, timeout_ms), options)
            for (app, _, options), h in zip(requests, handles)]
