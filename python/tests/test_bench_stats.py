"""The Python benchmarks' statistics (resident.bench.stats); CPU only."""

import pytest

import array

from resident.bench.stats import percentile, summarize, summarize_run


def test_interpolated_percentiles_as_the_cpp_receipts():
    v = list(range(0, 1001))  # 0..1000: percentile q is 10 q exactly
    assert percentile(v, 50) == 500
    assert percentile(v, 99) == pytest.approx(990)
    assert percentile(v, 99.9) == pytest.approx(999)
    assert percentile(v, 100) == 1000 and percentile(v, 0) == 0
    assert percentile([1.0, 2.0], 50) == 1.5


def test_summary_of_a_known_set():
    s = summarize([4.0, 2.0, 6.0, 8.0])
    assert s["n"] == 4 and s["mean"] == 5.0 and s["min"] == 2.0 and s["max"] == 8.0
    assert s["jitter"] == 6.0 and s["p50"] == 5.0
    assert s["sd"] == pytest.approx(5.0 ** 0.5)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="no values"):
        summarize([])
    with pytest.raises(ValueError, match="outside"):
        percentile([1.0], 101)


def drive_result(publish, seen, classes):
    outputs = array.array("f")
    for c in classes:
        outputs.extend([float(c), 1.5])
    return {"publish_ns": array.array("Q", publish).tobytes(),
            "seen_ns": array.array("Q", seen).tobytes(), "outputs": outputs.tobytes()}


def test_a_run_skips_the_warmup_and_counts_missing_and_wrong_outputs():
    publish = [1000 * i for i in range(6)]
    seen = [p + 20_000 for p in publish]
    seen[4] = 0  # never seen
    classes = [7, 8, 7, 8, 7, 9]  # sample 5 is wrong: image 5 % 2 == 1 is class 8
    r = summarize_run(drive_result(publish, seen, classes), [7, 8], warmup=2, iterations=4)
    assert r["latency_us"]["n"] == 3 and r["latency_us"]["mean"] == 20.0
    assert r["missing_outputs"] == 1 and r["wrong_top1"] == 1
    assert sum(r["histogram_us"]["counts"]) == 3


def test_a_run_without_outputs_or_samples_is_an_error():
    with pytest.raises(RuntimeError, match="saw no output"):
        summarize_run(drive_result([0, 1], [0, 0], [0, 0]), [0], warmup=0, iterations=2)
    with pytest.raises(ValueError, match="2 samples for 1 \\+ 2"):
        summarize_run(drive_result([0, 1], [5, 6], [0, 0]), [0], warmup=1, iterations=2)
