"""Task loading leaves ``sys.path`` as it found it; empty data is one line, not a sampler error."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from torchwise.cli import main
from torchwise.core.errors import TaskError
from torchwise.core.task import Task, load_task


def test_sys_path_is_left_as_found_and_neighbours_still_import(tmp_path):
    (tmp_path / "helper_mod_for_task.py").write_text("WIDTH = 3\n")
    (tmp_path / "lazy_helper_for_task.py").write_text("OUT = 2\n")
    (tmp_path / "t.py").write_text(textwrap.dedent("""
        from torch import nn
        from torch.utils.data import TensorDataset
        import torch
        from helper_mod_for_task import WIDTH          # a neighbour, at import time
        from torchwise.core.task import Task

        def task():
            from lazy_helper_for_task import OUT       # a neighbour, when the task is built
            data = TensorDataset(torch.zeros(4, WIDTH), torch.zeros(4, dtype=torch.long))
            return Task(model=nn.Linear(WIDTH, OUT), train_data=data, loss_fn=nn.CrossEntropyLoss())
    """))
    before = list(sys.path)
    try:
        task = load_task(f"{tmp_path / 't.py'}:task")
        assert task.model.in_features == 3 and task.model.out_features == 2
        assert sys.path == before
        with pytest.raises(TaskError, match="importing .* failed: ZeroDivisionError"):
            (tmp_path / "bad.py").write_text("1 / 0\n")
            load_task(f"{tmp_path / 'bad.py'}:task")
        assert sys.path == before
    finally:
        for name in ("helper_mod_for_task", "lazy_helper_for_task"):
            sys.modules.pop(name, None)


def test_a_folder_already_on_sys_path_stays_there(tmp_path, monkeypatch):
    (tmp_path / "t.py").write_text("from torchwise.core.task import Task\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = list(sys.path)
    with pytest.raises(TaskError, match="has no function 'task'"):
        load_task(f"{tmp_path / 't.py'}:task")
    assert sys.path == before


def _empty() -> TensorDataset:
    return TensorDataset(torch.zeros(0, 4), torch.zeros(0, dtype=torch.long))


def test_empty_training_or_validation_data_is_one_line():
    task = Task(model=nn.Linear(4, 2), train_data=_empty(), val_data=_empty(), loss_fn=nn.CrossEntropyLoss(), name="e")
    with pytest.raises(TaskError, match=r"^task 'e': the training data is empty \(TensorDataset of 0 samples\)"):
        task.train_loader()
    with pytest.raises(TaskError, match=r"^task 'e': the validation data is empty"):
        task.val_loader()


EMPTY_TASK = """
import torch
from torch import nn
from torch.utils.data import TensorDataset
from torchwise.core.task import Task

def task():
    data = TensorDataset(torch.zeros(0, 4), torch.zeros(0, dtype=torch.long))
    return Task(model=nn.Linear(4, 2), train_data=data, loss_fn=nn.CrossEntropyLoss(), name="empty")
"""


@pytest.mark.parametrize("command", ["train", "doctor"])
def test_engines_on_empty_training_data_say_so_in_one_line(tmp_path, capsys, command):
    (tmp_path / "empty.py").write_text(EMPTY_TASK)
    extra = ["--log-dir", str(tmp_path / "run"), "--no-progress"] if command == "train" else []
    assert main([command, f"{tmp_path / 'empty.py'}:task", "--device", "cpu", *extra]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"torchwise {command}: error: task 'empty': the training data is empty (TensorDataset of 0 samples); give it at least one sample"
