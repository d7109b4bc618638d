"""The inference benchmark's targets, judged from a receipt's results (pure Python: tested
without a GPU). Each verdict names the target, the figures it used and whether it was met;
a target whose runs are missing is reported as not judged, never as met."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

TARGET_MODELS = ("mobilenet_v2", "efficientnet_b0", "resnet50")


def _find(results: Iterable[dict[str, Any]], model: str, contention: str,
          mode: str) -> Optional[dict[str, Any]]:
    for r in results:
        if r["model"] == model and r["contention"] == contention and r["mode"] == mode:
            return r["latency_us"]
    return None


def verdict(target: str, value: Optional[float], limit: float, detail: str,
             lower_is_better: bool = True) -> dict[str, Any]:
    if value is None:
        return {"target": target, "met": None, "value": None, "limit": limit,
                "detail": "not judged: " + detail}
    met = value <= limit if lower_is_better else value >= limit
    return {"target": target, "met": met, "value": value, "limit": limit, "detail": detail}


def _pair(results: list[dict[str, Any]], a: tuple[str, str, str],
          b: tuple[str, str, str]) -> tuple[Optional[dict[str, Any]], Optional[dict[str, Any]]]:
    return _find(results, *a), _find(results, *b)


def judge(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdicts for every target of the benchmark that the results can speak to."""
    out = []
    for m in TARGET_MODELS:
        w, h = _pair(results, (m, "none", "while"), (m, "none", "host-graph"))
        missing = "while or host-graph quiet not run"
        for stat in ("sd", "jitter"):
            target = f"{m} quiet: host-graph {stat} / while {stat} >= 1.4"
            if w is None or h is None or w[stat] <= 0:
                out.append(verdict(target, None, 1.4, missing, lower_is_better=False))
            else:
                out.append(verdict(target, h[stat] / w[stat], 1.4,
                                    f"{h[stat]:.1f} / {w[stat]:.1f} us", lower_is_better=False))
        target = f"{m} quiet: while mean within 3% of host-graph"
        if w is None or h is None:
            out.append(verdict(target, None, 0.03, missing))
        else:
            out.append(verdict(target, abs(w["mean"] / h["mean"] - 1.0), 0.03,
                                f"{w['mean']:.1f} against {h['mean']:.1f} us"))
    for m in sorted({r["model"] for r in results}):
        quiet, stress = _pair(results, (m, "none", "while"), (m, "stress", "while"))
        target = f"{m}: while J under contention <= 1.2 x quiet J"
        if quiet is None or stress is None or quiet["jitter"] <= 0:
            out.append(verdict(target, None, 1.2, "while quiet or under stress not run"))
        else:
            detail = f"{stress['jitter']:.1f} / {quiet['jitter']:.1f} us"
            # Reported beside it, not targeted: host-graph under the same load (host noise).
            hg = _find(results, m, "stress", "host-graph")
            if hg is not None and stress["jitter"] > 0:
                detail += (f"; host-graph J under stress {hg['jitter']:.1f} us, "
                           f"{hg['jitter'] / stress['jitter']:.1f}x while's")
            out.append(verdict(target, stress["jitter"] / quiet["jitter"], 1.2, detail))
        peer = _find(results, m, "none", "torch-peer")
        for mode, limit, name in (("host-graph", 10.0, "host-graph mean - PyTorch peer mean"),
                                  ("while", 0.0, "while mean - PyTorch peer mean")):
            ours = _find(results, m, "none", mode)
            target = f"{m} quiet: {name} <= {limit:g} us"
            if ours is None or peer is None:
                out.append(verdict(target, None, limit, f"{mode} or torch-peer quiet not run"))
            else:
                out.append(verdict(target, ours["mean"] - peer["mean"], limit,
                                    f"{ours['mean']:.1f} - {peer['mean']:.1f} us"))
    return out


def parts_of(receipts: list[dict[str, Any]],
             extra: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """A merged receipt's `parts`: each part's commit, command, start, whether it was cut short
    and what `extra` adds; a part that is itself a merge brings its own parts."""
    return [part for r in receipts for part in (r.get("parts") or [
        dict({"git_commit": r.get("git_commit"), "command": r.get("command"),
              "started_at": r.get("started_at"), "partial": bool(r.get("partial"))},
             **extra(r))])]


def merge(receipts: list[dict[str, Any]]) -> dict[str, Any]:
    """One receipt from parts of one benchmark (e.g. models run in separate calls): the results
    of all, later parts replacing earlier runs of the same model, contention and mode; the
    first part's header, with every part's commit and command kept."""
    if not receipts:
        raise ValueError("merge: no receipts")
    for r in receipts:
        if r.get("benchmark") != "inference":
            raise ValueError(f"merge: not an inference receipt: {r.get('benchmark')!r}")
    merged = dict(receipts[0])
    merged.pop("partial", None)  # a part cut short still holds complete runs
    runs: dict[tuple[str, str, str], tuple[dict[str, Any], int]] = {}
    for i, r in enumerate(receipts):
        for run in r["results"]:
            runs[(run["model"], run["contention"], run["mode"])] = (run, i)
    # Each kept run records the iteration count it was measured with, so that a merge of merged
    # receipts still knows it; a merged part's runs without one measured n latencies and lost
    # missing_outputs samples. Parts measured with different counts are listed in the settings
    # rather than the first part's count standing for all.
    merged["results"] = []
    counts: set[int] = set()
    for run, i in runs.values():
        count = run.get("iterations", receipts[i].get("settings", {}).get("iterations"))
        if isinstance(count, list):
            count = run.get("latency_us", {}).get("n", 0) + run.get("missing_outputs", 0)
        merged["results"].append(run if count is None else dict(run, iterations=count))
        if count is not None:
            counts.add(count)
    if counts:
        ordered = sorted(counts)
        merged["settings"] = dict(merged.get("settings", {}),
                                  iterations=ordered if len(ordered) > 1 else ordered[0])
    merged["parts"] = parts_of(
        receipts, lambda r: {"iterations": r.get("settings", {}).get("iterations")})
    merged["targets"] = judge(merged["results"])
    return merged
