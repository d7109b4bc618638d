"""Best-effort work from Python on the GPU: a translated model run over and over by a
preempting runner while the word goes up and down (its output keeps the unpreempted bits), and
a PyTorch CUDA graph gated at its kernel boundaries (it holds while the word is up, and gives
eager's output)."""

import random
import time

import pytest

from resident import _resident
from resident_test_env import import_or_skip

torch = import_or_skip("torch")

from resident.torch import capture_graph  # noqa: E402
from resident.translate import translate  # noqa: E402
from test_translate import Small, randomize_batch_norms  # noqa: E402

pytestmark = pytest.mark.gpu


def eager_and_graph(net, x):
    """net(x) eagerly, and net(x) captured (its raw graph kept for GatedGraph): (eager output,
    graph, the graph's output tensor)."""
    with torch.no_grad():
        want = net(x)
    g, out = capture_graph(net, x)
    return want, g, out


def translated_small(seed):
    """A small translated CNN with randomized batch norms, its input and its unpreempted
    output."""
    torch.manual_seed(seed)
    plan = translate(randomize_batch_norms(Small(), seed + 2), (8, 3, 32, 32))
    model = plan.to_resident()
    x = torch.randn(8, 3, 32, 32)
    return plan, model, x, plan.infer(model, x)


def run_while_the_word_flaps(runner, signal, times=40):
    """Runs `runner` while the word goes up (1 ms) and down (2 ms) `times` times; its stats."""
    runner.start()
    for _ in range(times):
        time.sleep(0.002)
        signal.raise_word()
        time.sleep(0.001)
        signal.clear()
    return runner.stop()


def test_a_preempted_translated_model_keeps_the_unpreempted_bits():
    plan, model, x, unpreempted = translated_small(3)
    signal = _resident.PreemptSignal()
    runner = _resident.BestEffortRunner(model, signal, activity_stamps=1 << 16)
    stats = run_while_the_word_flaps(runner, signal)
    assert stats["sequences"] > 0 and stats["repeated_commits"] == 0
    assert stats["preemptions"] > 0
    assert stats["resumed_launches"] == stats["preempted_launches"]
    # The runner's last inference left the same bits in the output tensor.
    again = plan.infer(model, x)
    assert torch.equal(again, unpreempted)
    # The activity stamps: every time BE blocks came onto the GPU they all left again.
    activity = runner.activity()
    assert runner.activity_lost == 0
    came = sum(1 for _, c in activity if c)
    assert came > 0 and came == len(activity) - came
    assert all(ns > 0 for ns, _ in activity)


def test_a_spatially_preempted_translated_model_keeps_the_unpreempted_bits():
    # The word clears only the RT partition's SMs: BE blocks cut there hand their logical block
    # to blocks elsewhere, and the inference still gives the unpreempted bits.
    plan, model, x, unpreempted = translated_small(4)
    rt = _resident.split_partitions([16, 8], rest_to_last=True)[0]
    share = _resident.SpatialShare(rt, rt_sm_blocks=3)
    assert share.sm_count == rt.sm_count and share.rt_sm_blocks == 3
    signal = _resident.PreemptSignal()
    runner = _resident.BestEffortRunner(model, signal, window=2, bounded_grid_per_sm=4,
                                        spatial=share)
    stats = run_while_the_word_flaps(runner, signal)
    assert stats["sequences"] > 0 and stats["repeated_commits"] == 0
    assert torch.equal(plan.infer(model, x), unpreempted)
    with pytest.raises(ValueError, match="rt_sm_blocks is -1"):
        _resident.SpatialShare(rt, rt_sm_blocks=-1)
    with pytest.raises(ValueError, match="spatial needs preemptible=True and sequential=False"):
        _resident.BestEffortRunner(model, signal, sequential=True, spatial=share)


