"""The Python benchmarks' statistics (resident.bench.stats); CPU only."""

import pytest

from resident.bench.stats import percentile, summarize


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
