"""The doctor on an unmodified training script: ``torchwise doctor -- python train.py ARGS``.

The parent (:func:`doctor_script`) starts the script in a child Python process through
``python -m torchwise.doctor.script``; the child attaches a :class:`~torchwise.doctor.watch.Watch`
before the script runs:

- global module forward hooks (module stack, BatchNorm batches, each model's forward passes,
  the first step's module calls) and a ``TorchFunctionMode`` (ReLU/sigmoid/tanh outputs on every
  other step, class labels at every loss call, the first step's loss calls, ``log`` calls);
- ``Tensor.backward`` wrapped to note each loss, and where it was called (file:line);
- ``DataLoader.__iter__`` and the loader iterators' ``__next__`` wrapped: which loader feeds the
  steps, and how long each step waited for its batch;
- global optimizer step hooks: gradients seen and gradient norms before each step, the step
  count after it; after ``steps`` optimizer steps (or ``budget`` seconds) the script is stopped
  by raising :class:`StopScript` (a ``BaseException``, so the script's ``except Exception`` does
  not swallow it) from the step hook; with ``full=True`` it runs to its end.

:mod:`torchwise.doctor.script_evidence` turns what was seen into the same ``Context`` a Task run
fills; the child runs the checks marked ``SCRIPT = True`` on it and writes the report as JSON to
a temporary file the parent reads back. Nothing of the script is changed on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from torchwise.doctor.report import DoctorReport, Finding, Skipped
from torchwise.core.errors import UsageError

__all__ = ["doctor_script", "is_script_command", "StopScript"]


class StopScript(BaseException):
    """Raised from the optimizer step hook to end the script after the steps asked for."""


def is_script_command(first: str) -> bool:
    """True for ``python``/``python3.11``/a path to a Python executable, or a ``.py`` file."""
    name = os.path.basename(first)
    return (first.endswith(".py") and ":" not in first) or name.startswith("python") or first == sys.executable


def doctor_script(
    command: Sequence[str], *, steps: int = 200, budget: float | None = None, full: bool = False,
    stdout: Any = None, timeout: float | None = None,
) -> DoctorReport:
    """Run a training script with the doctor attached and return its report.

    ``command``: ``["python", "train.py", *args]``, ``["python", "-m", "pkg.train", *args]`` or
    ``["train.py", *args]`` (run with this interpreter). The child is stopped cleanly after
    ``steps`` optimizer steps (or ``budget`` seconds), or runs to its end with ``full=True``.
    The script's own output goes to ``stdout`` (default: this process's stderr, so that a JSON
    report on stdout stays clean).
    """
    command = list(command)
    if not command:
        raise UsageError("no script given: use `torchwise doctor -- python train.py ARGS`")
    python = sys.executable
    if not command[0].endswith(".py") and os.path.basename(command[0]).startswith("python"):
        python = command[0] if command[0] != "python" else sys.executable
        command = command[1:]
    if not command:
        raise UsageError("no script given after the Python executable: expected `python train.py ARGS`")
    if command[0] == "-m":
        if len(command) < 2:
            raise UsageError("`python -m` needs a module name")
        target = ["--module", command[1], "--", *command[2:]]
    else:
        path = Path(command[0])
        if not path.is_file():
            raise UsageError(f"training script not found: {command[0]} (expected `python path/to/train.py ARGS`)")
        target = ["--", str(path), *command[1:]]
    if steps < 1:
        raise UsageError(f"steps must be >= 1, got {steps}")
    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory(prefix="torchwise-doctor-") as tmp:
        out = Path(tmp) / "report.json"
        child = [python, "-m", "torchwise.doctor.script", "--steps", str(steps), "--out", str(out)]
        if budget is not None:
            child += ["--budget", str(budget)]
        if full:
            child.append("--full")
        proc = subprocess.run(child + target, env=env, stdout=stdout if stdout is not None else sys.stderr, timeout=timeout)
        if not out.exists():
            raise UsageError(f"the doctored script ended (exit status {proc.returncode}) before the doctor could report; "
                             "is it a Python training script?")
        data = json.loads(out.read_text(encoding="utf-8"))
    data["measured"]["exit_status"] = proc.returncode
    return _report_from(data)


def _report_from(data: dict[str, Any]) -> DoctorReport:
    findings = [Finding(**f) for f in data["findings"]]
    skipped = [Skipped(tuple(s["codes"]), s["reason"]) for s in data["skipped"]]
    return DoctorReport(data["subject"], findings, skipped, data["measured"], data["failure"])


# ----------------------------------------------------------------------------- the child


class _Attached:
    """The hooks of the child process around the user's script."""

    def __init__(self, steps: int, budget: float | None, full: bool) -> None:
        from torchwise.doctor.watch import Watch

        self.steps, self.budget, self.full = steps, budget, full
        from torchwise.doctor.script_evidence import ScriptEvidence

        self.watch = Watch(labels=True)
        self.evidence = ScriptEvidence(self.watch)
        self.names = self.evidence.names  # id(model) -> the script's variable holding it
        self.optimizers: list[Any] = []
        self.backward_line = ""
        self.started = time.perf_counter()
        self.stopped = False
        self._in_backward = False

    def attach(self) -> None:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self.watch.attach()
        self.watch.activations_on = True
        self._handles = [register_optimizer_step_pre_hook(self._pre_step), register_optimizer_step_post_hook(self._post_step)]
        self._backward = torch.Tensor.backward
        attached = self

        def backward(tensor, *args, **kwargs):
            if attached._in_backward:  # torch re-dispatches Tensor.backward through the watch's mode
                return attached._backward(tensor, *args, **kwargs)
            attached._in_backward = True
            try:
                result = attached._backward(tensor, *args, **kwargs)
            finally:
                attached._in_backward = False
            attached._after_backward(tensor)
            return result

        torch.Tensor.backward = backward  # type: ignore[method-assign]
        self._grad = torch.autograd.grad
        autograd_grad = self._grad

        def grad(*args, **kwargs):  # an attack or a gradient penalty: that pass was not evaluation
            attached.evidence.gradients_taken()
            return autograd_grad(*args, **kwargs)

        torch.autograd.grad = grad
        loader_iter = torch.utils.data.DataLoader.__iter__
        self._loader_iter = loader_iter

        def iterate(loader):  # the first loader iterated for training: its length is one epoch
            if attached.watch.result.distinct_batches is None and attached.watch.step_index == 0:
                try:
                    attached.watch.result.distinct_batches = len(loader)
                except TypeError:
                    pass
            iterator = loader_iter(loader)
            attached.evidence.loader_iter(loader, iterator)
            return iterator

        torch.utils.data.DataLoader.__iter__ = iterate  # type: ignore[method-assign]
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        self._loader_next = _BaseDataLoaderIter.__next__
        loader_next = self._loader_next

        def next_batch(iterator):  # the time the step waits for its batch
            t0 = time.perf_counter()
            try:
                return loader_next(iterator)
            finally:
                attached.evidence.loader_next(iterator, time.perf_counter() - t0)

        _BaseDataLoaderIter.__next__ = next_batch  # type: ignore[method-assign]

    def close(self) -> None:
        import torch

        torch.Tensor.backward = self._backward  # type: ignore[method-assign]
        torch.autograd.grad = self._grad
        torch.utils.data.DataLoader.__iter__ = self._loader_iter  # type: ignore[method-assign]
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        _BaseDataLoaderIter.__next__ = self._loader_next  # type: ignore[method-assign]
        for h in self._handles:
            h.remove()
        self.watch.close()

    def _after_backward(self, loss: Any) -> None:
        from torchwise.doctor.watch import user_frame

        if not self.backward_line:
            self.backward_line = user_frame()
        if loss.numel() == 1 and len(self.watch._pending_losses) < 10_000:
            self.watch._pending_losses.append(loss.detach().float().reshape(()))
        self.watch.reset_stack()
        self.evidence.after_backward(loss)

    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if all(o is not optimizer for o in self.optimizers):
            self.optimizers.append(optimizer)
        if self.watch._params is None:
            params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
            self.watch.track(params, [optimizer])
        first = optimizer is self.optimizers[0]
        if first:
            self.watch.after_backward(None)
        if self.watch.step_index < 3:
            self._name_models()
        self.evidence.before_step(optimizer, first)

    def _name_models(self) -> None:
        """The script's variables that hold the models (``generator``, ``model``...), for the names."""
        from torchwise.doctor.watch import _OWN_DIR, _SKIP_DIRS

        wanted = {id(r) for r in self.evidence.grad_roots.values()} - set(self.names)
        frame = sys._getframe(1)
        while frame is not None and wanted:
            path = frame.f_code.co_filename
            if not path.startswith(_SKIP_DIRS + (_OWN_DIR,)):
                for scope in (frame.f_locals, frame.f_globals):
                    for name, value in list(scope.items()):
                        if id(value) in wanted and not name.startswith("_"):
                            self.names[id(value)] = name
                            wanted.discard(id(value))
            frame = frame.f_back

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if optimizer is not self.optimizers[0]:
            return
        self.evidence.after_step(self.watch.activations_on)
        self.watch.after_step()
        self.watch.activations_on = self.watch.step_index % 2 == 0
        if self.full or self.stopped:
            return
        over_budget = self.budget is not None and time.perf_counter() - self.started > self.budget
        if self.watch.step_index >= self.steps or over_budget:
            self.stopped = True
            raise StopScript()


