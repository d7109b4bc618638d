"""python -m resident.bench.translated: what preemptibility costs a real CNN.

Each torchvision model (random weights and batch-norm statistics, fixed seeds; fp32, TF32 off)
translated by resident.translate and run by resident's preemptible kernels, unpreempted, beside
PyTorch eager (cuDNN, cuBLAS) and PyTorch's CUDA graph of the same model on the same GPU. Per
model: the time of one inference each way (CUDA events over back-to-back inferences), the
translated plan (layer kinds, kernel calls, parameters, device memory) and its accuracy against
eager (max |logit difference| / max |logit|, top-1). The targets are the accuracy the issue asks
for; the time ratio is reported, not judged.

  python -m resident.bench.translated --quick --json out/translated-quick.json
  python -m resident.bench.translated --json out/translated.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Any, Sequence

import resident
from resident.bench.inference import receipt_header

MODELS = ("resnet50", "vgg16", "mobilenet_v2", "densenet121", "efficientnet_b0")
TOLERANCE = 1e-3  # of the largest |logit|


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m resident.bench.translated",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--reps", type=int, default=50, help="inferences timed per way (default 50)")
    p.add_argument("--quick", action="store_true", help="10 inferences per way")
    p.add_argument("--json", default="out/translated.json", help="the receipt")
    p.add_argument("--note", default="")
    args = p.parse_args(argv)
    if args.batch < 1 or args.reps < 1:
        p.error("--batch and --reps must be >= 1")
    if args.quick:
        args.reps = 10
    return args


def randomize_batch_norms(model: Any, seed: int) -> Any:
    """Batch-norm statistics away from (0, 1), so that folding them is exercised."""
    import torch

    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 1.5 + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(m.num_features, generator=g) * 0.4 - 0.2)
    return model.eval()


def time_ms(run: Any, reps: int) -> float:
    """Milliseconds per call of `run` (reps back to back on the current stream, CUDA events)."""
    import torch

    for _ in range(3):
        run()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    begin.record()
    for _ in range(reps):
        run()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) / reps


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import torch
    import torchvision

    from resident.torch import capture_graph
    from resident.translate import translate

    torch.manual_seed(11)
    model = randomize_batch_norms(getattr(torchvision.models, name)(), 12)
    shape = (args.batch, 3, 224, 224)
    plan = translate(model, shape)
    translated = plan.to_resident()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(5))
    cuda_model, xc = model.cuda(), x.cuda()
    with torch.no_grad():
        want = cuda_model(xc).float().cpu()
        eager_ms = time_ms(lambda: cuda_model(xc), args.reps)
    graph, _ = capture_graph(cuda_model, xc, keep_graph=False)
    graph_ms = time_ms(graph.replay, args.reps)
    got = plan.infer(translated, x)
    translated.time_inferences(3)  # warm-up
    translated_ms = translated.time_inferences(args.reps) / args.reps
    scale = want.abs().max().item()
    error = (got - want).abs().max().item() / scale if scale > 0 else float("inf")
    top2 = want.topk(2, dim=1).values
    clear = (top2[:, 0] - top2[:, 1]) > 10 * TOLERANCE * scale
    top1_equal = bool(torch.equal(got.argmax(1)[clear], want.argmax(1)[clear]))
    return {
        "model": name, "batch": args.batch, "layers": plan.counts(),
        "kernel_calls": len(translated.calls), "parameters": translated.parameters,
        "device_mb": translated.device_bytes / 2**20,
        "eager_ms": eager_ms, "torch_graph_ms": graph_ms, "translated_ms": translated_ms,
        "translated_over_graph": translated_ms / graph_ms,
        "translated_over_eager": translated_ms / eager_ms,
        "max_logit_error_rel": error, "top1_equal": top1_equal,
        "top1_judged": int(clear.sum().item()),
    }


def judge(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        out.append({"target": f"{r['model']}: max |logit difference| <= {TOLERANCE:g} x max "
                              "|logit|, top-1 equal where the margin is clear",
                    "met": r["max_logit_error_rel"] <= TOLERANCE and r["top1_equal"],
                    "detail": f"{r['max_logit_error_rel']:.2e} of the largest logit; top-1 "
                              f"{'equal' if r['top1_equal'] else 'DIFFERENT'} on "
                              f"{r['top1_judged']} of {r['batch']} samples; "
                              f"{r['translated_ms']:.2f} ms against PyTorch's graph "
                              f"{r['torch_graph_ms']:.2f} ms ({r['translated_over_graph']:.2f}x)"})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError as e:
        print(f"translated: needs PyTorch and torchvision ({e})", file=sys.stderr)
        return 2
    if resident.device_count() == 0:
        print(f"translated: {resident.no_device_reason()}", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    receipt = receipt_header(
        "translated", argv,
        {"batch": args.batch, "reps": args.reps, "tf32": False, "tolerance": TOLERANCE},
        {"python": platform.python_version(), "torch": torch.__version__}, args.note)
    receipt["results"] = []
    for i, name in enumerate(args.models):
        print(f"translated: {name} ({i + 1} of {len(args.models)}) ...", flush=True)
        r = measure(name, args)
        receipt["results"].append(r)
        print(f"translated: {name}: {r['kernel_calls']} kernel calls, {r['translated_ms']:.2f} "
              f"ms; PyTorch eager {r['eager_ms']:.2f} ms, graph {r['torch_graph_ms']:.2f} ms; "
              f"logit error {r['max_logit_error_rel']:.1e}", flush=True)
    receipt["targets"] = judge(receipt["results"])
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(receipt, f, indent=1)
    for v in receipt["targets"]:
        print(f"  {'MET   ' if v['met'] else 'MISSED'} {v['target']}: {v['detail']}")
    return 0 if all(v["met"] for v in receipt["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
