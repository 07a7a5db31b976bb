"""Recovery and early checks: non-finite guard, OOM splitting, label check, compile fallback."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from train_helpers import clone, data, loader, make_trainer, mlp, weights

from torchwise.core.errors import DataError, TrainingError
from torchwise.train.oom import OOMRecovery, _split


class Poison(nn.Module):
    """Outputs NaN while ``active`` (set by the parent for a poisoned batch)."""

    active = False

    def forward(self, h):
        return torch.full_like(h, float("nan")) if self.active else h


class PoisonedNet(nn.Module):
    """Batches whose first input value is exactly 42 go bad in ``blowup``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.Tanh())
        self.blowup = Poison()
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        self.blowup.active = bool(x[0, 0] == 42)
        return self.head(self.blowup(self.encoder(x)))


def test_nonfinite_step_is_skipped_and_the_first_bad_module_named():
    ds = data(n=32)
    x, y = ds.tensors
    x[8, 0] = 42.0  # the second batch of 8 is poisoned
    model = PoisonedNet()
    t = make_trainer(model)
    r = t.fit(loader(TensorDataset(x, y)), epochs=1)
    assert r.steps == 4 and r.nonfinite_skipped == 1
    message = next(e for e in r.events if "skipped" in e)
    assert "step 2 skipped" in message and "'blowup' (Poison)" in message
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_consecutive_nonfinite_steps_stop_training_with_the_module_name():
    x, y = data(n=32).tensors
    x[::8, 0] = 42.0  # every batch poisoned
    t = make_trainer(PoisonedNet(), nonfinite_patience=3)
    with pytest.raises(TrainingError, match=r"3 consecutive non-finite steps.*'blowup' \(Poison\)"):
        t.fit(loader(TensorDataset(x, y)), epochs=1)


class OOMAbove(nn.Module):
    """Raises torch.OutOfMemoryError (as CUDA would) for micro-batches larger than ``limit``."""

    def __init__(self, inner, limit):
        super().__init__()
        self.inner, self.limit = inner, limit

    def forward(self, x):
        if x.shape[0] > self.limit:
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate for {x.shape[0]} samples")
        return self.inner(x)


def test_oom_halves_the_micro_batch_and_keeps_the_maths():
    ds = data(n=64)
    base = mlp()
    plain = clone(base)
    make_trainer(plain, accumulate=2).fit(loader(ds, batch_size=16), epochs=1)
    wrapped = OOMAbove(clone(base), limit=5)
    t = make_trainer(wrapped, accumulate=2)
    r = t.fit(loader(ds, batch_size=16), epochs=1)
    assert r.oom_splits == 4  # 16 -> 8 -> 4 samples per micro-batch
    assert sum("out of memory" in e for e in r.events) == 2
    for k, v in weights(plain).items():
        torch.testing.assert_close(weights(wrapped.inner)[k], v, rtol=1e-5, atol=1e-6)


def test_oom_with_a_micro_batch_of_one_raises_clearly():
    t = make_trainer(OOMAbove(mlp(), limit=0))
    with pytest.raises(TrainingError, match="micro-batch of 1 sample"):
        t.fit(loader(batch_size=4), max_steps=1)


def test_batch_splitting_keeps_structure_and_weights():
    batch = {"inputs": torch.arange(10).view(5, 2), "targets": torch.arange(5), "names": ["a", "b", "c", "d", "e"], "scale": 2.0}
    parts = _split(batch, 5, 2)
    assert [p["targets"].tolist() for p in parts] == [[0, 1, 2], [3, 4]]
    assert [p["names"] for p in parts] == [["a", "b", "c"], ["d", "e"]]
    assert all(p["scale"] == 2.0 for p in parts)
    rec = OOMRecovery()
    rec.splits = 2
    chunks = rec.chunks((torch.zeros(5, 3), torch.zeros(5)))
    assert [round(w, 2) for _, w in chunks] == [0.6, 0.4]


def test_label_check_names_labels_and_width_before_the_first_step():
    x, y = data(n=16).tensors
    y[3], y[9] = 3, 7  # the model has 3 outputs
    model = mlp()
    before = weights(model)
    with pytest.raises(DataError, match=r"width 3.*found 3, 7"):
        make_trainer(model).fit(loader(TensorDataset(x, y), batch_size=16), epochs=1)
    assert all(torch.equal(before[k], v) for k, v in weights(model).items())  # no step was taken


def test_compile_failure_warns_once_and_runs_eagerly(monkeypatch):
    class Broken(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a, **k):
            raise RuntimeError("backend compiler failed: no C++ compiler\nmore details")

    monkeypatch.setattr(torch, "compile", lambda model, **kw: Broken(model))
    model = mlp()
    before = weights(model)
    r = make_trainer(model, compile=True).fit(loader(), epochs=1)
    warnings = [e for e in r.events if "torch.compile failed" in e]
    assert len(warnings) == 1 and "running eagerly" in warnings[0] and "\n" not in warnings[0]
    assert r.steps == 8 and not torch.equal(before["0.weight"], model[0].weight)
