"""resident.bench.disb without a GPU: its arguments and how it relates the policies' results."""

import pytest

from resident.bench import disb


def result(policy, p99, be):
    return {"policy": policy, "latency_us": {"p99": p99}, "be_inferences_per_s": be}


def test_the_ratios_are_against_exclusive_and_sequential_of_the_same_run():
    results = [result("exclusive", 2000.0, 0.0), result("sequential", 2500.0, 100.0),
               result("translated", 2080.0, 160.0), result("kernel-boundary", 2150.0, 95.0)]
    disb.relate(results)
    by = {r["policy"]: r for r in results}
    assert by["exclusive"]["rt_p99_over_exclusive"] == 1.0
    assert by["translated"]["rt_p99_over_exclusive"] == pytest.approx(1.04)
    assert by["translated"]["be_throughput_over_sequential"] == pytest.approx(1.6)
    # PyTorch's graphs are not compared with the translated models' baseline.
    assert by["kernel-boundary"]["be_throughput_over_sequential"] is None
    assert by["exclusive"]["be_throughput_over_sequential"] is None


def test_the_graph_policies_are_against_the_graphs_sequential_baseline():
    results = [result("exclusive", 2000.0, 0.0), result("sequential", 2500.0, 100.0),
               result("sequential-graphs", 2600.0, 400.0), result("priority", 9000.0, 800.0),
               result("kernel-boundary", 2150.0, 380.0), result("split", 2700.0, 150.0),
               result("kernel-boundary+split", 2700.0, 520.0),
               result("translated-spatial", 2300.0, 130.0)]
    disb.relate(results)
    by = {r["policy"]: r for r in results}
    assert by["kernel-boundary"]["be_throughput_over_sequential"] == pytest.approx(0.95)
    assert by["kernel-boundary+split"]["be_throughput_over_sequential"] == pytest.approx(1.3)
    assert by["priority"]["be_throughput_over_sequential"] == pytest.approx(2.0)
    assert by["sequential-graphs"]["be_throughput_over_sequential"] == 1.0
    assert by["split"]["be_throughput_over_sequential"] == pytest.approx(1.5)  # translated BE
    assert by["translated-spatial"]["be_throughput_over_sequential"] == pytest.approx(1.3)


def test_rt_p99_is_related_to_the_priority_stream_policy_like_reef_to_triton():
    results = [result("exclusive", 2000.0, 0.0), result("priority", 9000.0, 800.0),
               result("sequential-graphs", 3000.0, 400.0), result("kernel-boundary", 2250.0, 380.0),
               result("translated", 2080.0, 160.0)]
    disb.relate(results)
    by = {r["policy"]: r for r in results}
    assert by["kernel-boundary"]["priority_p99_over_rt_p99"] == pytest.approx(4.0)
    assert by["sequential-graphs"]["priority_p99_over_rt_p99"] == pytest.approx(3.0)
    assert by["translated"]["priority_p99_over_rt_p99"] == pytest.approx(9000.0 / 2080.0)
    assert by["priority"]["priority_p99_over_rt_p99"] is None
    assert by["exclusive"]["priority_p99_over_rt_p99"] is None
    # Without a priority run there is nothing to relate to.
    alone = [result("exclusive", 2000.0, 0.0), result("translated", 2080.0, 160.0)]
    disb.relate(alone)
    assert alone[1]["priority_p99_over_rt_p99"] is None


def test_the_be_alone_runs_have_no_rt_ratio_and_say_the_most_be_can_get():
    alone = {"policy": "be-alone", "latency_us": {}, "be_inferences_per_s": 260.0}
    graphs = {"policy": "be-alone-graphs", "latency_us": {}, "be_inferences_per_s": 900.0}
    results = [result("exclusive", 2000.0, 0.0), result("sequential", 2010.0, 170.0),
               result("sequential-graphs", 9000.0, 600.0), alone, graphs]
    disb.relate(results)
    assert alone["rt_p99_over_exclusive"] is None and graphs["rt_p99_over_exclusive"] is None
    assert alone["be_throughput_over_sequential"] == pytest.approx(260.0 / 170.0)
    assert graphs["be_throughput_over_sequential"] == pytest.approx(1.5)


def test_without_a_baseline_the_ratios_are_not_made_up():
    results = [result("translated", 2080.0, 160.0)]
    disb.relate(results)
    assert results[0]["rt_p99_over_exclusive"] is None
    assert results[0]["be_throughput_over_sequential"] is None


def test_an_output_never_seen_is_lost_unless_the_loops_counters_account_for_it():
    def run(policy, wrong, missing, dropped, queued):
        return {"policy": policy, "wrong_outputs": wrong, "missing_outputs": missing,
                "counters": {"processed": 350 - dropped - queued, "dropped": dropped},
                "queued_at_stop": queued}
    # priority fell behind: its 41 unseen samples were dropped (45 in all, warm-up included).
    assert disb.outcome([run("exclusive", 0, 0, 0, 0), run("priority", 0, 41, 45, 0)]) == (
        0, 0, {"priority": 45})
    # Dropped and still queued at the stop add up.
    assert disb.outcome([run("priority", 0, 50, 45, 5)]) == (0, 0, {"priority": 50})
    # Two unseen outputs that the counters say were processed are lost.
    assert disb.outcome([run("translated", 1, 5, 0, 3)]) == (1, 2, {"translated": 3})
    # A receipt from before the counters were kept counts every unseen output as lost.
    assert disb.outcome([{"policy": "split", "wrong_outputs": 0, "missing_outputs": 4}]) == (
        0, 4, {})


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        disb.parse_args(["--policies", "fifo"])
    with pytest.raises(SystemExit):
        disb.parse_args(["--rate", "0"])
    with pytest.raises(SystemExit):
        disb.parse_args(["--rt-sms", "0"])
    with pytest.raises(SystemExit):
        disb.parse_args(["--alone-s", "0"])
    args = disb.parse_args(["--quick", "--policies", "exclusive,translated"])
    assert args.samples == 300 and args.policies == ["exclusive", "translated"]
    assert disb.parse_args([]).workload == "one"
    assert "split" in disb.parse_args([]).policies


def test_every_client_is_stopped_even_when_one_failed():
    class client:
        def __init__(self, fails):
            self.fails, self.stopped = fails, False

        def stop(self):
            self.stopped = True
            if self.fails:
                raise RuntimeError("client failed")
            return {"ok": True}

    clients = [client(False), client(True), client(False)]
    with pytest.raises(RuntimeError, match="client failed"):
        disb.stop_all(clients)
    assert all(c.stopped for c in clients)
    assert disb.stop_all([client(False)]) == [{"ok": True}]
