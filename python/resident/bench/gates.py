"""python -m resident.bench.gates: kernel-boundary preemption of closed PyTorch models.

Each torchvision model (random weights, fp32, TF32 off) captured as PyTorch's CUDA graph and
gated before every kernel (resident GatedGraph). Per model: its kernels' durations (PyTorch's
profiler over an eager inference: what a gate waits behind), the cost of the gates with the word
never raised (gated against ungated replays, CUDA events), and the preemption latency: the word
raised from the device at a random point of an inference (a kernel stamps %globaltimer, then
raises), and the first gate that then finds it up stamps when it began to wait; the difference
is how long the kernels in flight took to reach their next gate. The gated graph's output is
checked against eager after the trials.

  python -m resident.bench.gates --quick --json out/gates-quick.json
  python -m resident.bench.gates --json out/gates.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from typing import Any, Sequence

import resident
from resident import _resident
from resident.bench.inference import receipt_header
from resident.bench.stats import summarize

MODELS = ("resnet50", "vgg16", "mobilenet_v2", "densenet121", "efficientnet_b0")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m resident.bench.gates",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--trials", type=int, default=200, help="raises per model (default 200)")
    p.add_argument("--reps", type=int, default=30, help="replays timed per way (default 30)")
    p.add_argument("--quick", action="store_true", help="30 raises, 10 replays")
    p.add_argument("--json", default="out/gates.json")
    p.add_argument("--note", default="")
    args = p.parse_args(argv)
    if args.batch < 1 or args.trials < 1 or args.reps < 1:
        p.error("--batch, --trials and --reps must be >= 1")
    if args.quick:
        args.trials, args.reps = 30, 10
    return args


def kernel_durations_us(model: Any, x: Any) -> list[float]:
    """The CUDA kernels of one eager inference, from PyTorch's profiler (µs each)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        model(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(x)
            torch.cuda.synchronize()
    out = []
    for e in prof.events():
        if not str(getattr(e, "device_type", "")).endswith("CUDA"):
            continue
        # device_time since PyTorch 2.4; cuda_time (deprecated, with a warning) before it.
        duration = e.device_time if hasattr(e, "device_time") else e.cuda_time
        if duration > 0:
            out.append(float(duration))
    return out


def replay_ms(launch: Any, stream: Any, reps: int) -> float:
    import torch

    for _ in range(2):
        launch()
    stream.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        begin.record()
        for _ in range(reps):
            launch()
        end.record()
    end.synchronize()
    return begin.elapsed_time(end) / reps


NO_WAIT = 2**64 - 1  # first_wait_ns when no gate waited since reset_first_wait()


def trial(gated: Any, raiser: Any, signal: Any, be: Any, raise_stream: Any,
          within_s: float) -> float | None:
    """One raise at a random point of an inference: the latency (µs), or None when the raise
    came after the inference's last gate."""
    gated.reset_first_wait()
    waits = gated.stats()["waits"]
    gated.launch(be.cuda_stream)
    time.sleep(random.uniform(0.0, within_s))
    raiser.fire(raise_stream.cuda_stream)
    raise_stream.synchronize()
    deadline = time.monotonic() + 2.0
    latency = None
    while time.monotonic() < deadline:
        # first_wait_ns is written as a gate begins to wait: the word is lowered while it holds.
        first = gated.stats()["first_wait_ns"]
        if first != NO_WAIT:
            raised = raiser.raised_ns()
            if first < raised:
                raise RuntimeError(f"gates: a gate began to wait at {first} ns, before the word "
                                   f"was raised at {raised} ns")
            latency = (first - raised) / 1e3
            break
        if be.query():  # done before any gate saw the word
            break
    signal.clear()
    be.synchronize()
    if latency is not None and gated.stats()["waits"] == waits:
        raise RuntimeError("gates: a gate held, but its wait was not counted")
    return latency


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import torch
    import torchvision

    torch.manual_seed(31)
    model = getattr(torchvision.models, name)().cuda().eval()
    x = torch.randn(args.batch, 3, 224, 224, device="cuda",
                    generator=torch.Generator(device="cuda").manual_seed(32))
    durations = kernel_durations_us(model, x)
    from resident.torch import capture_graph

    with torch.no_grad():
        want = model(x).float()
    graph, out = capture_graph(model, x)
    signal = _resident.PreemptSignal()
    gated = _resident.GatedGraph(graph.raw_cuda_graph(), signal)
    raiser = _resident.DeviceRaiser(signal)
    be = torch.cuda.Stream(priority=0)
    _, highest = torch.cuda.Stream.priority_range()
    raise_stream = torch.cuda.Stream(priority=highest)
    gated_ms = replay_ms(lambda: gated.launch(be.cuda_stream), be, args.reps)
    graph.instantiate()
    ungated_ms = replay_ms(graph.replay, be, args.reps)
    random.seed(33)
    latencies, after_last = [], 0
    for _ in range(args.trials):
        lat = trial(gated, raiser, signal, be, raise_stream, gated_ms / 1e3)
        if lat is None:
            after_last += 1
        else:
            latencies.append(lat)
    out.zero_()
    gated.launch(be.cuda_stream)
    be.synchronize()
    tolerance = 1e-3 * want.abs().max().item()
    wrong = int((out - want).abs().max().item() > tolerance)
    kernels = summarize(durations) if durations else None
    lat = summarize(latencies) if latencies else None
    return {
        "model": name, "batch": args.batch, "kernels": gated.kernels, "gates": gated.gates,
        "kernel_duration_us": kernels, "ungated_ms": ungated_ms, "gated_ms": gated_ms,
        "gate_cost_us": (gated_ms - ungated_ms) * 1e3 / max(gated.gates, 1),
        "gated_over_ungated": gated_ms / ungated_ms,
        "preemption_latency_us": lat, "raises": args.trials, "raised_after_last_gate": after_last,
        "latency_p99_minus_kernel_p99_us": (lat["p99"] - kernels["p99"]) if lat and kernels
        else None,
        "gate_stats": gated.stats(), "wrong_outputs": wrong,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"gates: needs PyTorch and torchvision ({e})", file=sys.stderr)
        return 2
    if resident.device_count() == 0:
        print(f"gates: {resident.no_device_reason()}", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    receipt = receipt_header(
        "gates", argv,
        {"batch": args.batch, "trials": args.trials, "reps": args.reps, "tf32": False,
         "gate_every": 1},
        {"python": platform.python_version(), "torch": torch.__version__}, args.note)
    receipt["results"] = []
    for name in args.models:
        r = measure(name, args)
        receipt["results"].append(r)
        lat = r["preemption_latency_us"] or {}
        print(f"gates: {name}: {r['gates']} gates, {r['gate_cost_us']:.2f} us each; "
              f"preemption p50 {lat.get('p50', float('nan')):.0f} p99 "
              f"{lat.get('p99', float('nan')):.0f} us; longest kernel "
              f"{(r['kernel_duration_us'] or {}).get('max', float('nan')):.0f} us", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(receipt, f, indent=1)
    bad = sum(r["wrong_outputs"] for r in receipt["results"])
    print(f"gates: receipt {args.json}; {bad} wrong outputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
