"""``torchwise.doctor``: run a few real training steps on a copy of a model and report problems.

    report = torchwise.doctor("examples/digits.py:task")
    report = torchwise.doctor(model, batch=(x, y), loss_fn=nn.CrossEntropyLoss(), optimizer=opt)
    print(report)            # a table; report.findings, report.ok, report.to_json()

Each check is one module in ``torchwise.doctor.checks`` (``twNNN_name.py``) with a ``CODES``
tuple, an optional ``before(ctx)`` and ``check(ctx)`` returning findings or a ``Skipped``.
"""

from __future__ import annotations

import importlib
import pkgutil
import statistics
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Callable, Iterable

from torchwise.core.callable_module import make_callable
from torchwise.doctor.report import DoctorReport, Finding, Skipped

__all__ = ["doctor", "doctor_script", "DoctorReport", "Finding", "Skipped", "available_checks"]


def doctor_script(command: Any, **kwargs: Any) -> DoctorReport:
    """Run an unmodified training script with the doctor attached (see :mod:`torchwise.doctor.script`)."""
    from torchwise.doctor.script import doctor_script as run

    return run(command, **kwargs)


def available_checks() -> list[ModuleType]:
    """Every check module of ``torchwise.doctor.checks``, in code order."""
    from torchwise.doctor import checks

    names = sorted(m.name for m in pkgutil.iter_modules(checks.__path__) if m.name.startswith("tw"))
    return [importlib.import_module(f"torchwise.doctor.checks.{n}") for n in names]


def check_codes(values: Iterable[str] | None, option: str = "select") -> list[str] | None:
    """The codes or prefixes given (comma-separated or repeated), each matching some doctor check."""
    if values is None:
        return None
    from torchwise.core.errors import UsageError

    if isinstance(values, str):  # select="TW1,TW2" as well as select=["TW1", "TW2"]
        values = [values]
    known = sorted({code for check in available_checks() for code in check.CODES})
    out = []
    for part in (p.strip().upper() for v in values for p in v.split(",")):
        if not part:
            continue
        if not any(code.startswith(part) for code in known):
            raise UsageError(f"unknown {option} code {part!r}: expected a doctor check code or prefix, one of {', '.join(known)}")
        out.append(part)
    return out


def _selected(codes: Iterable[str], select: Iterable[str] | None, skip: Iterable[str] | None) -> bool:
    codes = [c.upper() for c in codes]
    if select is not None and not any(c.startswith(s.upper()) for c in codes for s in select):
        return False
    if skip is not None and all(any(c.startswith(s.upper()) for s in skip) for c in codes):
        return False
    return True


