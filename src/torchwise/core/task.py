"""The Task convention: everything an engine needs to train, check or tune a model.

A Task is returned by a function; the command line names that function as
``path/to/file.py:function`` or ``package.module:function`` (``:task`` is the default name).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import math
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Union

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from torchwise.core.errors import TaskError

OptimizerFactory = Callable[..., torch.optim.Optimizer]
SchedulerFactory = Callable[..., Any]
Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
StepFn = Callable[[nn.Module, Any], Union[torch.Tensor, Mapping[str, torch.Tensor]]]

INTERVALS = ("step", "epoch")


@dataclass(frozen=True)
class RunPlan:
    """The shape of a run, for optimizer and scheduler factories that declare a ``plan`` parameter.

    Built from the run's actual settings (``--epochs``, ``--batch-size``, ``--accumulate``, the
    number of processes), so a schedule written against it follows the run. ``total_steps`` and
    ``steps_per_epoch`` count optimizer steps; they are None when the loader has no length.
    """

    total_steps: int | None
    steps_per_epoch: int | None
    epochs: int | None
    accumulate: int = 1
    batch_size: int | None = None
    world_size: int = 1

    @classmethod
    def build(cls, n_batches: int | None, *, epochs: int | None, accumulate: int = 1, max_steps: int | None = None,
              batch_size: int | None = None, world_size: int = 1) -> "RunPlan":
        """The plan of a run over ``n_batches`` loader batches per epoch (per process)."""
        per_epoch = -(-n_batches // accumulate) if n_batches else None
        total = epochs * per_epoch if epochs and per_epoch else None
        if max_steps is not None:
            total = min(total, max_steps) if total else max_steps
        return cls(total, per_epoch, epochs, accumulate, batch_size, world_size)


def call_factory(factory: Callable[..., Any], first: Any, **offers: Any) -> Any:
    """Call ``factory(first)``, adding each keyword of ``offers`` that the factory declares by name.

    This is how an optimizer factory gets ``model`` (for name-based parameter groups) and a
    scheduler or optimizer factory gets ``plan`` (a :class:`RunPlan`), only when it asks for them.
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return factory(first)
    return factory(first, **{k: v for k, v in offers.items() if k in params})


