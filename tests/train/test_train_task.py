"""Task-defined training: from_task overrides, task epochs, Task.step_fn with dict outputs,
validation metrics with a custom step, --task-arg on every task command."""

from __future__ import annotations

import textwrap

import pytest
import torch
from torch import nn

from train_helpers import data, loader, mlp, quiet

from torchwise import Task
from torchwise.cli import main
from torchwise.core.errors import TaskError
from torchwise.train import Trainer


def _task(**kw):
    base = dict(model=mlp(), train_data=data(), val_data=data(n=16), loss_fn=nn.CrossEntropyLoss(), batch_size=8, epochs=3)
    base.update(kw)
    return Task(**base)


def test_from_task_overrides_any_task_field():
    seen = []

    def loss(out, y):
        seen.append(1)
        return nn.functional.cross_entropy(out, y)

    t = Trainer.from_task(_task(), loss_fn=loss, batch_size=16, epochs=2, metrics={"one": lambda o, y: torch.tensor(1.0)}, **quiet())
    r = t.fit()
    assert seen and r.steps == 2 * 4 and r.val["val/one"] == 1.0  # 64 samples / 16, two epochs
    assert t.task.batch_size == 16


def test_from_task_honours_the_tasks_epochs_when_a_loader_is_passed():
    r = Trainer.from_task(_task(epochs=3), **quiet()).fit(loader())
    assert r.epochs == 3 and r.steps == 24


def test_task_step_fn_with_dict_outputs_is_logged_and_validated(tmp_path):
    def step_fn(model, batch):
        x, y = batch
        out = model(x)
        ce = nn.functional.cross_entropy(out, y)
        aux = out.pow(2).mean()
        return {"loss": ce + 0.1 * aux, "ce": ce.detach(), "aux": aux.detach(), "output": out, "target": y}

    acc = {"accuracy": lambda o, y: (o.argmax(-1) == y).float().mean()}
    task = _task(step_fn=step_fn, loss_fn=None, metrics=acc, epochs=1)
    t = Trainer.from_task(task, **quiet(log_dir=tmp_path, log_every=2))
    r = t.fit()
    rows = [line.split(",") for line in (tmp_path / "metrics.csv").read_text().splitlines()[1:]]
    names = {row[3] for row in rows}
    assert {"train/loss", "train/ce", "train/aux", "val/loss", "val/ce", "val/aux", "val/accuracy"} <= names
    x, y = data(n=16).tensors
    with torch.no_grad():
        assert r.val["val/accuracy"] == pytest.approx((task.model(x).argmax(-1) == y).float().mean().item())


def test_metrics_with_a_custom_step_fall_back_to_the_default_call():
    task = _task(step_fn=lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]), loss_fn=None,
                 metrics={"accuracy": lambda o, y: (o.argmax(-1) == y).float().mean()}, epochs=1)
    r = Trainer.from_task(task, **quiet()).fit()
    assert 0.0 <= r.val["val/accuracy"] <= 1.0 and "val/loss" in r.val


def test_task_validates_its_new_fields():
    with pytest.raises(TaskError, match="scheduler_interval must be 'step', 'epoch' or None"):
        _task(scheduler_interval="batch")
    with pytest.raises(TaskError, match="same names"):
        _task(step_fn={"d": lambda m, b: 0}, optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
    with pytest.raises(TaskError, match="monitor_mode"):
        _task(monitor_mode="up")


TASK_FILE = textwrap.dedent(
    """
    import torch
    from torch import nn
    from torch.utils.data import TensorDataset
    from torchwise import Task

    class Two(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.a, self.b = nn.Linear(4, width), nn.Linear(2, width)

        def forward(self, image, text):
            return self.a(image) + self.b(text)

    class Pairs(torch.utils.data.Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.x, self.t, self.y = torch.randn(24, 4, generator=g), torch.randn(24, 2, generator=g), torch.randint(0, 3, (24,), generator=g)
        def __len__(self):
            return 24
        def __getitem__(self, i):
            return {"image": self.x[i], "text": self.t[i], "label": self.y[i]}

    def task(width=3):
        return Task(model=Two(width), train_data=Pairs(), loss_fn=nn.CrossEntropyLoss(), batch_size=8, name=f"two-{width}")
    """
)


def test_task_arg_reaches_every_task_command(tmp_path, capsys, monkeypatch):
    path = tmp_path / "two.py"
    path.write_text(TASK_FILE)
    assert main(["summary", f"{path}:task", "--task-arg", "width=5"]) == 0
    out = capsys.readouterr().out
    assert "two-5" in out and "[8, 5]" in out.replace("(", "[").replace(")", "]")
    assert main(["train", f"{path}:task", "--task-arg", "width=5", "--device", "cpu", "--log-dir", str(tmp_path / "r"), "--no-progress"]) == 0
    assert "trained 3 steps" in capsys.readouterr().out
    assert main(["doctor", f"{path}:task", "--task-arg", "width=5", "--device", "cpu", "--json", "--steps", "1"]) in (0, 1)
    assert "two-5" in capsys.readouterr().out
    import torchwise.tune

    got = {}
    monkeypatch.setattr(torchwise.tune, "tune", lambda task, **kw: got.setdefault("task", task) and (_ for _ in ()).throw(SystemExit(0)))
    with pytest.raises(SystemExit):
        main(["tune", f"{path}:task", "--task-arg", "width=5", "--out", "-"])
    assert got["task"].name == "two-5"
    assert main(["summary", f"{path}:task", "--task-arg", "5"]) == 2
    assert "--task-arg expects KEY=VALUE" in capsys.readouterr().err


def test_tune_times_dict_batches_and_a_task_step_fn():
    from torchwise import tune

    ns: dict = {}
    exec(TASK_FILE, ns)
    calls = []

    def step(model, batch):
        calls.append(1)
        return nn.functional.cross_entropy(model(batch["image"], batch["text"]), batch["label"])

    for step_fn in (None, step):
        task = ns["task"]()
        task.step_fn = step_fn
        result = tune(task, budget_s=3, knobs="threads", out=None, device="cpu")
        assert result.speedup > 0
    assert calls  # the custom step is what was timed
