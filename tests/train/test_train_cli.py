"""``torchwise train``: a run, resume, tuned settings, errors, and the digits demo's quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from train_helpers import loader, mlp, quiet

from torchwise.utils.checkpoint import load_checkpoint
from torchwise.cli import main
from torchwise.train import Trainer

TINY = str(Path(__file__).with_name("train_tiny_task.py")) + ":task"
ROOT = Path(__file__).resolve().parents[2]


def test_train_then_resume_last_with_more_epochs(tmp_path, capsys):
    run = str(tmp_path / "run")
    assert main(["train", TINY, "--seed", "0", "--log-dir", run, "--log-every", "2"]) == 0
    out = capsys.readouterr().out
    assert "summary" in out and "best val/accuracy" in out and "step-00000008.pt" in out
    assert main(["train", TINY, "--seed", "0", "--log-dir", run, "--resume", "last", "--epochs", "3", "--task-arg", "n=32"]) == 0
    out = capsys.readouterr().out
    assert "resuming from" in out and "step-00000008.pt" in out and "from step 8 (epoch 3, batch 0)" in out
    state = load_checkpoint(Path(run) / "checkpoints" / "step-00000010.pt")  # --task-arg n=32: 2 steps in epoch 3
    assert state["epoch"] == 3 and state["step"] == 10
    assert (Path(run) / "metrics.csv").exists()


def test_errors_are_one_line_with_exit_2(run_cli, tmp_path, capsys):
    r = run_cli("train", TINY, "--resume", str(tmp_path / "missing.pt"), "--log-dir", str(tmp_path), "--no-progress")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "checkpoint" in r.stderr and "not found" in r.stderr
    with pytest.raises(SystemExit) as exc:
        main(["train", TINY, "--precision", "fp8"])
    assert exc.value.code == 2 and "invalid choice: 'fp8'" in capsys.readouterr().err
    assert main(["train", "no_such_file.py:task"]) == 2
    assert "task file not found" in capsys.readouterr().err
    assert main(["train", TINY, "--task-arg", "oops"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


def test_tuned_settings_fill_only_what_was_left_at_default(tmp_path):
    from torchwise.core.tuned import TunedConfig

    path = TunedConfig(precision="bf16-mixed", channels_last=False, threads=1, batch_size=32).save(tmp_path / "tune.json")
    model = mlp()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), tuned=path, **quiet())
    assert t.precision.name == "bf16-mixed" and t.auto.want_channels_last is False
    assert t.tuned_applied == {"precision": "bf16-mixed", "channels_last": False, "batch_size": 32, "threads": 1}
    r = t.fit(loader(batch_size=8), epochs=1)
    assert r.steps == 2  # the tuned batch size (32) was applied to the 64-sample loader
    t2 = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), tuned=json.loads(path.read_text()), precision="32", **quiet())
    assert t2.precision.name == "32"  # an explicit choice wins
    assert "precision" not in t2.tuned_applied and t2.tuned_applied["batch_size"] == 32


@pytest.mark.slow
def test_digits_example_reaches_97_percent(tmp_path, capsys):
    assert main(["train", str(ROOT / "examples" / "digits.py") + ":task", "--seed", "0", "--log-dir", str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    best = float(out.split("best val/accuracy ")[1].split(";")[0])
    assert best >= 0.97, out
    assert (tmp_path / "checkpoints" / "step-00000276.pt").exists()
