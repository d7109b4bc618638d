"""resident.bench.disb without a GPU: its arguments and how it relates the policies' results."""

import json

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


def run_of(policy, p99, be, workload="one", arrivals="fixed", preempt_p99=None):
    r = {"policy": policy, "rt_model": "resnet50", "workload": workload, "arrivals": arrivals,
         "rate_hz": 150.0, "deadline_us": 3000.0, "mode": "while", "latency_us": {"p99": p99},
         "be_inferences_per_s": be,
         "preemption_latency_us": None if preempt_p99 is None else {"p99": preempt_p99}}
    return r


def verdicts(targets, needle):
    return [v for v in targets if needle in v["name"]]


def test_the_targets_are_judged_from_the_groups_figures():
    results = [run_of("exclusive", 2000.0, 0.0), run_of("sequential", 2010.0, 100.0),
               run_of("translated", 2080.0, 160.0, preempt_p99=13.5),
               run_of("sequential-graphs", 9000.0, 600.0),
               run_of("kernel-boundary", 2300.0, 560.0, preempt_p99=1100.0),
               run_of("kernel-boundary+split", 2150.0, 800.0, preempt_p99=40.0)]
    disb.relate(results)
    settings = {"workload": "one", "be_models": [["vgg16", 8]],
                "be_kernel_duration_us": {"vgg16@8": {"max": 1083.0, "p99": 900.0}}}
    targets = disb.judge(results, settings, "NVIDIA H200")
    assert len(targets) == 8
    by = {v["name"].split(": ", 1)[1]: v for v in targets}
    assert by["translated RT p99 <= 1.05 x exclusive"]["met"] is True
    assert by["translated RT p99 <= 1.05 x exclusive"]["value"] == pytest.approx(1.04)
    assert by["translated BE throughput >= 1.5 x sequential"]["met"] is True
    assert by["translated preemption latency p99 <= 20 us"]["met"] is True
    # 2300 / 2000 = 1.15: missed; 560 / 600 = 0.93: met.
    assert by["kernel-boundary RT p99 <= 1.1 x exclusive"]["met"] is False
    assert by["kernel-boundary BE throughput >= 0.9 x sequential-graphs"]["met"] is True
    assert by["kernel-boundary+split BE throughput >= 1.3 x sequential-graphs"]["met"] is True
    # 1100 - 1083 = 17 us over the longest kernel: missed, with both figures named.
    gate = by["kernel-boundary preemption p99 - longest BE kernel <= 10 us"]
    assert gate["met"] is False and gate["value"] == pytest.approx(17.0)
    assert "vgg16 at batch 8" in gate["detail"] and "[NVIDIA H200]" in gate["detail"]
    assert all(v["name"].startswith("resnet50 / one / fixed 150 Hz, deadline 3000 us / while: ")
               for v in targets)


def test_a_target_whose_policy_did_not_run_is_not_judged_never_met():
    results = [run_of("exclusive", 2000.0, 0.0), run_of("translated", 2080.0, 160.0)]
    disb.relate(results)
    targets = disb.judge(results, {"workload": "one", "be_models": [["vgg16", 8]]})
    by = {v["name"].split(": ", 1)[1]: v for v in targets}
    assert by["translated BE throughput >= 1.5 x sequential"]["met"] is None
    assert "sequential not run" in by["translated BE throughput >= 1.5 x sequential"]["detail"]
    assert by["translated preemption latency p99 <= 20 us"]["met"] is None
    assert all(v["met"] is None for k, v in by.items() if "kernel-boundary" in k)
    # Without the BE kernels profiled the gate's bound is not known.
    gate = by["kernel-boundary preemption p99 - longest BE kernel <= 10 us"]
    assert "not profiled" in gate["detail"]
    # be-alone runs (no RT model) make no group of targets.
    assert disb.judge([{"policy": "be-alone", "rt_model": None, "workload": "one",
                        "arrivals": None, "mode": None, "latency_us": {},
                        "be_inferences_per_s": 9.0}]) == []


def receipt_of(results, workload="one", models=(("vgg16", 8),), commit="abc", kernels=None):
    settings = {"workload": workload, "be_models": [list(m) for m in models]}
    if kernels:
        settings["be_kernel_duration_us"] = kernels
    return {"benchmark": "disb", "git_commit": commit, "command": f"disb --workload {workload}",
            "device": {"name": "NVIDIA H200"}, "started_at": "t", "settings": settings,
            "results": results}


