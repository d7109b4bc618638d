"""An HTML page for a Python benchmark's receipt: the settings, one table of every run, and per
model a latency histogram per mode (inline SVG, no scripts), since people look at these rather
than read tables. Pure Python: tested without a GPU."""

from __future__ import annotations

import html
from typing import Any, Sequence

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
COLUMNS = ("mean", "sd", "p50", "p99", "p99_9", "max", "jitter")


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


def _svg(runs: Sequence[dict[str, Any]], w: int = 640, h: int = 220) -> str:
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
                     f'{html.escape(r["mode"])}</text>')
    for frac in (0.0, 0.5, 1.0):
        value = lo + frac * (hi - lo)
        parts.append(f'<text x="{50 + frac * (w - 60) - 15:.0f}" y="{h + 16}">{value:.0f}</text>')
    parts.append(f'<text x="{w / 2 - 60:.0f}" y="{h + 34}">latency (µs)</text></svg>')
    return "\n".join(parts)


def write_html(receipt: dict[str, Any], path: str) -> None:
    """Writes the page for `receipt` (results with model, contention, mode, latency_us)."""
    rows = []
    for r in receipt["results"]:
        s = r["latency_us"]
        cells = "".join(f"<td>{s[c]:.1f}</td>" for c in COLUMNS)
        rows.append(f"<tr><td>{html.escape(r['model'])}</td><td>{html.escape(r['contention'])}"
                    f"</td><td>{html.escape(r['mode'])}</td><td>{s['n']}</td>{cells}"
                    f"<td>{r['wrong_top1']}</td><td>{r['missing_outputs']}</td></tr>")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in receipt["results"]:
        groups.setdefault((r["model"], r["contention"]), []).append(r)
    plots = "".join(f"<h3>{html.escape(m)}, {html.escape(c)}</h3>{_svg(runs)}"
                    for (m, c), runs in groups.items())
    verdicts = "".join(
        f"<tr><td style='text-align:left'>{html.escape(v['target'])}</td><td>"
        f"{ {True: 'met', False: 'MISSED', None: 'not judged'}[v['met']] }</td>"
        f"<td style='text-align:left'>{html.escape(v['detail'])}</td></tr>"
        for v in receipt.get("targets", []))
    targets = f"<h2>Targets</h2><table>{verdicts}</table>" if verdicts else ""
    head = "".join(f"<th>{c}</th>" for c in ("model", "contention", "mode", "n") + COLUMNS +
                   ("wrong top-1", "missing"))
    title = html.escape(f"resident bench {receipt['benchmark']}")
    note = (f"<p><b>Note:</b> {html.escape(receipt['note'])}</p>" if receipt.get("note") else "")
    # A merged receipt ran in parts: each part's commit and command.
    parts = "".join(f"<li>commit {html.escape(str(p.get('git_commit', '')))}: <code>"
                    f"{html.escape(str(p.get('command', '')))}</code></li>"
                    for p in receipt.get("parts", []))
    parts = f"<p>Run in parts:</p><ul>{parts}</ul>" if parts else ""
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;"
            "text-align:right}table{border-collapse:collapse}tr:nth-child(even){background:#eee}"
            f"</style></head><body><h1>{title}</h1>"
            f"<p>{html.escape(receipt.get('device', ''))}, commit "
            f"{html.escape(receipt.get('git_commit', ''))}, "
            f"{html.escape(receipt.get('started_at', ''))}"
            f"<br><code>{html.escape(receipt.get('command', ''))}</code></p>{parts}{note}"
            f"<p>Latency in µs, publish → output seen by the actuator thread.</p>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table>{targets}{plots}</body></html>")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
