"""``torchwise.watching(model, optimizer)`` around a hand-written loop and ``Trainer(watch=True)``:
a planted fault is found at its step (and ``stop_on`` ends the loop), a clean loop stays quiet."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torchwise
from models import data, mlp


def loop(model, optimizer, steps, nan_at=None):
    x, y = data()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    step = 0
    while step < steps:
        for xb, yb in loader:
            if step == nan_at:
                xb = xb.clone()
                xb[0, 0] = float("nan")
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == steps:
                break
    return step


def test_clean_loop_quiet_dead_relu_found(tmp_path, capsys):
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with torchwise.watching(model, opt, every=5, log=tmp_path / "w.jsonl") as w:
        loop(model, opt, 120)
    assert w.report.findings == [] and w.report.measured["steps_run"] == 120
    events = [json.loads(line) for line in (tmp_path / "w.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "end" and any(e["event"] == "sample" for e in events)
    dead = mlp(dead=True)
    opt = torch.optim.Adam(dead.parameters(), lr=3e-3)
    with torchwise.watching(dead, opt, every=5) as w:
        loop(dead, opt, 60)
    [f] = w.report.by_code("TW131")
    assert f.evidence["first_step"] == 20  # judged with the first 20 steps
    assert "TW131 warning" in capsys.readouterr().err


def test_stop_on_error_ends_the_loop_and_the_code_after_runs():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    after = []
    with torchwise.watching(model, opt, every=5, stop_on="error", alerts=False) as w:
        loop(model, opt, 400, nan_at=50)
    after.append(True)  # the with block swallowed the stop
    assert after and w.stopped["code"] == "TW112" and w.report.measured["steps_run"] <= 56
    assert w.session.active is False and torch.Tensor.backward.__module__ == "torch._tensor"  # hooks removed


def test_trainer_watch_true(tmp_path):
    from torchwise import Trainer

    x, y = data()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    clean = Trainer(mlp(), lambda p: torch.optim.Adam(p, lr=3e-3), torch.nn.CrossEntropyLoss(), watch={"every": 5, "alerts": False},
                    log_dir=False, progress=False, seed=0, keep_best=False)
    clean.fit(loader, epochs=3)
    assert clean.watch_report is not None and clean.watch_report.findings == [], [str(f) for f in clean.watch_report.findings]
    assert clean.watch_report.measured["steps_run"] == 96
    faulty = Trainer(mlp(dead=True), lambda p: torch.optim.Adam(p, lr=3e-3), torch.nn.CrossEntropyLoss(),
                     watch={"every": 5, "alerts": False}, log_dir=False, progress=False, seed=0, keep_best=False)
    faulty.fit(loader, epochs=1)
    assert faulty.watch_report.by_code("TW131")
    with pytest.raises(torchwise.TorchwiseError, match="watch must be True"):
        Trainer(mlp(), lambda p: torch.optim.Adam(p), torch.nn.CrossEntropyLoss(), watch="yes")


def test_tensorboard_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    with torchwise.watching(model, opt, every=5, alerts=False, tensorboard=tmp_path / "tb"):
        loop(model, opt, 40)
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"grad_norm/0", "update_ratio/4", "lr/group0", "loader_wait", "memory_mb"} <= tags
    [loss_tag] = [t for t in tags if t.startswith("loss/")]
    steps = [e.step for e in events.Scalars(loss_tag)]
    assert steps[:3] == [1, 2, 3] and steps[-1] >= 35
