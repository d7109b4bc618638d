"""resident.bench.translated without a GPU: its arguments, its verdicts, and a clear exit where
there is no device."""

import pytest

from resident.bench import translated


def result(error, top1=True):
    return {"model": "resnet50", "batch": 1, "max_logit_error_rel": error, "top1_equal": top1,
            "top1_judged": 1, "translated_ms": 2.0, "torch_graph_ms": 1.0,
            "translated_over_graph": 2.0}


def test_a_model_meets_its_target_only_within_tolerance_and_with_the_same_top1():
    met = translated.judge([result(5e-4), result(2e-3), result(1e-4, top1=False)])
    assert [v["met"] for v in met] == [True, False, False]
    assert "2.00x" in met[0]["detail"] and "DIFFERENT" in met[2]["detail"]


def test_bad_arguments_are_refused_and_quick_shortens_the_timing():
    with pytest.raises(SystemExit):
        translated.parse_args(["--batch", "0"])
    with pytest.raises(SystemExit):
        translated.parse_args(["--models", "alexnet"])
    assert translated.parse_args(["--quick"]).reps == 10
    assert translated.parse_args([]).models == list(translated.MODELS)


def test_the_gates_bench_refuses_bad_arguments_and_quick_shortens_it():
    from resident.bench import gates

    with pytest.raises(SystemExit):
        gates.parse_args(["--trials", "0"])
    with pytest.raises(SystemExit):
        gates.parse_args(["--models", "alexnet"])
    args = gates.parse_args(["--quick"])
    assert args.trials == 30 and args.reps == 10 and args.batch == 8
