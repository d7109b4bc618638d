#!/usr/bin/env python3
"""PyTorch peer of `resident bench lab`: the four-operation pipeline
(copy -> 2x+1 -> square -> sum) on an fp32 vector, in three submission modes.

  eager   the chain on PyTorch's default stream (the legacy NULL stream)
  stream  the same chain on an explicit PyTorch stream
  graph   the chain captured once in a torch.cuda.CUDAGraph, then replayed

Per mode it reports host submission time, device time (CUDA events), end-to-end
time (through a synchronize of that mode's stream), graph setup and first launch,
and the last result against an FP64 CPU reference. The JSON field names are read
by the C++ side; keep them stable.

  python3 scripts/peer/torch_lab.py --mode all --elements 4096 --warmup 20 \
      --iterations 1000 --repeats 5 --json torch_lab.json

Exit: 0 all checks passed, 1 a preflight or result check failed, 2 torch/CUDA
unavailable (or bad arguments, via argparse).
"""
import argparse
import json
import statistics
import sys
import time

MODES = ("eager", "stream", "graph")
TOLERANCE = 1e-6  # relative; used for preflight sums and the final result check


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=MODES + ("all",), default="all")
    p.add_argument("--order", default=",".join(MODES),
                   help="comma-separated run order (default eager,stream,graph)")
    p.add_argument("--elements", type=int, default=4096)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--settle-ms", type=float, default=200.0,
                   help="run the pipeline untimed this long before the first mode, so GPU "
                        "clocks and host caches are warm whatever the order (0: off)")
    p.add_argument("--json", metavar="PATH", help="write the receipt here, not stdout")
    a = p.parse_args()
    if a.settle_ms < 0:
        p.error("--settle-ms must be >= 0")
    for name, low in (("elements", 1), ("iterations", 1), ("repeats", 1), ("warmup", 0)):
        if getattr(a, name) < low:
            p.error(f"--{name} must be >= {low}")
    order = [m.strip() for m in a.order.split(",") if m.strip()]
    bad = [m for m in order if m not in MODES]
    if bad or not order or len(set(order)) != len(order):
        p.error(f"--order must list distinct names from {','.join(MODES)} (got {a.order!r})")
    # --mode picks which modes run; --order only decides their sequence.
    a.order = [m for m in order if a.mode in ("all", m)]
    if not a.order:
        p.error(f"--mode {a.mode} is not in --order {','.join(order)}")
    return a


def us(ns):
    return ns / 1000.0


def close(value, expected):
    # Written so that NaN fails the check.
    return abs(value - expected) <= TOLERANCE * abs(expected)


def run_mode(torch, mode, index, args):
    n = args.elements
    notes = []
    # Fresh static buffers per mode. Every output is preallocated, so the chain
    # allocates nothing and can be captured; the graph bakes in these addresses.
    source = torch.linspace(0, 1, n, dtype=torch.float32, device="cuda")
    inp = source.clone()
    work = torch.empty_like(source)
    ones = torch.ones_like(source)
    affine = torch.empty_like(source)
    squared = torch.empty_like(source)
    result = torch.zeros((), dtype=torch.float32, device="cuda")
    # Buffers were written on the current stream; the mode may use another stream,
    # and PyTorch's pool streams do not synchronize implicitly with it.
    torch.cuda.synchronize()

    def chain():
        work.copy_(inp)                               # device-to-device copy
        torch.add(ones, work, alpha=2, out=affine)    # 1 + 2*x in ONE kernel
        torch.mul(affine, affine, out=squared)
        torch.sum(squared, dim=0, out=result)         # 0-d output

    capture_us = instantiate_us = setup_us = first_launch_us = None
    if mode == "eager":
        # PyTorch's default stream is the legacy default (NULL) stream unless the
        # per-thread default stream was selected; its handle shows which.
        stream = torch.cuda.default_stream()
        notes.append(f"default stream handle {stream.cuda_stream:#x} (0 = legacy NULL stream)")
        step = chain
    elif mode == "stream":
        # torch.cuda.Stream() comes from PyTorch's stream pool, created with
        # cudaStreamNonBlocking: no implicit sync with the legacy stream.
        stream = torch.cuda.Stream()
        notes.append("explicit torch.cuda.Stream() (pool stream, cudaStreamNonBlocking)")
        step = chain
    else:
        # Warm-up on a side stream before capture, as PyTorch's CUDA-graph docs
        # require (lazy init, cuBLAS/allocator state) -- not part of the timing.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                chain()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        # keep_graph=True (newer torch) defers instantiation to instantiate(),
        # which lets capture and instantiation be timed apart.
        split = False
        try:
            g = torch.cuda.CUDAGraph(keep_graph=True)
            split = hasattr(g, "instantiate")
        except TypeError:
            pass
        if not split:
            g = torch.cuda.CUDAGraph()
            notes.append("keep_graph/instantiate unsupported: capture_us includes "
                         "instantiation; instantiate_us is null")
        # torch.cuda.graph captures on its own side stream. Its __enter__ runs a
        # device synchronize, gc and empty_cache; start the clock after them.
        with torch.cuda.graph(g):
            t0 = time.perf_counter_ns()
            chain()
        capture_us = us(time.perf_counter_ns() - t0)
        setup_us = capture_us
        if split:
            t0 = time.perf_counter_ns()
            g.instantiate()
            instantiate_us = us(time.perf_counter_ns() - t0)
            setup_us += instantiate_us
        notes.append("capture_us: first captured op through capture_end; excludes "
                     "torch.cuda.graph's entry synchronize/gc/empty_cache")
        stream = torch.cuda.Stream()  # replays go to an explicit pool stream
        notes.append("replayed on an explicit torch.cuda.Stream()")
        step = g.replay
        with torch.cuda.stream(stream):
            t0 = time.perf_counter_ns()
            g.replay()
            stream.synchronize()
            first_launch_us = us(time.perf_counter_ns() - t0)

    # Everything below runs on the mode's stream, so the in-place input writes
    # are stream-ordered before the steps (replays) that read them.
    with torch.cuda.stream(stream):
        # Preflight. In graph mode this goes through replay, which proves the
        # graph reads the retained input buffer (static buffer + copy-in).
        preflight = {"tolerance": TOLERANCE}
        for name, fill, per_elem in (("zeros", 0.0, 1), ("ones", 1.0, 9)):
            inp.fill_(fill)
            step()
            stream.synchronize()
            got, want = result.item(), float(per_elem * n)
            preflight[name] = {"sum": got, "expected": want, "ok": close(got, want)}
        inp.copy_(source)

        for _ in range(args.warmup):
            step()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        # Events create their handles lazily; keep that out of the timed region.
        start.record(stream)
        stop.record(stream)
        stop.synchronize()
        start.elapsed_time(stop)

        host, device, e2e = [], [], []
        for _ in range(args.repeats):
            start.record(stream)
            t0 = time.perf_counter_ns()
            for _ in range(args.iterations):
                step()                      # no synchronization inside the loop
            t1 = time.perf_counter_ns()
            stop.record(stream)
            stream.synchronize()            # scoped to this mode's stream
            t2 = time.perf_counter_ns()
            host.append(us(t1 - t0) / args.iterations)
            e2e.append(us(t2 - t0) / args.iterations)
            # elapsed_time is in ms; valid now that stop has completed.
            device.append(start.elapsed_time(stop) * 1000.0 / args.iterations)
        value = result.item()

    # FP64 reference over the exact float32 inputs the GPU used (copied back from
    # the device: CPU and CUDA linspace may differ in the last bit).
    x = source.cpu().double()
    reference = float(((2.0 * x + 1.0) ** 2).sum())
    rel = abs(value - reference) / abs(reference)
    torch.cuda.synchronize()  # nothing in flight when this mode's buffers are freed
    return {
        "implementation": "torch", "mode": mode, "order_index": index,
        "elements": n, "iterations": args.iterations, "repeats": args.repeats,
        "host_submit_us": statistics.median(host),
        "device_us": statistics.median(device),
        "end_to_end_us": statistics.median(e2e),
        "host_submit_us_runs": host, "device_us_runs": device, "end_to_end_us_runs": e2e,
        "capture_us": capture_us, "instantiate_us": instantiate_us, "setup_us": setup_us,
        "first_launch_us": first_launch_us,
        "result": value, "reference": reference, "relative_error": rel,
        "preflight": preflight,
        # copy, add, mul, sum (the copy may run as a memcpy rather than a kernel)
        "kernels_per_iteration": 4,
        "notes": notes,
    }