def doctor(
    task_or_model: Any,
    batch: Any = None,
    loss_fn: Callable[..., Any] | None = None,
    optimizer: Any = None,
    *,
    steps: int = 3,
    device: str = "auto",
    loader: Any = None,
    precision: str = "auto",
    for_device: str | None = None,
    cudnn_benchmark: bool | None = None,
    evaluate: Callable[[Any, Any], Any] | None = None,
    select: Iterable[str] | None = None,
    skip: Iterable[str] | None = None,
    budget: float | None = None,
) -> DoctorReport:
    """Run ``steps`` real forward/backward/optimizer steps on copies and check what they show.

    ``task_or_model``: a :class:`~torchwise.Task`, a task reference (``"file.py:fn"``) or an
    ``nn.Module`` (then give ``batch`` or ``loader``, and ``loss_fn`` unless the model returns
    the loss). ``optimizer``: an optimizer instance over the model's parameters (copied, never
    stepped) or a factory ``params -> optimizer``. The user's model, optimizer and RNG state are
    left as they were.

    ``precision``: "auto" (bf16-mixed on a CUDA GPU that has it, else fp32), "32", "bf16-mixed"
    or "16-mixed". ``for_device``: the device type the real training will use, for the speed
    checks (default: the device the steps run on) — e.g. ``for_device="cuda"`` on a laptop.
    ``cudnn_benchmark``: the setting training will use (default: the current global one).
    ``evaluate``: your evaluation function ``evaluate(model, batch)``; it is called once on the
    copy after the steps, to see whether it runs the model with autograd on (TW104).
    ``select``/``skip``: codes or prefixes ("TW2") of the checks to run or leave out.
    ``steps`` >= 20 also watches the training dynamics (gradients per layer, dead and saturated
    units, weights that do not move, the loss curve: TW130-TW136); ``budget`` (seconds) stops
    the steps early when the time is spent.
    """
    select, skip = check_codes(select, "select"), check_codes(skip, "skip")  # unknown codes: one line, before any work
    import torch

    from torchwise.doctor.probe import build_context, run_evaluate, run_steps
    from torchwise.core.task import Task, load_task

    subject = type(task_or_model).__name__
    if callable(optimizer) and not isinstance(optimizer, torch.optim.Optimizer):
        optimizer = _factory_for_copy(optimizer)
    if isinstance(task_or_model, str):
        task_or_model = load_task(task_or_model)
    if isinstance(task_or_model, Task):
        task = task_or_model
        subject = task.name
        model = task.model
        loss_fn = loss_fn if loss_fn is not None else task.loss_fn
        if optimizer is None and isinstance(task.optimizer, Mapping):  # several optimizers: stepped together
            from torchwise.train.phases import SeveralOptimizers

            optimizer = lambda model_copy: SeveralOptimizers(task.make_optimizer(model_copy))  # noqa: E731
        elif optimizer is None:
            optimizer = task.make_optimizer
        if loader is None:
            loader = task.train_loader()
    else:
        model = task_or_model
    ctx = build_context(
        subject, model, optimizer, loss_fn, loader, batch,
        steps=steps, device=device, precision=precision, for_device=for_device, cudnn_benchmark=cudnn_benchmark,
    )
    ctx.budget_s = budget
    if isinstance(task_or_model, Task):  # several phases' step functions: their losses summed, one backward
        from torchwise.train.phases import task_step

        ctx.step_fn = task_step(task_or_model.step_fn)
    checks = [c for c in available_checks() if _selected(c.CODES, select, skip)]
    from torchwise.doctor.watch import MIN_DYNAMICS_STEPS

    dynamics = [c for c in checks if getattr(c, "DYNAMICS", False)]
    if steps < MIN_DYNAMICS_STEPS and dynamics:  # one line for them all, not one per check
        checks = [c for c in checks if c not in dynamics]
        not_run = [Skipped(tuple(code for c in dynamics for code in c.CODES),
                           f"training dynamics are watched over >= {MIN_DYNAMICS_STEPS} steps; {steps} ran "
                           "(--steps 200 on the command line, steps=200 from Python)")]
    else:
        not_run = []
    for c in checks:
        before = getattr(c, "before", None)
        if before is not None:
            before(ctx)
    devices = [ctx.device.index or 0] if ctx.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        run_steps(ctx, batch)
        if evaluate is not None and ctx.failure is None:
            ctx.evaluate_given = True
            try:
                run_evaluate(ctx, evaluate)
            except Exception as exc:
                ctx.failure = f"evaluate() raised {type(exc).__name__}: {exc}"[:300]
    from torchwise.doctor.explain import run_checks

    findings, skipped = run_checks(ctx, checks)
    return DoctorReport(subject, findings, not_run + skipped, _measured(ctx), ctx.failure)


def _factory_for_copy(factory: Callable[..., Any]) -> Callable[[Any], Any]:
    """``make(model_copy)`` from a factory ``f(params)``, also given ``model=`` if it names it."""
    import inspect

    try:
        wants_model = "model" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        wants_model = False
    if wants_model:
        return lambda model_copy: factory([p for p in model_copy.parameters() if p.requires_grad], model=model_copy)
    return lambda model_copy: factory(model_copy.parameters())


def _measured(ctx: Any) -> dict[str, Any]:
    timed = ctx.timed_steps
    out: dict[str, Any] = {
        "device": str(ctx.device),
        "checked_for_device": ctx.target_device_type,
        "precision": ctx.precision,
        "steps_run": len(ctx.steps),
        "steps_requested": ctx.steps_requested,
    }
    if timed:
        out["median_step_ms"] = round(statistics.median(s.step_s for s in timed) * 1e3, 3)
        waited = ctx.loader_wait()
        if waited is not None:
            out["loader_wait_share"] = round(waited[2], 4)
    if ctx.steps and ctx.steps[0].batch_size:
        out["batch_size"] = ctx.steps[0].batch_size
    return out


make_callable(__name__, "doctor")
