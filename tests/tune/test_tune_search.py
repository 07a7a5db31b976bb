"""The search logic with a scripted measurer and a fake clock: order, greedy chaining, pruning,
budget, skipping with reasons, numerics rejection, noise, failures, OOM bisection, loader phase."""

from __future__ import annotations

import re

import pytest
from tune_fakes import FakeClock, FakeMeasurer, cpu_ctx, cuda_ctx

from torchwise.core.errors import TaskError, TrainingError, UsageError
from torchwise.tune.search import (
    BASELINE,
    FAILED,
    FASTER,
    FITS,
    NO_TIME,
    NOT_APPLICABLE,
    NOT_FASTER,
    OOM,
    PRUNED,
    REJECTED,
    Search,
    default_config,
)


def run(ctx, fake, clock, budget=1000.0, **kw):
    return Search(ctx, fake, budget_s=budget, clock=clock, **kw).run()


def labels(result):
    return [t.label for t in result.trials]


def skip_reasons(result, kind=None):
    return {s.setting: s.reason for s in result.skipped if kind is None or s.kind == kind}


def test_order_and_greedy_chaining_on_cpu():
    clock = FakeClock()
    fake = FakeMeasurer(
        clock,
        factors={("threads", 2): 1.2, ("precision", "bf16-mixed"): 1.5, ("channels_last", True): 1.1, ("compile", True): 1.3},
        loader_factors={("num_workers", 1): 1.25, ("num_workers", 2): 1.1, ("persistent_workers", True): 1.1},
    )
    res = run(cpu_ctx(), fake, clock, compile_estimate_s=5)
    assert labels(res) == [
        "default (fp32, torch defaults)",
        "threads=2",
        "threads=1",
        "precision=bf16-mixed",
        "channels_last=True",
        "compile=True",
        "default, through the loader",
        "tuned step settings, default loader",
        "num_workers=1, persistent_workers=True",
        "num_workers=2, persistent_workers=True",
        "num_workers=4, persistent_workers=True",
        "persistent_workers=False",
    ]
    specs = {s.config.get("precision"): s for s in fake.specs if s.mode == "step"}
    # each knob is tried on top of the best so far: bf16 was measured with threads=2
    assert specs["bf16-mixed"].config["threads"] == 2
    assert res.config == {**default_config(cpu_ctx()), "threads": 2, "precision": "bf16-mixed", "channels_last": True, "compile": True, "num_workers": 1, "persistent_workers": True}
    assert res.basis == "loader"
    assert res.speedup == pytest.approx(1.2 * 1.5 * 1.1 * 1.3 * 1.25 * 1.1)
    # knobs that cannot apply on a CPU are listed with their reason, not measured
    na = skip_reasons(res, NOT_APPLICABLE)
    assert "GPU" in na["precision=16-mixed"]
    assert "CUDA" in na["cudnn_benchmark"] and "cpu" in na["cudnn_benchmark"]
    assert "tensor-core" in na["matmul_precision=high"]
    assert "cpu" in na["batch_size"]
    assert "CUDA" in na["pin_memory"]
    assert res.decided == {"threads", "precision", "channels_last", "compile", "num_workers", "persistent_workers"}
    # speed-ups are against the default of the same mode
    by = {t.label: t for t in res.trials}
    assert by["default (fp32, torch defaults)"].status == BASELINE
    assert by["threads=2"].speedup == pytest.approx(1.2)
    assert by["threads=1"].status == NOT_FASTER
    assert by["num_workers=1, persistent_workers=True"].speedup == pytest.approx(1.2 * 1.5 * 1.1 * 1.3 * 1.25 * 1.1)
    assert by["num_workers=1, persistent_workers=True"].chosen is True
    assert by["persistent_workers=False"].status == NOT_FASTER and by["persistent_workers=False"].config["num_workers"] == 1


