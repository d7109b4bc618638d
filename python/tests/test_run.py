"""Run options, modes, counters and the run handle's context manager, without a GPU."""

import dataclasses

import pytest

import resident


def test_modes_and_policies():
    assert resident.modes() == ["eager", "host-graph", "while", "tail", "persistent"]
    assert resident.__version__ == "0.1.0"
    assert set(resident.policies()) == {"newest", "every", "skip-duplicate"}


def test_run_options_names():
    for name in ("policy", "poll_ns", "idle_sleep_ns", "telemetry_samples", "stall_timeout_ms",
                 "capture", "loop_cpu"):
        assert name in resident.run_options()


class Handled(resident.Application):
    """No handler: every mode refuses it before touching the GPU."""

    def compose(self):
        src = self.make_operator("ops.external_source", "src", bytes=64)
        sink = self.make_operator("ops.copy", "copy", elements=16)
        self.add_flow(src, sink)


def test_unknown_option_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="unknown option 'polcy'.*fuse"):
        Handled().run("while", polcy="every")


def test_unknown_mode_and_policy_are_value_errors():
    with pytest.raises(ValueError, match="whiel"):
        Handled().run("whiel")
    with pytest.raises(ValueError, match="everything"):
        Handled().run("while", policy="everything")
    with pytest.raises(ValueError, match="capture order 'sideways'"):
        Handled().run("while", capture="sideways")
    with pytest.raises(ValueError, match="loop_cpu 100000 is not a CPU this process may run on"):
        Handled().run("host-graph", loop_cpu=100000)
    with pytest.raises(ValueError, match="loop_cpu -1"):
        Handled().run("host-graph", loop_cpu=-1)
    with pytest.raises(ValueError, match="phase_times: the host-graph mode has no phases"):
        Handled().run("host-graph", phase_times=True)
    with pytest.raises(ValueError, match="phase_rows must be 2 to 1048576, got 1"):
        Handled().run("persistent", phase_times=True, phase_rows=1)
    with pytest.raises(ValueError, match=r"deadline_us must be 0 \(none\) to 1e6 \(1 s\), got inf"):
        Handled().run("while", deadline_us=float("inf"))
    with pytest.raises(ValueError, match="deadline_us must be 0"):
        Handled().run("while", deadline_us=-5)


def test_resident_mode_without_handler_is_a_composition_error():
    with pytest.raises(resident.CompositionError, match="data-ready handler"):
        Handled().run("while", policy="every")


def test_run_together_refuses_malformed_loops_before_any_gpu_work():
    a = Handled()
    with pytest.raises(TypeError, match=r"loop 0 must be \(application, mode, options\)"):
        resident.run_together((a, "while"))
    with pytest.raises(TypeError, match="loop 0: 'camera' is not a resident.Application"):
        resident.run_together(("camera", "while", {}))
    with pytest.raises(TypeError, match="loop 1: options must be a mapping"):
        resident.run_together((a, "while", {}), (Handled(), "while", ["every"]))
    with pytest.raises(ValueError,
                       match=r"application 'app' is asked for twice \(loops 0 and 1\)"):
        resident.run_together((a, "while", {}), (a, "tail", {}))
    with pytest.raises(TypeError, match="unknown option 'polcy'"):
        resident.run_together((a, "while", {"polcy": "every"}))
    assert resident.run_together() == []


def test_run_together_a_failed_build_leaves_every_application_free():
    a, b = Handled(), Handled()
    for _ in range(2):  # the same error twice: the first attempt reserved nothing
        with pytest.raises(resident.CompositionError, match="data-ready handler"):
            resident.run_together((a, "while", {}), (b, "while", {}))


def test_counters_shape():
    names = [f.name for f in dataclasses.fields(resident.Counters)]
    assert names == ["processed", "dropped", "repeated", "last_seq", "start_seq", "iterations",
                     "max_response_ns", "deadline_misses", "worst_overrun_ns",
                     "max_arrival_response_ns", "arrival_deadline_misses",
                     "worst_arrival_overrun_ns"]
    c = resident.Counters._from(resident._resident.LoopCounters())
    assert c == resident.Counters()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.processed = 1
    assert dataclasses.asdict(c)["dropped"] == 0


class FakeHandle:
    """Stands in for the C++ run handle to check the Python side of Run."""

    mode = "while"

    def __init__(self, error=""):
        self.tear_downs = []
        self.error = error

    def counters(self):
        return resident._resident.LoopCounters()

    def tear_down(self, timeout_ms):
        self.tear_downs.append(timeout_ms)
        return FakeReport(self.error)


