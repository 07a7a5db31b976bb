"""Run a few real training steps on a copy of the model and record what the checks need.

The user's model and optimizer are deep-copied together (so the copied optimizer points at the
copied parameters); only the copies are ever run. Step 0 is the *recording* step: hooks on every
module note execution order, shapes, dtypes and memory formats, and a ``TorchFunctionMode`` notes
each call of a loss function with its input and target (before the call, so a call that raises is
still seen). The later steps run without any recorder, so their timings (and on CUDA their count
of host-device syncs) are those of plain training. Every check in ``doctor.checks`` then reads the
:class:`Context`.
"""

from __future__ import annotations

import copy
import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader

from torchwise.utils.batch import batch_size_of, split_batch
from torchwise.utils.device import select_device, to_device
from torchwise.core.errors import DataError, TorchwiseError, UsageError
from torchwise.doctor.clock import both
from torchwise.doctor.record import LOG_FUNCTIONS, LogCall, LossCall, ModuleCall, StepRecorder, loss_call
from torchwise.utils.nonfinite import no_side_effects, tensors_in
from torchwise.train.precision import resolve as resolve_precision

HALF_DTYPES = (torch.float16, torch.bfloat16)


@dataclass
class StepRecord:
    """Timings of one step: waiting for the loader, and the step itself (device synced)."""

    index: int
    wait_s: float
    step_s: float
    input_shapes: tuple[tuple[int, ...], ...]
    batch_size: int
    syncs: int | None = None
    watched: bool = False  # activations were watched (slower): not used for timings
    threads: int | None = None  # set when this step ran with a different thread count (TW221 A/B)
    free_wait_s: float | None = None  # the same two, less the time the thread sat in the run queue (clock.py)
    free_step_s: float | None = None


@dataclass
class Context:
    """Everything the checks read. ``model``/``optimizer`` are the doctor's copies."""

    subject: str
    model: nn.Module
    optimizer: torch.optim.Optimizer
    optimizer_given: bool
    loss_fn: Callable[..., Any] | None
    device: torch.device
    target_device_type: str
    precision: str
    cudnn_benchmark: bool
    steps_requested: int
    param_devices: dict[str, str]
    spread_over_devices: bool
    initial_training: dict[str, bool]
    loader: DataLoader | None = None
    batch_given: bool = False
    module_calls: list[ModuleCall] = field(default_factory=list)
    conv_bn_pairs: list[tuple[str, str]] = field(default_factory=list)
    loss_calls: list[LossCall] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    backward_done: int = 0
    params_with_grad: set[str] = field(default_factory=set)
    tensors_with_grad: set[int] = field(default_factory=set)  # script mode: ids of the tensors that got a gradient
    bn_stats_before: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    nonfinite: Any = None  # torchwise.utils.nonfinite.NonFiniteReport
    nonfinite_step: int | None = None
    log_calls: list[LogCall] = field(default_factory=list)
    eval_calls: list[tuple[bool, bool]] = field(default_factory=list)  # (grad enabled, output requires grad)
    evaluate_given: bool = False
    last_batch: Any = None
    failure: str | None = None
    scratch: dict[str, Any] = field(default_factory=dict)  # per-check state (before -> check)
    budget_s: float | None = None
    watch: Any = None  # torchwise.doctor.watch.WatchResult, after the steps
    script: bool = False  # a script run (no Task): only the checks with SCRIPT = True apply
    step_fn: Callable[..., Any] | None = None  # Task.step_fn (issue 8): fn(model, batch) -> loss | mapping
    whole_batch: list[Any] | None = None
    _samples: list[tuple[int, list[tuple[str, Any]]]] | None = None

    @property
    def half_precision(self) -> bool:
        """Training runs in fp16/bf16: mixed precision, or parameters stored in half."""
        if self.precision in ("bf16-mixed", "16-mixed"):
            return True
        return any(p.dtype in HALF_DTYPES for p in self.model.parameters())

    def loader_wait(self) -> tuple[float, float, float] | None:
        """(seconds waited for batches, seconds in steps, wait share) over the timed steps.

        Step 0 (recording hooks, worker start-up) is left out; None without a loader or with
        fewer than two steps. Timed with :func:`torchwise.doctor.clock.clock` where it can leave
        out the time lost to other processes (Linux), so a busy machine does not inflate the share.
        """
        timed = self.timed_steps
        if self.batch_given or self.loader is None or not timed:
            return None
        free = all(s.free_wait_s is not None and s.free_step_s is not None for s in timed)
        wait = sum((s.free_wait_s if free else s.wait_s) or 0.0 for s in timed)
        busy = sum((s.free_step_s if free else s.step_s) or 0.0 for s in timed)
        return wait, busy, wait / max(1e-12, wait + busy)

    @property
    def timed_steps(self) -> list[StepRecord]:
        """Steps run as plain training (not the recording step 0, not watched, default threads)."""
        return [s for s in self.steps[1:] if not s.watched and s.threads is None]

    def sample_fields(self, limit: int = 8) -> list[tuple[int, list[tuple[str, Any]]]]:
        """Up to ``limit`` samples of the loader's dataset, spread over it, as (index, fields).

        Each field is (path, shape-or-length): tensors/arrays give their shape, lists and tuples of
        numbers their length. Empty for iterable or unsized datasets.
        """
        if self._samples is not None:
            return self._samples
        self._samples = []
        ds = getattr(self.loader, "dataset", None)
        if ds is None or not hasattr(ds, "__getitem__") or isinstance(ds, torch.utils.data.IterableDataset):
            return self._samples
        try:
            n = len(ds)
        except TypeError:
            return self._samples
        indices = sorted({int(i * (n - 1) / max(1, limit - 1)) for i in range(min(limit, n))}) if n else []
        for i in indices:
            try:
                sample = ds[i]
            except Exception:  # a dataset that fails here fails in the steps too; reported there
                break
            self._samples.append((i, list(_fields(sample, "sample"))))
        return self._samples


