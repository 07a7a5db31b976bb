"""Every option is checked up front: switches take True/False/"auto" only, counts are positive
integers, folders are not files; the command lines say so in one line (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchwise.cli import main
from torchwise.core.errors import UsageError
from torchwise.train import Trainer

TINY = str(Path(__file__).with_name("train_tiny_task.py")) + ":task"


def make(**kwargs) -> Trainer:
    model = nn.Linear(3, 2)
    kwargs.setdefault("log_dir", False)
    return Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), device="cpu", progress=False, **kwargs)


@pytest.mark.parametrize("name, value, expected", [
    ("channels_last", "maybe", "True, False or 'auto'"),
    ("cudnn_benchmark", "sometimes", "True, False or 'auto'"),
    ("channels_last", 1, "True, False or 'auto'"),
    ("compile", "yes", "True or False"),
    ("compile", "auto", "True or False"),
    ("deterministic", "on", "True or False"),
    ("checkpoint_every", 0, "an integer >= 1 or None"),
    ("keep_checkpoints", -1, "an integer >= 0"),
    ("nonfinite_patience", 2.5, "an integer >= 0"),
    ("seed", -3, "an integer >= 0"),
    ("accumulate", True, "an integer >= 1"),
    ("log_every", 0, "an integer >= 1"),
    ("clip_grad_norm", "1.0", "a positive number or None"),
])
def test_bad_values_are_refused_naming_option_value_and_expectation(name, value, expected):
    with pytest.raises(UsageError) as info:
        make(**{name: value})
    assert str(info.value) == f"{name} must be {expected}, got {value!r}"


@pytest.mark.parametrize("kwargs", [
    {"channels_last": True, "cudnn_benchmark": False, "compile": False},
    {"channels_last": "auto", "cudnn_benchmark": "auto"},
    {"checkpoint_every": None, "keep_checkpoints": 0, "nonfinite_patience": 0, "seed": 0},
])
def test_good_values_are_accepted(kwargs):
    make(**kwargs)


@pytest.mark.parametrize("name", ["log_dir", "checkpoint_dir"])
def test_a_folder_option_naming_a_file_is_refused(tmp_path, name):
    f = tmp_path / "taken"
    f.write_text("not a folder")
    with pytest.raises(UsageError, match=rf"^{name} {f} is a file, not a folder"):
        make(**{name: f})
    assert f.read_text() == "not a folder"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_train_log_dir_that_is_a_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "log.txt"
    f.write_text("mine")
    assert main(["train", TINY, "--device", "cpu", "--no-progress", "--log-dir", str(f)]) == 2
    assert _one_line(capsys) == f"torchwise train: error: log_dir {f} is a file, not a folder; give a folder path (it is created when missing)"
    assert f.read_text() == "mine"


def test_train_checkpoint_every_0_is_refused(tmp_path, capsys):
    assert main(["train", TINY, "--device", "cpu", "--no-progress", "--log-dir", str(tmp_path), "--checkpoint-every", "0"]) == 2
    assert _one_line(capsys) == "torchwise train: error: checkpoint_every must be an integer >= 1 or None, got 0"
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.parametrize("option, value", [("--select", "TW999"), ("--skip", "NOPE"), ("--select", "TW212,TW9")])
def test_doctor_refuses_unknown_codes_before_loading_the_task(capsys, option, value, monkeypatch):
    import torchwise.core.task

    monkeypatch.setattr(torchwise.core.task, "load_task", lambda *a, **k: pytest.fail("the task was loaded"))
    assert main(["doctor", TINY, option, value]) == 2
    line = _one_line(capsys)
    bad = value.split(",")[-1]
    assert line.startswith(f"torchwise doctor: error: unknown {option} code {bad!r}: expected a doctor check code or prefix, one of TW")
    assert "TW212" in line


def test_doctor_accepts_codes_prefixes_and_commas():
    from torchwise.doctor import check_codes as _codes

    assert _codes(["tw2", "TW105,TW106"], "--select") == ["TW2", "TW105", "TW106"]
    assert _codes(None, "--skip") is None