class FakeReport:
    elapsed_ns = 5
    counters = resident._resident.LoopCounters()
    mean_iteration_ns = 0.0
    phases = ()

    def __init__(self, error):
        self.error = error
        self.stopped = not error


def test_context_manager_tears_down_on_exit():
    handle = FakeHandle()
    with resident.Run(handle, timeout_ms=123) as run:
        assert run.counters().processed == 0
    assert handle.tear_downs == [123]
    assert run.report == resident.TearDownReport(True, 5, resident.Counters(), "", 0.0)


def test_context_manager_tears_down_on_exception():
    handle = FakeHandle()
    with pytest.raises(ZeroDivisionError):
        with resident.Run(handle):
            1 / 0
    assert handle.tear_downs == [2000]


def test_explicit_tear_down_timeout():
    handle = FakeHandle()
    report = resident.Run(handle).tear_down(timeout_ms=50)
    assert handle.tear_downs == [50] and report.stopped


@pytest.mark.skipif(resident.device_count() > 0, reason="checks the no-GPU path")
def test_mailbox_without_gpu_is_a_cuda_error():
    with pytest.raises(resident.CudaError):
        resident.Mailbox(64, 64)


def test_tear_down_happens_once():
    handle = FakeHandle()
    with resident.Run(handle) as run:
        first = run.tear_down(timeout_ms=10)
    assert handle.tear_downs == [10]
    assert run.tear_down() is first


def test_a_failed_loop_raises_at_exit():
    with pytest.raises(resident.ExecutionError, match="loop failed"):
        with resident.Run(FakeHandle(error="loop failed")):
            pass


def test_the_block_exception_wins_over_a_failed_loop():
    handle = FakeHandle(error="loop failed")
    with pytest.raises(KeyError):
        with resident.Run(handle) as run:
            raise KeyError("block")
    assert run.report.error == "loop failed"


def test_telemetry_only_after_tear_down():
    handle = FakeHandle()
    handle._telemetry = lambda: [(3, 0, tuple(range(len(resident.STAGES))))]
    run = resident.Run(handle)
    with pytest.raises(RuntimeError, match="after tear_down"):
        run.telemetry()
    run.tear_down()
    (entry,) = run.telemetry()
    assert entry.seq == 3 and entry.stamp("commit") == resident.STAGES.index("commit")


def test_stages_match_the_runtime():
    assert len(resident.STAGES) == resident._resident._stage_count


def test_a_released_run_keeps_its_report_counters_and_telemetry():
    handle = FakeHandle()
    handle._telemetry = lambda: [(5, 0, tuple(range(len(resident.STAGES))))]
    handle.telemetry_lost = 2
    run = resident.Run(handle)
    run._release()  # before the tear-down: nothing to release, the loop may still run
    assert run._handle is handle
    report = run.tear_down()
    run._release()
    assert run._handle is None
    assert run.counters() == report.counters
    assert not run.health().launched
    assert [e.seq for e in run.telemetry()] == [5] and run.telemetry_lost == 2
    with pytest.raises(RuntimeError, match="released when the application ran again"):
        run.write_dot("x.dot")
    assert run.tear_down() is report  # still once


def test_run_together_frees_every_earlier_run_before_it_builds_any(monkeypatch):
    # A free beside a running GPU-resident loop can wait for ever; run_together frees the
    # earlier runs of all its applications before it builds (or launches) anything.
    a, b = Handled(), Handled()
    earlier = []
    for app in (a, b):
        run = app._started(resident.Run(FakeHandle()), {})
        run.tear_down()
        earlier.append(run)
    seen = {}

    def fake_run_together(requests):
        seen["released"] = [run._handle is None for run in earlier]
        seen["apps"] = [app for app, _, _ in requests]
        return [FakeHandle() for _ in requests]

    monkeypatch.setattr(resident._resident, "_run_together", fake_run_together)
    runs = resident.run_together((b, "while", {}), (a, "tail", {}))
    assert seen == {"released": [True, True], "apps": [b, a]}
    assert [r.report for r in earlier] == [resident.TearDownReport(True, 5, resident.Counters(),
                                                                   "", 0.0)] * 2
    assert len(runs) == 2 and all(r.report is None for r in runs)
    # An earlier run not yet torn down is not freed (its loop may still run).
    live = a._started(resident.Run(FakeHandle()), {})
    resident.run_together((a, "while", {}))
    assert live._handle is not None
