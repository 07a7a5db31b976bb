"""The Task convention: everything an engine needs to train, check or tune a model.

A Task is returned by a function; the command line names that function as
``path/to/file.py:function`` or ``package.module:function`` (``:task`` is the default name).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from torchwise.errors import TaskError

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def accuracy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Share of rows whose arg-max equals the target, as a 0-d tensor (no host sync)."""
    return (output.argmax(dim=-1) == target).float().mean()


@dataclass
class Task:
    """A model with its data, loss, optimizer factory and metrics.

    ``train_data``/``val_data`` are Datasets (loaders are built with ``batch_size``) or ready
    DataLoaders. ``optimizer`` is a factory called with the model's parameters (default AdamW,
    lr 1e-3). ``metrics`` map a name to ``fn(output, target) -> 0-d tensor``.
    """

    model: nn.Module
    train_data: Dataset | DataLoader
    val_data: Dataset | DataLoader | None = None
    loss_fn: Callable[..., torch.Tensor] | None = None
    optimizer: OptimizerFactory | None = None
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    example_batch: Any = None
    batch_size: int = 64
    epochs: int = 1
    collate_fn: Callable[[list], Any] | None = None
    scheduler: Callable[[torch.optim.Optimizer], Any] | None = None
    name: str = "task"

    def __post_init__(self) -> None:
        if not isinstance(self.model, nn.Module):
            raise TaskError(f"Task.model must be a torch.nn.Module, got {type(self.model).__name__}")
        if self.batch_size < 1:
            raise TaskError(f"Task.batch_size must be >= 1, got {self.batch_size}")

    def _loader(self, data: Dataset | DataLoader, shuffle: bool, **overrides: Any) -> DataLoader:
        if isinstance(data, DataLoader):
            return data
        if hasattr(data, "__len__") and len(data) == 0:  # type: ignore[arg-type]
            which = "training" if data is self.train_data else "validation"
            raise TaskError(f"task {self.name!r}: the {which} data is empty ({type(data).__name__} of 0 samples); give it at least one sample")
        kwargs: dict[str, Any] = {"batch_size": self.batch_size, "shuffle": shuffle}
        if self.collate_fn is not None:
            kwargs["collate_fn"] = self.collate_fn
        kwargs.update(overrides)
        return DataLoader(data, **kwargs)

    def train_loader(self, **overrides: Any) -> DataLoader:
        """The training DataLoader (shuffled); keyword overrides go to ``DataLoader``."""
        return self._loader(self.train_data, True, **overrides)

    def val_loader(self, **overrides: Any) -> DataLoader | None:
        """The validation DataLoader, or None when the task has no validation data."""
        if self.val_data is None:
            return None
        return self._loader(self.val_data, False, **overrides)

    def make_optimizer(self, model: nn.Module | None = None) -> torch.optim.Optimizer:
        """Build the optimizer over ``model`` (default: the task's model)."""
        params = (model or self.model).parameters()
        if self.optimizer is None:
            return torch.optim.AdamW(params, lr=1e-3)
        return self.optimizer(params)

    def get_example_batch(self) -> Any:
        """``example_batch`` if given, else the first batch of an unshuffled training loader."""
        if self.example_batch is not None:
            return self.example_batch
        loader = self._loader(self.train_data, False) if not isinstance(self.train_data, DataLoader) else self.train_data
        try:
            return next(iter(loader))
        except StopIteration:
            raise TaskError(f"task {self.name!r}: the training data is empty") from None


def _import_file(path: Path) -> Any:
    name = f"_torchwise_task_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _neighbours_importable(path):
            spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TaskError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


@contextlib.contextmanager
def _neighbours_importable(path: Path | None) -> Iterator[None]:
    """Put the task file's folder first on ``sys.path`` while its code runs (so it can import
    its neighbours), then take that entry out again: ``sys.path`` is left as it was found."""
    folder = str(path.resolve().parent) if path is not None else None
    if folder is None or folder in sys.path:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:  # the user's code took it out itself
            pass


def load_task(ref: "str | Task", **kwargs: Any) -> Task:
    """Resolve ``file.py:function`` or ``package.module:function`` and call it to get a Task.

    Keyword arguments are passed to the function. A Task given directly is returned as it is.
    """
    if isinstance(ref, Task):
        return ref
    if not isinstance(ref, str) or not ref.strip():
        raise TaskError(f"a task reference must be 'file.py:function' or 'module:function', got {ref!r}")
    target, _, func_name = ref.rpartition(":") if ":" in ref else (ref, ":", "task")
    func_name = func_name or "task"
    path: Path | None = None  # a task file, whose folder its code may import from
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target)
        if not path.is_file():
            raise TaskError(f"task file not found: {target} (expected 'path/to/file.py:function')")
        module = _import_file(path)
        where = str(path)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            raise TaskError(f"cannot import module {target!r} of task {ref!r}: {exc}") from exc
        except Exception as exc:  # the module exists but raises while importing
            raise TaskError(f"importing module {target} failed: {type(exc).__name__}: {exc}") from exc
        where = f"module {target}"
    func = getattr(module, func_name, None)
    if func is None:
        candidates = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__)
        listing = f"; callables there: {', '.join(candidates)}" if candidates else ""
        raise TaskError(f"{where} has no function {func_name!r}{listing}")
    if not callable(func):
        raise TaskError(f"{func_name!r} in {where} is a {type(func).__name__}, not a function returning a Task")
    try:
        with _neighbours_importable(path):  # the task function may import the file's neighbours too
            result = func(**kwargs)
    except TaskError:
        raise
    except Exception as exc:  # the user's task function itself failed
        raise TaskError(f"building task {ref!r} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, Task):
        raise TaskError(f"{func_name}() in {where} returned {type(result).__name__}, expected torchwise.Task")
    return result
