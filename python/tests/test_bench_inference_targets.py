"""The inference benchmark's targets and the merge of its parts; CPU only."""

import pytest

from resident.bench.inference_targets import judge, merge


def run(model, contention, mode, mean, sd, jitter):
    return {"model": model, "contention": contention, "mode": mode,
            "latency_us": {"mean": mean, "sd": sd, "jitter": jitter}}


def verdict(verdicts, start):
    (v,) = [x for x in verdicts if x["target"].startswith(start)]
    return v


def test_quiet_ratios_and_the_mean_gap():
    results = [run("resnet50", "none", "while", 900.0, 2.0, 20.0),
               run("resnet50", "none", "host-graph", 910.0, 4.0, 25.0)]
    v = judge(results)
    sd = verdict(v, "resnet50 quiet: host-graph sd")
    assert sd["met"] is True and sd["value"] == 2.0
    j = verdict(v, "resnet50 quiet: host-graph jitter")
    assert j["met"] is False and j["value"] == pytest.approx(1.25)
    gap = verdict(v, "resnet50 quiet: while mean within 3%")
    assert gap["met"] is True and gap["value"] == pytest.approx(10 / 910)
    # A target model with no runs is not judged, never met.
    assert verdict(v, "mobilenet_v2 quiet: host-graph sd")["met"] is None


def test_contention_and_the_framework_cost():
    results = [run("vgg16", "none", "while", 700.0, 1.0, 10.0),
               run("vgg16", "stress", "while", 701.0, 1.0, 13.0),
               run("vgg16", "none", "host-graph", 715.0, 3.0, 40.0),
               run("vgg16", "none", "torch-peer", 708.0, 3.0, 50.0),
               run("vgg16", "stress", "host-graph", 720.0, 9.0, 65.0)]
    v = judge(results)
    c = verdict(v, "vgg16: while J under contention")
    assert c["met"] is False and c["value"] == pytest.approx(1.3)
    # host-graph under the same load is reported with it, not judged
    assert "host-graph J under stress 65.0 us, 5.0x while's" in c["detail"]
    assert verdict(v, "vgg16 quiet: host-graph mean - PyTorch")["value"] == pytest.approx(7.0)
    assert verdict(v, "vgg16 quiet: host-graph mean - PyTorch")["met"] is True
    assert verdict(v, "vgg16 quiet: while mean - PyTorch")["met"] is True


def test_merge_keeps_every_part_and_the_latest_run_of_each_configuration():
    a = {"benchmark": "inference", "git_commit": "a", "command": "x", "started_at": "1",
         "results": [run("resnet50", "none", "while", 1.0, 1.0, 1.0),
                     run("vgg16", "none", "while", 2.0, 1.0, 1.0)]}
    b = {"benchmark": "inference", "git_commit": "a", "command": "y", "started_at": "2",
         "results": [run("vgg16", "none", "while", 3.0, 1.0, 1.0)]}
    m = merge([a, b])
    assert sorted((r["model"], r["latency_us"]["mean"]) for r in m["results"]) == [
        ("resnet50", 1.0), ("vgg16", 3.0)]
    assert [p["command"] for p in m["parts"]] == ["x", "y"]
    assert m["targets"]
    with pytest.raises(ValueError, match="not an inference receipt"):
        merge([{"benchmark": "camera", "results": []}])
    with pytest.raises(ValueError, match="no receipts"):
        merge([])


def test_parts_of_different_iteration_counts_say_so_in_the_settings():
    old = {"benchmark": "inference", "git_commit": "a", "command": "x", "started_at": "1",
           "settings": {"iterations": 9000, "warmup": 1000},
           "results": [run("vgg16", "none", "while", 2.0, 1.0, 1.0),
                       run("resnet50", "none", "while", 2.0, 1.0, 1.0)]}
    new = {"benchmark": "inference", "git_commit": "b", "command": "y", "started_at": "2",
           "settings": {"iterations": 20000, "warmup": 1000},
           "results": [run("resnet50", "none", "while", 3.0, 1.0, 1.0)]}
    m = merge([old, new])
    assert m["settings"]["iterations"] == [9000, 20000]
    assert m["settings"]["warmup"] == 1000
    assert [p["iterations"] for p in m["parts"]] == [9000, 20000]
    # Every run of the old part replaced: the new part's count.
    assert merge([old, dict(new, results=[run("vgg16", "none", "while", 3.0, 1.0, 1.0),
                                          run("resnet50", "none", "while", 3.0, 1.0, 1.0)])]
                 )["settings"]["iterations"] == 20000


