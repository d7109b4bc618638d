"""resident.bench.preemption without a GPU: per-raise preemption latency from device stamps."""

from resident.bench import preemption


class entry:
    def __init__(self, raised, cleared):
        self._s = {"preempt_raised": raised, "end_marker": cleared}

    def stamp(self, stage):
        return self._s[stage]


def test_raise_windows_keep_the_entries_that_raised_in_raise_order():
    got = preemption.raise_windows([entry(5000, 9000), entry(0, 0), entry(1000, 2000),
                                    entry(3000, 2500)])
    assert got == [(1000, 2000), (5000, 9000)]  # no raise, and a clear before the raise: out


def test_activity_gives_each_raise_the_moment_the_last_be_block_left():
    windows = [(1000, 5000), (10000, 15000), (20000, 25000), (30000, 35000)]
    events = [(500, True), (1800, False),      # busy at 1000, left at 1800: 800 ns
              (7000, True), (9000, False),     # idle at 10000: nothing to preempt
              (19000, True), (26000, False),   # left after the word fell: outlasted it
              (29000, True), (30250, False), (30300, True)]  # left 250 ns after the raise
    got = preemption.from_activity(windows, events)
    assert got["raises"] == 4
    assert got["drained"] == 2 and got["idle_at_raise"] == 1 and got["outlasted_the_word"] == 1
    assert got["latency_us"]["n"] == 2
    assert got["latency_us"]["max"] == 0.8 and got["latency_us"]["min"] == 0.25


def test_activity_with_lost_events_leaves_out_raises_before_the_first_kept_one():
    got = preemption.from_activity([(100, 900), (2000, 3000)], [(1500, True), (2100, False)],
                                   lost=7)
    assert got["unknown"] == 1 and got["drained"] == 1
    assert got["latency_us"]["max"] == 0.1


def test_holds_give_the_first_hold_while_the_word_was_up():
    windows = [(1000, 5000), (10000, 15000), (20000, 25000)]
    holds = [3000, 3500, 16000, 20040]  # 2000 ns; none before 15000; 40 ns
    got = preemption.from_holds(windows, holds)
    assert got["held"] == 2 and got["no_hold"] == 1 and got["raises"] == 3
    assert got["latency_us"]["max"] == 2.0 and got["latency_us"]["min"] == 0.04


def test_no_latency_is_made_up_without_stamps():
    got = preemption.from_holds([(1000, 2000)], [])
    assert got["no_hold"] == 1 and got["latency_us"] is None
    got = preemption.from_activity([(1000, 2000)], [])
    assert got["idle_at_raise"] == 1 and got["latency_us"] is None


def test_several_clients_answer_a_raise_when_the_last_of_them_does():
    a = [("drained", 800), ("idle_at_raise", None), ("drained", 100)]
    b = [("drained", 1500), ("drained", 300), ("outlasted_the_word", None)]
    got = preemption.combine([a, b])
    assert got == [("drained", 1500), ("drained", 300), ("outlasted_the_word", None)]
    s = preemption.summarize_outcomes(got)
    assert s["raises"] == 3 and s["drained"] == 2 and s["outlasted_the_word"] == 1
    assert s["latency_us"]["max"] == 1.5
    assert preemption.combine([]) == []
