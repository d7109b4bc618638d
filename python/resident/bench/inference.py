"""python -m resident.bench.inference: the reference paper's inference benchmark.

Five torchvision classifiers (random weights; batch 1, 224 x 224, fp32), each captured with
resident.torch and run in a sensor -> classifier -> actuator loop: a pinned C++ sensor thread
publishes the next image's index through the mailbox at a fixed rate, the loop gathers that
image from 100 preloaded photographs in device memory, classifies it and commits (class, logit),
and a pinned C++ actuator thread stamps the first sight of each output. Latency = publish ->
output seen (CLOCK_MONOTONIC), per mode (host-graph with its loop thread pinned, while, tail),
quiet and under host contention; every output's top-1 class is checked against eager PyTorch.

  python -m resident.bench.inference --quick --json out/inference-quick.json
  python -m resident.bench.inference --iterations 20000 --json out/inference.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import threading
import time
from typing import Any, Iterator, Sequence

try:
    import torch
except ImportError:  # --merge needs no PyTorch; a run says it is missing (main)
    torch = None

import resident
from resident.bench.inference_targets import judge, merge
from resident.bench.report import write_html
from resident.bench.stats import summarize_run

if torch is not None:
    from resident.torch import capture_graph, make_torch_operator

MODELS = ("shufflenet_v2_x0_5", "mobilenet_v2", "efficientnet_b0", "resnet50", "vgg16")
MODES = ("host-graph", "while", "tail", "torch-peer")  # torch-peer: PyTorch alone
IMAGES = 100
SIDE = 224
MEAN = (0.485, 0.456, 0.406)  # ImageNet normalization, as torchvision's classifiers expect
STD = (0.229, 0.224, 0.225)


def photo_paths(folder: str) -> list[str]:
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".png"))
    if not paths:
        raise SystemExit(f"inference: no PNG photographs in {folder} (scripts/photos fetches "
                         "them; RESIDENT_PHOTO_DIR names another folder)")
    return paths


def load_images(folder: str, count: int = IMAGES) -> torch.Tensor:
    """`count` normalized 3 x 224 x 224 crops of the photographs (deterministic), on the GPU."""
    from torchvision.io import ImageReadMode, read_image

    photos = [read_image(p, ImageReadMode.RGB).float() / 255.0 for p in photo_paths(folder)]
    g = torch.Generator().manual_seed(2024)
    out = []
    for i in range(count):
        img = photos[i % len(photos)]
        _, h, w = img.shape
        side = int(min(h, w) * (0.5 + 0.5 * torch.rand(1, generator=g).item()))
        y = int((h - side) * torch.rand(1, generator=g).item())
        x = int((w - side) * torch.rand(1, generator=g).item())
        crop = img[:, y:y + side, x:x + side].unsqueeze(0)
        out.append(torch.nn.functional.interpolate(crop, size=(SIDE, SIDE), mode="bilinear",
                                                   antialias=True, align_corners=False)[0])
    batch = torch.stack(out)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return ((batch - mean) / std).contiguous().cuda()


class Classify(torch.nn.Module if torch is not None else object):
    """index (int32[1]) -> (top-1 class, its logit) as float32[2], the image gathered on the GPU."""

    def __init__(self, model: torch.nn.Module, images: torch.Tensor) -> None:
        super().__init__()
        self.model = model
        self.images = images

    def forward(self, index: torch.Tensor) -> torch.Tensor:
        x = self.images.index_select(0, index.long())
        top = self.model(x).max(dim=1)
        return torch.stack((top.indices[0].float(), top.values[0])).contiguous()


def make_model(name: str) -> torch.nn.Module:
    import torchvision

    torch.manual_seed(0)  # random weights: nothing can be downloaded
    return getattr(torchvision.models, name)(weights=None).cuda().eval()


class InferenceApp(resident.Application):
    def __init__(self, module: torch.nn.Module, partition: Any = None) -> None:
        super().__init__("inference")
        self.module = module
        self.partition = partition  # the SM partition it will run in (None: the whole GPU)
        self.mailbox = resident.Mailbox(input_bytes=4, output_bytes=8, depth=4)

    def compose(self) -> None:
        rx = self.make_operator("io.mailbox_rx", "rx", mailbox=self.mailbox)
        net = make_torch_operator(self, "classifier", self.module,
                                  torch.zeros(1, dtype=torch.int32, device="cuda"),
                                  partition=self.partition)
        tx = self.make_operator("io.mailbox_tx", "tx", mailbox=self.mailbox)
        self.register_data_ready_handler(self.mailbox.make_handler(rx))
        self.add_flow(rx, net.operator, [("sample", "input")])
        self.add_flow(net.operator, tx, [("output", "in")])


def eager_reference(module: Classify) -> tuple[list[int], float]:
    """Each image's top-1 class from eager PyTorch, and the eager p50 time per image (µs)."""
    classes, times = [], []
    with torch.no_grad():
        for i in range(IMAGES):
            idx = torch.tensor([i], dtype=torch.int32, device="cuda")
            torch.cuda.synchronize()
            t = time.perf_counter_ns()
            out = module(idx)
            torch.cuda.synchronize()
            times.append((time.perf_counter_ns() - t) / 1e3)
            classes.append(int(out[0].item()))
    times.sort()
    return classes, times[len(times) // 2]


def capture(module: Classify) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """PyTorch's own graph of the module (warmed up on a side stream): graph, index, output."""
    idx = torch.zeros(1, dtype=torch.int32, device="cuda")
    graph, out = capture_graph(module, idx, keep_graph=False)
    return graph, idx, out


def replay_p50(module: Classify, reps: int = 50) -> float:
    """PyTorch's own replay of the captured module, synchronized each time: p50 (µs)."""
    graph, idx, _ = capture(module)
    times = []
    for i in range(reps):
        idx.fill_(i % IMAGES)
        torch.cuda.synchronize()
        t = time.perf_counter_ns()
        graph.replay()
        torch.cuda.synchronize()
        times.append((time.perf_counter_ns() - t) / 1e3)
    times.sort()
    return times[len(times) // 2]


def spin(stop_at: float) -> None:  # a host-contention hog
    x = 0
    while time.monotonic() < stop_at:
        x += 1


class Hogs:
    """Busy processes on the CPUs the measuring threads leave free (the stress level)."""

    def __init__(self, cpus: Sequence[int], seconds: float) -> None:
        self._procs = []
        ctx = multiprocessing.get_context("fork")
        for cpu in cpus:
            p = ctx.Process(target=spin, args=(time.monotonic() + seconds,), daemon=True)
            p.start()
            os.sched_setaffinity(p.pid, {cpu})
            self._procs.append(p)

    def stop(self) -> None:
        for p in self._procs:
            p.terminate()
        for p in self._procs:
            p.join()


def measure(module: Classify, reference: list[int], mode: str, rate_hz: float, args: Any,
            cpus: dict[str, int]) -> dict[str, Any]:
    """One configuration: a fresh application (its own captured graph), warm-up then measured."""
    app = InferenceApp(module)
    payloads = torch.arange(IMAGES, dtype=torch.int32).numpy()
    options: dict[str, Any] = {"policy": "every"}
    if mode == "host-graph":
        options["loop_cpu"] = cpus["loop"]
    else:
        options["poll_ns"] = 2_000_000
    total = args.warmup + args.iterations
    with app.run(mode, timeout_ms=5000, **options) as run:
        d = resident._resident._drive_mailbox(
            app.mailbox, payloads, total, rate_hz, sensor_cpu=cpus["sensor"],
            actuator_cpu=cpus["actuator"], keep_bytes=8, drain_s=1.0,
            observer_cpu=cpus["observer"])
    report = run.report
    r = summarize_run(d, reference, args.warmup, args.iterations)
    r.update(mode=mode, rate_hz=rate_hz, stopped=report.stopped, error=report.error,
             counters={"processed": report.counters.processed,
                       "dropped": report.counters.dropped})
    return r


def measure_torch_peer(module: Classify, reference: list[int], rate_hz: float, args: Any,
                       cpus: dict[str, int]) -> dict[str, Any]:
    """The same sensor -> classifier -> actuator loop written with PyTorch alone: a Python thread
    pinned like host-graph's loop thread polls the same kind of mailbox on the host, copies the
    index in, replays PyTorch's own graph of the module, synchronizes and commits the output from
    the host. The sensor and actuator threads are the ones resident's modes get."""
    mb = resident.Mailbox(input_bytes=4, output_bytes=8, depth=4)
    graph, idx, out = capture(module)
    idx_host = torch.zeros(1, dtype=torch.int32).pin_memory()
    out_host = torch.zeros(2, dtype=torch.float32).pin_memory()
    stop = threading.Event()
    failure: list[BaseException] = []

    def loop() -> None:
        try:
            os.sched_setaffinity(0, {cpus["loop"]})  # this thread (Linux: 0 is the caller)
            buf = idx_host.numpy()
            stream = torch.cuda.current_stream()
            last = 0
            while not stop.is_set():
                seq = mb.read_input(last, buf, "every")  # as resident's modes: every sample
                if seq == 0:
                    continue
                last = seq
                idx.copy_(idx_host, non_blocking=True)
                graph.replay()
                out_host.copy_(out, non_blocking=True)
                stream.synchronize()
                mb.commit_output(seq, out_host.numpy())
        except BaseException as e:  # reported by the caller
            failure.append(e)

    worker = threading.Thread(target=loop, name="torch-peer-loop")
    worker.start()
    try:
        payloads = torch.arange(IMAGES, dtype=torch.int32).numpy()
        d = resident._resident._drive_mailbox(
            mb, payloads, args.warmup + args.iterations, rate_hz, sensor_cpu=cpus["sensor"],
            actuator_cpu=cpus["actuator"], keep_bytes=8, drain_s=1.0,
            observer_cpu=cpus["observer"])
    finally:
        stop.set()
        worker.join()
    if failure:
        raise failure[0]
    r = summarize_run(d, reference, args.warmup, args.iterations)
    r.update(mode="torch-peer", rate_hz=rate_hz, stopped=True, error="",
             counters={"processed": 0, "dropped": 0})
    return r


def pick_cpus() -> tuple[dict[str, int], list[int]]:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 5:
        raise SystemExit(f"inference: needs 5 CPUs (sensor, two actuators, loop, one more); "
                         f"{len(allowed)} allowed")
    # Two actuator threads poll the output, each on its own core: one that loses its core for
    # longer than a sample period then misses no output the other saw (as bench io's observers).
    cpus = {"sensor": allowed[-1], "actuator": allowed[-2], "loop": allowed[-3],
            "observer": allowed[-4]}
    return cpus, allowed[:-4]


def git_commit() -> str:
    """The commit the package was built from: RESIDENT_GIT_COMMIT where set (the one who built an
    installed package names it), else the stamp the module was built with (its build tree copies
    the package's Python files at the same time), else the checkout's HEAD. A checkout carried
    to another machine may hold a stale .git, so HEAD comes last."""
    if os.environ.get("RESIDENT_GIT_COMMIT"):
        return os.environ["RESIDENT_GIT_COMMIT"]
    stamp = getattr(resident._resident, "__git_commit__", "")
    if stamp and stamp != "unknown":
        return stamp
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m resident.bench.inference",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated torchvision names")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--contention", default="none,stress", help="none, stress")
    p.add_argument("--iterations", type=int, default=20000, help="measured samples per run")
    p.add_argument("--warmup", type=int, default=2000)
    p.add_argument("--rate", type=float, default=1000.0,
                   help="sensor rate (Hz), lowered per model to half the rate PyTorch's own "
                        "graph replay sustains")
    p.add_argument("--photos", default=os.environ.get("RESIDENT_PHOTO_DIR",
                                                      os.path.expanduser(
                                                          "~/.cache/resident/photos")))
    p.add_argument("--quick", action="store_true",
                   help="mobilenet_v2 and resnet50, quiet, 2,000 samples (about a minute)")
    p.add_argument("--json", default="bench-out/inference.json")
    p.add_argument("--report", default="inference-report.html",
                   help="the HTML page (in --json's folder unless it names one)")
    p.add_argument("--note", default=None,
                   help="a sentence kept in the receipt and shown on its page (e.g. why it ran "
                        "fewer iterations than the protocol asks)")
    p.add_argument("--merge", nargs="+", metavar="PART", default=None,
                   help="no run: merge these receipts (parts run in separate calls), judge the "
                        "targets and write --json and its page")
    a = p.parse_args(argv)
    if a.quick:
        a.models, a.contention, a.iterations, a.warmup = "mobilenet_v2,resnet50", "none", 2000, 200
    a.models = [m for m in a.models.split(",") if m]
    a.modes = [m for m in a.modes.split(",") if m]
    a.contention = [c for c in a.contention.split(",") if c]
    for m in a.models:
        if m not in MODELS:
            p.error(f"unknown model '{m}'; one of {', '.join(MODELS)}")
    for m in a.modes:
        if m not in MODES:
            p.error(f"unknown mode '{m}'; one of {', '.join(MODES)}")
    for c in a.contention:
        if c not in ("none", "stress"):
            p.error(f"unknown contention '{c}'; none or stress")
    if a.iterations < 1 or a.warmup < 0 or a.rate <= 0:
        p.error("--iterations must be positive, --warmup non-negative, --rate positive")
    return a


def write(receipt: dict[str, Any], args: argparse.Namespace) -> str:
    """Writes the receipt (--json) and its page; returns the page's path."""
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(receipt, f, indent=1)
    page = args.report if os.path.dirname(args.report) else os.path.join(
        os.path.dirname(os.path.abspath(args.json)), args.report)
    write_html(receipt, page)
    for v in receipt["targets"]:
        mark = {True: "MET   ", False: "MISSED", None: "-     "}[v["met"]]
        print(f"  {mark} {v['target']}: {v['detail']}")
    return page


def measure_model(name: str, module: Classify, reference: list[int], rate: float, contention: str,
                  args: argparse.Namespace, cpus: dict[str, int],
                  free: list[int]) -> Iterator[dict[str, Any]]:
    """Every mode of one model at one contention level, each result as soon as it is measured."""
    seconds = (args.iterations + args.warmup) / rate * len(args.modes) + 60
    hogs = Hogs(free, seconds) if contention == "stress" else None
    try:
        for mode in args.modes:
            if mode == "torch-peer":
                r = measure_torch_peer(module, reference, rate, args, cpus)
            else:
                r = measure(module, reference, mode, rate, args, cpus)
            r.update(contention=contention)
            s = r["latency_us"]
            print(f"inference: {name} / {contention} / {mode}: n {s['n']}, mean "
                  f"{s['mean']:.1f} us, sd {s['sd']:.1f}, p99.9 {s['p99_9']:.1f}, J "
                  f"{s['jitter']:.1f}, wrong top-1 {r['wrong_top1']}, missing "
                  f"{r['missing_outputs']}", flush=True)
            yield r
    finally:
        if hogs is not None:
            hogs.stop()


def save_partial(header: dict[str, Any], results: list[dict[str, Any]],
                 args: argparse.Namespace) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(dict(header, partial=True, results=results), f, indent=1)



def _driver_api_version() -> str:
    """The CUDA driver API's version as torch reports it (a private call that not every torch
    release has), or "unknown"; nvidia-smi's driver version replaces it where nvidia-smi runs."""
    query = getattr(torch._C, "_cuda_getDriverVersion", None)
    try:
        return str(query()) if query is not None else "unknown"
    except RuntimeError:
        return "unknown"


def describe_device() -> dict[str, Any]:
    """The receipt's "device", in the C++ receipts' shape (resident report reads both): name, SMs,
    compute capability, driver (nvidia-smi's, else the CUDA driver API's version), CUDA runtime
    (13000 = 13.0) and the SM clock seen at the start."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    major, minor = (int(x) for x in (torch.version.cuda or "0.0").split(".")[:2])
    device: dict[str, Any] = {
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}",
        "driver": _driver_api_version(),
        "cuda_runtime": major * 1000 + minor * 10,
    }
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,driver_version",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.splitlines()[0].split(",")
        device["driver"] = out[1].strip()
        device["sm_clocks_seen_mhz"] = [int(out[0])]
        device["sm_clock_mhz"] = int(out[0])
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        pass
    return device


def describe_host(extra: dict[str, Any]) -> dict[str, Any]:
    """The receipt's "host" in the C++ receipts' shape (cpus, kernel, cpu_model), with `extra`."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                    break
    except OSError:
        pass
    host: dict[str, Any] = {"cpus": os.cpu_count() or 0, "kernel": platform.release()}
    if model:
        host["cpu_model"] = model
    host.update(extra)
    return host

def receipt_header(benchmark: str, argv: Sequence[str] | None, settings: dict[str, Any],
                   host_extra: dict[str, Any], note: str = "") -> dict[str, Any]:
    """What every Python bench's receipt starts with, in the C++ receipts' shape (resident
    report reads both): the benchmark, its command line, device, commit, host, settings and
    start time, and the note when there is one; `results` is the caller's to fill."""
    header: dict[str, Any] = {
        "benchmark": benchmark,
        "command": f"python -m resident.bench.{benchmark} " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "device": describe_device(),
        "git_commit": git_commit(),
        "host": describe_host(host_extra),
        "settings": settings,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }
    if note:
        header["note"] = note
    return header


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.merge:
        parts = []
        for path in args.merge:
            with open(path) as f:
                parts.append(json.load(f))
        merged = merge(parts)
        if args.note:
            merged["note"] = args.note
        page = write(merged, args)
        print(f"inference: merged {len(parts)} receipts into {args.json}, report {page}")
        return 0
    if torch is None:
        print("inference: a run needs PyTorch and torchvision, which this Python lacks "
              "(--merge works without them)", file=sys.stderr)
        return 2
    if resident.device_count() == 0:
        print(f"inference: {resident.no_device_reason()}", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cpus, free = pick_cpus()
    images = load_images(args.photos)
    results: list[dict[str, Any]] = []
    header = receipt_header(
        "inference", argv,
        {"iterations": args.iterations, "warmup": args.warmup, "images": IMAGES, "tf32": False,
         "policy": "every"},
        {"thread_cpus": cpus, "hog_cpus": free, "python": platform.python_version(),
         "torch": torch.__version__}, args.note)
    for name in args.models:
        module = Classify(make_model(name), images)
        reference, eager_p50 = eager_reference(module)
        replay = replay_p50(module)
        rate = min(args.rate, 0.5e6 / replay)
        for contention in args.contention:
            for r in measure_model(name, module, reference, rate, contention, args, cpus, free):
                r.update(model=name, eager_p50_us=eager_p50, torch_replay_p50_us=replay)
                results.append(r)
                # After every configuration: a run cut short (a time limit) keeps what it
                # measured, marked partial, and --merge can complete it with the rest.
                save_partial(header, results, args)
    receipt = dict(header, results=results, targets=judge(results))
    page = write(receipt, args)
    bad = sum(r["wrong_top1"] + r["missing_outputs"] for r in results)
    print(f"inference: receipt {args.json}, report {page}; {bad} wrong or missing outputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
