from __future__ import annotations

import torch
from torch import nn

from torchwise.utils.nonfinite import find_nonfinite


class LogOfSoftmax(nn.Module):
    def forward(self, x):
        return torch.log(torch.softmax(x, dim=-1) * 0)  # -inf everywhere


def _model(bad: nn.Module | None = None) -> nn.Module:
    torch.manual_seed(0)
    layers = [nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU()]
    if bad is not None:
        layers.append(bad)
    layers.append(nn.Linear(8, 3))
    return nn.Sequential(*layers)


def _run(model, x, y):
    return lambda: nn.functional.cross_entropy(model(x), y)


def test_finite_returns_none_and_has_no_side_effects():
    model = _model()
    x, y = torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    assert find_nonfinite(model, _run(model, x, y)) is None
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k  # BatchNorm running stats restored
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(p.grad is None for p in model.parameters())
    assert not model[0]._forward_hooks  # hooks removed


def test_names_first_bad_module_output():
    model = _model(LogOfSoftmax())
    x, y = torch.randn(6, 4), torch.zeros(6, dtype=torch.long)
    report = find_nonfinite(model, _run(model, x, y))
    assert report is not None
    assert report.module == "3" and report.module_type == "LogOfSoftmax" and report.kind == "output"
    assert "Inf" in report.detail and "input was finite" in report.detail
    assert "'3' (LogOfSoftmax)" in str(report)


def test_nonfinite_parameter_is_mentioned():
    model = _model()
    with torch.no_grad():
        model[3].weight[0, 0] = float("nan")
    x, y = torch.randn(6, 4), torch.zeros(6, dtype=torch.long)
    report = find_nonfinite(model, _run(model, x, y))
    assert report.module == "3" and report.module_type == "Linear"
    assert "weight" in report.detail and "NaN" in report.detail


def test_bad_input_is_reported_as_input():
    model = _model()
    x = torch.randn(6, 4)
    x[2, 1] = float("nan")
    report = find_nonfinite(model, _run(model, x, torch.zeros(6, dtype=torch.long)))
    assert report.kind == "input" and report.module == ""
    assert "1 NaN" in report.detail


def test_loss_and_grad_kinds():
    model = _model()
    x = torch.randn(6, 4)
    report = find_nonfinite(model, lambda: model(x).sum() * float("inf"))
    assert report.kind == "loss"

    class SqrtAtZero(nn.Module):  # finite forward (sqrt(0)=0), infinite gradient
        def forward(self, x):
            return torch.sqrt(torch.relu(x) * 0)

    model2 = nn.Sequential(nn.Linear(4, 4), SqrtAtZero(), nn.Linear(4, 2))
    report = find_nonfinite(model2, lambda: model2(x).sum())
    assert report is not None and report.kind == "grad"
    assert report.module == "0" and ("weight" in report.detail or "bias" in report.detail)
