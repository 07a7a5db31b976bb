"""Schedulers that mean what they say: interval by class, ReduceLROnPlateau on the monitor, the
first-epoch decay warning, RunPlan for factories (it follows --epochs/--batch-size/--accumulate)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.optim import lr_scheduler as S

from train_helpers import data, loader, mlp, quiet

from torchwise import RunPlan, Task
from torchwise.cli import main
from torchwise.core.errors import UsageError
from torchwise.train import Trainer
from torchwise.train.schedule import first_epoch_decay, resolve_interval


def _sgd(lr=0.1):
    model = mlp()
    return model, torch.optim.SGD(model.parameters(), lr=lr)


@pytest.mark.parametrize("make, expected", [
    (lambda o: S.StepLR(o, 1, 0.5), "epoch"),
    (lambda o: S.MultiStepLR(o, [2, 4]), "epoch"),
    (lambda o: S.ExponentialLR(o, 0.9), "epoch"),
    (lambda o: S.ReduceLROnPlateau(o), "epoch"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=10), "step"),
    (lambda o: S.CosineAnnealingLR(o, 10), "step"),
    (lambda o: S.LambdaLR(o, lambda s: 1.0), "step"),
    (lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=2), S.CosineAnnealingLR(o, 8)], milestones=[2]), "step"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 1), S.ExponentialLR(o, 0.9)], milestones=[2]), "epoch"),
])
def test_interval_by_the_schedulers_class(make, expected):
    _, opt = _sgd()
    assert resolve_interval(make(opt), None) == expected
    assert resolve_interval(make(opt), "epoch") == "epoch"  # an explicit interval wins


def test_steplr_of_a_tutorial_halves_per_epoch_by_default():
    """The issue's case: StepLR(step_size=1, gamma=0.5) stepped per batch drove the LR to 1e-22."""
    model, opt = _sgd()
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=S.StepLR(opt, 1, 0.5), **quiet())
    t.fit(loader(), epochs=3)  # 8 batches per epoch
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5**3)


def test_plateau_steps_on_the_monitored_metric_and_step_interval_is_refused():
    model, opt = _sgd()
    sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=0)
    seen = []

    class Spy:
        def on_epoch_end(self, trainer, values):
            seen.append(values["val/accuracy"])

    acc = {"accuracy": lambda o, y: torch.tensor(0.5)}  # never improves: every epoch after the first is "bad"
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, metrics=acc, monitor="val/accuracy", callbacks=[Spy()], **quiet())
    t.fit(loader(), loader(), epochs=3)
    assert seen == [0.5, 0.5, 0.5]
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5**2)  # epochs 2 and 3 did not improve
    assert sched.best == 0.5
    model, opt = _sgd()
    with pytest.raises(UsageError, match="ReduceLROnPlateau steps on a monitored metric"):
        Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=S.ReduceLROnPlateau(opt), scheduler_interval="step", **quiet())


def test_plateau_without_validation_follows_train_loss():
    model, opt = _sgd()
    sched = S.ReduceLROnPlateau(opt, patience=0)
    Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, **quiet()).fit(loader(), epochs=2)
    assert sched.best < math.inf and sched.last_epoch == 2


def test_a_schedule_that_collapses_in_the_first_epoch_is_said(recwarn):
    model, opt = _sgd()
    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=S.StepLR(opt, 1, 0.3), scheduler_interval="step", **quiet())
    r = t.fit(loader(), epochs=2)  # 0.3**8: 1/15000 within the first epoch's 8 steps
    assert any("lowers the learning rate" in e and "scheduler_interval='epoch'" in e for e in r.events)
    assert any("StepLR" in str(w.message) for w in recwarn)
    # a warm-up + cosine over the run is not flagged, nor a one-epoch cosine to zero
    for epochs in (1, 3):
        model, opt = _sgd()
        sched = S.OneCycleLR(opt, 0.1, total_steps=8 * epochs)
        r = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, **quiet()).fit(loader(), epochs=epochs)
        assert not any("lowers the learning rate" in e for e in r.events)


def test_decay_check_runs_on_copies():
    model, opt = _sgd()
    sched = S.ExponentialLR(opt, 0.1)
    assert first_epoch_decay(opt, sched, 4) == pytest.approx(1e4)
    assert sched.last_epoch == 0 and opt.param_groups[0]["lr"] == 0.1  # the real ones untouched
    assert model[0].weight.grad is None


