"""python -m resident.bench.disb: REEF's DNN inference serving benchmark, rebuilt in-process.

A real-time (RT) torchvision classifier runs in a resident loop fed by a pinned C++ sensor
thread through the mailbox (fixed rate, or Poisson arrivals of the same mean), with a deadline;
best-effort (BE) clients run other torchvision models back to back at a fixed batch size. Each
policy runs the same workload:

  exclusive        the RT loop alone (the baseline of rt_p99_over_exclusive)
  be-alone, be-alone-graphs
                   the BE clients alone for --alone-s seconds, no RT loop (translated models;
                   PyTorch's graphs): the most BE work the GPU gives each implementation
  priority         BE as PyTorch CUDA-graph replays on a low-priority stream, the RT loop on
                   the highest-priority stream: how concurrent model instances (Triton's) share
  split            the RT loop in a green-context partition of --rt-sms SMs, BE as translated
                   models in the rest of the GPU, not preempted
  sequential       BE as translated models that submit only while the RT word is down, one
                   launch at a time (the baseline of the translated policies'
                   be_throughput_over_sequential: split's and translated's)
  translated       BE as translated models (resident.translate) on resident's preemptible
                   kernels, preempted while the RT loop works and resumed after
  translated-spatial
                   the RT loop in a partition of --rt-sms SMs, translated BE on every SM; a raise
                   clears only the RT partition's SMs (at most 3 BE blocks on each of them at
                   any time, so the handler finds room) and BE goes on elsewhere (bench reef's
                   preempt-sm); its preemption latency is not measured (BE never leaves the GPU)
  sequential-graphs
                   BE as PyTorch CUDA graphs replayed one at a time, each begun only while the
                   RT word is down and not gated: an RT sample arriving mid-inference runs
                   beside the rest of it (a resident loop cannot wait for a host-launched
                   graph), so BE never waits for RT work that began after it, and its
                   throughput is at least that of strict one-task-at-a-time FIFO: the baseline
                   of the graph policies' be_throughput_over_sequential (priority's and
                   kernel-boundary's)
  kernel-boundary  BE as PyTorch CUDA graphs gated at their kernel boundaries (GatedGraph)
  kernel-boundary+split
                   both: the RT loop in a partition of --rt-sms SMs, the gated BE graphs
                   captured on and run in the rest (so they share no SM with it), and still
                   gated, so they also leave the memory system while the RT loop works

Every RT output's top-1 is checked against eager PyTorch, and every BE client's last output
against eager (translated: the plan's output; graphs: the graph's output tensor). Results name
the RT model, the workload and the policy and carry rt_p99_over_exclusive,
be_throughput_over_sequential, priority_p99_over_rt_p99 (the priority policy's RT p99 over this
policy's: REEF reports 1.12-5.20x against Triton), wrong_outputs and, for the preempting policies,
preemption_latency_us: per RT sample, from the loop raising its word to the BE work leaving
(translated: the last BE block off the GPU; gated graphs: the first gate holding), on the
device clock (resident.bench.preemption). Each BE implementation has its own sequential
baseline (translated: sequential; PyTorch graphs: sequential-graphs). Not yet here: BE work
from another process.

The receipt's settings.targets judge the issue's targets per group (disb_targets). A workload
too long for one call runs in parts that --merge joins and judges again:

  python -m resident.bench.disb --quick --json out/disb-quick.json
  python -m resident.bench.disb --workload one --json out/disb.json
  python -m resident.bench.disb --merge one.json three.json poisson.json --json out/disb.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from typing import Any, Callable, Sequence

import resident
from resident import _resident
from resident.bench import preemption
from resident.bench.disb_targets import GRAPH_POLICIES, judge, merge, relate, target_lines
from resident.bench.inference import pick_cpus, receipt_header, save_partial
from resident.bench.stats import summarize, summarize_run

POLICIES = ("exclusive", "be-alone", "be-alone-graphs", "priority", "split", "sequential", "translated", "translated-spatial",
            "sequential-graphs", "kernel-boundary", "kernel-boundary+split")
# The RT loop in a partition of its own.
SPLIT_POLICIES = ("split", "kernel-boundary+split", "translated-spatial")
TRANSLATED_POLICIES = ("translated", "sequential", "split", "translated-spatial", "be-alone")
ALONE = ("be-alone", "be-alone-graphs")  # BE clients with no RT loop
PREEMPTING = ("sequential", "translated", "kernel-boundary", "kernel-boundary+split")
# The RT loop raises the word while it works.
RAISING = PREEMPTING + ("sequential-graphs", "translated-spatial")
STAMPS = 1 << 22  # per BE client: a ring of BE activity or gate hold stamps (32 MiB)
WORKLOADS = {  # name: the BE models and their batch sizes
    "one": [("vgg16", 8)],
    "three": [("vgg16", 8), ("mobilenet_v2", 16), ("densenet121", 8)],
}
DEFAULTS = {"rt_model": "resnet50", "rate_hz": 150.0, "deadline_us": 3000.0}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m resident.bench.disb",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rt-model", default=DEFAULTS["rt_model"])
    p.add_argument("--rate", type=float, default=DEFAULTS["rate_hz"], help="RT samples per s")
    p.add_argument("--poisson", action="store_true", help="Poisson RT arrivals of that mean rate")
    p.add_argument("--deadline-us", type=float, default=DEFAULTS["deadline_us"])
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="one")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--mode", default="while", choices=("host-graph", "while", "tail"))
    p.add_argument("--rt-sms", type=int, default=32, help="the RT partition's SMs (split)")
    p.add_argument("--be-window", type=int, default=1,
                   help="translated BE: launches in flight (bench reef's default)")
    p.add_argument("--be-bounded-grid", type=int, default=4,
                   help="translated BE: grid blocks per SM that loop over the logical blocks, "
                        "so a raise waits only for the blocks on the SMs (0: one grid block "
                        "per logical block; bench reef's default is 4)")
    p.add_argument("--samples", type=int, default=5000, help="measured RT samples per policy")
    p.add_argument("--alone-s", type=float, default=10.0,
                   help="how long the BE clients run alone (be-alone, be-alone-graphs)")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--quick", action="store_true", help="300 samples, 50 warm-up, 3 s alone")
    p.add_argument("--json", default="out/disb.json")
    p.add_argument("--note", default="")
    p.add_argument("--merge", nargs="+", metavar="PART", default=None,
                   help="no run: merge these receipts (workloads or policies run in separate "
                        "calls), relate each group's policies, judge the targets, write --json")
    args = p.parse_args(argv)
    args.policies = [x for x in args.policies.split(",") if x]
    bad = [x for x in args.policies if x not in POLICIES]
    if bad:
        p.error(f"unknown policies {bad}; choose from {', '.join(POLICIES)}")
    if args.rate <= 0 or args.deadline_us <= 0 or args.samples < 1 or args.warmup < 0:
        p.error("--rate, --deadline-us and --samples must be > 0, --warmup >= 0")
    if args.rt_sms < 1:
        p.error("--rt-sms must be >= 1")
    if not 0 < args.alone_s <= 3600:
        p.error("--alone-s must be > 0 and at most 3600")
    if args.be_window < 1 or not 0 <= args.be_bounded_grid <= 64:
        p.error("--be-window must be >= 1 and --be-bounded-grid from 0 to 64")
    if args.quick:
        args.samples, args.warmup = 300, 50
        args.alone_s = min(args.alone_s, 3.0)
    return args


# Every policy of a run uses the same BE models: each is made (seeded weights, input, eager's
# output) and translated once, and kept for the run (a model's translated tensors serve one
# runner at a time, as the policies run one after another).
_BE_MODELS: dict[tuple[str, int], dict[str, Any]] = {}


def be_model(name: str, batch: int) -> dict[str, Any]:
    """BE model `name` (torchvision, seeded random weights) on the GPU, its input at `batch`
    (CPU) and eager's output for it (CPU), made once a run."""
    import torch
    import torchvision

    key = (name, batch)
    if key not in _BE_MODELS:
        torch.manual_seed(21)
        model = getattr(torchvision.models, name)().eval().cuda()
        x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(22))
        with torch.no_grad():
            want = model(x.cuda()).float().cpu()
        _BE_MODELS[key] = {"model": model, "x": x, "want": want}
    return _BE_MODELS[key]