def _child(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchwise.doctor.script")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--budget", type=float, default=None)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--module", default=None)
    parser.add_argument("script", nargs="*")
    args = parser.parse_args(argv)
    import runpy

    if args.module:
        subject, script_dir, run_argv = args.module, os.getcwd(), [args.module, *args.script]
    else:
        subject = args.script[0]
        script_dir = str(Path(subject).resolve().parent)
        run_argv = list(args.script)
    attached = _Attached(args.steps, args.budget, args.full)
    failure: str | None = None
    exit_status: int | str | None = 0
    sys.argv = run_argv
    if not args.module:
        sys.path.insert(0, script_dir)
    attached.attach()
    try:
        if args.module:
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(subject, run_name="__main__")
    except StopScript:
        pass
    except SystemExit as exc:
        exit_status = exc.code
    except BaseException as exc:  # the script's own error: reported, after the findings that explain it
        from torchwise.doctor.watch import user_frame_of

        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        at = user_frame_of(exc.__traceback__)
        failure = f"{type(exc).__name__}: {first}"[:300] + (f" (at {at})" if at else "")
    finally:
        attached.close()
    report = _check(subject, attached, failure, args)
    report.measured["script_exit"] = exit_status
    Path(args.out).write_text(report.to_json(), encoding="utf-8")
    return 0


