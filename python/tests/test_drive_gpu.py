"""The C++ sensor of resident._resident._drive_mailbox: samples at a fixed rate, or at a Poisson
process's arrivals of the same mean rate (reproducible from its seed). No loop answers here:
only the publish times are checked."""

import statistics

import pytest

from resident import _resident

pytestmark = pytest.mark.gpu


def gaps_us(poisson_seed):
    mb = _resident.Mailbox(4, 4, depth=8)
    d = _resident._drive_mailbox(mb, bytes(4 * 16), 2000, 10_000.0, drain_s=0.05,
                                 poisson_seed=poisson_seed)
    publish = memoryview(d["publish_ns"]).cast("Q")
    return [(publish[i + 1] - publish[i]) / 1e3 for i in range(len(publish) - 1)]


def test_a_fixed_rate_is_periodic_and_a_poisson_rate_has_exponential_gaps_of_the_same_mean():
    fixed = gaps_us(-1)
    poisson = gaps_us(7)
    assert abs(statistics.mean(fixed) - 100.0) < 5.0
    assert statistics.pstdev(fixed) / statistics.mean(fixed) < 0.2
    assert abs(statistics.mean(poisson) - 100.0) < 15.0  # 2000 exponential gaps: sd of mean 2.2
    cv = statistics.pstdev(poisson) / statistics.mean(poisson)
    assert 0.8 < cv < 1.2  # an exponential's coefficient of variation is 1


def test_the_same_seed_gives_the_same_arrivals():
    a, b = gaps_us(3), gaps_us(3)
    # The schedule is the same; publish times differ by the thread's wake-up jitter only.
    close = sum(1 for x, y in zip(a, b) if abs(x - y) < 20.0)
    assert close > 0.95 * len(a)
    c = gaps_us(4)
    assert sum(1 for x, y in zip(a, c) if abs(x - y) < 20.0) < 0.5 * len(a)
