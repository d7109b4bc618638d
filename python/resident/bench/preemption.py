"""Preemption latency per real-time sample, from device stamps (pure Python, tested without a
GPU).

A real-time loop with a preempt word stamps when it raised the word (telemetry stage
"preempt_raised") and when its end marker cleared it ("end_marker"), on the device clock. What
best-effort (BE) work did about it is stamped on the same clock:

- Translated BE models (BestEffortRunner(activity_stamps=N)): when BE blocks came onto the GPU
  (running blocks 0 -> 1) and when the last one left (1 -> 0). A raise that finds blocks running
  is answered when the last of them leaves: its latency is that moment minus the raise. A raise
  that finds none had nothing to preempt; it is counted, not given a latency.
- Closed graphs behind gates (GatedGraph(hold_stamps=N)): when each gate that found the word up
  began to hold. A raise is answered at the first hold after it: the kernels in flight reached
  their gates. A raise with no hold before the word fell met no BE kernel boundary while it was
  up: either no BE graph was running, or its kernel in flight outlasted the real-time work.

Raises whose answer came only after the word fell again are counted apart, not given a latency
(the BE work outlasted the real-time work it should have left the GPU to).
"""

from __future__ import annotations

import bisect
from typing import Any, Optional, Sequence

from resident.bench.stats import summarize


def raise_windows(entries: Sequence[Any]) -> list[tuple[int, int]]:
    """(raised, cleared) device stamps of each telemetry entry that raised the word, in raise
    order (entries: resident TelemetryEntry, or anything with .stamp(stage))."""
    out = []
    for e in entries:
        raised, cleared = e.stamp("preempt_raised"), e.stamp("end_marker")
        if raised and cleared >= raised:
            out.append((raised, cleared))
    out.sort()
    return out


# A raise's outcome for one BE client: (kind, latency in ns or None). Kinds: "drained" and
# "held" carry a latency; "idle_at_raise", "outlasted_the_word", "no_hold" and "unknown" do not.
Outcome = tuple[str, Optional[int]]

# When several BE clients share the GPU a raise is answered when the last of them is: the worst
# kind wins, and the longest latency among those that answered.
_RANK = {"unknown": 5, "outlasted_the_word": 4, "no_hold": 3, "drained": 2, "held": 2,
         "idle_at_raise": 1}


def activity_outcomes(windows: Sequence[tuple[int, int]], events: Sequence[tuple[int, bool]],
                      lost: int = 0) -> list[Outcome]:
    """Per raise: how long one translated client's BE blocks stayed on the GPU after it (events:
    (ns, came) pairs as BestEffortRunner.activity() gives them). With `lost` events dropped by
    the ring, raises before the first kept event are "unknown"."""
    events = sorted(events)
    times = [t for t, _ in events]
    first_known = times[0] if (lost and times) else None
    out: list[Outcome] = []
    for raised, cleared in windows:
        if first_known is not None and raised < first_known:
            out.append(("unknown", None))
            continue
        i = bisect.bisect_right(times, raised)  # events[:i] happened at or before the raise
        if not (i > 0 and events[i - 1][1]):
            out.append(("idle_at_raise", None))  # nothing to preempt: no latency to count
            continue
        left = next((t for t, came in events[i:] if not came), None)
        if left is None or left > cleared:
            out.append(("outlasted_the_word", None))
        else:
            out.append(("drained", left - raised))
    return out


def hold_outcomes(windows: Sequence[tuple[int, int]], holds: Sequence[int],
                  lost: int = 0) -> list[Outcome]:
    """Per raise: how long until one gated client's first gate held after it (holds: as
    GatedGraph.holds() gives them); "no_hold" when none held while the word was up."""
    holds = sorted(holds)
    first_known = holds[0] if (lost and holds) else None
    out: list[Outcome] = []
    for raised, cleared in windows:
        if first_known is not None and raised < first_known:
            out.append(("unknown", None))
            continue
        i = bisect.bisect_left(holds, raised)
        if i == len(holds) or holds[i] > cleared:
            out.append(("no_hold", None))
        else:
            out.append(("held", holds[i] - raised))
    return out


def combine(per_client: Sequence[Sequence[Outcome]]) -> list[Outcome]:
    """One outcome per raise from every client's (all lists in the same raise order)."""
    if not per_client:
        return []
    out: list[Outcome] = []
    for outcomes in zip(*per_client):
        kind = max((k for k, _ in outcomes), key=lambda k: _RANK[k])
        lats = [x for k, x in outcomes if x is not None and k == kind]
        out.append((kind, max(lats) if lats else None))
    return out


def summarize_outcomes(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Counts by kind (raises: all of them) and the latency distribution (µs) of the raises
    that were answered while the word was up; None when none were."""
    out: dict[str, Any] = {"raises": len(outcomes)}
    for kind in _RANK:
        out[kind] = sum(1 for k, _ in outcomes if k == kind)
    lat = [x / 1e3 for _, x in outcomes if x is not None]
    out["latency_us"] = summarize(lat) if lat else None
    return out


def from_activity(windows: Sequence[tuple[int, int]], events: Sequence[tuple[int, bool]],
                  lost: int = 0) -> dict[str, Any]:
    """summarize_outcomes of one translated client's activity_outcomes."""
    return summarize_outcomes(activity_outcomes(windows, events, lost))


def from_holds(windows: Sequence[tuple[int, int]], holds: Sequence[int],
               lost: int = 0) -> dict[str, Any]:
    """summarize_outcomes of one gated client's hold_outcomes."""
    return summarize_outcomes(hold_outcomes(windows, holds, lost))