def _check(subject: str, attached: _Attached, failure: str | None, args: argparse.Namespace) -> DoctorReport:
    from torchwise.doctor import available_checks

    result = attached.watch.finish()
    result.backward_line = attached.backward_line
    attached.evidence.finish()
    ctx = attached.evidence.context(subject, attached.optimizers, args.steps, failure, attached.names)
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    not_observable: list[str] = []
    for c in available_checks():
        if not getattr(c, "SCRIPT", False):
            not_observable += list(c.CODES)
            continue
        try:
            out = c.check(ctx)
        except Exception as exc:
            out = Skipped(tuple(c.CODES), f"the check itself failed: {type(exc).__name__}: {exc}")
        if isinstance(out, Skipped):
            skipped.append(out)
        elif out:
            findings.extend(out)
    if not_observable:
        skipped.append(Skipped(tuple(not_observable), "not observable in script mode (see the README's doctor section)"))
    measured = {
        "mode": "script", "steps_run": result.steps, "steps_requested": None if args.full else args.steps,
        "stopped_by_doctor": attached.stopped, "seconds": round(time.perf_counter() - attached.started, 3),
        "optimizers": len(attached.optimizers), "backward_at": attached.backward_line,
    }
    measured["models"] = [attached.names.get(id(m)) or type(m).__name__ for m in attached.evidence.models()]
    waited = ctx.loader_wait()
    if waited is not None:
        measured["loader_wait_share"] = round(waited[2], 4)
    return DoctorReport(subject, findings, skipped, measured, failure)


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
