"""python -m resident.bench.inference: its arguments, and a short run on the GPU (one model,
one mode) whose receipt must hold checked outputs. Skipped without PyTorch and torchvision."""

import json
import os

import pytest

from resident_test_env import import_or_skip
torch = import_or_skip("torch")
import_or_skip("torchvision")
from resident.bench import inference  # noqa: E402


def test_quick_narrows_the_matrix():
    a = inference.parse_args(["--quick"])
    assert a.models == ["mobilenet_v2", "resnet50"] and a.contention == ["none"]
    assert a.iterations == 2000 and a.modes == list(inference.MODES)


@pytest.mark.parametrize("argv,message", [
    (["--models", "alexnet"], "unknown model 'alexnet'"),
    (["--modes", "whiel"], "unknown mode 'whiel'"),
    (["--contention", "heavy"], "unknown contention 'heavy'"),
    (["--iterations", "0"], "--iterations must be positive"),
])
def test_bad_arguments_name_the_value(argv, message, capsys):
    with pytest.raises(SystemExit):
        inference.parse_args(argv)
    assert message in capsys.readouterr().err


def test_a_partial_receipt_is_written_and_marked(tmp_path):
    args = inference.parse_args(["--json", str(tmp_path / "sub" / "part.json")])
    inference.save_partial({"benchmark": "inference"}, [{"mode": "while"}], args)
    saved = json.loads((tmp_path / "sub" / "part.json").read_text())
    assert saved == {"benchmark": "inference", "partial": True, "results": [{"mode": "while"}]}


@pytest.mark.gpu
def test_a_short_run_writes_a_checked_receipt(tmp_path):
    photos = os.environ.get("RESIDENT_PHOTO_DIR", os.path.expanduser("~/.cache/resident/photos"))
    if not os.path.isdir(photos):
        pytest.skip(f"no photographs in {photos} (scripts/photos)")
    out = tmp_path / "inference.json"
    rc = inference.main(["--models", "mobilenet_v2", "--modes", "while,host-graph,torch-peer",
                         "--contention", "none", "--iterations", "300", "--warmup", "30",
                         "--photos", photos, "--json", str(out)])
    receipt = json.loads(out.read_text())
    assert rc == 0 and "partial" not in receipt
    assert [r["mode"] for r in receipt["results"]] == ["while", "host-graph", "torch-peer"]
    for r in receipt["results"]:
        assert r["wrong_top1"] == 0 and r["missing_outputs"] == 0 and r["stopped"], r
        assert r["latency_us"]["n"] == 300
        assert 0 < r["latency_us"]["min"] <= r["latency_us"]["mean"] <= r["latency_us"]["max"]


def test_a_receipts_commit_is_the_builds_not_a_carried_checkouts(monkeypatch):
    import subprocess

    import resident

    monkeypatch.delenv("RESIDENT_GIT_COMMIT", raising=False)
    monkeypatch.setattr(resident._resident, "__git_commit__", "abc123def456")
    assert inference.git_commit() == "abc123def456"
    monkeypatch.setenv("RESIDENT_GIT_COMMIT", "named-by-builder")
    assert inference.git_commit() == "named-by-builder"
    # A module with no stamp: the checkout's HEAD.
    monkeypatch.delenv("RESIDENT_GIT_COMMIT")
    monkeypatch.setattr(resident._resident, "__git_commit__", "unknown")
    here = inference.__file__.rsplit("/", 1)[0]
    head = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert inference.git_commit() == head
