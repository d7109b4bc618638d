"""resident.torch: a PyTorch module captured as an operator, in every mode, against the module's
own eager output. Skipped without PyTorch or a GPU."""

import pytest

import resident
from resident import _resident
from resident_test_env import import_or_skip
torch = import_or_skip("torch")
from resident.torch import make_torch_operator  # noqa: E402

pytestmark = pytest.mark.gpu

IN, HIDDEN, OUT = 64, 128, 16


def model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, OUT), torch.nn.Tanh()).cuda().eval()


class TorchApp(resident.Application):
    """rx -> an nn.Module -> tx."""

    def __init__(self, module, partition=None):
        super().__init__("torch_app")
        self.module = module
        self.partition = partition
        self.mailbox = resident.Mailbox(4 * IN, 4 * OUT, depth=4)
        self.net = None

    def compose(self):
        rx = self.make_operator("io.mailbox_rx", "rx", mailbox=self.mailbox)
        self.net = make_torch_operator(self, "net", self.module,
                                       torch.zeros(IN, device="cuda"),
                                       partition=self.partition)
        tx = self.make_operator("io.mailbox_tx", "tx", mailbox=self.mailbox)
        self.register_data_ready_handler(self.mailbox.make_handler(rx))
        self.add_flow(rx, self.net.operator, [("sample", "input")])
        self.add_flow(self.net.operator, tx, [("output", "in")])


def inputs(count):
    g = torch.Generator().manual_seed(11)
    return [torch.randn(IN, generator=g) for _ in range(count)]


@pytest.fixture(autouse=True)
def no_tf32():
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


# A captured PyTorch graph has no device form: every mode but persistent.
@pytest.mark.parametrize("mode", [m for m in resident.modes() if m != "persistent"])
def test_module_in_every_mode_equals_eager(mode):
    module = model()
    app = TorchApp(module)
    stamp = resident.OutputStamp()
    with app.run(mode, policy="every") as run:
        for x in inputs(8):
            seq = app.mailbox.publish(x.numpy())
            stamp, payload = app.mailbox.wait_output(stamp, timeout=5.0)
            assert stamp.seq == seq
            got = torch.frombuffer(bytearray(payload), dtype=torch.float32)
            with torch.no_grad():
                want = module(x.cuda()).cpu()
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert run.report.stopped, run.report.error
    assert run.report.counters.processed == 8


def test_a_module_captured_for_a_partition_runs_there_and_nowhere_else():
    # A captured graph's kernels keep the context they were captured in: the module captured
    # on a stream of the partition gives eager's outputs in a loop in that partition, and a run
    # elsewhere is refused by name before CUDA would refuse it with 'invalid argument'.
    parts = _resident.split_partitions([16, 8], rest_to_last=True)
    module = model()
    app = TorchApp(module, parts[0])
    for where in (None, parts[1]):
        with pytest.raises(ValueError, match="operator 'net' .*captured for a partition of 16"):
            app.run("while", policy="every", partition=where)
    stamp = resident.OutputStamp()
    with app.run("while", policy="every", partition=parts[0]) as run:
        for x in inputs(4):
            seq = app.mailbox.publish(x.numpy())
            stamp, payload = app.mailbox.wait_output(stamp, timeout=5.0)
            assert stamp.seq == seq
            with torch.no_grad():
                want = module(x.cuda()).cpu()
            got = torch.frombuffer(bytearray(payload), dtype=torch.float32)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert run.report.stopped, run.report.error
    assert run.report.counters.processed == 4
    whole = TorchApp(model())
    with pytest.raises(ValueError, match="captured for the whole GPU"):
        whole.run("while", partition=parts[0])


def test_the_ports_are_the_static_tensors():
    app = TorchApp(model())
    plan = app.plan()
    net = app.net
    assert net.input_names == ("input",) and net.output_names == ("output",)
    assert net.inputs[0].nbytes == 4 * IN and net.outputs[0].nbytes == 4 * OUT
    external = [b for b in plan.buffers if b.external]
    assert {b.bytes for b in external} >= {4 * IN, 4 * OUT}
    assert app._torch_operators == [net]  # kept with the application


def test_tear_down_on_an_exception_then_run_again():
    app = TorchApp(model())
    with pytest.raises(RuntimeError, match="in the block"):
        with app.run("while", policy="every") as run:
            raise RuntimeError("in the block")
    assert run.report.stopped, run.report.error
    (x,) = inputs(1)
    with app.run("tail", policy="every"):
        seq = app.mailbox.publish(x.numpy())
        stamp, _ = app.mailbox.wait_output(timeout=5.0)
        assert stamp.seq == seq


def test_bad_arguments_are_refused():
    class Bad(resident.Application):
        def __init__(self, example, **kw):
            super().__init__("bad")
            self.example, self.kw = example, kw

        def compose(self):
            make_torch_operator(self, "net", model(), self.example, **self.kw)

    with pytest.raises(ValueError, match="CUDA device"):
        Bad(torch.zeros(IN)).plan()
    with pytest.raises(ValueError, match="warmup"):
        Bad(torch.zeros(IN, device="cuda"), warmup=0).plan()
    with pytest.raises(ValueError, match="names for 1 tensors"):
        Bad(torch.zeros(IN, device="cuda"), input_names=("a", "b")).plan()


def test_torch_imports_after_resident_in_a_fresh_process():
    # The module once exported the static C++ runtime's symbols; loaded first, it made PyTorch's
    # import abort in free(). A fresh interpreter, since this one has both loaded already.
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", "import resident; import torch; print('ok')"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
