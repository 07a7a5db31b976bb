"""Tests of the Task convention (task.py) and batch interpretation (batch.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchwise.utils.batch import batch_size_of, describe, split_batch
from torchwise.core.errors import DataError, TaskError
from torchwise.core.task import Task, accuracy, load_task

ROOT = Path(__file__).resolve().parents[2]

TASK_FILE = textwrap.dedent(
    """
    import torch
    from torch import nn
    from torch.utils.data import TensorDataset
    from torchwise.core.task import Task

    def task(width=4):
        x = torch.randn(10, 3)
        return Task(model=nn.Linear(3, width), train_data=TensorDataset(x, torch.zeros(10, dtype=torch.long)),
                    batch_size=4, name=f"tiny{width}")

    def other():
        return task(width=2)

    def not_a_task():
        return 42

    CONSTANT = 3
    """
)


@pytest.fixture
def task_file(tmp_path: Path) -> Path:
    path = tmp_path / "mytask.py"
    path.write_text(TASK_FILE)
    return path


def test_load_from_file_default_and_named_function(task_file):
    t = load_task(f"{task_file}:task")
    assert isinstance(t, Task) and t.name == "tiny4"
    assert load_task(str(task_file)).name == "tiny4"  # ":task" is the default
    assert load_task(f"{task_file}:other").name == "tiny2"
    assert load_task(f"{task_file}:task", width=6).name == "tiny6"  # kwargs reach the function
    assert load_task(t) is t


def test_load_from_module_path(task_file, monkeypatch):
    monkeypatch.syspath_prepend(str(task_file.parent))
    assert load_task("mytask:other").name == "tiny2"
    assert load_task("mytask").name == "tiny4"


def test_load_the_digits_example():
    pytest.importorskip("sklearn")
    t = load_task(f"{ROOT / 'examples' / 'digits.py'}:task")
    x, y = split_batch(t.get_example_batch())
    assert x.shape == (64, 1, 8, 8) and y.shape == (64,)
    assert t.model(x).shape == (64, 10)


def test_bad_references_name_what_was_not_found(task_file, tmp_path):
    with pytest.raises(TaskError, match=r"task file not found: .*missing\.py"):
        load_task(f"{tmp_path / 'missing.py'}:task")
    with pytest.raises(TaskError, match=r"has no function 'nope'.*callables there: .*not_a_task.*other.*task"):
        load_task(f"{task_file}:nope")
    with pytest.raises(TaskError, match=r"cannot import module 'no_such_pkg_xyz.mod'.*No module named 'no_such_pkg_xyz'"):
        load_task("no_such_pkg_xyz.mod:task")
    with pytest.raises(TaskError, match=r"returned int, expected torchwise.Task"):
        load_task(f"{task_file}:not_a_task")
    with pytest.raises(TaskError, match=r"'CONSTANT' .* is a int, not a function"):
        load_task(f"{task_file}:CONSTANT")
    with pytest.raises(TaskError, match="must be 'file.py:function'"):
        load_task("")
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nraise RuntimeError('kaboom')\n")
    with pytest.raises(TaskError, match=r"importing .*broken\.py failed: RuntimeError: kaboom"):
        load_task(f"{broken}:task")


@pytest.mark.slow
def test_cli_reports_bad_task_in_one_line(run_cli, tmp_path):
    res = run_cli("summary", f"{tmp_path / 'missing.py'}:task")
    assert res.returncode == 2
    assert "task file not found" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_task_validation_and_loaders():
    x, y = torch.randn(10, 3), torch.randint(0, 2, (10,))
    with pytest.raises(TaskError, match="must be a torch.nn.Module"):
        Task(model="model", train_data=TensorDataset(x, y))  # type: ignore[arg-type]
    with pytest.raises(TaskError, match="batch_size must be an integer >= 1"):
        Task(model=nn.Linear(3, 2), train_data=TensorDataset(x, y), batch_size=0)
    t = Task(model=nn.Linear(3, 2), train_data=TensorDataset(x, y), batch_size=4)
    assert t.val_loader() is None
    assert batch_size_of(next(iter(t.train_loader()))) == 4
    assert len(t.train_loader(batch_size=5)) == 2
    assert isinstance(t.make_optimizer(), torch.optim.AdamW)
    ready = DataLoader(TensorDataset(x, y), batch_size=3)
    assert Task(model=nn.Linear(3, 2), train_data=ready).train_loader() is ready
    empty = Task(model=nn.Linear(3, 2), train_data=TensorDataset(x[:0], y[:0]))
    with pytest.raises(TaskError, match="training data is empty"):
        empty.get_example_batch()
    assert accuracy(torch.tensor([[0.1, 0.9], [0.8, 0.2]]), torch.tensor([1, 1])).item() == 0.5


def test_split_batch_layouts_and_errors():
    x, y = torch.zeros(4, 3), torch.zeros(4)
    assert split_batch((x, y)) == (x, y)
    assert split_batch([x, y, torch.tensor([3, 3, 3, 3])])[1] is y
    inp, tgt = split_batch({"input_ids": x, "labels": y, "mask": x})
    assert inp is x and tgt is y
    with pytest.raises(DataError, match=r"expected a dict with an input key .* and a target key"):
        split_batch({"pixels": x, "labels": y})
    with pytest.raises(DataError, match=r"cannot interpret batch Tensor\(shape=\(4, 3\)"):
        split_batch(x)
    with pytest.raises(DataError, match="expected \\(inputs, targets\\)"):
        split_batch((x,))
    with pytest.raises(DataError):
        split_batch("xy")
    assert "shape=(4, 3)" in describe({"a": x}) and batch_size_of({"a": [x]}) == 4 and batch_size_of(3) == 0


def test_module_that_fails_on_import_gives_task_error(tmp_path, monkeypatch):
    (tmp_path / "brokenmod_tw.py").write_text("raise RuntimeError('kaboom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TaskError, match=r"importing module brokenmod_tw failed: RuntimeError: kaboom"):
        load_task("brokenmod_tw:task")