def test_numerics_only_checked_for_knobs_that_change_numbers():
    clock = FakeClock()
    fake = FakeMeasurer(clock)
    run(cpu_ctx(), fake, clock, compile_estimate_s=5)
    numerics = {s.config.get("precision") if s.mode == "step" else "loader": s.numerics for s in fake.specs}
    assert fake.specs[0].numerics  # the fp32 baseline
    assert all(not s.numerics for s in fake.specs if s.mode == "loader")
    assert all(not s.numerics for s in fake.specs if "threads" in s.config and s.config["threads"] != 4)
    assert numerics["bf16-mixed"]


def test_channels_last_and_friends_skipped_on_an_mlp():
    clock = FakeClock()
    fake = FakeMeasurer(clock)
    res = run(cpu_ctx(has_conv=False, conv_4d=False, bf16=False), fake, clock, compile_estimate_s=5)
    na = skip_reasons(res, NOT_APPLICABLE)
    assert "no 2-D convolution" in na["channels_last"]
    assert "bf16" in na["precision=bf16-mixed"]
    assert not any(s.config.get("channels_last") for s in fake.specs)
    assert not any(s.config.get("precision") != "32" for s in fake.specs)
    assert "channels_last" not in res.decided and "precision" not in res.decided


def test_pruning_after_consecutive_slower_candidates():
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("threads", 4): 0.9, ("threads", 2): 0.8, ("threads", 1): 5.0})
    res = run(cpu_ctx(cores=8, threads=8), fake, clock, knobs=["threads"])
    assert labels(res) == ["default (fp32, torch defaults)", "threads=4", "threads=2"]
    pruned = skip_reasons(res, PRUNED)
    assert list(pruned) == ["threads=1"] and "2 candidates in a row" in pruned["threads=1"]
    assert res.config["threads"] == 8


def test_worker_pruning_in_the_loader_phase():
    clock = FakeClock()
    fake = FakeMeasurer(clock, loader_factors={("num_workers", 1): 0.7, ("num_workers", 2): 0.6, ("num_workers", 4): 3.0})
    res = run(cpu_ctx(cores=8, threads=8), fake, clock, knobs=["loader"])
    assert labels(res)[-2:] == ["num_workers=1, persistent_workers=True", "num_workers=2, persistent_workers=True"]
    assert set(skip_reasons(res, PRUNED)) == {"num_workers=4, persistent_workers=True", "num_workers=8, persistent_workers=True"}
    assert res.config["num_workers"] == 0
    assert "no worker processes" in skip_reasons(res)["persistent_workers"]


def test_never_starts_a_trial_past_the_budget():
    clock = FakeClock()
    fake = FakeMeasurer(clock, cost=1.0)
    budget = 4.5
    res = run(cpu_ctx(), fake, clock, budget=budget, trial_s=0.5, compile_estimate_s=0.5)
    assert res.elapsed_s <= budget
    assert clock.now - 1000.0 <= budget
    assert len(fake.specs) == 4  # baseline + 3 trials of ~1.5 s estimated each
    no_time = [s for s in res.skipped if s.kind == NO_TIME]
    assert no_time, "what did not fit must be reported"
    assert all("s left" in s.reason for s in no_time)
    measured = {t.label for t in res.trials}
    assert not measured & {s.setting for s in no_time}
    # the loader phase could not start: its candidates are listed as skipped for time
    assert {"default, through the loader", "num_workers=1, persistent_workers=True"} <= {s.setting for s in no_time}
    assert res.basis == "step"


def test_expensive_compile_skipped_but_cheaper_knobs_still_run():
    clock = FakeClock()
    fake = FakeMeasurer(clock, cost=1.0)
    res = run(cpu_ctx(), fake, clock, budget=20, trial_s=0.2, compile_estimate_s=60)
    assert re.match(r"not enough time left: needs about 6\d\.\d s, \d+\.\d s left", skip_reasons(res, NO_TIME)["compile=True"])
    assert not any(s.config.get("compile") for s in fake.specs)
    assert "num_workers=1, persistent_workers=True" in labels(res)
    assert res.elapsed_s <= 20


