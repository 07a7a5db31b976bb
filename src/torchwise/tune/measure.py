"""Measuring one candidate configuration on the user's model, data and hardware.

The search never times anything itself: it calls a *measurer*, ``measure(spec) -> Measurement``,
which tests replace with a scripted fake. :class:`TaskMeasurer` is the real one:

- ``"step"`` mode: the training step alone (forward, loss, backward, optimizer step) on a working
  copy of the model, with a few fixed batches already on the device. Warm-up steps (which include
  compilation) are excluded; then steps are timed one by one until the median is stable (its
  relative standard error under ``target_rel_se``), ``max_steps`` or the time cap. With
  ``numerics=True`` the loss after ``numerics_steps`` updates (same seed, same batches, dropout
  modules off so random masks do not blur the comparison) is reported so the search can compare it
  with the fp32 baseline.
- ``"loader"`` mode: samples/s through the real DataLoader (built with the candidate's workers,
  pinning and batch size) and the step, over a window that includes epoch restarts.

The user's model is deep-copied once per memory format and reset to its initial weights before
every trial; the user's model and optimizer are never touched. Process-wide settings (threads,
matmul precision, cudnn.benchmark) are restored after each trial. Out-of-memory is turned into
:class:`OutOfMemory` after the trial's tensors are released and the CUDA cache emptied.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch.utils.data import DataLoader

from torchwise.utils.batch import batch_size_of, forward_names, model_call
from torchwise.train.phases import SeveralOptimizers, task_step
from torchwise.core.errors import TaskError

PRECISIONS = ("32", "bf16-mixed", "16-mixed")
MODES = ("step", "loader")


class OutOfMemory(Exception):
    """A trial ran out of device memory (its memory has been released)."""


@dataclass
class TrialSpec:
    """One measurement to make: a full configuration (TunedConfig fields), how, and how long."""

    config: dict[str, Any]
    mode: str = "step"
    numerics: bool = False
    time_cap_s: float = 2.0


@dataclass
class Measurement:
    """What one trial measured. Times in seconds; warm-up and compilation are in ``excluded_s``."""

    step_s: float  # median time of one step
    iqr_s: float  # inter-quartile range of the step times
    steps: int  # timed steps
    batch_size: int
    samples_per_s: float
    loss: float | None = None  # loss after the numerics steps (numerics=True only)
    excluded_s: float = 0.0  # warm-up and compilation, not in the figures above
    peak_memory: int | None = None  # bytes (CUDA)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def noise(self) -> float:
        """IQR / median of the step times."""
        return self.iqr_s / self.step_s if self.step_s > 0 else 0.0

    @property
    def rel_se(self) -> float:
        """Approximate relative standard error of the median (IQR/1.35 as sigma, 1.25 sigma/sqrt n)."""
        return 0.93 * self.noise / math.sqrt(max(1, self.steps))


Measurer = Callable[[TrialSpec], Measurement]


def median_iqr(times: list[float]) -> tuple[float, float]:
    """Median and inter-quartile range of a list of durations."""
    if not times:
        return 0.0, 0.0
    if len(times) < 4:
        return statistics.median(times), max(times) - min(times)
    q1, q2, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return q2, q3 - q1


def to_device(obj: Any, device: torch.device, non_blocking: bool = False) -> Any:
    """Move the tensors of a (nested) batch to ``device``."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        return {k: to_device(v, device, non_blocking) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        moved = [to_device(v, device, non_blocking) for v in obj]
        return type(obj)(moved) if not hasattr(obj, "_fields") else type(obj)(*moved)
    return obj


def is_oom(exc: BaseException) -> bool:
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip().rstrip(":")


