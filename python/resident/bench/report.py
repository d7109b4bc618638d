"""An HTML page for a Python benchmark's receipt: the settings, one table of every run, and per
model a latency histogram per mode (inline SVG, no scripts), since people look at these rather
than read tables. Tables scroll sideways inside the page; a mode that ran more than once for one
model and contention level is labelled "mode (run k of n)". Pure Python: tested without a GPU."""

from __future__ import annotations

import html
from typing import Any, Sequence

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
COLUMNS = ("mean", "sd", "p50", "p99", "p99_9", "max", "jitter")
STYLE = ("body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:right;"
         "vertical-align:top}table{border-collapse:collapse}tr:nth-child(even){background:#eee}"
         ".table-scroll{overflow-x:auto;max-width:100%}table.kv,table.list{margin:0}"
         "table.kv th,table.kv td,table.list td{text-align:left}"
         "table.kv>tbody>tr>th{font-weight:normal;color:#555}")


def _scroll(table: str) -> str:
    """`table` in a box that scrolls sideways when it is wider than the page."""
    return f'<div class="table-scroll">{table}</div>'


def describe_device(device: Any) -> str:
    """The receipt's "device" in words: an object in the C++ receipts' shape (name, SMs, compute
    capability, driver, CUDA runtime, SM clocks seen) or, in older receipts, a plain name."""
    if not isinstance(device, dict):
        return "" if device is None else str(device)
    text = str(device.get("name") or "no GPU recorded")
    if device.get("sm_count"):
        text += f", {device['sm_count']} SMs"
    if device.get("compute_capability"):
        text += f", compute capability {device['compute_capability']}"
    if device.get("driver"):
        text += f", driver {device['driver']}"
    runtime = device.get("cuda_runtime")
    if isinstance(runtime, int) and runtime > 0:
        text += f", CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}"
    clocks = device.get("sm_clocks_seen_mhz") or device.get("sm_clock_mhz_seen") or []
    if clocks:
        text += ", SM clocks seen " + ", ".join(str(c) for c in clocks) + " MHz"
    return text


def describe_host(host: Any) -> str:
    """The receipt's "host" in words (CPUs, kernel, CPU model); "" for an older shape."""
    if not isinstance(host, dict) or not isinstance(host.get("cpus"), int):
        return ""
    text = f"{host['cpus']} CPUs"
    if host.get("kernel"):
        text += f", kernel {host['kernel']}"
    if host.get("cpu_model"):
        text += f", {host['cpu_model']}"
    return text


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


def value_html(value: Any) -> str:
    """A JSON value as escaped HTML: an object a key/value table (nested objects nested tables),
    a list holding objects a table with the union of their keys as columns and one row per
    element, a flat list its values separated by commas, a scalar its text."""
    if isinstance(value, (dict, list)) and not value:
        return "(empty)"
    if isinstance(value, dict):
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{value_html(v)}</td></tr>"
                       for k, v in value.items())
        return f'<table class="kv"><tbody>{rows}</tbody></table>'
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return html.escape(", ".join(_scalar(v) for v in value))
        columns: list[str] = []
        for v in value:
            for k in (v if isinstance(v, dict) else {}):
                if k not in columns:
                    columns.append(k)
        bare = any(not isinstance(v, dict) for v in value)
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        head += "<th>value</th>" if bare else ""
        rows = []
        for v in value:
            cells = "".join(f"<td>{value_html(v[c])}</td>" if isinstance(v, dict) and c in v
                            else "<td></td>" for c in columns)
            if bare:
                cells += "<td></td>" if isinstance(v, dict) else f"<td>{value_html(v)}</td>"
            rows.append(f"<tr>{cells}</tr>")
        return (f'<table class="list"><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(rows)}</tbody></table>')
    return html.escape(_scalar(value))


def run_labels(results: Sequence[dict[str, Any]]) -> list[str]:
    """Each result's mode, as "mode (run k of n)" where the mode occurs n > 1 times for the same
    model and contention level (repeated runs), in the receipt's order."""
    def key(r: dict[str, Any]) -> tuple[Any, Any, Any]:
        return (r.get("model"), r.get("contention"), r.get("mode"))
    total: dict[tuple[Any, Any, Any], int] = {}
    for r in results:
        total[key(r)] = total.get(key(r), 0) + 1
    seen: dict[tuple[Any, Any, Any], int] = {}
    labels = []
    for r in results:
        k = key(r)
        seen[k] = seen.get(k, 0) + 1
        mode = str(r.get("mode", ""))
        labels.append(mode if total[k] < 2 else f"{mode} (run {seen[k]} of {total[k]})")
    return labels


def histogram(values: Sequence[float], bins: int = 40) -> dict[str, Any]:
    """Counts of `values` in `bins` equal bins from their min to their p99.9 (the rest in the
    last bin, so a long tail does not flatten the plot); edges in the values' unit."""
    if not values:
        raise ValueError("histogram of no values")
    v = sorted(values)
    lo, hi = v[0], v[min(len(v) - 1, int(0.999 * (len(v) - 1)))]
    if hi <= lo:
        hi = lo + 1e-9
    width = (hi - lo) / bins
    counts = [0] * bins
    for x in v:
        counts[min(bins - 1, int((x - lo) / width))] += 1
    return {"lo": lo, "hi": hi, "counts": counts}