def _fields(obj: Any, path: str, depth: int = 0):
    shape = getattr(obj, "shape", None)
    if shape is not None and hasattr(obj, "dtype"):
        yield path, tuple(int(s) for s in shape)
    elif isinstance(obj, Mapping) and depth < 2:
        for k, v in obj.items():
            yield from _fields(v, f"{path}[{k!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)) and depth < 2:
        if obj and all(isinstance(v, (int, float, bool)) for v in obj):
            yield path, (len(obj),)
        else:
            for i, v in enumerate(obj):
                yield from _fields(v, f"{path}[{i}]", depth + 1)


# ----------------------------------------------------------------------------- set-up


def copy_model_and_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer | None) -> tuple[nn.Module, torch.optim.Optimizer | None]:
    """Deep copies of both; the copied optimizer holds the copied parameters."""
    try:
        if optimizer is None:
            return copy.deepcopy(model), None
        try:
            return copy.deepcopy((model, optimizer))
        except Exception:
            model_copy = copy.deepcopy(model)
            return model_copy, _rebuild_optimizer(model, model_copy, optimizer)
    except TorchwiseError:
        raise
    except Exception as exc:
        raise UsageError(f"the doctor runs on a copy of the model, but copy.deepcopy failed: {type(exc).__name__}: {exc}") from exc