class TaskMeasurer:
    """The real measurer for a :class:`torchwise.Task` on one device (see the module docstring)."""

    def __init__(
        self,
        task: Any,
        device: torch.device,
        *,
        seed: int = 0,
        warmup: int = 3,
        numerics_steps: int = 4,
        min_steps: int = 8,
        max_steps: int = 200,
        target_rel_se: float = 0.01,
        n_batches: int = 4,
    ) -> None:
        self.task = task
        self.device = torch.device(device)
        self.seed = seed
        self.warmup = warmup
        self.numerics_steps = numerics_steps
        self.min_steps = min_steps
        self.max_steps = max_steps
        self.target_rel_se = target_rel_se
        self.n_batches = n_batches
        self._initial_state: dict[str, torch.Tensor] | None = None
        self._models: dict[bool, nn.Module] = {}
        self._compiled: dict[bool, Any] = {}
        self._sample_cache: dict[int, list[Any]] = {}

    # ------------------------------------------------------------------ data
    def sample_batches(self, batch_size: int | None = None) -> list[Any]:
        """A few fixed batches (on the CPU) of ``batch_size`` samples, the same for every trial."""
        bs = batch_size or self.task.batch_size
        if bs in self._sample_cache:
            return self._sample_cache[bs]
        data = self.task.train_data
        if isinstance(data, DataLoader):
            loader = data
        else:
            kwargs: dict[str, Any] = {"batch_size": bs, "shuffle": False}
            if self.task.collate_fn is not None:
                kwargs["collate_fn"] = self.task.collate_fn
            loader = DataLoader(data, **kwargs)
        n = self.n_batches if bs <= self.task.batch_size else max(1, self.n_batches // 2)
        out: list[Any] = []
        for batch in loader:
            out.append(batch)
            if len(out) >= n:
                break
        if not out:
            raise TaskError(f"task {self.task.name!r}: the training data is empty")
        if bs == self.task.batch_size or isinstance(data, DataLoader):
            self._sample_cache[bs] = out
        return out

    # ----------------------------------------------------------------- model
    def _working_model(self, channels_last: bool) -> nn.Module:
        if self._initial_state is None:
            base = copy.deepcopy(self.task.model).to(self.device)
            self._initial_state = {k: v.detach().clone() for k, v in base.state_dict().items()}
            self._models[False] = base
        model = self._models.get(channels_last)
        if model is None:
            model = copy.deepcopy(self._models[False])
            model = model.to(memory_format=torch.channels_last)
            self._models[channels_last] = model
        model.load_state_dict(self._initial_state)
        for p in model.parameters():
            p.grad = None
        model.train()
        return model

    def _runner(self, model: nn.Module, channels_last: bool, compile: bool) -> Any:
        if not compile:
            return model
        if channels_last not in self._compiled:
            self._compiled[channels_last] = torch.compile(model)
        return self._compiled[channels_last]

    def _loss(self, output: Any, target: Any) -> torch.Tensor:
        if self.task.loss_fn is not None:
            return self.task.loss_fn(output, target)
        if isinstance(output, torch.Tensor) and output.dim() == 0:
            return output
        raise TaskError(f"task {self.task.name!r} has no loss_fn and its model does not return a scalar loss")

    def release(self) -> None:
        """Drop the working copies and compiled graphs (and the CUDA cache)."""
        self._models.clear()
        self._compiled.clear()
        self._initial_state = None
        _free(self.device)

    # --------------------------------------------------------------- measure
    def __call__(self, spec: TrialSpec) -> Measurement:
        if spec.mode not in MODES:
            raise ValueError(f"unknown measuring mode {spec.mode!r}")
        cfg = spec.config
        if cfg.get("precision", "32") not in PRECISIONS:
            raise ValueError(f"unknown precision {cfg.get('precision')!r}")
        saved = (torch.get_num_threads(), torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark)
        oom: str | None = None
        try:
            if cfg.get("threads"):
                torch.set_num_threads(int(cfg["threads"]))
            torch.set_float32_matmul_precision(cfg.get("matmul_precision") or "highest")
            torch.backends.cudnn.benchmark = bool(cfg.get("cudnn_benchmark"))
            if self.device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(self.device)
            if spec.mode == "step":
                return self._measure_steps(spec)
            return self._measure_loader(spec)
        except Exception as exc:
            if not is_oom(exc):
                raise
            oom = _first_line(exc)
        finally:
            torch.set_num_threads(saved[0])
            torch.set_float32_matmul_precision(saved[1])
            torch.backends.cudnn.benchmark = saved[2]
        # here the failed trial's frames (and their tensors) are gone: release the memory
        for model in self._models.values():
            for p in model.parameters():
                p.grad = None
        _free(self.device)
        raise OutOfMemory(oom)

    def _make_step(self, spec: TrialSpec) -> tuple[Callable[[Any], torch.Tensor], nn.Module]:
        cfg = spec.config
        cl = bool(cfg.get("channels_last"))
        model = self._working_model(cl)
        runner = self._runner(model, cl, bool(cfg.get("compile")))
        optimizer = self.task.make_optimizer(model)
        if isinstance(optimizer, dict):  # several optimizers: stepped together on the summed phase losses
            optimizer = SeveralOptimizers(optimizer)
        custom = task_step(self.task.step_fn)
        names = forward_names(model)
        precision = cfg.get("precision") or "32"
        dtype = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}.get(precision)
        device_type = self.device.type
        scaler = torch.amp.GradScaler(device_type) if precision == "16-mixed" else None
        loss_of = self._loss

        def step(batch: Any) -> torch.Tensor:
            with torch.autocast(device_type, dtype=dtype) if dtype is not None else contextlib.nullcontext():
                if custom is not None:
                    loss = custom(runner, batch)
                else:
                    args, kwargs, targets = model_call(batch, names)  # as the Trainer calls the model
                    if cl and args and isinstance(args[0], torch.Tensor) and args[0].dim() == 4:
                        args = (args[0].contiguous(memory_format=torch.channels_last), *args[1:])
                    loss = loss_of(runner(*args, **kwargs), targets)
            optimizer.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            return loss.detach()

        return step, model

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _measure_steps(self, spec: TrialSpec) -> Measurement:
        bs = int(spec.config.get("batch_size") or self.task.batch_size)
        batches = [to_device(b, self.device) for b in self.sample_batches(bs)]
        bs = batch_size_of(batches[0]) or bs
        step, model = self._make_step(spec)
        torch.manual_seed(self.seed)
        if self.device.type == "cuda":
            torch.cuda.manual_seed_all(self.seed)
        t0 = time.perf_counter()
        losses = []
        if spec.numerics:
            # the check steps run with dropout off: random masks differ between eager and compiled
            # code (and between memory formats), which would hide what the maths itself does
            dropouts = [m for m in model.modules() if isinstance(m, nn.modules.dropout._DropoutNd) and m.training]
            for m in dropouts:
                m.eval()
            try:
                for i in range(self.numerics_steps + 1):  # a few steps whose losses are compared: each is read
                    losses.append(float(step(batches[i % len(batches)])))  # noqa: TW207
            finally:
                for m in dropouts:
                    m.train()
        for i in range(self.warmup):
            step(batches[i % len(batches)])
        self._sync()
        excluded = time.perf_counter() - t0
        times: list[float] = []
        start = time.perf_counter()
        i = 0
        cuda = self.device.type == "cuda"
        while True:
            # time in chunks; on CUDA with events, so the step queue is not drained every step
            chunk = 5
            if cuda:
                events = [torch.cuda.Event(enable_timing=True) for _ in range(chunk + 1)]
                events[0].record()
                for j in range(chunk):
                    step(batches[(i + j) % len(batches)])
                    events[j + 1].record()
                events[-1].synchronize()
                times += [events[j].elapsed_time(events[j + 1]) / 1e3 for j in range(chunk)]
            else:
                for j in range(chunk):
                    t = time.perf_counter()
                    step(batches[(i + j) % len(batches)])
                    times.append(time.perf_counter() - t)
            i += chunk
            elapsed = time.perf_counter() - start
            med, iqr = median_iqr(times)
            rel_se = 0.93 * (iqr / med if med else 0.0) / math.sqrt(len(times))
            if len(times) >= self.min_steps and rel_se <= self.target_rel_se:
                break
            if len(times) >= self.max_steps or elapsed >= spec.time_cap_s:
                break
        peak = torch.cuda.max_memory_allocated(self.device) if cuda else None
        del batches
        return Measurement(
            step_s=med,
            iqr_s=iqr,
            steps=len(times),
            batch_size=bs,
            samples_per_s=bs / med if med > 0 else 0.0,
            loss=losses[self.numerics_steps] if spec.numerics else None,
            excluded_s=excluded,
            peak_memory=peak,
        )

    def _measure_loader(self, spec: TrialSpec) -> Measurement:
        cfg = spec.config
        workers = int(cfg.get("num_workers") or 0)
        pin = bool(cfg.get("pin_memory")) and self.device.type == "cuda"
        kwargs: dict[str, Any] = {"num_workers": workers, "pin_memory": pin}
        if cfg.get("batch_size"):
            kwargs["batch_size"] = int(cfg["batch_size"])
        if workers > 0:
            kwargs["persistent_workers"] = bool(cfg.get("persistent_workers"))
        loader = self.task.train_loader(**kwargs)
        step, _ = self._make_step(spec)
        torch.manual_seed(self.seed)
        iterator = iter(loader)
        epochs = 0

        def next_batch() -> Any:
            nonlocal iterator, epochs
            try:
                return next(iterator)
            except StopIteration:
                epochs += 1
                iterator = iter(loader)
                return next(iterator)

        try:
            t0 = time.perf_counter()
            for _ in range(self.warmup):
                first = next_batch()
                step(to_device(first, self.device, non_blocking=pin))
            rest = _last_batch_size(loader)
            if cfg.get("compile") and rest:
                # the short last batch of an epoch makes a compiled model recompile once: a one-time
                # cost of a run, so it happens here in the warm-up, not inside the timed window
                step(to_device(_head(first, rest), self.device))
            self._sync()
            excluded = time.perf_counter() - t0
            times: list[float] = []
            samples = 0
            start = time.perf_counter()
            epochs = 0
            while True:
                t = time.perf_counter()
                batch = next_batch()
                samples += batch_size_of(batch)
                step(to_device(batch, self.device, non_blocking=pin))
                times.append(time.perf_counter() - t)
                if time.perf_counter() - start >= spec.time_cap_s and len(times) >= 3:
                    break
            self._sync()
            window = time.perf_counter() - start
        finally:
            shutdown = getattr(iterator, "_shutdown_workers", None)
            if shutdown is not None:
                shutdown()
            del iterator, loader
        med, iqr = median_iqr(times)
        bs = int(cfg.get("batch_size") or self.task.batch_size)
        return Measurement(
            step_s=med,
            iqr_s=iqr,
            steps=len(times),
            batch_size=bs,
            samples_per_s=samples / window if window > 0 else 0.0,
            excluded_s=excluded,
            peak_memory=torch.cuda.max_memory_allocated(self.device) if self.device.type == "cuda" else None,
            extra={"epoch_restarts": epochs, "window_s": window},
        )


def _last_batch_size(loader: DataLoader) -> int:
    """Size of the short last batch of an epoch (0 when every batch is full or unknown)."""
    try:
        n, bs = len(loader.dataset), loader.batch_size  # type: ignore[arg-type]
    except TypeError:
        return 0
    if not bs or loader.drop_last:
        return 0
    return n % bs


def _head(batch: Any, n: int) -> Any:
    """The first ``n`` samples of a (nested) batch."""
    if isinstance(batch, torch.Tensor):
        return batch[:n] if batch.dim() > 0 else batch
    if isinstance(batch, dict):
        return {k: _head(v, n) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        items = [_head(v, n) for v in batch]
        return type(batch)(items) if not hasattr(batch, "_fields") else type(batch)(*items)
    return batch


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