def settle(torch, args):
    # The first mode of a run otherwise meets an idle GPU (its SM clock idles far below its
    # maximum) and cold host caches; settling makes the order a question of drift only.
    if args.settle_ms <= 0:
        return
    x = torch.linspace(0, 1, args.elements, dtype=torch.float32, device="cuda")
    ones = torch.ones_like(x)
    work, affine, squared = (torch.empty_like(x) for _ in range(3))
    result = torch.empty((), dtype=torch.float32, device="cuda")
    end = time.perf_counter() + args.settle_ms / 1000.0
    while time.perf_counter() < end:
        for _ in range(64):
            work.copy_(x)
            torch.add(ones, work, alpha=2, out=affine)
            torch.mul(affine, affine, out=squared)
            torch.sum(squared, dim=0, out=result)
        torch.cuda.synchronize()


def fmt(v):
    return f"{v:10.3f}" if v is not None else f"{'-':>10}"


def main():
    args = parse_args()
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        print(f"torch not available: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"torch not available: torch {torch.__version__} sees no usable CUDA device",
              file=sys.stderr)
        return 2
    torch.cuda.init()  # context creation stays out of every measurement
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    settle(torch, args)
    results = [run_mode(torch, m, i, args) for i, m in enumerate(args.order)]
    receipt = {
        "implementation": "torch", "torch_version": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "device": {"name": props.name, "sm_count": props.multi_processor_count},
        "command": " ".join(sys.argv),
        "elements": args.elements, "warmup": args.warmup,
        "iterations": args.iterations, "repeats": args.repeats, "settle_ms": args.settle_ms,
        "order": args.order, "results": results,
    }
    text = json.dumps(receipt, indent=2)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)

    print(f"torch {torch.__version__} on {props.name}, N={args.elements}, "
          f"{args.iterations} iterations x {args.repeats} repeats (medians, us/iteration)",
          file=sys.stderr)
    print(f"{'mode':<7}{'host':>10}{'device':>10}{'e2e':>10}{'setup':>10}"
          f"{'first':>10}{'rel_err':>10}  preflight", file=sys.stderr)
    failed = []
    for r in results:
        pre_ok = r["preflight"]["zeros"]["ok"] and r["preflight"]["ones"]["ok"]
        res_ok = r["relative_error"] <= TOLERANCE
        if not (pre_ok and res_ok):
            failed.append(r["mode"])
        print(f"{r['mode']:<7}{fmt(r['host_submit_us'])}{fmt(r['device_us'])}"
              f"{fmt(r['end_to_end_us'])}{fmt(r['setup_us'])}{fmt(r['first_launch_us'])}"
              f"{r['relative_error']:10.1e}  {'ok' if pre_ok else 'FAIL'}", file=sys.stderr)
    if failed:
        print(f"check failed (preflight or relative error > {TOLERANCE:g}) in: "
              f"{', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