def test_time_estimate_learns_from_a_measured_compile():
    clock = FakeClock()
    # compilation (excluded from the figures) takes 8 s, the trial 9 s in all
    fake = FakeMeasurer(clock, cost=lambda spec: 9.0 if spec.config.get("compile") else 1.0)
    orig = fake.__call__

    def measure(spec):
        m = orig(spec)
        if spec.config.get("compile"):
            m.excluded_s = 8.0
        return m

    search = Search(cpu_ctx(), measure, budget_s=1000, clock=clock, trial_s=0.5, compile_estimate_s=30)
    search.run()
    assert search._costs.compile == 8.0
    later = search.estimate({**default_config(cpu_ctx()), "compile": True}, "loader")
    assert later < 30


def test_candidate_rejected_when_loss_departs_from_fp32():
    clock = FakeClock()
    fake = FakeMeasurer(
        clock,
        factors={("precision", "bf16-mixed"): 2.0, ("channels_last", True): 1.2},
        loss=lambda cfg: 2.9 if cfg["precision"] == "bf16-mixed" else 2.301,
    )
    res = run(cpu_ctx(), fake, clock, knobs=["precision", "channels_last"])
    by = {t.label: t for t in res.trials}
    bad = by["precision=bf16-mixed"]
    assert bad.status == REJECTED and "2.9" in bad.detail and "2.3" in bad.detail
    assert res.config["precision"] == "32" and "precision" in res.decided
    # the small drift of channels_last is inside the tolerance
    assert by["channels_last=True"].status == FASTER
    assert res.config["channels_last"] is True


def test_non_finite_loss_is_rejected():
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("precision", "bf16-mixed"): 2.0}, loss=lambda cfg: float("nan") if cfg["precision"] != "32" else 2.3)
    res = run(cpu_ctx(), fake, clock, knobs=["precision"])
    assert res.trials[1].status == REJECTED and "nan" in res.trials[1].detail


def test_tolerance_is_configurable():
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("precision", "bf16-mixed"): 2.0}, loss=lambda cfg: 2.5 if cfg["precision"] != "32" else 2.3)
    assert run(cpu_ctx(), fake, clock, knobs=["precision"], loss_rtol=0.2).config["precision"] == "bf16-mixed"
    assert run(cpu_ctx(), fake, clock, knobs=["precision"], loss_rtol=0.01).config["precision"] == "32"


def test_gains_inside_the_noise_are_not_taken():
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("channels_last", True): 1.02})
    assert run(cpu_ctx(), fake, clock, knobs=["channels_last"]).config["channels_last"] is False
    noisy = FakeMeasurer(clock, factors={("channels_last", True): 1.10}, noise=1.0, steps=5)
    assert run(cpu_ctx(), noisy, clock, knobs=["channels_last"]).config["channels_last"] is False
    quiet = FakeMeasurer(clock, factors={("channels_last", True): 1.10}, noise=0.05, steps=50)
    assert run(cpu_ctx(), quiet, clock, knobs=["channels_last"]).config["channels_last"] is True


def test_failing_candidate_is_reported_and_the_search_goes_on():
    clock = FakeClock()
    fake = FakeMeasurer(clock, fail=lambda cfg: cfg["compile"], loader_factors={("num_workers", 1): 1.5})
    res = run(cpu_ctx(), fake, clock, compile_estimate_s=1)
    failed = [t for t in res.trials if t.status == FAILED]
    assert [t.label for t in failed] == ["compile=True"]
    assert failed[0].detail == "RuntimeError: scripted failure"
    assert res.config["compile"] is False and "compile" in res.decided
    assert res.config["num_workers"] == 1