def test_runplan_follows_the_run_and_a_cosine_ends_at_its_floor():
    plans, lrs = [], []

    def opt(params, model, plan):
        plans.append(plan)
        assert {n for n, _ in model.named_parameters()} == {"0.weight", "0.bias", "2.weight", "2.bias"}
        return torch.optim.SGD(params, lr=0.1)

    def sched(optimizer, plan):
        warm = plan.total_steps // 4
        return S.SequentialLR(optimizer, [S.LinearLR(optimizer, 0.01, total_iters=warm), S.CosineAnnealingLR(optimizer, plan.total_steps - warm)], milestones=[warm])

    class LR:
        def on_step_end(self, trainer):
            lrs.append(trainer.optimizer.param_groups[0]["lr"])

    task = Task(model=mlp(), train_data=data(), loss_fn=nn.CrossEntropyLoss(), optimizer=opt, scheduler=sched, batch_size=8, epochs=2)
    t = Trainer.from_task(task, accumulate=2, batch_size=4, epochs=3, callbacks=[LR()], **quiet())
    assert t.optimizer is None  # waits for the plan
    r = t.fit()
    assert plans == [RunPlan(total_steps=24, steps_per_epoch=8, epochs=3, accumulate=2, batch_size=4, world_size=1)]
    assert r.steps == 24 and lrs[-1] == pytest.approx(0.0, abs=1e-12)  # the floor, at the last step
    assert max(lrs) == pytest.approx(0.1)


@pytest.mark.parametrize("uses_plan", [True, False])
def test_resuming_on_another_plan_is_said(tmp_path, uses_plan):
    def opt(params):
        return torch.optim.SGD(params, lr=0.1)

    def planned(optimizer, plan):
        return S.CosineAnnealingLR(optimizer, plan.total_steps)

    def fixed(optimizer):
        return S.CosineAnnealingLR(optimizer, 100)

    def run(epochs):
        task = Task(model=mlp(), train_data=data(), loss_fn=nn.CrossEntropyLoss(), optimizer=opt,
                    scheduler=planned if uses_plan else fixed, batch_size=8, epochs=epochs)
        t = Trainer.from_task(task, checkpoint_dir=tmp_path, checkpoint_every=4, **quiet())
        t.fit(resume="last")
        return t

    assert not [e for e in run(2).events if "planned" in e]
    notes = [e for e in run(3).events if "planned" in e]
    if uses_plan:
        assert notes == ["note: the checkpoint's run planned 16 optimizer steps, this run 24: the optimizer and scheduler factories "
                         "that take the plan were built for this run's, so the schedule continues from step 16 on the new plan "
                         "(resume with the same epochs/batch size/accumulate to keep the old one)"]
    else:
        assert notes == []


def test_task_plan_for_other_engines():
    task = Task(model=mlp(), train_data=data(n=50), batch_size=8, epochs=3)
    assert task.plan() == RunPlan(21, 7, 3, 1, 8, 1)
    assert task.plan(accumulate=2, epochs=1).total_steps == 4
    seen = {}
    task.optimizer = lambda params, plan: seen.setdefault("p", plan) and torch.optim.SGD(params, lr=0.1)
    task.make_optimizer()
    assert seen["p"].total_steps == 21


def test_cli_scheduler_interval_option(tmp_path):
    path = tmp_path / "t.py"
    path.write_text(
        "import torch\nfrom torch import nn\nfrom torch.utils.data import TensorDataset\nfrom torchwise import Task\n"
        "def task(interval=None):\n"
        "    g = torch.Generator().manual_seed(0)\n"
        "    ds = TensorDataset(torch.randn(32, 4, generator=g), torch.randint(0, 2, (32,), generator=g))\n"
        "    return Task(model=nn.Linear(4, 2), train_data=ds, loss_fn=nn.CrossEntropyLoss(), batch_size=8, epochs=2,\n"
        "                optimizer=lambda p: torch.optim.SGD(p, lr=0.1), scheduler=lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5),\n"
        "                scheduler_interval=interval)\n"
    )
    lrs = {}
    for label, extra in (("task-default", []), ("cli-step", ["--scheduler-interval", "step"]), ("task-arg", ["--task-arg", "interval='step'"])):
        out = tmp_path / label
        assert main(["train", f"{path}:task", "--device", "cpu", "--log-dir", str(out), "--no-progress", "--log-every", "1", *extra]) == 0
        rows = [r.split(",") for r in (out / "metrics.csv").read_text().splitlines()[1:]]
        lrs[label] = [float(r[4]) for r in rows if r[3] == "train/lr"]
    assert lrs["task-default"][-1] == pytest.approx(0.1 * 0.5)  # stepped once, after epoch 1
    assert lrs["cli-step"][-1] == lrs["task-arg"][-1] == pytest.approx(0.1 * 0.5**8)