def test_a_part_cut_short_merges_and_is_named_in_the_parts():
    cut = {"benchmark": "inference", "git_commit": "a", "command": "x", "started_at": "1",
           "partial": True, "results": [run("vgg16", "none", "while", 2.0, 1.0, 1.0)]}
    rest = {"benchmark": "inference", "git_commit": "a", "command": "y", "started_at": "2",
            "results": [run("vgg16", "none", "host-graph", 2.0, 1.0, 1.0)]}
    m = merge([cut, rest])
    assert "partial" not in m
    assert [p["partial"] for p in m["parts"]] == [True, False]
    assert sorted(r["mode"] for r in m["results"]) == ["host-graph", "while"]


def test_merge_from_the_command_line_needs_no_pytorch(tmp_path):
    """--merge runs where PyTorch is missing (a laptop joining parts run on the GPU machine)."""
    import json
    import subprocess
    import sys

    a = {"benchmark": "inference", "git_commit": "a", "command": "x", "started_at": "1",
         "results": [{"model": "resnet50", "contention": "none", "mode": "while",
                      "latency_us": {"n": 3, "mean": 900.0, "sd": 2.0, "p50": 900.0,
                                     "p99": 903.0, "p99_9": 903.0, "max": 903.0,
                                     "jitter": 6.0},
                      "histogram_us": {"lo": 897.0, "hi": 903.0, "counts": [1, 1, 1]},
                      "wrong_top1": 0, "missing_outputs": 0}]}
    part = tmp_path / "a.json"
    part.write_text(json.dumps(a))
    out = tmp_path / "merged.json"
    # A meta-path hook that refuses torch: the merge must not import it.
    code = ("import sys\n"
            "class NoTorch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'torchvision'):\n"
            "            raise ImportError('no torch here')\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "from resident.bench.inference import main\n"
            f"sys.exit(main(['--merge', {str(part)!r}, '--json', {str(out)!r},"
            f" '--note', 'short run']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    merged = json.loads(out.read_text())
    assert [r["model"] for r in merged["results"]] == ["resnet50"]
    assert merged["note"] == "short run"
    assert (tmp_path / "inference-report.html").exists()


def test_a_merged_receipt_merges_again_with_its_parts_and_per_run_counts():
    def timed(model, count):
        r = run(model, "none", "while", 2.0, 1.0, 1.0)
        r["latency_us"] = dict(r.get("latency_us", {}), n=count)
        return r
    old = {"benchmark": "inference", "git_commit": "a", "command": "x", "started_at": "1",
           "settings": {"iterations": 9000}, "results": [timed("vgg16", 9000)]}
    new = {"benchmark": "inference", "git_commit": "b", "command": "y", "started_at": "2",
           "settings": {"iterations": 20000}, "results": [timed("resnet50", 20000)]}
    first = merge([old, new])
    assert first["settings"]["iterations"] == [9000, 20000]
    last = {"benchmark": "inference", "git_commit": "c", "command": "z", "started_at": "3",
            "settings": {"iterations": 20000}, "results": [timed("vgg16", 20000)]}
    again = merge([first, last])
    # VGG-16's 9,000-sample run was replaced: every kept run has 20,000.
    assert again["settings"]["iterations"] == 20000
    assert [p["git_commit"] for p in again["parts"]] == ["a", "b", "c"]
    assert merge([first])["settings"]["iterations"] == [9000, 20000]



def test_runs_of_a_merged_receipt_without_their_count_take_n_and_missing_outputs():
    r = run("vgg16", "stress", "host-graph", 2.0, 1.0, 1.0)
    r["latency_us"]["n"] = 19998
    r["missing_outputs"] = 2
    merged = {"benchmark": "inference", "settings": {"iterations": [9000, 20000]}, "results": [r]}
    again = merge([merged])
    assert again["settings"]["iterations"] == 20000
    assert again["results"][0]["iterations"] == 20000
