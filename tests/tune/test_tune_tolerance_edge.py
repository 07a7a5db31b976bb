"""The numerics check at the edge of its tolerance: ``|loss - fp32| <= loss_rtol * |fp32| + loss_atol``
keeps a candidate, one step beyond rejects it, on both sides of the baseline."""

from __future__ import annotations

import pytest
from tune_fakes import FakeClock, FakeMeasurer, cpu_ctx

from torchwise.tune.search import FASTER, REJECTED, Search

BASE = 2.0
RTOL, ATOL = 0.05, 1e-3
EDGE = RTOL * BASE + ATOL  # 0.101


def precision_trial(loss_bf16: float):
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("precision", "bf16-mixed"): 2.0},
                        loss=lambda cfg: loss_bf16 if cfg["precision"] == "bf16-mixed" else BASE)
    result = Search(cpu_ctx(), fake, budget_s=1000.0, clock=clock, knobs=["precision"], loss_rtol=RTOL, loss_atol=ATOL).run()
    return next(t for t in result.trials if t.label == "precision=bf16-mixed"), result


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("offset, kept", [(EDGE * 0.999, True), (EDGE * 1.001, False), (EDGE + 1e-4, False), (EDGE - 1e-4, True)])
def test_candidate_just_inside_is_kept_just_outside_is_rejected(sign, offset, kept):
    trial, result = precision_trial(BASE + sign * offset)
    if kept:
        assert trial.status == FASTER and result.config["precision"] == "bf16-mixed"
    else:
        assert trial.status == REJECTED and result.config["precision"] == "32"
        assert f"tolerance {EDGE:.2g}" in trial.detail


def test_the_absolute_part_keeps_a_zero_loss_baseline_usable():
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("precision", "bf16-mixed"): 2.0}, loss=lambda cfg: 5e-4 if cfg["precision"] == "bf16-mixed" else 0.0)
    result = Search(cpu_ctx(), fake, budget_s=1000.0, clock=clock, knobs=["precision"], loss_rtol=RTOL, loss_atol=ATOL).run()
    assert result.config["precision"] == "bf16-mixed"  # 5e-4 from 0 is inside the 1e-3 floor
