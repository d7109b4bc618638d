"""The Python benchmarks' HTML page (resident.bench.report); CPU only."""

import pytest

from resident.bench.report import (describe_device, describe_host, histogram, run_labels,
                                    value_html, write_html)
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


def _run(mode, base, model="resnet50", contention="none"):
    v = [base + (i % 13) for i in range(100)]
    return {"model": model, "contention": contention, "mode": mode,
            "latency_us": summarize(v), "histogram_us": histogram(v), "wrong_top1": 0,
            "missing_outputs": 0}


def test_a_device_and_host_given_as_objects_are_described_in_words(tmp_path):
    receipt = {"benchmark": "inference", "git_commit": "abc", "started_at": "now",
               "command": "python -m resident.bench.inference",
               "device": {"name": "NVIDIA <H200>", "sm_count": 132, "compute_capability": "9.0",
                          "driver": "580.159.04", "cuda_runtime": 13000, "sm_clock_mhz": 1980,
                          "sm_clocks_seen_mhz": [1980]},
               "host": {"cpus": 16, "kernel": "6.18", "cpu_model": "Xeon",
                        "thread_cpus": {"sensor": 15}},
               "results": [_run("while", 900.0)]}
    out = tmp_path / "page.html"
    write_html(receipt, str(out))
    page = out.read_text()
    assert ("NVIDIA &lt;H200&gt;, 132 SMs, compute capability 9.0, driver 580.159.04, "
            "CUDA runtime 13.0, SM clocks seen 1980 MHz, commit abc") in page
    assert "host: 16 CPUs, kernel 6.18, Xeon" in page
    assert "{&#x27;" not in page and "{'" not in page and '{"' not in page
    assert describe_device("GPU") == "GPU" and describe_device(None) == ""
    assert describe_host({"cpus": {"sensor": 15}}) == ""  # the older shape: no summary


def test_settings_are_a_table_and_tables_scroll_inside_the_page(tmp_path):
    receipt = {"benchmark": "inference", "device": "GPU", "git_commit": "abc",
               "started_at": "now", "command": "c",
               "settings": {"iterations": 20000, "tf32": False, "models": ["vgg16", "resnet50"],
                            "cpus": {"sensor": 15, "loop": 13},
                            "parts": [{"model": "vgg16", "commit": "x"}, {"model": "resnet50"}]},
               "results": [_run("while", 900.0)],
               "targets": [{"target": "a < b", "met": None, "detail": "d"}]}
    out = tmp_path / "page.html"
    write_html(receipt, str(out))
    page = out.read_text()
    assert "<h2>Settings</h2>" in page
    assert "<tr><th>iterations</th><td>20000</td></tr>" in page
    assert "<tr><th>tf32</th><td>false</td></tr>" in page
    assert "<tr><th>models</th><td>vgg16, resnet50</td></tr>" in page
    assert ('<tr><th>cpus</th><td><table class="kv"><tbody><tr><th>sensor</th><td>15</td></tr>'
            in page)
    assert "<th>model</th><th>commit</th>" in page  # a list of objects: one row each
    assert "<tr><td>resnet50</td><td></td></tr>" in page
    assert '{"' not in page and "{'" not in page
    assert ".table-scroll{overflow-x:auto" in page
    # The results table and the targets table each sit in a scrolling box.
    assert page.count('<div class="table-scroll"><table>') == 2
    assert "not judged" in page
    assert value_html({}) == "(empty)" and value_html("<x>") == "&lt;x&gt;"


def test_repeated_runs_of_a_mode_are_labelled(tmp_path):
    receipt = {"benchmark": "inference", "device": "GPU", "git_commit": "abc",
               "started_at": "now", "command": "c",
               "results": [_run("while", 900.0), _run("host-graph", 950.0),
                           _run("while", 905.0), _run("while", 900.0, contention="stress")]}
    out = tmp_path / "page.html"
    write_html(receipt, str(out))
    page = out.read_text()
    for label in ("while (run 1 of 2)", "while (run 2 of 2)"):
        assert f"<td>{label}</td>" in page  # the table
        assert f">{label}</text>" in page  # the plot's legend
    assert "<td>host-graph</td>" in page
    assert "<td>while</td>" in page  # alone under contention
    assert run_labels(receipt["results"]) == ["while (run 1 of 2)", "host-graph",
                                              "while (run 2 of 2)", "while"]
