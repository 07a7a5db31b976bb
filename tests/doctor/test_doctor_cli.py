"""``torchwise doctor TASK``: exit codes, JSON, plain and rich output."""

from __future__ import annotations

import argparse
import json
import textwrap

import pytest

from torchwise.doctor import cli

SOFTMAX_TASK = textwrap.dedent(
    """
    import torch
    from torch import nn
    from torch.utils.data import TensorDataset
    from torchwise.core.task import Task

    def task():
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(32, 8, generator=g), torch.randint(0, 3, (32,), generator=g))
        model = nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=1))
        return Task(model=model, train_data=data, loss_fn=nn.CrossEntropyLoss(), batch_size=8, name="soft")
    """
)


@pytest.mark.slow
def test_cli_json_clean_task_exit_0(run_cli):
    proc = run_cli("doctor", "examples/digits.py:task", "--json", "--steps", "2")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["findings"] == [] and data["measured"]["steps_run"] == 2
    assert any(s["codes"] == ["TW207"] for s in data["skipped"])


@pytest.mark.slow
def test_cli_error_finding_exit_1_plain_when_piped(run_cli, tmp_path):
    (tmp_path / "soft.py").write_text(SOFTMAX_TASK)
    proc = run_cli("doctor", f"{tmp_path / 'soft.py'}:task")
    assert proc.returncode == 1, proc.stderr
    assert "TW102" in proc.stdout and "error" in proc.stdout and "\x1b[" not in proc.stdout
    assert proc.stdout.splitlines()[0].startswith("doctor soft: 1 error")


def test_cli_bad_task_one_line_exit_2(tmp_path, capsys):
    from torchwise.cli import main  # in this process: the exit code as a process is test_cli_error_finding_exit_1_plain_when_piped's

    assert main(["doctor", "no/such/file.py:task"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "not found" in err and "Traceback" not in err
    (tmp_path / "boom.py").write_text("def task():\n    raise ValueError('no data here')\n")
    assert main(["doctor", f"{tmp_path / 'boom.py'}:task"]) == 2
    err = capsys.readouterr().err
    assert "no data here" in err and "Traceback" not in err and err.strip().count("\n") == 0


def test_rich_table_on_a_terminal(monkeypatch, tmp_path, capsys):
    (tmp_path / "soft.py").write_text(SOFTMAX_TASK)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args([f"{tmp_path / 'soft.py'}:task", "--steps", "2"])
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert cli.run(args) == 1
    out = capsys.readouterr().out
    assert "TW102" in out and ("┃" in out or "│" in out)
    assert "measured:" in out and "skipped TW207" in out
