"""bench disb's ratios, targets and merge, from a receipt's results alone (pure Python: tested
without a GPU).

A receipt holds one or more groups of results: a group is one RT model, workload, arrival
process (fixed rate or Poisson), rate and deadline in one mode, and every ratio relates a policy
to the baselines of its own group. A workload whose policies do not fit one GPU call runs in parts that
`merge` joins (a later part's run of a policy replaces an earlier one of the same group).

The targets (issue: REEF's serving benchmark on the H200) are judged per group: each verdict
names its figures and says met, missed or not judged (a policy it needs did not run); a
verdict is never met by default. They are set for the H200 and judged on whatever GPU ran, which
each verdict's detail names.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from resident.bench.inference_targets import parts_of, verdict

# BE as PyTorch CUDA graphs: their sequential baseline is sequential-graphs.
GRAPH_POLICIES = ("priority", "sequential-graphs", "kernel-boundary", "kernel-boundary+split",
                  "be-alone-graphs")


def group_of(r: dict[str, Any], settings: Optional[dict[str, Any]] = None) -> tuple[Any, ...]:
    """The group a result belongs to: RT model, workload, arrivals, rate, deadline and mode. A
    run with no RT loop (be-alone) records none of them: it belongs to the group of the call it
    ran in, which that call's settings give."""
    s = settings or {}
    if r.get("rt_model") is None and s:
        return (s.get("rt_model"), s.get("workload"), "poisson" if s.get("poisson") else "fixed",
                s.get("rate_hz"), s.get("deadline_us"), s.get("mode"))
    return (r.get("rt_model"), r.get("workload"), r.get("arrivals"), r.get("rate_hz"),
            r.get("deadline_us"), r.get("mode"))


def group_name(key: tuple[Any, ...]) -> str:
    rt_model, workload, arrivals, rate, deadline, mode = key
    timing = (f"{arrivals} {rate:g} Hz, deadline {deadline:g} us"
              if rate is not None and deadline is not None else f"{arrivals} arrivals")
    return f"{rt_model} / {workload} / {timing} / {mode}"


Groups = dict[tuple[Any, ...], dict[str, dict[str, Any]]]  # group -> policy -> result


def grouped(parts: Iterable[tuple[list[dict[str, Any]], Optional[dict[str, Any]]]]) -> Groups:
    """The results of (results, settings) parts by group and policy, a later part's run of a
    policy replacing an earlier one of the same group."""
    out: Groups = {}
    for results, settings in parts:
        for r in results:
            out.setdefault(group_of(r, settings), {})[r["policy"]] = r
    return out


def relate(results: list[dict[str, Any]]) -> None:
    """rt_p99_over_exclusive, be_throughput_over_sequential and priority_p99_over_rt_p99 (how
    many times lower this policy's RT p99 is than the priority-stream policy's, as REEF relates
    its RT latency to Triton's), each against the baselines of one run (one group)."""
    by = {r["policy"]: r for r in results}
    base = by.get("exclusive")
    prio = by.get("priority")
    prio_p99 = prio["latency_us"].get("p99") if prio else None
    for r in results:
        p99 = r["latency_us"].get("p99")
        r["priority_p99_over_rt_p99"] = (prio_p99 / p99 if prio_p99 and p99 and
                                         r["policy"] not in ("priority", "exclusive") else None)
        # The sequential baseline of the same BE implementation.
        seq = by.get("sequential-graphs" if r["policy"] in GRAPH_POLICIES else "sequential")
        r["rt_p99_over_exclusive"] = (r["latency_us"]["p99"] / base["latency_us"]["p99"]
                                      if base and "p99" in r["latency_us"] else None)
        r["be_throughput_over_sequential"] = (
            r["be_inferences_per_s"] / seq["be_inferences_per_s"]
            if seq and seq["be_inferences_per_s"] > 0 and r["policy"] != "exclusive" else None)


def _verdict(name: str, value: Optional[float], limit: float, detail: str,
             lower_is_better: bool = True) -> dict[str, Any]:
    """A target's verdict in the shape `resident report` reads (settings.targets: name, met,
    value, limit, detail)."""
    v = verdict(name, value, limit, detail, lower_is_better)
    v["name"] = v.pop("target")
    return v


def _ratio_targets(prefix: str, by: dict[str, dict[str, Any]], policy: str, rt_limit: float,
                   be_limit: float, baseline: str) -> list[dict[str, Any]]:
    r = by.get(policy)
    rt = r.get("rt_p99_over_exclusive") if r else None
    be = r.get("be_throughput_over_sequential") if r else None
    rt_detail = (f"RT p99 {r['latency_us']['p99']:.0f} us against "
                 f"{by['exclusive']['latency_us']['p99']:.0f} in exclusive" if rt is not None
                 else f"{policy} or exclusive not run")
    be_detail = (f"BE {r['be_inferences_per_s']:.1f} inferences/s against "
                 f"{by[baseline]['be_inferences_per_s']:.1f} in {baseline}" if be is not None
                 else f"{policy} or {baseline} not run")
    return [
        _verdict(f"{prefix}: {policy} RT p99 <= {rt_limit:g} x exclusive", rt, rt_limit,
                 rt_detail),
        _verdict(f"{prefix}: {policy} BE throughput >= {be_limit:g} x {baseline}", be,
                 be_limit, be_detail, lower_is_better=False),
    ]