def test_baseline_that_cannot_run_is_a_clear_error():
    clock = FakeClock()
    fake = FakeMeasurer(clock, fail=lambda cfg: True)
    with pytest.raises(TrainingError, match="default configuration cannot run a training step"):
        run(cpu_ctx(), fake, clock)

    def task_error(spec):
        raise TaskError("task 'x' has no loss_fn")

    with pytest.raises(TaskError):
        run(cpu_ctx(), task_error, clock)


def test_unknown_knob_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown tune knob 'colour'.*precision"):
        Search(cpu_ctx(), FakeMeasurer(FakeClock()), budget_s=10, knobs=["colour"])


def test_selected_knobs_only():
    clock = FakeClock()
    fake = FakeMeasurer(clock)
    res = run(cpu_ctx(), fake, clock, knobs="precision")
    assert labels(res) == ["default (fp32, torch defaults)", "precision=bf16-mixed"]
    assert res.basis == "step"


def test_cuda_knobs_and_batch_size_bisection():
    clock = FakeClock()
    fake = FakeMeasurer(
        clock,
        factors={("precision", "bf16-mixed"): 2.0, ("precision", "16-mixed"): 1.9, ("cudnn_benchmark", True): 1.1, ("matmul_precision", "high"): 1.05},
        loader_factors={("pin_memory", True): 1.1},
        batch_exponent=0.5,
        oom_above=1000,
    )
    ctx = cuda_ctx()
    res = run(ctx, fake, clock, compile_estimate_s=1)
    probes = [t for t in res.trials if t.knob == "batch_size"]
    sizes = [t.config["batch_size"] for t in probes]
    assert all(n % 8 == 0 for n in sizes)
    assert sizes[:4] == [128, 256, 512, 1024]  # doubling from the task's 64, then bisection
    assert len(sizes) <= 4 + 7
    assert {t.status for t in probes if t.config["batch_size"] > 1000} == {OOM}
    assert max(t.config["batch_size"] for t in probes if t.status in (FITS, FASTER, NOT_FASTER)) == 1000
    assert res.config["batch_size"] == 896  # 10% margin below 1000, a multiple of 8
    assert res.trials[0].status == BASELINE
    assert res.config["precision"] == "bf16-mixed"
    assert res.config["cudnn_benchmark"] is True and res.config["matmul_precision"] == "high"
    assert res.config["pin_memory"] is True
    assert {"batch_size", "cudnn_benchmark", "matmul_precision", "pin_memory"} <= res.decided
    # every measured loader trial used the chosen batch
    assert all(s.config["batch_size"] == 896 for s in fake.specs if s.mode == "loader" and s.config != default_config(ctx))


def test_cuda_batch_search_stops_cleanly_when_time_runs_out():
    clock = FakeClock()
    fake = FakeMeasurer(clock, batch_exponent=0.5, cost=1.0)
    res = run(cuda_ctx(max_batch=1 << 20), fake, clock, budget=14, trial_s=0.2, knobs=["batch_size"])
    assert res.elapsed_s <= 14
    reasons = skip_reasons(res, NO_TIME)
    assert "batch_size search" in reasons and "stopped for lack of time" in reasons["batch_size search"]


def test_ready_dataloader_skips_loader_and_batch_knobs():
    clock = FakeClock()
    fake = FakeMeasurer(clock)
    why = "the task passes a ready DataLoader"
    res = run(cuda_ctx(loader_problem=why), fake, clock, compile_estimate_s=1)
    na = skip_reasons(res, NOT_APPLICABLE)
    assert na["num_workers"] == why and na["batch_size"] == why and na["pin_memory"] == why
    assert all(s.mode == "step" for s in fake.specs)
    assert res.basis == "step"


def test_default_end_to_end_beats_tuned_step_settings():
    """If the step-tuned settings are slower through the loader, the loader search starts from the default."""
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("channels_last", True): 1.5}, loader_factors={("channels_last", True): 0.5})
    res = run(cpu_ctx(), fake, clock, knobs=["channels_last", "loader"])
    by = {t.label: t for t in res.trials}
    assert by["tuned step settings, default loader"].status == NOT_FASTER
    assert res.config["channels_last"] is False
    assert res.speedup == pytest.approx(1.0)