def test_parts_merge_into_one_receipt_related_and_judged_per_group():
    one = receipt_of([run_of("exclusive", 2000.0, 0.0), run_of("sequential", 2010.0, 100.0),
                      run_of("translated", 2500.0, 160.0, preempt_p99=13.0)], commit="a1")
    three = receipt_of([run_of("exclusive", 2100.0, 0.0, workload="three"),
                        run_of("sequential", 2150.0, 50.0, workload="three")],
                       workload="three", commit="b2",
                       models=(("vgg16", 8), ("mobilenet_v2", 16), ("densenet121", 8)))
    # A later part re-runs one workload's translated policy: it replaces the earlier run.
    rerun = receipt_of([run_of("translated", 2080.0, 170.0, preempt_p99=12.0)], commit="c3")
    rerun["partial"] = True
    merged = disb.merge([one, three, rerun])
    assert "partial" not in merged
    assert [p["git_commit"] for p in merged["parts"]] == ["a1", "b2", "c3"]
    assert merged["parts"][2]["partial"] is True
    assert len(merged["results"]) == 5
    translated = [r for r in merged["results"] if r["policy"] == "translated"]
    assert len(translated) == 1 and translated[0]["latency_us"]["p99"] == 2080.0
    # Related within its own group: against workload one's exclusive and sequential.
    assert translated[0]["rt_p99_over_exclusive"] == pytest.approx(1.04)
    assert translated[0]["be_throughput_over_sequential"] == pytest.approx(1.7)
    three_seq = [r for r in merged["results"] if r["workload"] == "three" and
                 r["policy"] == "sequential"][0]
    assert three_seq["rt_p99_over_exclusive"] == pytest.approx(2150.0 / 2100.0)
    s = merged["settings"]
    assert s["be_models_by_workload"]["three"][1] == ["mobilenet_v2", 16]
    names = [v["name"] for v in s["targets"]]
    assert any(n.startswith("resnet50 / three /") for n in names)
    assert any(n.startswith("resnet50 / one /") for n in names)
    # A part at another rate is a group of its own, related to its own baselines.
    fast = receipt_of([dict(run_of("exclusive", 1000.0, 0.0), rate_hz=300.0),
                       dict(run_of("translated", 1500.0, 90.0), rate_hz=300.0)], commit="e5")
    both = disb.merge([merged, fast])
    fast_translated = [r for r in both["results"] if r["policy"] == "translated" and
                       r["rate_hz"] == 300.0][0]
    assert fast_translated["rt_p99_over_exclusive"] == pytest.approx(1.5)
    assert translated[0]["rt_p99_over_exclusive"] == pytest.approx(1.04)
    assert any(v["name"].startswith("resnet50 / one / fixed 300 Hz")
               for v in both["settings"]["targets"])
    # A merge of merges keeps every original part.
    again = disb.merge([merged, receipt_of([], commit="d4")])
    assert [p["git_commit"] for p in again["parts"]] == ["a1", "b2", "c3", "d4"]


def test_a_merge_refuses_what_is_not_a_disb_receipt(tmp_path, capsys):
    with pytest.raises(ValueError, match="not a disb receipt"):
        disb.merge([receipt_of([]), {"benchmark": "inference", "results": []}])
    with pytest.raises(ValueError, match="no receipts"):
        disb.merge([])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert disb.main(["--merge", str(bad), "--json", str(tmp_path / "out.json")]) == 2
    assert "cannot read the receipt" in capsys.readouterr().err
    good = tmp_path / "one.json"
    good.write_text(json.dumps(receipt_of([run_of("exclusive", 2000.0, 0.0)])))
    assert disb.main(["--merge", str(good), "--json", str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["settings"]["targets"] and all(v["met"] is None for v in out["settings"]["targets"])


def test_a_be_alone_run_is_related_to_the_sequential_run_of_its_own_call_after_a_merge():
    def alone(be):
        return {"policy": "be-alone", "rt_model": None, "workload": "one", "arrivals": None,
                "rate_hz": None, "deadline_us": None, "mode": None, "latency_us": {},
                "be_inferences_per_s": be}

    def part(results, poisson):
        r = receipt_of(results)
        r["settings"].update(rt_model="resnet50", poisson=poisson, rate_hz=150.0,
                             deadline_us=3000.0, mode="while")
        return r

    fixed = part([run_of("exclusive", 2000.0, 0.0), run_of("sequential", 2010.0, 170.0),
                  alone(280.0)], poisson=False)
    poisson = part([run_of("exclusive", 5900.0, 0.0, arrivals="poisson"),
                    run_of("sequential", 5950.0, 140.0, arrivals="poisson"), alone(270.0)],
                   poisson=True)
    # One call alone: the same ratio as the merge gives it.
    assert disb.judge(fixed["results"], fixed["settings"]) is not None
    assert fixed["results"][2]["be_throughput_over_sequential"] == pytest.approx(280.0 / 170.0)
    merged = disb.merge([fixed, poisson])
    alones = [r for r in merged["results"] if r["policy"] == "be-alone"]
    assert len(alones) == 2, "each call's be-alone run is kept"
    assert sorted(r["be_throughput_over_sequential"] for r in alones) == pytest.approx(
        sorted([280.0 / 170.0, 270.0 / 140.0]))
