"""Precision plug-ins: names, "auto", bf16 autocast, fp16 GradScaler skips (real scaler on the CPU)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from train_helpers import data, loader, mlp, quiet

from torchwise.core.errors import UsageError
from torchwise.train import Trainer
from torchwise.train.precision import FP16Mixed, Precision, make_precision, normalize, resolve


def test_names_and_aliases():
    assert normalize("32") == normalize(32) == normalize("fp32") == "32"
    assert normalize("bf16") == "bf16-mixed" and normalize("16-mixed") == "16-mixed"


def test_unknown_precision_lists_the_valid_ones():
    with pytest.raises(UsageError, match=r"unknown precision 'fp8'.*auto, 32, bf16-mixed, 16-mixed"):
        normalize("fp8")
    with pytest.raises(UsageError, match="unknown precision"):
        model = mlp()
        Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), precision="half", **quiet())


def test_auto_resolution(monkeypatch):
    assert resolve("auto", torch.device("cpu")) == "32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve("auto", torch.device("cuda", 0)) == "bf16-mixed"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve("auto", torch.device("cuda", 0)) == "16-mixed"
    assert type(make_precision("32", torch.device("cpu"))) is Precision


def test_bf16_mixed_autocasts_the_forward_on_cpu():
    dtypes = []

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 3)

        def forward(self, x):
            out = self.lin(x)
            dtypes.append(out.dtype)
            return out

    model = Probe()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), precision="bf16-mixed", **quiet())
    r = t.fit(loader(), max_steps=2)
    assert r.precision == "bf16-mixed" and dtypes == [torch.bfloat16, torch.bfloat16]
    assert model.lin.weight.dtype == torch.float32  # parameters stay fp32


def test_fp16_gradscaler_skips_are_counted_and_the_scheduler_waits():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=1e-9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.5)

    def step_fn(m, batch):  # finite loss whose fp16 gradients overflow while the scale is large
        x, _ = batch
        return (m(x).float() * 3e3).pow(2).mean()

    t = Trainer(model, opt, step_fn=step_fn, precision="16-mixed", scheduler=sched, scheduler_interval="step", **quiet())
    assert isinstance(t.precision, FP16Mixed)
    r = t.fit(loader(data(n=8 * 30)), epochs=1)  # 30 steps
    skipped = r.amp_skipped
    assert 0 < skipped < 30
    assert sched.last_epoch == 30 - skipped  # not stepped when the GradScaler skipped the step
    assert t.precision.scaler.get_scale() == 2.0**16 / 2**skipped
    assert t.precision.state_dict()["skipped"] == skipped


@pytest.mark.gpu
def test_auto_on_cuda_uses_mixed_precision():
    model = mlp()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet(device="cuda"))
    r = t.fit(loader(), max_steps=3)
    assert r.precision in ("bf16-mixed", "16-mixed") and next(model.parameters()).is_cuda
