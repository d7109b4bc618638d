"""Latency statistics as resident's receipts compute them (lab/src/measure/statistics.cpp): mean,
population sd, linearly interpolated percentiles, max, min and jitter J = max - min. Pure Python,
so it is tested without a GPU."""

from __future__ import annotations

import math
from typing import Sequence


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
