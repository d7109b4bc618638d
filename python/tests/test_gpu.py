"""Running applications on the GPU through the mailbox, in every mode, against a CPU reference
(NumPy when installed, else the standard library's array and math). Skipped without a GPU."""

import array
import math
import threading

import pytest

import resident

try:
    import numpy
except ImportError:  # the CPU-side reference then uses array('f')
    numpy = None

ELEMENTS = 256
SCALE, OFFSET = 3.0, -0.5
SAMPLES = 20

pytestmark = pytest.mark.gpu


class MailboxApp(resident.Application):
    """rx -> affine -> square -> tx: the sensor -> GPU -> actuator loop."""

    def __init__(self):
        super().__init__("mailbox_app")
        self.mailbox = resident.Mailbox(4 * ELEMENTS, 4 * ELEMENTS, depth=4)

    def compose(self):
        rx = self.make_operator("io.mailbox_rx", "rx", mailbox=self.mailbox)
        aff = self.make_operator("ops.affine", "affine", elements=ELEMENTS, scale=SCALE,
                                 offset=OFFSET)
        sq = self.make_operator("ops.square", "square", elements=ELEMENTS)
        tx = self.make_operator("io.mailbox_tx", "tx", mailbox=self.mailbox)
        self.register_data_ready_handler(self.mailbox.make_handler(rx))
        self.add_flow(rx, aff, [("sample", "in")])
        self.add_flow(aff, sq)
        self.add_flow(sq, tx, {"out": "in"})


def sample(i):
    values = [math.sin(0.01 * (i * ELEMENTS + k)) for k in range(ELEMENTS)]
    return numpy.asarray(values, dtype=numpy.float32) if numpy else array.array("f", values)


def expected(x):
    if numpy:
        return (numpy.float32(SCALE) * x + numpy.float32(OFFSET)) ** 2
    return [(SCALE * v + OFFSET) ** 2 for v in x]


def check_output(payload, x):
    got = numpy.frombuffer(payload, dtype=numpy.float32) if numpy else array.array("f", payload)
    want = expected(x)
    if numpy:
        numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        for g, w in zip(got, want):
            assert math.isclose(g, w, rel_tol=1e-5, abs_tol=1e-6)


@pytest.mark.parametrize("mode", resident.modes())
def test_every_sample_in_every_mode(mode):
    app = MailboxApp()
    mb = app.mailbox
    stamp = resident.OutputStamp()
    with app.run(mode, policy="every") as run:
        assert run.mode == mode
        for i in range(SAMPLES):
            x = sample(i)
            seq = mb.publish(x)
            stamp, payload = mb.wait_output(stamp, timeout=5.0)
            assert stamp.seq == seq, f"{mode}: output of sample {stamp.seq}, expected {seq}"
            check_output(payload, x)
        assert mb.latest_output() == stamp
        assert run.health().launched
    report = run.report
    assert report.stopped, report.error
    assert report.counters.processed == SAMPLES
    assert report.counters.dropped == 0
    assert report.counters.last_seq - report.counters.start_seq == SAMPLES


def test_persistent_phase_times_name_each_operator_of_the_pass():
    app = MailboxApp()
    mb = app.mailbox
    stamp = resident.OutputStamp()
    with app.run("persistent", policy="every", phase_times=True) as run:
        for i in range(SAMPLES):
            x = sample(i)
            mb.publish(x)
            stamp, payload = mb.wait_output(stamp, timeout=5.0)
            check_output(payload, x)
    report = run.report
    assert report.stopped, report.error
    names = [p.op for p in report.phases]
    assert names[-2:] == ["(end marker)", "(closing barrier)"]
    assert len(names) > 2
    for p in report.phases:
        # a pass that tear-down ends (its end marker sees the request) is not counted
        assert SAMPLES - 1 <= p.passes <= SAMPLES, p
        assert 0 < p.p50_ns <= p.max_ns, p


def test_tear_down_on_exception_then_run_again():
    app = MailboxApp()
    with pytest.raises(RuntimeError, match="in the block"):
        with app.run("while", policy="every") as run:
            raise RuntimeError("in the block")
    assert run.report is not None and run.report.stopped
    with app.run("while", policy="every") as again:  # the run guard was released
        x = sample(0)
        seq = app.mailbox.publish(x)
        stamp, payload = app.mailbox.wait_output(timeout=5.0)
        assert stamp.seq == seq
        check_output(payload, x)
    assert again.report.counters.processed == 1