def _preemption_p99(r: Optional[dict[str, Any]]) -> Optional[float]:
    lat = (r or {}).get("preemption_latency_us")
    return lat.get("p99") if lat else None


def longest_kernel_us(be_kernels: Optional[dict[str, Any]],
                      models: Iterable[tuple[str, int]]) -> Optional[tuple[float, str]]:
    """The longest kernel of the group's BE models (their eager inference profiled at the
    workload's batch: settings.be_kernel_duration_us) and whose it is, or None unmeasured."""
    best: Optional[tuple[float, str]] = None
    for name, batch in models:
        summary = (be_kernels or {}).get(f"{name}@{batch}")
        if summary is None:
            return None  # a model unmeasured: the bound is not known
        if best is None or summary["max"] > best[0]:
            best = (summary["max"], f"{name} at batch {batch}")
    return best


def judge_group(key: tuple[Any, ...], by: dict[str, dict[str, Any]],
                be_kernels: Optional[dict[str, Any]] = None,
                be_models: Optional[list[tuple[str, int]]] = None,
                gpu: str = "") -> list[dict[str, Any]]:
    """The targets for one group's results (by policy)."""
    prefix = group_name(key)
    out = _ratio_targets(prefix, by, "translated", 1.05, 1.5, "sequential")
    p99 = _preemption_p99(by.get("translated"))
    out.append(_verdict(f"{prefix}: translated preemption latency p99 <= 20 us", p99, 20.0,
                        f"{p99:.1f} us" if p99 is not None else "translated not run or no "
                        "raise measured"))
    out += _ratio_targets(prefix, by, "kernel-boundary", 1.10, 0.9, "sequential-graphs")
    out += _ratio_targets(prefix, by, "kernel-boundary+split", 1.10, 1.3, "sequential-graphs")
    # A gate stops the next kernel, not the one running: the bound is the longest BE kernel.
    p99 = _preemption_p99(by.get("kernel-boundary"))
    longest = longest_kernel_us(be_kernels, be_models or [])
    name = f"{prefix}: kernel-boundary preemption p99 - longest BE kernel <= 10 us"
    if p99 is None or longest is None:
        out.append(_verdict(name, None, 10.0, "kernel-boundary not run, no raise measured or "
                            "the BE models' kernels not profiled"))
    else:
        out.append(_verdict(name, p99 - longest[0], 10.0,
                            f"p99 {p99:.1f} us; longest kernel {longest[0]:.1f} us "
                            f"({longest[1]})"))
    if gpu:
        for v in out:
            v["detail"] += f" [{gpu}]"
    return out


def relate_and_judge(groups: Groups, settings: dict[str, Any], gpu: str) -> list[dict[str, Any]]:
    """relate() within each group, then every group's targets (groups with an RT loop)."""
    models_by_workload = settings.get("be_models_by_workload") or {
        settings.get("workload"): settings.get("be_models")}
    out = []
    for key, by in groups.items():
        relate(list(by.values()))
        if key[0] is None:
            continue
        models = [tuple(m) for m in (models_by_workload.get(key[1]) or [])]
        out += judge_group(key, by, settings.get("be_kernel_duration_us"), models, gpu)
    return out


def judge(results: list[dict[str, Any]], settings: Optional[dict[str, Any]] = None,
          gpu: str = "") -> list[dict[str, Any]]:
    """One run's results related and judged, group by group."""
    settings = settings or {}
    return relate_and_judge(grouped([(results, settings)]), settings, gpu)


def merge(receipts: list[dict[str, Any]]) -> dict[str, Any]:
    """One receipt from parts of bench disb run in separate calls (workloads, arrivals, or one
    workload's policies): every part's results, a later part's run of a policy replacing an
    earlier one of the same group; ratios related again within each group; every part's
    commit, command and settings kept; the targets judged over the whole."""
    if not receipts:
        raise ValueError("merge: no receipts")
    for r in receipts:
        if r.get("benchmark") != "disb":
            raise ValueError(f"merge: not a disb receipt: {r.get('benchmark')!r}")
    merged = dict(receipts[0])
    merged.pop("partial", None)  # a part cut short still holds complete policies
    groups = grouped(([dict(run) for run in r["results"]], r.get("settings")) for r in receipts)
    merged["results"] = [run for by in groups.values() for run in by.values()]
    settings = dict(merged.get("settings", {}))
    models: dict[str, Any] = {}
    kernels: dict[str, Any] = {}
    for r in receipts:
        s = r.get("settings", {})
        models.update(s.get("be_models_by_workload") or {s.get("workload"): s.get("be_models")})
        kernels.update(s.get("be_kernel_duration_us") or {})
    settings["be_models_by_workload"] = {k: v for k, v in models.items() if k is not None}
    if kernels:
        settings["be_kernel_duration_us"] = kernels
    merged["parts"] = parts_of(receipts, lambda r: {"settings": {
        k: v for k, v in r.get("settings", {}).items() if k != "targets"}})
    gpu = (merged.get("device") or {}).get("name", "")
    settings["targets"] = relate_and_judge(groups, settings, gpu)
    merged["settings"] = settings
    return merged


def target_lines(targets: list[dict[str, Any]]) -> list[str]:
    """One line a verdict, as bench disb prints them."""
    word = {True: "met    ", False: "MISSED ", None: "-      "}
    return [f"{word[v['met']]} {v['name']}: {v['detail']}" for v in targets]