def wants(factory: Any, name: str) -> bool:
    """Whether ``factory`` declares a parameter called ``name``."""
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def accuracy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Share of rows whose arg-max equals the target, as a 0-d tensor (no host sync)."""
    return (output.argmax(dim=-1) == target).float().mean()


@dataclass
class Task:
    """A model with its data, loss, optimizer factory and metrics: everything that defines training.

    ``train_data``/``val_data`` are Datasets (loaders are built with ``batch_size``) or ready
    DataLoaders. ``optimizer`` is a factory called with the model's trainable parameters (default
    AdamW, lr 1e-3); if it declares ``model`` it also gets the model, if it declares ``plan`` the
    :class:`RunPlan`. ``scheduler`` is a factory called with the optimizer (and ``plan``).
    ``metrics`` map a name to ``fn(output, target) -> 0-d tensor``.

    ``step_fn(model, batch)`` replaces the default ``loss_fn(model(inputs), targets)``; it returns
    the loss or a mapping holding ``"loss"`` (its other 0-d entries are logged). Several
    optimizers: ``optimizer``, ``scheduler`` and ``step_fn`` are dicts keyed by the same names.
    ``scheduler_interval`` ("step" | "epoch" | None = by the scheduler's class), ``monitor`` and
    ``monitor_mode`` ("min" | "max" | None = from the name) drive ReduceLROnPlateau, early
    stopping and the best checkpoint.
    """

    model: nn.Module
    train_data: Dataset | DataLoader
    val_data: Dataset | DataLoader | None = None
    loss_fn: Callable[..., torch.Tensor] | None = None
    optimizer: OptimizerFactory | torch.optim.Optimizer | Mapping[str, Any] | None = None
    metrics: Mapping[str, Metric] = field(default_factory=dict)
    example_batch: Any = None
    batch_size: int = 64
    epochs: int = 1
    collate_fn: Callable[[list], Any] | None = None
    scheduler: SchedulerFactory | Mapping[str, SchedulerFactory] | None = None
    name: str = "task"
    step_fn: StepFn | Mapping[str, StepFn] | None = None
    scheduler_interval: str | None = None
    monitor: str = "val/loss"
    monitor_mode: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, nn.Module):
            raise TaskError(f"Task.model must be a torch.nn.Module, got {type(self.model).__name__}")
        for name in ("batch_size", "epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TaskError(f"Task.{name} must be an integer >= 1, got {value!r}")
        if self.scheduler_interval not in (None, *INTERVALS):
            raise TaskError(f"Task.scheduler_interval must be 'step', 'epoch' or None (by the scheduler's class), got {self.scheduler_interval!r}")
        if self.monitor_mode not in (None, "min", "max"):
            raise TaskError(f"Task.monitor_mode must be 'min', 'max' or None (from the metric's name), got {self.monitor_mode!r}")
        if isinstance(self.step_fn, Mapping):
            names = list(self.optimizer) if isinstance(self.optimizer, Mapping) else None
            if names is None or list(self.step_fn) != names:
                raise TaskError(
                    f"Task.step_fn is a dict with phases {list(self.step_fn)}: Task.optimizer must be a dict with the same names "
                    f"in the same order, got {names if names is not None else type(self.optimizer).__name__}"
                )
        if isinstance(self.scheduler, Mapping):
            extra = [k for k in self.scheduler if not isinstance(self.optimizer, Mapping) or k not in self.optimizer]
            if extra:
                raise TaskError(f"Task.scheduler names {extra} that are not optimizers of Task.optimizer")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the Task's fields (what ``Trainer.from_task`` accepts as overrides)."""
        return tuple(f.name for f in fields(cls))

    def plan(self, *, epochs: int | None = None, accumulate: int = 1, max_steps: int | None = None, world_size: int = 1) -> RunPlan:
        """The :class:`RunPlan` of training this task (its loader, ``batch_size`` and ``epochs``)."""
        try:
            n_batches: int | None = len(self.train_loader())
        except TypeError:
            n_batches = None
        if n_batches is not None and world_size > 1:
            n_batches = math.ceil(n_batches / world_size)
        return RunPlan.build(n_batches, epochs=epochs if epochs is not None else self.epochs, accumulate=accumulate,
                             max_steps=max_steps, batch_size=self.batch_size, world_size=world_size)

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

    def make_optimizer(self, model: nn.Module | None = None, plan: RunPlan | None = None) -> Any:
        """Build the optimizer over ``model`` (default: the task's model); a dict of them for several.

        ``plan`` defaults to :meth:`plan` (the task's own settings) when a factory asks for it.
        """
        model = model if model is not None else self.model
        if isinstance(self.optimizer, Mapping):
            return {name: build_optimizer(f, model, plan, self) for name, f in self.optimizer.items()}
        return build_optimizer(self.optimizer, model, plan, self)

    def make_scheduler(self, optimizer: Any, plan: RunPlan | None = None) -> Any:
        """Build the scheduler(s) of ``optimizer`` (a dict of optimizers gives a dict); None without one."""
        if self.scheduler is None:
            return None
        if isinstance(self.scheduler, Mapping):
            if not isinstance(optimizer, Mapping):
                raise TaskError("Task.scheduler is a dict: the optimizer must be a dict of optimizers with those names")
            return {name: build_scheduler(f, optimizer[name], plan, self) for name, f in self.scheduler.items()}
        if isinstance(optimizer, Mapping):
            raise TaskError("several optimizers need Task.scheduler as a dict {name: factory} naming which optimizer each schedules")
        return build_scheduler(self.scheduler, optimizer, plan, self)

    def get_example_batch(self) -> Any:
        """``example_batch`` if given, else the first batch of an unshuffled training loader."""
        if self.example_batch is not None:
            return self.example_batch
        loader = self._loader(self.train_data, False) if not isinstance(self.train_data, DataLoader) else self.train_data
        try:
            return next(iter(loader))
        except StopIteration:
            raise TaskError(f"task {self.name!r}: the training data is empty") from None


def build_optimizer(factory: Any, model: nn.Module, plan: RunPlan | None = None, task: Task | None = None) -> torch.optim.Optimizer:
    """An optimizer from ``factory`` (an Optimizer is returned as it is; None gives AdamW, lr 1e-3).

    The factory gets the model's trainable parameters, plus ``model=``/``plan=`` when it declares them.
    """
    if isinstance(factory, torch.optim.Optimizer):
        return factory
    params = [p for p in model.parameters() if p.requires_grad]
    if factory is None:
        return torch.optim.AdamW(params, lr=1e-3)
    if not callable(factory):
        raise TaskError(f"an optimizer must be a factory fn(params) -> Optimizer or an Optimizer, got {type(factory).__name__}")
    if plan is None and task is not None and wants(factory, "plan"):
        plan = task.plan()
    optimizer = call_factory(factory, params, model=model, plan=plan)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TaskError(f"the optimizer factory returned {type(optimizer).__name__}, expected a torch.optim.Optimizer")
    return optimizer


def build_scheduler(factory: Any, optimizer: torch.optim.Optimizer, plan: RunPlan | None = None, task: Task | None = None) -> Any:
    """A scheduler from ``factory(optimizer)`` (plus ``plan=`` when it declares it); a built one as it is."""
    if factory is None or hasattr(factory, "step"):
        return factory
    if plan is None and task is not None and wants(factory, "plan"):
        plan = task.plan()
    return call_factory(factory, optimizer, plan=plan)


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