def test_a_gated_pytorch_graph_holds_at_a_kernel_boundary_and_gives_eagers_output():
    torch.manual_seed(4)
    net = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(16)]).cuda().eval()
    x = torch.randn(256, 1024, device="cuda")
    want, g, out = eager_and_graph(net, x)
    signal = _resident.PreemptSignal()
    gated = _resident.GatedGraph(g.raw_cuda_graph(), signal, hold_stamps=64)
    assert gated.gates == gated.kernels >= 16
    stream = torch.cuda.Stream()
    out.zero_()
    gated.launch(stream.cuda_stream)
    stream.synchronize()
    torch.testing.assert_close(out, want)
    assert gated.stats()["waits"] == 0
    # Raised before the launch: the first gate holds the graph until the word falls.
    out.zero_()
    signal.raise_word()
    gated.launch(stream.cuda_stream)
    time.sleep(0.05)
    assert not stream.query(), "the graph ran with the word up"
    signal.clear()
    stream.synchronize()
    torch.testing.assert_close(out, want)
    st = gated.stats()
    assert st["waits"] >= 1 and st["timeouts"] == 0 and st["max_wait_ns"] >= 40_000_000
    holds = gated.holds()  # the first gate held once, and nothing before the raise
    assert len(holds) == st["waits"] and gated.holds_lost == 0
    assert holds[0] == st["first_wait_ns"]


def test_a_gated_graph_raised_and_cleared_many_times_gives_eagers_output_every_time():
    torch.manual_seed(5)
    net = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(16)]).cuda().eval()
    x = torch.randn(256, 1024, device="cuda")
    want, g, out = eager_and_graph(net, x)
    signal = _resident.PreemptSignal()
    gated = _resident.GatedGraph(g.raw_cuda_graph(), signal)
    stream = torch.cuda.Stream()
    rng = random.Random(6)
    for _ in range(20):
        out.zero_()
        gated.launch(stream.cuda_stream)
        for _ in range(rng.randint(1, 3)):  # up and down at random points of the inference
            time.sleep(rng.uniform(0.0, 0.002))
            signal.raise_word()
            time.sleep(rng.uniform(0.0, 0.002))
            signal.clear()
        stream.synchronize()
        torch.testing.assert_close(out, want)
    st = gated.stats()
    assert st["waits"] > 0 and st["timeouts"] == 0


def test_a_word_left_up_releases_the_gates_within_their_timeout():
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 64)).cuda().eval()
    x = torch.randn(4, 64, device="cuda")
    want, g, out = eager_and_graph(net, x)
    signal = _resident.PreemptSignal()
    gated = _resident.GatedGraph(g.raw_cuda_graph(), signal, timeout_ms=5.0)
    signal.raise_word()  # a dead loop: never cleared
    stream = torch.cuda.Stream()
    t0 = time.monotonic()
    gated.launch(stream.cuda_stream)
    stream.synchronize()
    assert time.monotonic() - t0 < 1.0
    torch.testing.assert_close(out, want)
    assert gated.stats()["timeouts"] == gated.gates
    signal.clear()


def test_destroying_one_captured_graph_leaves_the_others_replayable():
    # Two graphs with cuBLAS GEMMs; the first one destroyed, the second replayed, then a third
    # captured and replayed beside it: each keeps its own capture stream and cuBLAS workspace.
    torch.manual_seed(7)
    nets = [torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512)).cuda().eval() for _ in range(3)]
    xs = [torch.randn(64, 512, device="cuda") for _ in range(3)]
    first = eager_and_graph(nets[0], xs[0])
    want, g, out = eager_and_graph(nets[1], xs[1])
    del first
    import gc

    gc.collect()
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, want)
    want3, g3, out3 = eager_and_graph(nets[2], xs[2])
    side = torch.cuda.Stream()
    for _ in range(10):  # the two replayed at once, on two streams
        with torch.cuda.stream(side):
            g3.replay()
        g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(out3, want3)


def test_a_captured_graph_keeps_the_module_it_reads():
    # The graph reads the module's parameters at every replay: a caller that keeps only the
    # graph and its output (as a best-effort client does) must still get eager's output after
    # the module is dropped and its memory would have gone to other tensors.
    import gc

    torch.manual_seed(9)
    net = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                              torch.nn.Linear(2048, 64)).cuda().eval()
    x = torch.randn(32, 512, device="cuda")
    want, g, out = eager_and_graph(net, x)
    del net, x
    gc.collect()
    torch.cuda.empty_cache()
    scribble = [torch.full((1 << 20,), 7.0, device="cuda") for _ in range(16)]
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, want)
    del scribble