def _svg(runs: Sequence[dict[str, Any]], labels: Sequence[str], w: int = 640,
         h: int = 220) -> str:
    hists = [r["histogram_us"] for r in runs if "histogram_us" in r]
    if not hists:
        return ""
    lo = min(x["lo"] for x in hists)
    hi = max(x["hi"] for x in hists)
    top = max(max(x["counts"]) for x in hists) or 1
    sx = (w - 60) / (hi - lo if hi > lo else 1.0)
    parts = [f'<svg width="{w}" height="{h + 40}" xmlns="http://www.w3.org/2000/svg">',
             f'<line x1="50" y1="{h}" x2="{w - 10}" y2="{h}" stroke="black"/>']
    for k, r in enumerate(runs):
        x = r.get("histogram_us")
        if x is None:
            continue
        colour = COLOURS[k % len(COLOURS)]
        step = (x["hi"] - x["lo"]) / len(x["counts"])
        points = []
        for i, c in enumerate(x["counts"]):
            px = 50 + (x["lo"] + i * step - lo) * sx
            py = h - (h - 10) * c / top
            points.append(f"{px:.1f},{py:.1f} {px + step * sx:.1f},{py:.1f}")
        parts.append(f'<polyline fill="none" stroke="{colour}" points="{" ".join(points)}"/>')
        parts.append(f'<text x="{w - 150}" y="{20 + 16 * k}" fill="{colour}">'
                     f'{html.escape(labels[k])}</text>')
    for frac in (0.0, 0.5, 1.0):
        value = lo + frac * (hi - lo)
        parts.append(f'<text x="{50 + frac * (w - 60) - 15:.0f}" y="{h + 16}">{value:.0f}</text>')
    parts.append(f'<text x="{w / 2 - 60:.0f}" y="{h + 34}">latency (µs)</text></svg>')
    return "\n".join(parts)


def write_html(receipt: dict[str, Any], path: str) -> None:
    """Writes the page for `receipt` (results with model, contention, mode, latency_us)."""
    results = receipt["results"]
    labels = run_labels(results)
    rows = []
    for r, label in zip(results, labels):
        s = r["latency_us"]
        cells = "".join(f"<td>{s[c]:.1f}</td>" for c in COLUMNS)
        rows.append(f"<tr><td>{html.escape(r['model'])}</td><td>{html.escape(r['contention'])}"
                    f"</td><td>{html.escape(label)}</td><td>{s['n']}</td>{cells}"
                    f"<td>{r['wrong_top1']}</td><td>{r['missing_outputs']}</td></tr>")
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], str]]] = {}
    for r, label in zip(results, labels):
        groups.setdefault((r["model"], r["contention"]), []).append((r, label))
    plots = "".join(f"<h3>{html.escape(m)}, {html.escape(c)}</h3>"
                    f"{_svg([r for r, _ in runs], [label for _, label in runs])}"
                    for (m, c), runs in groups.items())
    verdicts = "".join(
        f"<tr><td style='text-align:left'>{html.escape(v['target'])}</td><td>"
        f"{ {True: 'met', False: 'MISSED', None: 'not judged'}[v['met']] }</td>"
        f"<td style='text-align:left'>{html.escape(v['detail'])}</td></tr>"
        for v in receipt.get("targets", []))
    targets = f"<h2>Targets</h2>{_scroll('<table>' + verdicts + '</table>')}" if verdicts else ""
    settings = receipt.get("settings")
    settings = f"<h2>Settings</h2>{_scroll(value_html(settings))}" if settings else ""
    head = "".join(f"<th>{c}</th>" for c in ("model", "contention", "mode", "n") + COLUMNS +
                   ("wrong top-1", "missing"))
    title = html.escape(f"resident bench {receipt['benchmark']}")
    note = (f"<p><b>Note:</b> {html.escape(receipt['note'])}</p>" if receipt.get("note") else "")
    # A merged receipt ran in parts: each part's commit and command.
    parts = "".join(f"<li>commit {html.escape(str(p.get('git_commit', '')))}: <code>"
                    f"{html.escape(str(p.get('command', '')))}</code></li>"
                    for p in receipt.get("parts", []))
    parts = f"<p>Run in parts:</p><ul>{parts}</ul>" if parts else ""
    table = _scroll(f"<table><tr>{head}</tr>{''.join(rows)}</table>")
    host = describe_host(receipt.get("host"))
    host = f"<br>host: {html.escape(host)}" if host else ""
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{STYLE}</style></head><body><h1>{title}</h1>"
            f"<p>{html.escape(describe_device(receipt.get('device')))}, commit "
            f"{html.escape(str(receipt.get('git_commit', '')))}, "
            f"{html.escape(str(receipt.get('started_at', '')))}{host}"
            f"<br><code>{html.escape(str(receipt.get('command', '')))}</code></p>{parts}{note}"
            f"<p>Latency in µs, publish → output seen by the actuator thread.</p>"
            f"{table}{targets}"
            f"{settings}{plots}</body></html>")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