def be_translated(name: str, batch: int) -> tuple[Any, Any]:
    """The translated plan of be_model(name, batch) and its resident model, made once a run."""
    import copy

    from resident.translate import translate

    made = be_model(name, batch)
    if "plan" not in made:
        plan = translate(copy.deepcopy(made["model"]).cpu(), tuple(made["x"].shape))
        made["plan"], made["resident"] = plan, plan.to_resident()
    return made["plan"], made["resident"]


class be_client:
    """One BE model under one policy: started before the RT run, stopped after it; counts
    inferences and checks its last output against eager."""

    def __init__(self, name: str, batch: int, policy: str, signal: Any,
                 partition: Any = None, window: int = 1, bounded_grid: int = 4,
                 spatial: Any = None) -> None:
        import torch

        self.name, self.batch, self.policy = name, batch, policy
        made = be_model(name, batch)
        model, self.x, self.want = made["model"], made["x"], made["want"]
        self.inferences = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: list[BaseException] = []
        if policy in TRANSLATED_POLICIES:
            self.plan, self.model = be_translated(name, batch)
            self.plan.infer(self.model, self.x)  # the input stays in the model's tensor
            self.runner = _resident.BestEffortRunner(
                self.model, signal, window=window,
                bounded_grid_per_sm=bounded_grid if policy != "split" else 0,
                sequential=policy == "sequential",
                preemptible=policy != "split",
                partition=None if policy == "translated-spatial" else partition,
                activity_stamps=STAMPS if policy in PREEMPTING else 0, spatial=spatial)
        else:
            from resident.torch import capture_graph

            # kernel-boundary launches its own gated copy of the captured graph; priority
            # replays PyTorch's. With a split the graph is captured on, and runs in, a stream
            # of the BE partition: its kernels keep the context they were captured in.
            gated = policy.startswith("kernel-boundary")
            if partition is not None:
                self.partition_stream = partition.make_stream()
                self.stream = torch.cuda.ExternalStream(self.partition_stream.handle)
            else:
                self.stream = torch.cuda.Stream(priority=0)  # the lowest
            # The graph reads this tensor at every replay: it must live as long as the graph.
            self.x_cuda = self.x.cuda()
            self.graph, self.out = capture_graph(
                model, self.x_cuda, keep_graph=gated,
                stream=self.stream if partition is not None else None)
            if gated:
                self.gated = _resident.GatedGraph(self.graph.raw_cuda_graph(), signal,
                                                  hold_stamps=STAMPS)
                self.launch: Callable[[], None] = lambda: self.gated.launch(
                    self.stream.cuda_stream)
            elif policy == "sequential-graphs":
                self.signal = signal
                self.launch = self._replay_while_down
            else:
                self.launch = self._replay

    def _replay_while_down(self) -> None:
        # The word's host mirror (no CUDA call); a short sleep lets the other threads run.
        while self.signal.raised and not self._stop.is_set():
            time.sleep(20e-6)
        self._replay()

    def _replay(self) -> None:
        import torch

        with torch.cuda.stream(self.stream):
            self.graph.replay()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self.launch()
                self.stream.synchronize()
                self.inferences += 1
        except BaseException as e:  # reported by stop()
            self._error.append(e)

    def start(self) -> None:
        self._t0 = time.monotonic()
        if hasattr(self, "runner"):
            self.runner.start()
        else:
            # A daemon: a client left running by a failure elsewhere cannot keep the process.
            self._thread = threading.Thread(target=self._loop, name=f"be-{self.name}",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> dict[str, Any]:
        import torch

        seconds = time.monotonic() - self._t0
        out: dict[str, Any] = {"model": self.name, "batch": self.batch}
        if hasattr(self, "runner"):
            stats = self.runner.stop()
            self.activity = self.runner.activity()
            self.activity_lost = self.runner.activity_lost
            self.inferences = stats["sequences"]
            got = self.plan.infer(self.model, self.x)
            out["runner"] = stats
            tolerance = 1e-3 * self.want.abs().max().item()
            out["wrong_outputs"] = int((got - self.want).abs().max().item() > tolerance)
        else:
            self._stop.set()
            assert self._thread is not None
            self._thread.join()
            if self._error:
                raise self._error[0]
            if hasattr(self, "gated"):
                out["gates"] = self.gated.stats()
                self.holds = self.gated.holds()
                self.holds_lost = self.gated.holds_lost
            got = self.out.float().cpu()
            # cuDNN may pick other algorithms in the graph than eagerly: top-1, not bits.
            out["wrong_outputs"] = int(not torch.equal(got.argmax(1), self.want.argmax(1)))
        out["inferences"] = self.inferences * self.batch
        out["inferences_per_s"] = self.inferences * self.batch / seconds
        return out


def run_alone(policy: str, args: argparse.Namespace) -> dict[str, Any]:
    """The BE clients for --alone-s seconds with no RT loop: a result with no RT latency."""
    signal = _resident.PreemptSignal()  # never raised
    clients = [be_client(name, batch, policy, signal, None, args.be_window, args.be_bounded_grid)
               for name, batch in WORKLOADS[args.workload]]
    for c in clients:
        c.start()
    try:
        time.sleep(args.alone_s)
    finally:
        be = stop_all(clients)
    return {"policy": policy, "rt_model": None, "workload": args.workload, "mode": None,
            "rate_hz": None, "arrivals": None, "deadline_us": None, "deadline_misses": 0,
            "latency_us": {}, "histogram_us": None, "missing_outputs": 0, "wrong_top1": 0,
            "partition_sms": None, "stopped": True, "error": "", "be": be,
            "be_inferences_per_s": sum(b["inferences_per_s"] for b in be),
            "wrong_outputs": sum(b["wrong_outputs"] for b in be), "seconds": args.alone_s,
            "preemption_latency_us": None, "preemption": None, "queued_at_stop": 0}


def run_policy(policy: str, app_factory: Callable[[Any], Any], reference: list[int],
               args: argparse.Namespace, cpus: dict[str, int]) -> dict[str, Any]:
    import torch

    if policy in ALONE:
        return run_alone(policy, args)

    signal = _resident.PreemptSignal()
    parts = (_resident.split_partitions([args.rt_sms, 8], rest_to_last=True)
             if policy in SPLIT_POLICIES else [None, None])
    # Spatial: one share of the RT partition's SMs for every BE client (bench reef's preempt-sm:
    # two launches in flight, 3 BE blocks at most on an RT SM).
    spatial = (_resident.SpatialShare(parts[0], rt_sm_blocks=3)
               if policy == "translated-spatial" else None)
    window = 2 if spatial is not None else args.be_window
    clients = [] if policy == "exclusive" else [
        be_client(name, batch, policy, signal, parts[1], window, args.be_bounded_grid, spatial)
        for name, batch in WORKLOADS[args.workload]]
    app = app_factory(parts[0])  # captured for the partition it runs in
    # Compose now: the RT model's capture must not overlap the BE clients' replays (PyTorch's
    # capture is global to the process), so the clients start only after it.
    app.plan()
    total = args.warmup + args.samples
    options: dict[str, Any] = {"policy": "every", "deadline_us": args.deadline_us,
                               "telemetry_samples": total + 64}
    if args.mode == "host-graph":
        options["loop_cpu"] = cpus["loop"]
    else:
        # The handler polls inside its kernel for longer than a period: a handler that ended
        # its pass must be launched again, and with translated BE blocks on every SM it waits
        # for a whole BE kernel to end before it can see the next sample (findings, section 8:
        # "The RT loop needs room on its own SMs"). bench reef polls 20 ms for the same reason.
        options["poll_ns"] = 20_000_000
    if policy in RAISING:
        options["preempt"] = signal
    if policy in SPLIT_POLICIES:
        options["partition"] = parts[0]
    if policy == "priority":
        _, highest = torch.cuda.Stream.priority_range()
        options["stream_priority"] = highest
    payloads = torch.arange(100, dtype=torch.int32).numpy()
    for c in clients:
        c.start()
    try:
        with app.run(args.mode, timeout_ms=10000, **options) as run:
            d = _resident._drive_mailbox(
                app.mailbox, payloads, total, args.rate, sensor_cpu=cpus["sensor"],
                actuator_cpu=cpus["actuator"], keep_bytes=8, drain_s=1.0,
                observer_cpu=cpus["observer"], poisson_seed=7 if args.poisson else -1)
    finally:
        be = stop_all(clients)
    report = run.report
    r = summarize_run(d, reference, args.warmup, args.samples)
    r.update(policy=policy, rt_model=args.rt_model, workload=args.workload, mode=args.mode,
             rate_hz=args.rate, arrivals="poisson" if args.poisson else "fixed",
             deadline_us=args.deadline_us, deadline_misses=report.counters.deadline_misses,
             partition_sms=[p.sm_count for p in parts] if policy in SPLIT_POLICIES else None,
             stopped=report.stopped, error=report.error, be=be,
             be_inferences_per_s=sum(b["inferences_per_s"] for b in be),
             wrong_outputs=r["wrong_top1"] + sum(b["wrong_outputs"] for b in be),
             preemption_latency_us=None, preemption=None,
             counters={"processed": report.counters.processed,
                       "dropped": report.counters.dropped},
             # Published, neither processed nor dropped: still queued when the run stopped
             # (the drain waits 1 s), i.e. the loop fell behind; accounted, not lost.
             queued_at_stop=total - report.counters.processed - report.counters.dropped)
    if policy in PREEMPTING:
        r["preemption"] = preemption_of(run, clients, args.warmup)
        lat = r["preemption"]["latency_us"]
        r["preemption_latency_us"] = (None if lat is None else
                                      {k: lat[k] for k in ("n", "p50", "p99", "max")})
    return r


def outcome(results: Sequence[dict[str, Any]]) -> tuple[int, int, dict[str, int]]:
    """(wrong outputs, lost outputs, per policy the samples its loop never processed).
    An RT output never seen is lost unless the loop's counters account for it: dropped (a loop
    that fell behind overflows the mailbox, whose oldest sample is then counted as dropped) or
    still queued when the loop stopped."""
    wrong = sum(r["wrong_outputs"] for r in results)
    lost, behind = 0, {}
    for r in results:
        unprocessed = r.get("counters", {}).get("dropped", 0) + r.get("queued_at_stop", 0)
        lost += max(0, r["missing_outputs"] - unprocessed)
        if unprocessed > 0:
            behind[r["policy"]] = unprocessed
    return wrong, lost, behind


def stop_all(clients: list[Any]) -> list[dict[str, Any]]:
    """Stops every client, even when one of them failed, then raises the first failure."""
    results, errors = [], []
    for c in clients:
        try:
            results.append(c.stop())
        except Exception as e:  # noqa: BLE001 (re-raised below, after the others stopped)
            errors.append(e)
    if errors:
        raise errors[0]
    return results


def preemption_of(run: Any, clients: list[Any], warmup: int) -> dict[str, Any]:
    """Per-raise preemption latency of the measured samples (after the warm-up): each BE
    client's outcome from its own stamps (translated: activity; gated: holds), a raise answered
    when the last client is."""
    entries = sorted(run.telemetry(), key=lambda e: e.seq)[warmup:]
    windows = preemption.raise_windows(entries)
    per_client = []
    for c in clients:
        if hasattr(c, "holds"):
            per_client.append(preemption.hold_outcomes(windows, c.holds, c.holds_lost))
        elif hasattr(c, "activity"):
            per_client.append(preemption.activity_outcomes(windows, c.activity, c.activity_lost))
    out = preemption.summarize_outcomes(preemption.combine(per_client))
    out["stamps_lost"] = sum(getattr(c, "activity_lost", 0) + getattr(c, "holds_lost", 0)
                             for c in clients)
    out["telemetry_lost"] = run.telemetry_lost
    return out


def be_kernel_durations(workload: str) -> dict[str, Any]:
    """Per BE model of the workload ("name@batch"): its kernels' durations in one eager inference
    (PyTorch's profiler), what a kernel-boundary gate waits behind at most."""
    from resident.bench.gates import kernel_durations_us

    out = {}
    for name, batch in WORKLOADS[workload]:
        made = be_model(name, batch)
        durations = kernel_durations_us(made["model"], made["x"].cuda())
        out[f"{name}@{batch}"] = summarize(durations) if durations else None
    return {k: v for k, v in out.items() if v is not None}


def write_receipt(receipt: dict[str, Any], path: str) -> None:
    """Writes the receipt and prints its verdicts."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(receipt, f, indent=1)
    for line in target_lines(receipt["settings"]["targets"]):
        print(f"disb: {line}")


def finish(receipt: dict[str, Any], args: argparse.Namespace) -> int:
    """Relates the policies, judges the targets, writes the receipt; exit 1 when an output was
    wrong or lost."""
    receipt["settings"]["targets"] = judge(receipt["results"], receipt["settings"],
                                           receipt["device"].get("name", ""))
    write_receipt(receipt, args.json)
    wrong, lost, behind = outcome(receipt["results"])
    print(f"disb: receipt {args.json}; {wrong} wrong outputs, {lost} lost"
          + (f"; dropped or still queued, counted (the loop fell behind): {behind}"
             if behind else ""))
    return 1 if wrong or lost else 0


def merge_parts(args: argparse.Namespace) -> int:
    """--merge: no run; one receipt from the parts, judged."""
    parts = []
    for path in args.merge:
        try:
            with open(path) as f:
                parts.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"disb: cannot read the receipt {path}: {e}", file=sys.stderr)
            return 2
    try:
        merged = merge(parts)
    except (KeyError, TypeError, ValueError) as e:
        print(f"disb: cannot merge {', '.join(args.merge)}: {e!r}", file=sys.stderr)
        return 2
    if args.note:
        merged["note"] = args.note
    write_receipt(merged, args.json)
    print(f"disb: merged {len(parts)} receipts ({len(merged['results'])} results) into "
          f"{args.json}")
    return 0


def print_policy(policy: str, r: dict[str, Any]) -> None:
    s = r["latency_us"]
    rt = (f"RT p50 {s['p50']:.0f} p99 {s['p99']:.0f} max {s['max']:.0f} us, "
          f"{r['deadline_misses']} misses" if s else "no RT loop")
    print(f"disb: {policy}: {rt}; BE {r['be_inferences_per_s']:.1f} inferences/s; "
          f"{r['wrong_outputs']} wrong outputs", flush=True)
    if r["preemption"] is not None:
        pl, pr = r["preemption_latency_us"], r["preemption"]
        told = (f"p50 {pl['p50']:.1f} p99 {pl['p99']:.1f} max {pl['max']:.1f} us over "
                f"{pl['n']}" if pl else "none measured")
        print(f"disb: {policy}: preemption latency {told} of {pr['raises']} raises", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.merge:
        return merge_parts(args)
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"disb: needs PyTorch and torchvision ({e})", file=sys.stderr)
        return 2
    if resident.device_count() == 0:
        print(f"disb: {resident.no_device_reason()}", file=sys.stderr)
        return 2
    from resident.bench.inference import Classify, InferenceApp, eager_reference, load_images
    from resident.bench.inference import make_model

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cpus, _ = pick_cpus()
    images = load_images(os.environ.get("RESIDENT_PHOTO_DIR", ".photos"))
    module = Classify(make_model(args.rt_model), images)
    reference, _ = eager_reference(module)
    receipt = receipt_header(
        "disb", argv,
        {"rt_model": args.rt_model, "rate_hz": args.rate, "poisson": args.poisson,
         "deadline_us": args.deadline_us, "workload": args.workload,
         "be_models": WORKLOADS[args.workload], "mode": args.mode, "samples": args.samples,
         "warmup": args.warmup, "tf32": False, "alone_s": args.alone_s,
         "translated_be": {"window": args.be_window, "bounded_grid_per_sm": args.be_bounded_grid,
                           "spatial": {"window": 2, "rt_sm_blocks": 3}}},
        {"thread_cpus": cpus, "python": platform.python_version(), "torch": torch.__version__},
        args.note)
    receipt["results"] = []
    for policy in args.policies:
        print(f"disb: {args.rt_model} / {args.workload} / {policy} ...", flush=True)
        r = run_policy(policy, lambda part: InferenceApp(module, part), reference, args, cpus)
        receipt["results"].append(r)
        print_policy(policy, r)
        # Partial receipt after each policy: a later failure keeps what ran.
        save_partial({k: v for k, v in receipt.items() if k != "results"}, receipt["results"],
                     args)
    if any(p.startswith("kernel-boundary") for p in args.policies):
        # After every policy: the profiler is not left set up under the timed runs. A profiler
        # that fails costs the gate bound's verdict, not the run's receipt.
        try:
            receipt["settings"]["be_kernel_duration_us"] = be_kernel_durations(args.workload)
        except Exception as e:  # noqa: BLE001 (recorded, and the target says not judged)
            receipt["settings"]["be_kernel_profile_error"] = repr(e)
            print(f"disb: the BE models' kernels could not be profiled: {e!r}", file=sys.stderr)
    return finish(receipt, args)


if __name__ == "__main__":
    sys.exit(main())