def test_one_run_at_a_time():
    app = MailboxApp()
    with app.run("host-graph"):
        with pytest.raises(resident.CompositionError):
            app.run("eager")


def test_sensor_thread_while_waiting():
    """wait_output releases the GIL: a Python sensor thread publishes meanwhile."""
    app = MailboxApp()
    mb = app.mailbox
    x = sample(7)
    with app.run("tail", policy="newest") as run:
        sensor = threading.Timer(0.05, mb.publish, args=(x,))
        sensor.start()
        stamp, payload = mb.wait_output(timeout=5.0)
        sensor.join()
        assert not stamp.empty
        check_output(payload, x)
        assert run.counters().processed >= 1


def test_publish_checks_the_size():
    mb = resident.Mailbox(8, 8)
    with pytest.raises(ValueError):
        mb.publish(b"\0" * 4)
    with pytest.raises(BufferError):
        mb.publish(memoryview(b"\0" * 16)[::2])  # strided: not the bytes it seems
    assert mb.published == 0
    stamp, payload = mb.read_output()
    assert stamp.empty and payload == b"\0" * 8
    with pytest.raises(ValueError, match="out is 4 bytes"):
        mb.read_output(out=bytearray(4))


def test_mailbox_format_is_chosen_by_size_and_named():
    assert resident.Mailbox(8, 8).format == "lines"
    assert resident.Mailbox(64, 8).format == "sequence-lock"
    assert resident.Mailbox(8, 8, format="sequence-lock").format == "sequence-lock"
    with pytest.raises(ValueError, match="formats: automatic, lines, sequence-lock"):
        resident.Mailbox(8, 8, format="line")
    with pytest.raises(resident.CompositionError, match="at most 49 bytes"):
        resident.Mailbox(64, 8, format="lines")
    mb = resident.Mailbox(12, 12)  # lines: a host commit and its read, both one line
    mb.commit_output(5, b"abcdefghijkl")
    stamp, payload = mb.read_output()
    assert (stamp.seq, stamp.commit, payload) == (5, 1, b"abcdefghijkl")


def test_output_into_a_reused_buffer():
    app = MailboxApp()
    out = bytearray(4 * ELEMENTS)
    stamp = resident.OutputStamp()
    with app.run("host-graph", policy="every"):
        for i in range(3):
            x = sample(i)
            seq = app.mailbox.publish(x)
            stamp, got = app.mailbox.wait_output(stamp, timeout=5.0, out=out)
            assert got is out and stamp.seq == seq
            check_output(bytes(out), x)


def test_a_dropped_run_tears_down():
    app = MailboxApp()
    run = app.run("eager", policy="every")
    del run  # the handle's destructor tears the loop down (the GIL released meanwhile)
    with app.run("eager", policy="every") as again:
        assert again.counters().processed == 0


def test_mailbox_app_plan_and_dot():
    app = MailboxApp()
    plan = app.plan()
    assert plan.handler_order == ("rx",)
    assert plan.body_order == ("affine", "square", "tx")
    dot = app.to_dot()
    for name in ("rx", "affine", "square", "tx"):
        assert f'"{name}"' in dot


def test_the_docs_example_runs(capsys):
    """docs/python.md's example, as written."""
    import pathlib
    import re

    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    code = re.search(r"```python\n(.*?)```", doc.read_text(), re.S).group(1)
    exec(compile(code, str(doc), "exec"), {})
    assert capsys.readouterr().out.splitlines()[-1] == "True 1"


def test_telemetry_after_tear_down():
    app = MailboxApp()
    stamp = resident.OutputStamp()
    with app.run("while", policy="every", telemetry_samples=64) as run:
        with pytest.raises(RuntimeError, match="after tear_down"):
            run.telemetry()
        for i in range(5):
            app.mailbox.publish(sample(i))
            stamp, _ = app.mailbox.wait_output(stamp, timeout=5.0)
    entries = [e for e in run.telemetry() if e.repeat == 0]
    assert [e.seq for e in entries][-5:] == [stamp.seq - 4 + k for k in range(5)]
    assert all(e.stamp("commit") > 0 for e in entries)