def test_switch_decided_on_alternated_pairs():
    """A slow spell during the baseline must not crown a candidate that is not really faster."""
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("channels_last", True): 1.02})
    calls = {"n": 0}

    def measure(spec):
        m = fake(spec)
        calls["n"] += 1
        if calls["n"] == 1:  # the machine was busy during the first baseline measurement
            m.samples_per_s /= 2
            m.step_s *= 2
        return m

    res = Search(cpu_ctx(), measure, budget_s=1000, clock=clock, knobs=["channels_last"]).run()
    assert res.config["channels_last"] is False
    base, cand = res.trials[0], res.trials[1]
    assert base.remeasured == 2 and cand.remeasured == 2  # alternated: base, cand, base, cand
    assert base.samples_per_s == pytest.approx(1000)  # median of 500, 1000, 1000
    assert base.measurement.loss == pytest.approx(2.30)  # the numerics baseline is kept
    assert cand.speedup == pytest.approx(1.02) and "alternated pairs" in cand.detail
    calls["n"] = 0
    naive = Search(cpu_ctx(), measure, budget_s=1000, clock=clock, knobs=["channels_last"], recheck=False).run()
    assert naive.config["channels_last"] is True


def test_later_compiled_trials_are_estimated_from_what_they_cost():
    clock = FakeClock()
    search = Search(cpu_ctx(), FakeMeasurer(clock), budget_s=1000, clock=clock, trial_s=0.5, compile_estimate_s=30)
    cfg = {**default_config(cpu_ctx()), "compile": True}
    search._costs.compile = 40.0
    assert search.estimate(cfg, "loader") >= 20.0
    search._costs.compile_again = 1.5
    assert search.estimate(cfg, "loader") < 3.0


def test_headline_speedup_from_alternated_pairs_and_revert_when_slower():
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("channels_last", True): 1.5})
    seen = {"cl": 0}

    def measure(spec):
        m = fake(spec)
        if spec.config["channels_last"]:
            seen["cl"] += 1
            if seen["cl"] > 3:  # fast while it was being chosen, slow afterwards
                m.samples_per_s *= 0.8 / 1.5
        return m

    res = Search(cpu_ctx(), measure, budget_s=1000, clock=clock, knobs=["channels_last"]).run()
    assert res.config["channels_last"] is False and res.speedup == 1.0 and res.pairs == 1
    assert res.trials[0].chosen and not res.trials[1].chosen

    clock2 = FakeClock()
    steady = FakeMeasurer(clock2, factors={("channels_last", True): 1.5})
    ok = Search(cpu_ctx(), steady, budget_s=1000, clock=clock2, knobs=["channels_last"]).run()
    assert ok.config["channels_last"] is True and ok.pairs == 3 and ok.speedup == pytest.approx(1.5)


def test_loader_phase_start_is_decided_on_alternated_pairs():
    """A lucky first end-to-end figure of the default does not throw the step settings away."""
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("threads", 1): 3.0})
    loader_defaults = {"n": 0}

    def measure(spec):
        m = fake(spec)
        if spec.mode == "loader" and spec.config["threads"] == 4:
            loader_defaults["n"] += 1
            if loader_defaults["n"] == 1:
                m.samples_per_s *= 5  # the default happened to run while the machine was quiet
        return m

    res = Search(cpu_ctx(), measure, budget_s=1000, clock=clock, knobs=["threads", "loader"]).run()
    assert res.config["threads"] == 1
    by = {t.label: t for t in res.trials}
    assert by["tuned step settings, default loader"].status == FASTER
    assert res.speedup == pytest.approx(3.0)  # median of the alternated pairs, not the lucky figure
