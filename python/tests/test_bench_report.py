"""The Python benchmarks' HTML page (resident.bench.report); CPU only."""

import pytest

from resident.bench.report import histogram, write_html
from resident.bench.stats import summarize


def test_histogram_counts_every_value_and_folds_the_tail():
    values = [float(x) for x in range(1000)] + [1e6]  # one far outlier
    h = histogram(values, bins=10)
    assert sum(h["counts"]) == len(values)
    assert h["lo"] == 0.0 and h["hi"] < 1e6  # the outlier went into the last bin
    assert h["counts"][-1] >= 1


def test_histogram_of_equal_values():
    h = histogram([5.0] * 7, bins=4)
    assert sum(h["counts"]) == 7 and h["counts"][0] == 7
    with pytest.raises(ValueError):
        histogram([])


def test_the_page_shows_every_run_and_a_plot_per_model(tmp_path):
    def run(mode, base):
        v = [base + (i % 17) for i in range(200)]
        return {"model": "resnet50", "contention": "none", "mode": mode,
                "latency_us": summarize(v), "histogram_us": histogram(v), "wrong_top1": 0,
                "missing_outputs": 0}
    receipt = {"benchmark": "inference", "device": "GPU <x>", "git_commit": "abc",
               "started_at": "now", "command": "python -m resident.bench.inference",
               "results": [run("while", 900.0), run("host-graph", 950.0)],
               "targets": [{"target": "a < b", "met": False, "detail": "3 > 2"}]}
    out = tmp_path / "page.html"
    write_html(receipt, str(out))
    page = out.read_text()
    assert page.count("<tr><td>resnet50</td>") == 2
    assert "<svg" in page and page.count("<polyline") == 2
    assert "GPU &lt;x&gt;" in page  # escaped
    assert "a &lt; b" in page and "MISSED" in page


def test_the_page_shows_a_note_and_the_parts_of_a_merged_receipt(tmp_path):
    v = [900.0 + (i % 5) for i in range(50)]
    receipt = {"benchmark": "inference", "device": "GPU", "git_commit": "abc",
               "started_at": "now", "command": "part one",
               "note": "9,000 iterations <device time>",
               "parts": [{"git_commit": "abc", "command": "part one"},
                         {"git_commit": "def", "command": "part two"}],
               "results": [{"model": "vgg16", "contention": "none", "mode": "while",
                            "latency_us": summarize(v), "histogram_us": histogram(v),
                            "wrong_top1": 0, "missing_outputs": 0}]}
    out = tmp_path / "page.html"
    write_html(receipt, str(out))
    page = out.read_text()
    assert "9,000 iterations &lt;device time&gt;" in page
    assert "commit def: <code>part two</code>" in page