def _rebuild_optimizer(model: nn.Module, model_copy: nn.Module, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    mapping = {id(p): q for (_, p), (_, q) in zip(model.named_parameters(), model_copy.named_parameters())}
    groups = []
    for g in optimizer.param_groups:
        params = [q if (q := mapping.get(id(p))) is not None else p.detach().clone().requires_grad_(p.requires_grad) for p in g["params"]]
        groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": params})
    new = type(optimizer)(groups, **optimizer.defaults)
    new.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    return new


def _onto_copy(opt: torch.optim.Optimizer, model: nn.Module, model_copy: nn.Module) -> torch.optim.Optimizer:
    """An optimizer built by a factory that closes over the user's model (name-based weight-decay
    groups from ``model.named_parameters()``) holds the original's parameters, not the copy's:
    rebuild it over the copy, group by group (genuinely foreign tensors stay foreign: TW115)."""
    if not isinstance(opt, torch.optim.Optimizer):
        return opt
    original = {id(p) for p in model.parameters()}
    held = [p for g in opt.param_groups for p in g["params"]]
    if model is model_copy or not any(id(p) in original for p in held):
        return opt
    mapping = {id(p): q for (_, p), (_, q) in zip(model.named_parameters(), model_copy.named_parameters())}
    for g in opt.param_groups:  # the factory's fresh optimizer: re-pointed in place
        g["params"] = [mapping.get(id(p), p) for p in g["params"]]
    moved = {mapping.get(id(p), p): v for p, v in opt.state.items()}
    opt.state.clear()
    opt.state.update(moved)
    return opt


def resolve_device(model: nn.Module, device: str | torch.device) -> tuple[torch.device, dict[str, str], bool]:
    """(device to run on, parameter name -> device, whether parameters sit on several devices)."""
    placed = {n: str(t.device) for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    devices = sorted(set(placed.values()))
    spread = len(devices) > 1
    if spread:  # model parallel: keep the placement; inputs go where the first parameter is
        first = next((d for d in placed.values() if d != "meta"), "cpu")
        return torch.device(first), placed, True
    current = torch.device(devices[0]) if devices else torch.device("cpu")
    if str(device) == "auto" and current.type != "cpu":
        return current, placed, False  # already placed by the user: train there
    return select_device(device), placed, False


def _shapes(obj: Any) -> list[tuple[int, ...]]:
    return [tuple(t.shape) for t in tensors_in(obj)]


# ----------------------------------------------------------------------------- recorders


class _LossRecorder(TorchFunctionMode):
    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self.ctx = ctx

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        call = loss_call(func, args, kwargs)
        if call is not None:
            self.ctx.loss_calls.append(call)
        return func(*args, **kwargs)


class _LogWatch(TorchFunctionMode):
    """Notes log calls whose input holds zeros or negatives (the -inf/NaN makers)."""

    def __init__(self, stack: list[str], found: list[LogCall]) -> None:
        super().__init__()
        self.stack, self.found = stack, found

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = LOG_FUNCTIONS.get(func)
        if name is not None and args and isinstance(args[0], torch.Tensor) and args[0].is_floating_point():
            x = args[0].detach()
            zeros, negatives = int((x == 0).sum()), int((x < 0).sum())
            if zeros or negatives:
                self.found.append(LogCall(name, self.stack[-1] if self.stack else "", zeros, negatives, x.numel()))
        return func(*args, **kwargs)


def _module_hooks(ctx: Context, model: nn.Module) -> list[Any]:
    names = {m: n for n, m in model.named_modules()}
    recorder = StepRecorder(ctx.module_calls, ctx.conv_bn_pairs)

    def pre(module: nn.Module, args: tuple) -> None:
        recorder.pre(module, args, names[module])

    def post(module: nn.Module, args: tuple, output: Any) -> None:
        recorder.post(module, args, output, names[module])

    handles = []
    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    return handles


# ----------------------------------------------------------------------------- steps


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _SyncCounter:
    """Counts host-device syncs with ``torch.cuda.set_sync_debug_mode("warn")`` (CUDA only)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.count = 0

    def __enter__(self) -> "_SyncCounter":
        if self.enabled:
            self._prev = torch.cuda.get_sync_debug_mode()
            self._warn = warnings.catch_warnings(record=True)
            self._log = self._warn.__enter__()
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            torch.cuda.set_sync_debug_mode(self._prev)
            self._warn.__exit__(*exc)
            self.count += sum("synchroniz" in str(w.message) for w in self._log)


def _batches(ctx: Context, batch: Any):
    """Yield (batch, seconds waited for it)."""
    if ctx.batch_given or ctx.loader is None:
        while True:
            yield batch, (0.0, 0.0)
    generators = _loader_generators(ctx.loader)
    states = [g.get_state() for g in generators]
    it = iter(ctx.loader)
    served = 0
    try:
        while True:
            t0 = both()
            try:
                b = next(it)
            except StopIteration:
                if not served:
                    raise DataError("the training loader yielded no batch (empty dataset?)") from None
                it = iter(ctx.loader)
                continue
            served += 1
            t1 = both()
            yield b, (t1[0] - t0[0], t1[1] - t0[1])
    finally:
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None and not getattr(ctx.loader, "persistent_workers", False):
            shutdown()  # a persistent loader keeps (and later resets) its own workers
        for g, state in zip(generators, states):
            g.set_state(state)  # the user's seeded shuffling goes on as if the doctor had not run


def _loader_generators(loader: Any) -> list[torch.Generator]:
    """The distinct torch.Generators a DataLoader draws from (its own and its samplers')."""
    found: list[torch.Generator] = []
    batch_sampler = getattr(loader, "batch_sampler", None)
    for obj in (loader, getattr(loader, "sampler", None), batch_sampler, getattr(batch_sampler, "sampler", None)):
        g = getattr(obj, "generator", None)
        if isinstance(g, torch.Generator) and all(g is not h for h in found):
            found.append(g)
    return found


def run_steps(ctx: Context, batch: Any) -> None:
    """Run ``ctx.steps_requested`` training steps on the copies, filling ``ctx``."""
    model, opt, device = ctx.model, ctx.optimizer, ctx.device
    autocast_dtype = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}.get(ctx.precision)
    scaler = torch.amp.GradScaler("cuda") if ctx.precision == "16-mixed" and device.type == "cuda" else None
    count_syncs = device.type == "cuda"
    for name, m in model.named_modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            ctx.bn_stats_before[name] = (m.running_mean.detach().clone(), m.running_var.detach().clone())
    params = list(model.named_parameters())

    step_fn = ctx.step_fn
    try:  # the Trainer's batch -> model mapping (dict batches, keyword inputs), where this version has it
        from torchwise.utils.batch import forward_names, model_call
    except ImportError:
        model_call = None
    names = forward_names(model) if model_call is not None else frozenset()

    def forward_loss(inputs: Any, targets: Any) -> Any:
        with torch.autocast(device.type, dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None):
            if step_fn is not None:  # Task.step_fn(model, batch) -> loss or {"loss": ..., ...}
                out = step_fn(model, ctx.whole_batch[0] if ctx.whole_batch else (inputs, targets))
                return out["loss"] if isinstance(out, Mapping) else out
            if model_call is not None:
                args, kwargs = inputs
                out = model(*args, **kwargs)  # as the Trainer calls it
            else:
                out = model(inputs)  # as the Trainer calls it
            if ctx.loss_fn is not None:
                return ctx.loss_fn(out, targets)
            if isinstance(out, torch.Tensor) and out.numel() == 1:
                return out
            raise UsageError("no loss_fn given and the model output is not a scalar loss: pass loss_fn=")

    from torchwise.doctor.watch import MIN_DYNAMICS_STEPS, Watch

    source = _batches(ctx, batch)
    model.train()
    dynamics = ctx.steps_requested >= MIN_DYNAMICS_STEPS
    watch = Watch(inside_own=True).attach(mode=False)
    threads = torch.get_num_threads()
    ab_threads = device.type == "cpu" and dynamics and threads > 1
    labels = _HostLabels(ctx)
    started = time.perf_counter()
    try:
        for i in range(ctx.steps_requested):
            if ctx.budget_s is not None and i and time.perf_counter() - started > ctx.budget_s:
                break
            b, wait = next(source)
            if step_fn is not None:  # the step takes the whole batch, whatever its layout
                inputs, targets = None, None
            elif model_call is not None:
                args, kwargs, targets = model_call(b, names)
                inputs = (args, kwargs)
            else:
                inputs, targets = split_batch(b)
            if targets is not None:
                labels.note(i, targets)
            if step_fn is not None:
                ctx.whole_batch = [to_device(b, device, non_blocking=False)]  # the batch as the Trainer hands it over
            inputs, targets = to_device(inputs, device, non_blocking=False), to_device(targets, device, non_blocking=False)
            _sync(device)
            recording = i == 0
            watched = recording or (dynamics and i % 2 == 0)
            fewer = ab_threads and i % 4 == 3 and i < 4 * AB_PAIRS  # TW221: some plain steps with 1 thread
            watch.reset_stack()
            if fewer:
                torch.set_num_threads(1)
            t0 = both()
            handles = _module_hooks(ctx, model) if recording else []
            counter = _SyncCounter(count_syncs and not recording)
            watch.watching(watched)
            try:
                with counter:
                    opt.zero_grad(set_to_none=True)
                    if recording:
                        with _LossRecorder(ctx):
                            loss = forward_loss(inputs, targets)
                    else:
                        loss = forward_loss(inputs, targets)
                    loss_t = loss if isinstance(loss, torch.Tensor) else None
                    if loss_t is None:
                        raise UsageError(f"the loss is a {type(loss).__name__}, expected a tensor")
                    (scaler.scale(loss_t) if scaler else loss_t).backward()
            finally:
                for h in handles:
                    h.remove()
                watch.watching(False)
            _sync(device)
            t1 = both()
            if recording:
                labels.learn(ctx, targets)
            ctx.backward_done += 1
            watch.after_backward(loss_t)
            grads = [p.grad for _, p in params if p.grad is not None]
            ctx.params_with_grad.update(n for n, p in params if p.grad is not None)
            finite = torch.isfinite(loss_t.detach()).all()
            if grads and scaler is None:
                finite = finite & torch.stack([torch.isfinite(g).all() for g in grads]).all()
            record = StepRecord(i, wait[0], t1[0] - t0[0], tuple(_shapes(inputs)), batch_size_of(b), watched=watched,
                                threads=1 if fewer else None, free_wait_s=wait[1], free_step_s=t1[1] - t0[1])
            ctx.steps.append(record)
            if not bool(finite):
                ctx.nonfinite_step = i
                _locate_nonfinite(ctx, lambda: forward_loss(inputs, targets))
                break
            watch.track([p for _, p in params if p.requires_grad], [opt])
            sample = dynamics and watch.updates.sampled(i)
            if sample:  # TW140: this step's update against the weights, outside the timed region
                watch.updates.before(watch._params, list(range(len(watch._params))))
            t2 = both()
            if scaler is not None:  # its inf check reads one flag back: inherent, not counted
                scaler.step(opt)
                scaler.update()
            else:
                with counter:
                    opt.step()
            _sync(device)
            t3 = both()
            record.step_s += t3[0] - t2[0]
            record.free_step_s = (record.free_step_s or 0.0) + t3[1] - t2[1]
            record.syncs = counter.count if counter.enabled else None
            if sample:
                watch.updates.after()
            if fewer:
                torch.set_num_threads(threads)
            watch.after_step()
            ctx.last_batch = b
    except TorchwiseError:
        raise
    except Exception as exc:  # the checks may explain it; the report carries it
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        ctx.failure = f"{type(exc).__name__}: {first}"[:300]
    finally:
        torch.set_num_threads(threads)
        watch.close()
        source.close()
        result = watch.finish()
        result.batches_repeat = ctx.batch_given or ctx.loader is None
        result.distinct_batches = _batches_per_epoch(ctx.loader) if not result.batches_repeat else 1
        result.label_problems.extend(labels.problems)
        result.thread_timing = _thread_timing(ctx, threads) if ab_threads else None
        ctx.watch = result


AB_PAIRS = 8  # TW221: up to this many steps at 1 thread, each next to plain steps at the default


def _thread_timing(ctx: Context, threads: int) -> dict[str, Any] | None:
    one = [s.step_s for s in ctx.steps if s.threads == 1]
    many = [s.step_s for s in ctx.timed_steps]
    if len(one) < 3 or len(many) < 3:
        return None
    import statistics

    return {"threads": threads, "median_step_ms": round(statistics.median(many) * 1e3, 3),
            "median_step_ms_1_thread": round(statistics.median(one) * 1e3, 3), "samples": (len(many), len(one))}


def _batches_per_epoch(loader: Any) -> int | None:
    try:
        return len(loader)
    except TypeError:
        return None


class _HostLabels:
    """TW106 over every batch: the class targets of each batch, checked on the host.

    Step 0 shows whether the batch's targets reach cross_entropy/nll_loss unchanged (same
    storage) and the output width; every batch's targets are then checked on the CPU before
    they are moved (no device sync).
    """

    def __init__(self, ctx: Context) -> None:
        self.width: int | None = None
        self.ignore: int | None = -100
        self.func = ""
        self.problems: list[dict[str, Any]] = []

    def note(self, step: int, targets: Any) -> None:
        if not isinstance(targets, torch.Tensor) or targets.device.type != "cpu" or targets.is_floating_point() or targets.dtype == torch.bool:
            return
        if self.width is not None and step > 0:  # step 0: TW106 reads the loss call itself
            self._check(step, targets)

    def learn(self, ctx: Context, targets: Any) -> None:
        """After step 0: the width of the loss that got these targets unchanged, if any."""
        from torchwise.utils.labels import is_class_target

        for call in ctx.loss_calls:
            t = call.target
            if call.func in ("cross_entropy", "nll_loss") and isinstance(t, torch.Tensor) and isinstance(targets, torch.Tensor) \
                    and t.shape == targets.shape and t.data_ptr() == targets.data_ptr() and is_class_target(call.input, t):
                self.width = int(call.input.shape[1] if call.input.dim() >= 2 else call.input.shape[0])
                self.ignore = call.kwargs.get("ignore_index", -100)
                self.func = call.func
                break

    def _check(self, step: int, targets: torch.Tensor) -> None:
        from torchwise.utils.labels import out_of_range

        t = targets.reshape(-1)
        bad = out_of_range(t, self.width, self.ignore)  # type: ignore[arg-type]
        if bool(bad.any()) and len(self.problems) < 20:
            self.problems.append({
                "step": step, "loss": self.func, "output_width": self.width, "bad_count": int(bad.sum()),
                "bad_values": sorted({int(v) for v in t[bad].tolist()})[:10], "targets": int(t.numel()), "line": "",
            })


def run_evaluate(ctx: Context, evaluate: Callable[[nn.Module, Any], Any]) -> None:
    """Call the user's ``evaluate(model, batch)`` on the copy, noting whether the model's
    forward passes built autograd graphs."""
    if ctx.last_batch is None:
        return

    from torchwise.doctor.checks.tw109_eval_mode import mode_dependent

    def hook(module: nn.Module, args: tuple, output: Any) -> None:
        outs = list(tensors_in(output, floating_only=False))
        ctx.eval_calls.append((torch.is_grad_enabled(), any(t.requires_grad for t in outs)))
        if "evaluate_training_layers" not in ctx.scratch:  # TW139: the modes of the first evaluation forward
            ctx.scratch["evaluate_training_layers"] = [n for n, m in module.named_modules() if mode_dependent(m) and m.training]

    handle = ctx.model.register_forward_hook(hook)
    try:
        evaluate(ctx.model, to_device(ctx.last_batch, ctx.device, non_blocking=False))
    finally:
        handle.remove()


def _locate_nonfinite(ctx: Context, run_forward: Callable[[], Any]) -> None:
    from torchwise.utils.nonfinite import find_nonfinite

    model = ctx.model
    try:
        ctx.nonfinite = find_nonfinite(model, run_forward)
    except Exception:  # diagnosis must not hide the finding itself
        ctx.nonfinite = None
    # re-run once more watching log calls, with the module stack known
    names = {m: n for n, m in model.named_modules()}
    stack: list[str] = []
    handles = []

    def enter(module: nn.Module, args: tuple) -> None:
        stack.append(names[module])

    def leave(module: nn.Module, args: tuple, output: Any) -> None:
        if stack:
            stack.pop()

    for m in model.modules():
        handles.append(m.register_forward_pre_hook(enter))
        handles.append(m.register_forward_hook(leave))
    devices = [ctx.device.index or 0] if ctx.device.type == "cuda" else []
    try:
        with no_side_effects(model, devices), torch.no_grad(), _LogWatch(stack, ctx.log_calls):
            run_forward()
    except Exception:
        pass
    finally:
        for h in handles:
            h.remove()


def build_context(
    subject: str,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | Callable[[nn.Module], torch.optim.Optimizer] | None,
    loss_fn: Callable[..., Any] | None,
    loader: DataLoader | None,
    batch: Any,
    *,
    steps: int,
    device: str | torch.device,
    precision: str,
    for_device: str | None,
    cudnn_benchmark: bool | None,
) -> Context:
    """Copy the model (and optimizer instance), choose device and precision, set up a Context.

    ``optimizer``: an instance (copied with the model) or ``make(model_copy) -> optimizer``;
    None gives a plain SGD (and the optimizer checks are skipped).
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"doctor needs a torch.nn.Module, a Task or a task reference; got {type(model).__name__}")
    if steps < 1:
        raise UsageError(f"steps must be >= 1, got {steps}")
    if batch is None and loader is None:
        raise UsageError("doctor(model, ...) needs batch= (one (inputs, targets) batch) or loader= (a DataLoader)")
    instance = optimizer if isinstance(optimizer, torch.optim.Optimizer) else None
    model_copy, opt_copy = copy_model_and_optimizer(model, instance)
    run_device, placed, spread = resolve_device(model_copy, device)
    if not spread and any(t.device != run_device for t in list(model_copy.parameters()) + list(model_copy.buffers())):
        model_copy.to(run_device)
        if opt_copy is not None and opt_copy.state:
            opt_copy.load_state_dict(opt_copy.state_dict())  # moves the state next to the parameters
    if opt_copy is None:
        if optimizer is not None:
            opt_copy = _onto_copy(optimizer(model_copy), model, model_copy)
        else:
            opt_copy = torch.optim.SGD([p for p in model_copy.parameters() if p.requires_grad] or [nn.Parameter(torch.zeros(1))], lr=1e-3)
    for_type = str(for_device) if for_device else run_device.type
    if for_type not in ("cpu", "cuda", "mps", "xpu"):
        raise UsageError(f"for_device must be a device type such as 'cuda' or 'cpu', got {for_device!r}")
    return Context(
        subject=subject,
        model=model_copy,
        optimizer=opt_copy,
        optimizer_given=optimizer is not None,
        loss_fn=loss_fn,
        device=run_device,
        target_device_type=for_type,
        precision=resolve_precision(precision, run_device),  # the Trainer's own resolution
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark if cudnn_benchmark is None else cudnn_benchmark),
        steps_requested=int(steps),
        param_devices=placed,
        spread_over_devices=spread,
        initial_training={n: m.training for n, m in model_copy.named_modules()},
        loader=loader,
        batch_given=batch is not None,
    )


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


__all__ = ["Context", "build_context", "run_steps", "usable_cores"]
