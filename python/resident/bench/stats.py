"""Latency statistics as resident's receipts compute them (lab/src/measure/statistics.cpp): mean,
population sd, linearly interpolated percentiles, max, min and jitter J = max - min. Pure Python,
so it is tested without a GPU."""

from __future__ import annotations

import math
from typing import Any, Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Percentile q (in [0, 100]) of already sorted values, interpolated between neighbours."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside [0, 100]")
    h = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(h)
    if lo + 1 >= len(sorted_values):
        return float(sorted_values[-1])
    return float(sorted_values[lo] + (h - lo) * (sorted_values[lo + 1] - sorted_values[lo]))


def summarize(values: Sequence[float]) -> dict[str, float]:
    """n, mean, sd (population), p50, p99, p99.9, min, max and J of `values`."""
    if not values:
        raise ValueError("summarize: no values")
    v = sorted(float(x) for x in values)
    n = len(v)
    mean = math.fsum(v) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in v) / n)
    return {"n": n, "mean": mean, "sd": sd, "p50": percentile(v, 50), "p99": percentile(v, 99),
            "p99_9": percentile(v, 99.9), "min": v[0], "max": v[-1], "jitter": v[-1] - v[0]}


def summarize_run(d: dict[str, Any], reference: Sequence[int], warmup: int,
                  iterations: int) -> dict[str, Any]:
    """A mailbox-driven run (resident._resident._drive_mailbox's result, outputs holding
    (class, logit) float32 pairs): latency (µs) of the samples after the warm-up, each one's
    class against `reference` (by sample index modulo its length), and the samples whose output
    was never seen."""
    from resident.bench.report import histogram

    publish = memoryview(d["publish_ns"]).cast("Q")
    seen = memoryview(d["seen_ns"]).cast("Q")
    outputs = memoryview(d["outputs"]).cast("f")
    if len(publish) < warmup + iterations or len(seen) != len(publish):
        raise ValueError(f"summarize_run: {len(publish)} samples for {warmup} + {iterations}")
    latencies, missing, wrong = [], 0, 0
    for i in range(warmup, warmup + iterations):
        if seen[i] == 0:
            missing += 1
            continue
        latencies.append((seen[i] - publish[i]) / 1e3)
        if int(outputs[2 * i]) != reference[i % len(reference)]:
            wrong += 1
    if not latencies:
        raise RuntimeError("summarize_run: the actuator saw no output")
    return {"latency_us": summarize(latencies), "histogram_us": histogram(latencies),
            "missing_outputs": missing, "wrong_top1": wrong}
